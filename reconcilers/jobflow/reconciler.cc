#include "jobflow/reconciler.h"

#include "tephra/api/labels.h"
#include "tephra/kube/log.h"

namespace tephra::reconcilers::jobflow {
namespace {

std::optional<std::string> TemplateKeyOf(const api::Job& job) {
  auto it = job.metadata.labels.find(std::string(api::kCreatedByJobTemplateKey));
  if (it == job.metadata.labels.end()) return std::nullopt;
  // "<ns>.<name>": namespaces are DNS labels (no dots), so the first dot separates them.
  auto dot = it->second.find('.');
  if (dot == std::string::npos) return std::nullopt;
  return it->second.substr(0, dot) + "/" + it->second.substr(dot + 1);
}

}  // namespace

JobFlowReconciler::JobFlowReconciler(JobFlowReconcilerOptions opts) : opts_(std::move(opts)) {
  auto& reg = opts_.registry ? *opts_.registry : kube::metrics::Registry::Default();
  succeed_ = &reg.AddCounter("volcano_jobflow_succeed_phase_count", "JobFlows that reached Succeed", {"jobflow_namespace"});
  failed_ = &reg.AddCounter("volcano_jobflow_failed_phase_count", "JobFlows that reached Failed", {"jobflow_namespace"});
}

void JobFlowReconciler::AddIndexers(kube::Informer<api::Job>& jobs) {
  jobs.AddIndexer(kube::kIndexOwnerUid, kube::OwnerUidIndexer<api::Job>());
  jobs.AddIndexer(kIndexJobTemplate, kube::LabelIndexer<api::Job>(std::string(api::kCreatedByJobTemplateKey)));
}

void JobFlowReconciler::RegisterHandlers(kube::Controller& c) {
  kube::EnqueueOwnKind(c, *opts_.flows);
  kube::EnqueueOwner(c, *opts_.jobs, "JobFlow", "flow.volcano.sh");
  auto* flows = opts_.flows;
  auto by_ns = [&c, flows](const api::JobTemplate& t) {
    for (const auto& f : flows->ListNamespace(t.metadata.namespace_)) c.Enqueue(f->metadata.Key());
  };
  opts_.templates->AddEventHandler({
      .on_add = [by_ns](const kube::Informer<api::JobTemplate>::Ptr& t) { by_ns(*t); },
      .on_update = nullptr,  // a template's spec is copied at job creation; later edits do not matter
      .on_delete = nullptr,
  });
}

kube::ReconcileResult JobFlowReconciler::Reconcile(const std::string& key) {
  auto jf = opts_.flows->Get(key);
  if (!jf) return kube::ReconcileResult::Success();
  Observed obs;
  obs.flow = *jf;
  obs.now = (opts_.clock ? *opts_.clock : static_cast<const core::Clock&>(core::RealClock::Get())).WallNow();
  for (const auto& f : jf->spec.flows)
    if (auto t = opts_.templates->Get(jf->metadata.namespace_, f.name)) obs.templates[f.name] = *t;
  for (const auto& j : opts_.jobs->ByIndex(kube::kIndexOwnerUid, jf->metadata.uid)) {
    const api::OwnerReference* ref = j->metadata.ControllerRef();
    if (ref && ref->uid == jf->metadata.uid) obs.jobs[j->metadata.name] = *j;
  }
  Actions a = Plan(obs);
  auto& client = *opts_.client;

  for (const auto& job : a.create_jobs) {
    auto r = client.Create(api::Job::Resource(), job.metadata.namespace_, api::ToJson(job));
    if (!r.ok() && !core::IsAlreadyExists(r.status()))
      return kube::ReconcileResult::Error(r.status().Annotate("creating job " + job.metadata.name));
    if (r.ok()) kube::log::Info("jobflow created job").Kv("jobflow", key).Kv("job", job.metadata.name);
  }
  for (const auto& t : a.missing_templates) {
    core::MutexLock l(mu_);
    if (missing_reported_.insert(key + "/" + t).second && opts_.recorder)
      opts_.recorder->Event(kube::ReferenceTo(*jf), kube::EventType::kWarning, "JobTemplateNotFound",
                            "JobTemplate " + jf->metadata.namespace_ + "/" + t + " does not exist; flow " + t +
                                " waits for it");
  }
  if (a.update_status) {
    api::JobFlow next = *jf;
    next.status = *a.update_status;
    auto r = client.Update(api::JobFlow::Resource(), next.metadata.namespace_, api::ToJson(next), "status");
    if (!r.ok()) return kube::ReconcileResult::Error(r.status().Annotate("writing status of jobflow " + key));
    const std::string& before = jf->status.state.phase;
    if (a.phase != before) {
      kube::log::Info("jobflow phase").Kv("jobflow", key).Kv("from", before).Kv("to", a.phase);
      if (a.phase == api::kFlowPhaseSucceed) succeed_->With({jf->metadata.namespace_})->Inc();
      if (a.phase == api::kFlowPhaseFailed) failed_->With({jf->metadata.namespace_})->Inc();
    }
  }
  for (const auto& name : a.delete_jobs) {
    kube::DeleteOptions d;
    d.propagation_policy = "Background";
    auto s = client.Delete(api::Job::Resource(), jf->metadata.namespace_, name, d);
    if (!s.ok() && !core::IsNotFound(s)) return kube::ReconcileResult::Error(s.Annotate("deleting job " + name));
  }
  return kube::ReconcileResult::Success();
}

void JobTemplateReconciler::RegisterHandlers(kube::Controller& c) {
  kube::EnqueueOwnKind(c, *templates_);
  auto enqueue = [&c](const api::Job& j) {
    if (auto k = TemplateKeyOf(j)) c.Enqueue(*k);
  };
  jobs_->AddEventHandler({
      .on_add = [enqueue](const kube::Informer<api::Job>::Ptr& j) { enqueue(*j); },
      .on_update = nullptr,  // the label is set at creation and the list only names jobs
      .on_delete = [enqueue](const kube::Informer<api::Job>::Ptr& j) { enqueue(*j); },
  });
}

kube::ReconcileResult JobTemplateReconciler::Reconcile(const std::string& key) {
  auto t = templates_->Get(key);
  if (!t) return kube::ReconcileResult::Success();
  std::vector<std::string> names;
  for (const auto& j : jobs_->ByIndex(kIndexJobTemplate, t->metadata.namespace_ + "." + t->metadata.name))
    names.push_back(j->metadata.name);
  auto list = PlanTemplate(*t, std::move(names));
  if (!list) return kube::ReconcileResult::Success();
  api::JobTemplate next = *t;
  next.status.job_depends_on_list = *list;
  auto r = client_->Update(api::JobTemplate::Resource(), next.metadata.namespace_, api::ToJson(next), "status");
  if (!r.ok()) return kube::ReconcileResult::Error(r.status().Annotate("writing status of jobtemplate " + key));
  return kube::ReconcileResult::Success();
}

}  // namespace tephra::reconcilers::jobflow
