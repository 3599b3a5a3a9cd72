#include "reconciler.h"

#include <algorithm>
#include <future>
#include <thread>

#include "tephra/api/labels.h"
#include "tephra/kube/log.h"

namespace tephra::reconcilers::job {
namespace {

using core::Status;

const std::string kJobGroup = "batch.volcano.sh";

// Any value marks the pod, as in Volcano's IsOutOfSyncPod (plan.cc reads it the same way).
bool IsMarked(const api::Pod& p) { return p.metadata.annotations.count(std::string(api::kPodOutOfSyncKey)) != 0; }

// Deletes tolerate NotFound (already gone) everywhere: the plan is re-run from the caches anyway.
Status IgnoreNotFound(Status s) { return core::IsNotFound(s) ? Status::OK() : s; }
Status IgnoreExists(Status s) { return core::IsAlreadyExists(s) ? Status::OK() : s; }

template <typename T>
Status CreateObj(kube::Client& c, const T& obj) {
  auto r = c.Create(T::Resource(), obj.metadata.namespace_, api::ToJson(obj));
  return IgnoreExists(r.status());
}

void Keep(Status* first, Status s) {
  if (!s.ok() && first->ok()) *first = std::move(s);
}

}  // namespace

JobReconciler::JobReconciler(JobReconcilerOptions opts)
    : opts_(std::move(opts)), clock_(opts_.clock ? *opts_.clock : core::RealClock::Get()) {
  auto& reg = opts_.registry ? *opts_.registry : kube::metrics::Registry::Default();
  // Non-zero means jobs reach the controller without passing the mutating webhook (absent, or down with
  // failurePolicy Ignore).
  defaults_applied_ = &reg.AddCounter("tephra_job_defaults_applied_total",
                                      "Jobs stored without the admission defaults that the controller wrote them onto",
                                      {"job_namespace"});
  completed_ = &reg.AddCounter("volcano_job_completed_phase_count", "Jobs that reached the Completed phase",
                               {"job_name", "queue_name"});
  failed_ = &reg.AddCounter("volcano_job_failed_phase_count", "Jobs that reached the Failed phase",
                            {"job_name", "queue_name"});
  restarts_ = &reg.AddCounter("tephra_job_restarts_total",
                              "Job restarts (status.retryCount increments), by queue and the policy action behind them",
                              {"queue_name", "action"});
  // 50 ms .. 60 s in 30 steps, Volcano's range: pods are created within a second unless quota or the API
  // server pushes back.
  pod_creation_ms_ = reg.AddHistogram("volcano_controller_job_to_pod_creation_latency_milliseconds",
                                      "From a job's creation to the controller creating its first pods", {},
                                      kube::metrics::ExponentialBucketsRange(50, 60000, 30))
                         .With({});
}

void JobReconciler::AddIndexers(kube::Informer<api::Pod>& pods) {
  pods.AddIndexer(kube::kIndexOwnerUid, kube::OwnerUidIndexer<api::Pod>());
}

void JobReconciler::RegisterHandlers(kube::Controller& controller) {
  controller_ = &controller;
  kube::EnqueueOwnKind(controller, *opts_.jobs);
  kube::EnqueueOwner(controller, *opts_.pods, "Job", kJobGroup);
  kube::EnqueueOwner(controller, *opts_.pod_groups, "Job", kJobGroup);
}

void JobReconciler::Submit(const std::string& key, Request request) {
  core::MutexLock l(mu_);
  memory_[key].requests.push_back(std::move(request));
}

void JobReconciler::OnMaxRequeues(const std::string& key, const Status& last_error) {
  kube::log::Warn("job reconcile failed too often; terminating the job")
      .Kv("job", key)
      .Kv("error", last_error);
  Request r;
  r.action = std::string(api::kActionTerminateJob);
  r.event = std::string(api::kEventOutOfSync);
  r.reason = "MaxRequeuesReached";
  r.message = last_error.ToString();
  Submit(key, std::move(r));
  if (controller_) controller_->Enqueue(key);
}

bool JobReconciler::TakeFreshRead(const std::string& key) {
  core::MutexLock l(mu_);
  auto it = memory_.find(key);
  if (it == memory_.end() || !it->second.fresh_read) return false;
  it->second.fresh_read = false;
  return true;
}

size_t JobReconciler::HandledPodsForTest(const std::string& key) const {
  core::MutexLock l(mu_);
  auto it = memory_.find(key);
  return it == memory_.end() ? 0 : it->second.handled_pod_uids.size();
}

template <typename T>
core::StatusOr<std::optional<T>> JobReconciler::Lookup(kube::Informer<T>* informer, const std::string& ns,
                                                       const std::string& name) {
  if (informer) {
    auto p = informer->Get(ns, name);
    if (!p) return std::optional<T>();
    return std::optional<T>(*p);
  }
  auto r = kube::GetAs<T>(*opts_.client, ns, name);
  if (r.ok()) return std::optional<T>(std::move(r).value());
  if (core::IsNotFound(r.status())) return std::optional<T>();
  return r.status();
}

core::StatusOr<Observed> JobReconciler::Observe(const api::Job& job, const std::string& key) {
  Observed obs;
  obs.job = job;
  obs.now = clock_.WallNow();
  obs.key_generator = opts_.key_generator.get();
  const std::string& ns = job.metadata.namespace_;

  for (const auto& p : opts_.pods->ByIndex(kube::kIndexOwnerUid, job.metadata.uid)) {
    const api::OwnerReference* ref = p->metadata.ControllerRef();
    if (ref && ref->uid == job.metadata.uid) obs.pods.push_back(*p);
  }
  std::sort(obs.pods.begin(), obs.pods.end(),
            [](const api::Pod& a, const api::Pod& b) { return a.metadata.name < b.metadata.name; });

  // PodGroup `<job>-<uid>`, or the legacy `<job>` when it is ours.
  for (const std::string& n : {job.metadata.name + "-" + job.metadata.uid, job.metadata.name}) {
    auto pg = opts_.pod_groups->Get(ns, n);
    if (!pg) continue;
    // The uid-suffixed name is ours by construction; the legacy name only when the job controls it.
    const api::OwnerReference* ref = pg->metadata.ControllerRef();
    if (n == job.metadata.name && (!ref || ref->uid != job.metadata.uid)) continue;
    obs.pod_group = *pg;
    break;
  }

  // Plugin objects, by the names the plugins own.
  std::vector<std::string> scratch;
  for (const auto& [name, args] : job.spec.plugins) {
    auto plugin = NewJobPlugin(name, args, &scratch);
    if (!plugin.ok()) continue;
    PluginObjectNames names = (*plugin)->Owned(job);
    for (const auto& n : names.config_maps) {
      TEPHRA_ASSIGN_OR_RETURN(auto o, Lookup(opts_.config_maps, ns, n));
      if (o) obs.plugin_objects.config_maps[n] = std::move(*o);
    }
    for (const auto& n : names.services) {
      TEPHRA_ASSIGN_OR_RETURN(auto o, Lookup(opts_.services, ns, n));
      if (o) obs.plugin_objects.services[n] = std::move(*o);
    }
    for (const auto& n : names.network_policies) {
      TEPHRA_ASSIGN_OR_RETURN(auto o, Lookup<api::NetworkPolicy>(nullptr, ns, n));
      if (o) obs.plugin_objects.network_policies[n] = std::move(*o);
    }
    for (const auto& n : names.secrets) {
      TEPHRA_ASSIGN_OR_RETURN(auto o, Lookup<api::Secret>(nullptr, ns, n));
      if (o) obs.plugin_objects.secrets[n] = std::move(*o);
    }
  }
  for (const auto& v : job.spec.volumes) {
    if (v.volume_claim_name.empty()) continue;
    TEPHRA_ASSIGN_OR_RETURN(auto o, Lookup(opts_.pvcs, ns, v.volume_claim_name));
    if (o) obs.pvcs.insert(v.volume_claim_name);
  }
  if (!job.spec.queue.empty()) {
    auto q = Lookup(opts_.queues, "", job.spec.queue);
    if (q.ok() && *q) obs.queue = std::move(**q);
    // Only a synced queue informer proves absence (without one, a failed GET proves nothing).
    obs.queue_missing = opts_.queues && q.ok() && !*q;
  }
  std::set<std::string> pcs;
  if (!job.spec.priority_class_name.empty()) pcs.insert(job.spec.priority_class_name);
  for (const auto& t : job.spec.tasks)
    if (!t.template_.spec.priority_class_name.empty()) pcs.insert(t.template_.spec.priority_class_name);
  for (const auto& n : pcs) {
    auto pc = Lookup(opts_.priority_classes, "", n);
    if (pc.ok() && *pc) obs.priority_classes[n] = (*pc)->value;
  }

  core::MutexLock l(mu_);
  Memory& m = memory_[key];
  if (m.job_uid != job.metadata.uid) {
    std::deque<Request> keep = m.job_uid.empty() ? std::move(m.requests) : std::deque<Request>{};
    m = Memory{};
    m.job_uid = job.metadata.uid;
    m.requests = std::move(keep);
  }
  // Forget pods the cache no longer has: their deletion is now visible.
  std::set<std::string> present;
  for (const auto& p : obs.pods) present.insert(p.metadata.uid);
  for (auto it = m.handled_pod_uids.begin(); it != m.handled_pod_uids.end();)
    it = present.count(*it) ? std::next(it) : m.handled_pod_uids.erase(it);
  obs.handled_pod_uids = m.handled_pod_uids;
  if (!m.requests.empty()) obs.request = m.requests.front();
  return obs;
}

void JobReconciler::RecordEvent(const api::Job& job, const std::string& type, const std::string& reason,
                                const std::string& message) {
  if (!opts_.recorder) return;
  opts_.recorder->Event(kube::ReferenceTo(job), type == "Warning" ? kube::EventType::kWarning : kube::EventType::kNormal,
                        reason, message);
}

Status JobReconciler::CreatePods(const api::Job& job, const std::vector<api::Pod>& pods) {
  kube::Client& c = *opts_.client;
  auto create_one = [&](const api::Pod& pod) -> Status {
    auto r = c.Create(api::Pod::Resource(), pod.metadata.namespace_, api::ToJson(pod));
    if (r.ok()) return Status::OK();
    if (!core::IsAlreadyExists(r.status())) return r.status();
    // Someone (we, from a stale cache, or another leader) created it already: fine if it is ours.
    auto existing = kube::GetAs<api::Pod>(c, pod.metadata.namespace_, pod.metadata.name);
    if (!existing.ok()) return IgnoreNotFound(existing.status());
    const api::OwnerReference* ref = existing->metadata.ControllerRef();
    if (ref && ref->uid == job.metadata.uid) return Status::OK();
    return core::AlreadyExistsError("pod " + pod.metadata.name + " exists and is not controlled by this job");
  };
  Status first;
  const size_t width = static_cast<size_t>(std::max(1, opts_.pod_create_parallelism));
  for (size_t i = 0; i < pods.size(); i += width) {
    std::vector<std::future<Status>> batch;
    for (size_t k = i; k < std::min(pods.size(), i + width); ++k)
      batch.push_back(std::async(std::launch::async, create_one, std::cref(pods[k])));
    for (size_t k = 0; k < batch.size(); ++k) {
      Status s = batch[k].get();
      if (s.ok()) continue;
      const std::string& name = pods[i + k].metadata.name;
      RecordEvent(job, "Warning", "FailedCreate", "Error creating pod " + name + ": " + s.message());
      kube::log::Warn("creating pod failed").Kv("job", job.metadata.Key()).Kv("pod", name).Kv("error", s);
      Keep(&first, std::move(s).Annotate("creating pod " + name));
    }
  }
  return first;
}

Status JobReconciler::Execute(const std::string& key, const Observed& obs, const Actions& a, bool* status_conflict,
                              std::optional<api::Job>* written) {
  kube::Client& c = *opts_.client;
  const api::Job& job = obs.job;
  const std::string& ns = job.metadata.namespace_;
  std::string rv = job.metadata.resource_version;
  *status_conflict = false;
  written->reset();

  // 1. The job itself: spec/metadata first (PVC names), then the status (resourceVersion precondition).
  if (a.update_job) {
    auto r = c.Update(api::Job::Resource(), ns, api::ToJson(*a.update_job));
    if (core::IsConflict(r.status())) {
      *status_conflict = true;
      return Status::OK();
    }
    if (!r.ok()) {
      if (!a.defaulted.empty()) RecordEvent(job, "Warning", "DefaultingFailed", r.status().message());
      return r.status().Annotate(a.defaulted.empty() ? "updating job" : "writing admission defaults to job");
    }
    if (auto it = r->find("metadata"); it != r->end() && it->contains("resourceVersion"))
      rv = (*it)["resourceVersion"].get<std::string>();
    if (auto w = api::FromJson<api::Job>(*r); w.ok()) *written = std::move(w).value();
    if (!a.defaulted.empty()) defaults_applied_->With({ns})->Inc();
  }
  if (a.update_status) {
    api::Job upd = a.update_job ? *a.update_job : job;
    upd.metadata.resource_version = rv;
    upd.status = *a.update_status;
    auto r = c.Update(api::Job::Resource(), ns, api::ToJson(upd), "status");
    if (core::IsConflict(r.status())) {
      *status_conflict = true;
      return Status::OK();
    }
    if (!r.ok()) {
      RecordEvent(job, "Warning", "JobStatusError", r.status().message());
      return r.status().Annotate("updating job status");
    }
    // Counted on the write that makes the change, so a re-read of the same status never counts twice.
    const auto& was = job.status;
    const auto& now = *a.update_status;
    if (now.state.phase != was.state.phase) {
      if (now.state.phase == api::kJobPhaseCompleted) completed_->With({job.metadata.name, job.spec.queue})->Inc();
      if (now.state.phase == api::kJobPhaseFailed) failed_->With({job.metadata.name, job.spec.queue})->Inc();
    }
    if (now.retry_count > was.retry_count)
      restarts_->With({job.spec.queue, a.action.empty() ? "unknown" : a.action})->Inc(now.retry_count - was.retry_count);
  }

  Status first;
  // 2. Victims: mark, then delete. The mark is what makes a deletion distinguishable from an eviction
  //    and survives a controller restart; no mark, no delete.
  for (const auto& name : a.delete_pods) {
    const api::Pod* pod = nullptr;
    for (const auto& p : obs.pods)
      if (p.metadata.name == name) pod = &p;
    if (!pod) continue;
    if (!IsMarked(*pod)) {
      api::json patch = {{"metadata", {{"annotations", {{std::string(api::kPodOutOfSyncKey), "true"}}}}}};
      auto r = c.Patch(api::Pod::Resource(), ns, name, kube::PatchType::kMerge, patch);
      if (core::IsNotFound(r.status())) continue;
      if (!r.ok()) {
        Keep(&first, r.status().Annotate("marking pod " + name));
        continue;
      }
    }
    kube::DeleteOptions opts;
    opts.precondition_uid = pod->metadata.uid;  // never delete a newer pod that reused the name
    Status s = c.Delete(api::Pod::Resource(), ns, name, opts);
    if (core::IsConflict(s)) s = Status::OK();
    s = IgnoreNotFound(s);
    if (!s.ok()) {
      RecordEvent(job, "Warning", "FailedDelete", "Error deleting pod " + name + ": " + s.message());
      Keep(&first, std::move(s).Annotate("deleting pod " + name));
      continue;
    }
    core::MutexLock l(mu_);
    memory_[key].handled_pod_uids.insert(pod->metadata.uid);
  }
  for (const auto& name : a.mark_pods) {
    const api::Pod* pod = nullptr;
    for (const auto& p : obs.pods)
      if (p.metadata.name == name) pod = &p;
    if (!pod) continue;
    // metadata.uid in a merge patch is a precondition: a re-created pod of the same name is not marked.
    api::json patch = {{"metadata",
                        {{"uid", pod->metadata.uid}, {"annotations", {{std::string(api::kPodOutOfSyncKey), "true"}}}}}};
    auto r = c.Patch(api::Pod::Resource(), ns, name, kube::PatchType::kMerge, patch);
    if (core::IsNotFound(r.status()) || core::IsConflict(r.status())) continue;  // gone: nothing can re-trigger
    if (!r.ok()) {
      Keep(&first, r.status().Annotate("marking pod " + name));
      continue;
    }
    core::MutexLock l(mu_);
    memory_[key].handled_pod_uids.insert(pod->metadata.uid);
  }
  if (a.delete_pod_group) {
    kube::DeleteOptions del;
    if (!a.delete_pod_group_uid.empty()) del.precondition_uid = a.delete_pod_group_uid;
    Status s = c.Delete(api::PodGroup::Resource(), ns, *a.delete_pod_group, del);
    // NotFound: already gone. Conflict on the uid: the name now belongs to the next run's PodGroup.
    if (core::IsNotFound(s) || (core::IsConflict(s) && !a.delete_pod_group_uid.empty())) s = Status::OK();
    if (!s.ok()) RecordEvent(job, "Warning", "PodGroupError", s.message());
    Keep(&first, s);
  }
  const auto& d = a.delete_plugin_objects;
  for (const auto& n : d.config_maps) Keep(&first, IgnoreNotFound(c.Delete(api::ConfigMap::Resource(), ns, n)));
  for (const auto& n : d.services) Keep(&first, IgnoreNotFound(c.Delete(api::Service::Resource(), ns, n)));
  for (const auto& n : d.network_policies)
    Keep(&first, IgnoreNotFound(c.Delete(api::NetworkPolicy::Resource(), ns, n)));
  for (const auto& n : d.secrets) Keep(&first, IgnoreNotFound(c.Delete(api::Secret::Resource(), ns, n)));

  // 3. What the job needs before its pods.
  for (const auto& pvc : a.create_pvcs) {
    Status s = CreateObj(c, pvc);
    if (!s.ok()) RecordEvent(job, "Warning", "PVCError", s.message());
    Keep(&first, s);
  }
  if (a.create_pod_group) {
    Status s = CreateObj(c, *a.create_pod_group);
    if (!s.ok()) RecordEvent(job, "Warning", "PodGroupError", s.message());
    Keep(&first, s);
  }
  if (a.update_pod_group) {
    auto r = c.Update(api::PodGroup::Resource(), ns, api::ToJson(*a.update_pod_group));
    if (!r.ok() && !core::IsConflict(r.status())) RecordEvent(job, "Warning", "PodGroupError", r.status().message());
    Keep(&first, r.status());
  }
  const auto& cr = a.create_plugin_objects;
  for (const auto& [n, o] : cr.config_maps) Keep(&first, CreateObj(c, o));
  for (const auto& [n, o] : cr.services) Keep(&first, CreateObj(c, o));
  for (const auto& [n, o] : cr.network_policies) Keep(&first, CreateObj(c, o));
  for (const auto& [n, o] : cr.secrets) Keep(&first, CreateObj(c, o));
  for (const auto& cm : a.update_config_maps)
    Keep(&first, c.Update(api::ConfigMap::Resource(), ns, api::ToJson(cm)).status());

  // 4. Pods, in parallel. A rejection is written into status.state so `kubectl get vcjob -o yaml` says why.
  if (!a.create_pods.empty()) {
    Status s = CreatePods(job, a.create_pods);
    // The first pods of the first run: creation-to-pods latency.
    const auto& st = job.status;
    if (s.ok() && st.retry_count == 0 && st.pending + st.running + st.succeeded + st.failed == 0) {
      core::Clock::WallTime created;
      if (core::ParseRfc3339(job.metadata.creation_timestamp, &created)) {
        const double ms = std::chrono::duration<double, std::milli>(clock_.WallNow() - created).count();
        if (ms >= 0) pod_creation_ms_->Observe(ms);
      }
    }
    const std::string& reason = job.status.state.reason;
    if (!s.ok() && s.code() != core::StatusCode::kUnavailable) {
      api::json patch = {{"status", {{"state", {{"reason", "FailedCreatePod"}, {"message", s.message()}}}}}};
      (void)c.Patch(api::Job::Resource(), ns, job.metadata.name, kube::PatchType::kMerge, patch, "status");
    } else if (s.ok() && reason == "FailedCreatePod") {
      api::json patch = {{"status", {{"state", {{"reason", ""}, {"message", ""}}}}}};
      (void)c.Patch(api::Job::Resource(), ns, job.metadata.name, kube::PatchType::kMerge, patch, "status");
    }
    Keep(&first, s);
  }

  if (a.delete_job) {
    kube::DeleteOptions opts;
    opts.propagation_policy = "Foreground";
    opts.precondition_uid = job.metadata.uid;
    Keep(&first, IgnoreNotFound(c.Delete(api::Job::Resource(), ns, job.metadata.name, opts)));
  }
  for (const auto& e : a.events) RecordEvent(job, e.type, e.reason, e.message);
  return first;
}

kube::ReconcileResult JobReconciler::Reconcile(const std::string& key) {
  std::string ns, name;
  kube::SplitKey(key, &ns, &name);
  // After the admission defaults were written: the job as the API server stored it, planned at once.
  std::optional<api::Job> defaulted;
  for (int attempt = 0; attempt <= opts_.conflict_retries; ++attempt) {
    // The first attempt trusts the cache; after a 409 the job is read from the API server.
    std::optional<api::Job> job;
    const bool just_defaulted = defaulted.has_value();
    if (just_defaulted) {
      job = std::move(defaulted);
      defaulted.reset();
    } else if (attempt == 0 && !TakeFreshRead(key)) {
      if (auto p = opts_.jobs->Get(ns, name)) job = *p;
    } else {
      auto r = kube::GetAs<api::Job>(*opts_.client, ns, name);
      if (r.ok()) job = std::move(r).value();
      else if (!core::IsNotFound(r.status())) return kube::ReconcileResult::Error(r.status());
    }
    if (!job) {
      core::MutexLock l(mu_);
      memory_.erase(key);
      return kube::ReconcileResult::Success();
    }
    auto obs = Observe(*job, key);
    if (!obs.ok()) return kube::ReconcileResult::Error(obs.status());
    Actions actions = Plan(*obs);
    if (!actions.defaulted.empty() && just_defaulted) {
      // The object the API server returned for our write still lacks defaults: something (a CRD schema
      // that prunes the fields) drops them. Writing again would never end; nothing may be planned either.
      kube::log::Error("admission defaults written to the job did not persist").Kv("job", key);
      return kube::ReconcileResult::Error(
          core::InternalError("job " + key + ": admission defaults written to the job did not persist"));
    }
    for (const auto& line : actions.log) kube::log::Info(line).Kv("job", key);
    if (actions.action != api::kActionSyncJob)
      kube::log::Info("executing action").Kv("job", key).Kv("action", actions.action).Kv("event", actions.event);
    bool conflict = false;
    std::optional<api::Job> written;
    Status s = Execute(key, *obs, actions, &conflict, &written);
    if (conflict) continue;
    if (!actions.defaulted.empty()) {
      // Nothing else was planned from the undefaulted spec; a pending Command request stays for the real pass.
      if (!s.ok()) return kube::ReconcileResult::Error(s);
      // Without a decodable answer, the watch event of the write brings the job back.
      if (!written) return kube::ReconcileResult::Success();
      defaulted = std::move(written);
      continue;
    }
    bool more_requests = false;
    if (obs->request) {
      // Consumed once its transition was written (or nothing needed writing). Requests queued meanwhile (two
      // Commands back to back) each get their own pass, in order, as Volcano's work queue gives them.
      core::MutexLock l(mu_);
      Memory& m = memory_[key];
      if (!m.requests.empty()) m.requests.pop_front();
      more_requests = !m.requests.empty();
      // The next request is planned on the job as the API server has it now: the cache may not show the
      // transition just written yet, and a plan on the old phase would act as if the first never ran.
      m.fresh_read = more_requests;
    }
    if (!s.ok()) return kube::ReconcileResult::Error(s);
    if (!actions.sync_error.ok()) return kube::ReconcileResult::Error(actions.sync_error);
    if (more_requests) return kube::ReconcileResult::RequeueAfter(std::chrono::milliseconds(0));
    if (actions.requeue_after) return kube::ReconcileResult::RequeueAfter(*actions.requeue_after);
    return kube::ReconcileResult::Success();
  }
  return kube::ReconcileResult::Error(core::AbortedError("job " + key + ": status kept conflicting"));
}

}  // namespace tephra::reconcilers::job
