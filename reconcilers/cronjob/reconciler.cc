#include "cronjob/reconciler.h"

#include "tephra/kube/log.h"
#include "tephra/tz/tz.h"

namespace tephra::reconcilers::cronjob {

CronJobReconciler::CronJobReconciler(CronJobReconcilerOptions opts) : opts_(std::move(opts)) {
  if (!opts_.load_zone) opts_.load_zone = [](std::string_view name) { return tz::Load(name); };
}

void CronJobReconciler::AddIndexers(kube::Informer<api::Job>& jobs) {
  jobs.AddIndexer(kube::kIndexOwnerUid, kube::OwnerUidIndexer<api::Job>());
}

void CronJobReconciler::RegisterHandlers(kube::Controller& c) {
  kube::EnqueueOwnKind(c, *opts_.cronjobs);
  kube::EnqueueOwner(c, *opts_.jobs, "CronJob", "batch.volcano.sh");
}

void CronJobReconciler::Record(const api::CronJob& cj, const Event& e) {
  if (opts_.recorder)
    opts_.recorder->Event(kube::ReferenceTo(cj), e.warning ? kube::EventType::kWarning : kube::EventType::kNormal,
                          e.reason, e.message);
}

kube::ReconcileResult CronJobReconciler::Reconcile(const std::string& key) {
  auto cached = opts_.cronjobs->Get(key);
  if (!cached) return kube::ReconcileResult::Success();
  auto& client = *opts_.client;
  Observed obs;
  obs.cron = *cached;
  obs.now = (opts_.clock ? *opts_.clock : static_cast<const core::Clock&>(core::RealClock::Get())).WallNow();
  obs.load_zone = opts_.load_zone;
  for (const auto& j : opts_.jobs->ByIndex(kube::kIndexOwnerUid, cached->metadata.uid)) {
    const api::OwnerReference* ref = j->metadata.ControllerRef();
    if (ref && ref->uid == cached->metadata.uid && ref->kind == "CronJob") obs.owned.push_back(*j);
  }
  auto fill_others = [&] {
    obs.others.clear();
    for (const auto& ref : obs.cron.status.active)
      if (auto j = opts_.jobs->Get(obs.cron.metadata.namespace_, ref.name)) obs.others[ref.name] = *j;
  };
  fill_others();
  Actions a = Plan(obs);
  if (a.needs_fresh_read) {
    auto fresh = client.Get(api::CronJob::Resource(), cached->metadata.namespace_, cached->metadata.name);
    if (!fresh.ok()) {
      if (core::IsNotFound(fresh.status())) return kube::ReconcileResult::Success();
      return kube::ReconcileResult::Error(fresh.status().Annotate("re-reading cronjob " + key));
    }
    api::CronJob cj;
    if (auto s = api::Decode(*fresh, &cj); !s.ok()) return kube::ReconcileResult::Terminal(s);
    obs.cron = std::move(cj);
    obs.fresh = true;
    fill_others();
    a = Plan(obs);
  }
  const api::CronJob& cj = obs.cron;
  for (const auto& e : a.events) Record(cj, e);

  core::Status failure = a.error;
  for (const auto& name : a.delete_jobs) {
    kube::DeleteOptions d;
    d.propagation_policy = "Background";
    auto s = client.Delete(api::Job::Resource(), cj.metadata.namespace_, name, d);
    if (!s.ok() && !core::IsNotFound(s)) {
      Record(cj, {true, "FailedDelete", "Error deleting job \"" + name + "\": " + s.message()});
      // The status still lists it (it was not deleted); the retry re-plans from the caches.
      return kube::ReconcileResult::Error(s.Annotate("deleting job " + name));
    }
    if (s.ok()) Record(cj, {false, "SuccessfulDelete", "Deleted job \"" + name + "\""});
  }

  api::CronJobStatus status = a.status;
  bool changed = a.status_changed;
  if (a.create) {
    std::vector<Event> events;
    auto r = client.Create(api::Job::Resource(), cj.metadata.namespace_, api::ToJson(*a.create));
    if (r.ok()) {
      api::Job created;
      if (auto s = api::Decode(*r, &created); !s.ok()) return kube::ReconcileResult::Error(s);
      RecordCreated(cj, created, *a.scheduled, &status, &events);
      changed = true;
      kube::log::Info("cronjob created job").Kv("cronjob", key).Kv("job", created.metadata.name);
    } else if (core::IsAlreadyExists(r.status())) {
      // Created by an earlier pass whose status write was lost, or not ours: read it back to tell.
      auto got = client.Get(api::Job::Resource(), cj.metadata.namespace_, a.create->metadata.name);
      if (!got.ok()) return kube::ReconcileResult::Error(got.status().Annotate("reading existing job"));
      api::Job existing;
      if (auto s = api::Decode(*got, &existing); !s.ok()) return kube::ReconcileResult::Error(s);
      changed = AdoptExisting(cj, existing, *a.scheduled, &status, &events) || changed;
    } else if (r.status().message().find("because it is being terminated") != std::string::npos) {
      events.push_back({true, "NamespaceTerminating",
                        "Namespace " + cj.metadata.namespace_ + " is terminating, skipping job creation"});
      failure = r.status();
    } else {
      events.push_back({true, "FailedCreate", "Failed to create job: " + r.status().message()});
      failure = r.status();
    }
    for (const auto& e : events) Record(cj, e);
  }
  if (changed) {
    api::CronJob next = cj;
    next.status = status;
    auto r = client.Update(api::CronJob::Resource(), cj.metadata.namespace_, api::ToJson(next), "status");
    if (!r.ok()) return kube::ReconcileResult::Error(r.status().Annotate("writing status of cronjob " + key));
  }
  if (!failure.ok())
    return a.terminal ? kube::ReconcileResult::Terminal(failure) : kube::ReconcileResult::Error(failure);
  if (a.requeue_after) return kube::ReconcileResult::RequeueAfter(*a.requeue_after);
  return kube::ReconcileResult::Success();
}

}  // namespace tephra::reconcilers::cronjob
