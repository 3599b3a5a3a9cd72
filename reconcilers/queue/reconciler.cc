#include "queue/reconciler.h"

#include "tephra/api/batch.h"
#include "tephra/api/labels.h"
#include "tephra/kube/log.h"

namespace tephra::reconcilers::queue {
namespace {

std::string PodGroupQueue(const api::PodGroup& pg) {
  return pg.spec.queue.empty() ? std::string(api::kDefaultQueue) : pg.spec.queue;
}
std::string QueueParent(const api::Queue& q) {
  if (!q.spec.parent.empty()) return q.spec.parent;
  return q.metadata.name == api::kRootQueue ? std::string() : std::string(api::kRootQueue);
}

// Volcano's five per-phase gauges (the counters the Queue status no longer carries).
const char* const kPhases[] = {"Inqueue", "Pending", "Running", "Unknown", "Completed"};

}  // namespace

QueueReconciler::QueueReconciler(QueueReconcilerOptions opts) : opts_(std::move(opts)) {
  auto& reg = opts_.registry ? *opts_.registry : kube::metrics::Registry::Default();
  for (const char* p : kPhases) {
    std::string lower(p);
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    phase_gauges_[p] = &reg.AddGauge("volcano_queue_pod_group_" + lower + "_count",
                                     std::string("PodGroups in phase ") + p + " per queue", {"queue_name"});
  }
}

void QueueReconciler::AddIndexers(kube::Informer<api::Queue>& queues, kube::Informer<api::PodGroup>& pod_groups) {
  pod_groups.AddIndexer(kIndexPodGroupQueue, [](const api::PodGroup& pg) { return std::vector<std::string>{PodGroupQueue(pg)}; });
  queues.AddIndexer(kIndexQueueParent, [](const api::Queue& q) {
    std::string p = QueueParent(q);
    return p.empty() ? std::vector<std::string>{} : std::vector<std::string>{p};
  });
}

void QueueReconciler::RegisterHandlers(kube::Controller& c) {
  controller_ = &c;
  auto* queues = opts_.queues;
  auto enqueue_with_children = [&c, queues](const api::Queue& q) {
    c.Enqueue(q.metadata.name);
    for (const auto& child : queues->ByIndex(kIndexQueueParent, q.metadata.name)) c.Enqueue(child->metadata.name);
  };
  queues->AddEventHandler({
      .on_add = [enqueue_with_children](const kube::Informer<api::Queue>::Ptr& q) { enqueue_with_children(*q); },
      .on_update = [enqueue_with_children](const kube::Informer<api::Queue>::Ptr&,
                                           const kube::Informer<api::Queue>::Ptr& q) { enqueue_with_children(*q); },
      .on_delete = [enqueue_with_children](const kube::Informer<api::Queue>::Ptr& q) { enqueue_with_children(*q); },
  });
  // Only the queue's counts (its gauges, and when a Closing queue is empty) depend on its PodGroups, and a
  // count walks every PodGroup of the queue: a burst of 1,000 jobs changed phases about 3,000 times, each a walk
  // of 1,000. A PodGroup change therefore asks for a count kPodGroupCountDelay later; the delaying queue keeps
  // one such request per queue, so a queue is counted at most about once per delay however busy it is.
  auto count_later = [&c](const api::PodGroup& pg) { c.EnqueueAfter(PodGroupQueue(pg), kPodGroupCountDelay); };
  opts_.pod_groups->AddEventHandler({
      .on_add = [count_later](const kube::Informer<api::PodGroup>::Ptr& pg) { count_later(*pg); },
      .on_update =
          [count_later](const kube::Informer<api::PodGroup>::Ptr& old_pg, const kube::Informer<api::PodGroup>::Ptr& pg) {
            // Skip updates that change neither queue nor phase.
            if (PodGroupQueue(*old_pg) == PodGroupQueue(*pg) && old_pg->status.phase == pg->status.phase) return;
            count_later(*old_pg);
            count_later(*pg);
          },
      .on_delete = [count_later](const kube::Informer<api::PodGroup>::Ptr& pg) { count_later(*pg); },
  });
}

void QueueReconciler::Submit(const std::string& name, const std::string& action) {
  {
    core::MutexLock l(mu_);
    pending_[name] = action;
  }
  if (controller_) controller_->Enqueue(name);
}

kube::ReconcileResult QueueReconciler::Reconcile(const std::string& key) {
  auto q = opts_.queues->Get(key);
  if (!q) {
    core::MutexLock l(mu_);
    pending_.erase(key);  // a command for a deleted queue has nothing left to act on
    for (auto& [phase, g] : phase_gauges_) g->With({key})->Set(0);
    return kube::ReconcileResult::Success();
  }
  Observed obs;
  obs.queue = *q;
  if (!q->spec.parent.empty())
    if (auto p = opts_.queues->Get(q->spec.parent)) obs.parent = *p;
  for (const auto& pg : opts_.pod_groups->ByIndex(kIndexPodGroupQueue, key))
    obs.pod_groups_by_phase[pg->status.phase.empty() ? std::string(api::kPodGroupPending) : pg->status.phase]++;
  {
    core::MutexLock l(mu_);
    auto it = pending_.find(key);
    if (it != pending_.end()) obs.command = it->second;
  }
  for (const char* p : kPhases) {
    auto it = obs.pod_groups_by_phase.find(p);
    phase_gauges_[p]->With({key})->Set(it == obs.pod_groups_by_phase.end() ? 0 : it->second);
  }

  Actions a = Plan(obs);
  auto& client = *opts_.client;
  const auto& res = api::Queue::Resource();
  if (a.set_parent_root || a.closed_by_parent) {
    api::json patch = api::json::object();
    if (a.set_parent_root) patch["spec"]["parent"] = std::string(api::kRootQueue);
    if (a.closed_by_parent) {
      const std::string k(api::kClosedByParentAnnotation);
      patch["metadata"]["annotations"][k] = *a.closed_by_parent ? "true" : "false";
    }
    auto r = client.Patch(res, "", key, kube::PatchType::kMerge, patch);
    if (!r.ok()) return kube::ReconcileResult::Error(r.status().Annotate("patching queue " + key));
  }
  if (a.set_state) {
    api::json patch = {{"status", {{"state", *a.set_state}}}};
    auto r = client.Patch(res, "", key, kube::PatchType::kMerge, patch, "status");
    if (!r.ok()) return kube::ReconcileResult::Error(r.status().Annotate("writing state of queue " + key));
    kube::log::Info("queue state").Kv("queue", key).Kv("action", a.action).Kv("from", q->status.state).Kv("to", *a.set_state);
  }
  if (opts_.recorder)
    for (const auto& e : a.events)
      opts_.recorder->Event(kube::ReferenceTo(*q), e.type == "Warning" ? kube::EventType::kWarning : kube::EventType::kNormal,
                            e.reason, e.message);
  if (obs.command) {
    core::MutexLock l(mu_);
    auto it = pending_.find(key);
    if (it != pending_.end() && it->second == *obs.command) pending_.erase(it);
  }
  return kube::ReconcileResult::Success();
}

}  // namespace tephra::reconcilers::queue
