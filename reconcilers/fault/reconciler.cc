#include "fault/reconciler.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "tephra/api/codec.h"
#include "tephra/api/labels.h"
#include "tephra/kube/log.h"

namespace tephra::reconcilers::fault {

namespace log = kube::log;

namespace {

// How long the controller trusts its own node write over a cache that does not show it yet.
constexpr std::chrono::seconds kEchoWait{5};

// What Detect reads: an update that changes none of it (a heartbeat) is not a reason to plan again.
bool FaultInputsChanged(const api::Node& a, const api::Node& b) {
  if (a.metadata.annotations != b.metadata.annotations || a.spec.unschedulable != b.spec.unschedulable) return true;
  if (a.spec.taints.size() != b.spec.taints.size() || a.status.conditions.size() != b.status.conditions.size()) return true;
  for (size_t i = 0; i < a.spec.taints.size(); ++i)
    if (a.spec.taints[i].key != b.spec.taints[i].key || a.spec.taints[i].effect != b.spec.taints[i].effect) return true;
  for (size_t i = 0; i < a.status.conditions.size(); ++i)
    if (a.status.conditions[i].type != b.status.conditions[i].type ||
        a.status.conditions[i].status != b.status.conditions[i].status)
      return true;
  auto same = [](const api::ResourceList& x, const api::ResourceList& y) {
    if (x.size() != y.size()) return false;
    for (const auto& [k, v] : x) {
      auto it = y.find(k);
      if (it == y.end() || it->second.Value() != v.Value()) return false;
    }
    return true;
  };
  return !same(a.status.allocatable, b.status.allocatable) || !same(a.status.capacity, b.status.capacity);
}

kube::ObjectReference JobRef(const EventRecord& e) {
  kube::ObjectReference r;
  r.kind = e.job_kind;
  r.api_version = e.job_kind == "Job" ? "batch.volcano.sh/v1alpha1" : "scheduling.volcano.sh/v1beta1";
  r.namespace_ = e.job_ns;
  r.name = e.job_name;
  r.uid = e.job_uid;
  return r;
}

}  // namespace

FaultReconciler::FaultReconciler(FaultReconcilerOptions opts)
    : opts_(std::move(opts)), clock_(opts_.clock ? *opts_.clock : core::RealClock::Get()) {
  auto& reg = opts_.registry ? *opts_.registry : kube::metrics::Registry::Default();
  detected_ = &reg.AddCounter("tephra_fault_detected_total", "Faults recorded on nodes, by signal", {"signal"});
  detection_seconds_ = &reg.AddHistogram(
      "tephra_fault_detection_seconds",
      "From the time the API shows a fault started (condition transition, taint time) to the controller recording it",
      {"signal"}, {0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300});
  pods_deleted_ = &reg.AddCounter("tephra_fault_pods_deleted_total",
                                  "Batch pods deleted from faulted nodes so their jobs replace them", {"signal", "forced"});
  held_ = &reg.AddCounter("tephra_fault_actions_held_total",
                          "Faulted nodes left alone because --fault-max-node-fraction of the nodes were already handled");
  recovery_seconds_ = &reg.AddHistogram(
      "tephra_fault_recovery_seconds",
      "From a fault being acted on to the job running as many pods as before it (MTTR), by signal", {"signal"},
      {1, 2, 5, 10, 15, 20, 30, 45, 60, 120, 300, 600});
  nodes_faulted_ = reg.AddGauge("tephra_fault_nodes", "Nodes marked faulted (tephra.io/fault) in the controller's cache")
                       .With(std::vector<std::string>{});
}

void FaultReconciler::AddIndexers(kube::Informer<api::Pod>& pods) {
  pods.AddIndexer(kIndexNodeName, [](const api::Pod& p) {
    return p.spec.node_name.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.spec.node_name};
  });
  pods.AddIndexer(kIndexPodGroup, [](const api::Pod& p) {
    std::string g = GroupKey(p);
    return g.empty() ? std::vector<std::string>{} : std::vector<std::string>{std::move(g)};
  });
}

void FaultReconciler::RegisterHandlers(kube::Controller& c) {
  controller_ = &c;
  kube::Informer<api::Node>* nodes = opts_.nodes;
  if (opts_.pod_groups)
    // A recovery that a stopped controller left marked True is taken up again.
    opts_.pod_groups->AddEventHandler({
        .on_add =
            [&c](const auto& pg) {
              for (const auto& cond : pg->status.conditions)
                if (cond.type == kFaultConditionType && cond.status == "True")
                  c.Enqueue("pg/" + pg->metadata.namespace_ + "/" + pg->metadata.name);
            },
        .on_update = nullptr,
        .on_delete = nullptr,
    });
  opts_.nodes->AddEventHandler({
      .on_add = [&c](const auto& n) { c.Enqueue(n->metadata.name); },
      .on_update =
          [&c, nodes](const auto& old_obj, const auto& new_obj) {
            if (!FaultInputsChanged(*old_obj, *new_obj)) return;
            c.Enqueue(new_obj->metadata.name);
            // A node that stopped being handled frees budget for the ones held back.
            if (old_obj->metadata.annotations.count(kFaultAnnotation) && !new_obj->metadata.annotations.count(kFaultAnnotation))
              for (const auto& n : nodes->List())
                if (n->metadata.annotations.count(kHeldAnnotation)) c.Enqueue(n->metadata.name);
          },
      .on_delete = nullptr,
  });
  // A batch pod bound to a node already marked faulted (a late bind, a cache that lagged) is handled too.
  // So is a batch pod that fails on one, and a batch pod the kubelet refused at admission on any node.
  auto pod_on_faulted_node = [&c, nodes](const api::Pod& p) {
    if (p.spec.node_name.empty() || GroupKey(p).empty()) return;
    if (p.status.phase == "Failed" && p.status.reason == kUnexpectedAdmissionError) {
      c.Enqueue(p.spec.node_name);
      return;
    }
    if (!IsBatchPod(p) && p.status.phase != "Failed") return;
    if (auto n = nodes->Get(p.spec.node_name); n && n->metadata.annotations.count(kFaultAnnotation)) c.Enqueue(p.spec.node_name);
  };
  opts_.pods->AddEventHandler({
      .on_add =
          [this, pod_on_faulted_node](const auto& p) {
            pod_on_faulted_node(*p);
            CheckRecovery(*p);
          },
      .on_update =
          [this, pod_on_faulted_node](const auto&, const auto& p) {
            pod_on_faulted_node(*p);
            CheckRecovery(*p);
          },
      .on_delete = nullptr,
  });
}

int FaultReconciler::CountGroup(const std::string& ns, const std::string& group, bool running_only) const {
  int n = 0;
  for (const auto& p : opts_.pods->ByIndex(kIndexPodGroup, ns + "/" + group)) {
    if (!IsBatchPod(*p) || p->spec.node_name.empty()) continue;
    if (running_only && (p->status.phase != "Running" || !p->metadata.deletion_timestamp.empty())) continue;
    ++n;
  }
  return n;
}

bool FaultReconciler::StartRecovery(const PodDelete& d, const std::string& group, bool finished,
                                    const std::string& node, core::Clock::WallTime now) {
  const int want = CountGroup(d.ns, group, /*running_only=*/false) + (finished ? 1 : 0);
  core::MutexLock l(mu_);
  auto [it, fresh] = recovering_.try_emplace(d.ns + "/" + group);
  if (fresh) {
    it->second.since = now;
    it->second.signal = d.signal;
    it->second.message = "pod " + d.name + " deleted from node " + node + " (" + d.signal + ") at " +
                         core::FormatRfc3339(now) + "; waiting for the gang to run again";
    it->second.job = {.on = EventRecord::On::kJob, .job_kind = d.job_kind, .job_ns = d.ns, .job_name = d.job_name,
                      .job_uid = d.job_uid};
    recovered_.erase(it->first);
  }
  it->second.want = std::max(it->second.want, want);
  return fresh;
}

void FaultReconciler::CheckRecovery(const api::Pod& p) {
  if (p.status.phase != "Running") return;
  auto g = p.metadata.annotations.find(std::string(api::kPodGroupAnnotation));
  if (g == p.metadata.annotations.end()) return;
  const std::string key = p.metadata.namespace_ + "/" + g->second;
  Recovery r;
  {
    core::MutexLock l(mu_);
    auto it = recovering_.find(key);
    if (it == recovering_.end()) return;
    r = it->second;
  }
  const int running = CountGroup(p.metadata.namespace_, g->second, /*running_only=*/true);
  if (running < r.want) return;
  {
    core::MutexLock l(mu_);
    if (!recovering_.erase(key)) return;  // another event got there first
  }
  const double seconds = std::chrono::duration<double>(clock_.WallNow() - r.since).count();
  recovery_seconds_->With({r.signal})->Observe(seconds);
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", seconds);
  log::Info("job recovered from a fault").Kv("podgroup", key).Kv("pods", running).Kv("seconds", text);
  const std::string message =
      std::to_string(running) + " pods running again " + text + " s after the " + r.signal + " fault was acted on";
  if (opts_.recorder) opts_.recorder->Event(JobRef(r.job), kube::EventType::kNormal, "FaultRecovered", message);
  if (controller_ && opts_.pod_groups) {
    {
      core::MutexLock l(mu_);
      recovered_[key] = message;
    }
    controller_->Enqueue("pg/" + key);
  }
}

kube::ReconcileResult FaultReconciler::ReconcileGroup(const std::string& key) {
  if (!opts_.pod_groups) return kube::ReconcileResult::Success();
  auto pg = opts_.pod_groups->Get(key);
  if (!pg) {
    core::MutexLock l(mu_);
    recovered_.erase(key);
    return kube::ReconcileResult::Success();
  }
  const api::PodGroupCondition* cur = nullptr;
  for (const auto& c : pg->status.conditions)
    if (c.type == kFaultConditionType) cur = &c;
  std::string status, reason, message;
  {
    core::MutexLock l(mu_);
    if (auto r = recovering_.find(key); r != recovering_.end()) {
      status = "True";
      reason = r->second.signal;
      message = r->second.message;
    } else if (auto d = recovered_.find(key); d != recovered_.end()) {
      status = "False";
      reason = "Recovered";
      message = d->second;
    }
  }
  const auto now = clock_.WallNow();
  if (status.empty()) {
    // True, and this process knows nothing of it: a controller stopped in the middle of the recovery.
    if (!cur || cur->status != "True") return kube::ReconcileResult::Success();
    const int running = CountGroup(pg->metadata.namespace_, pg->metadata.name, /*running_only=*/true);
    const int want = std::max(1, static_cast<int>(pg->spec.min_member));
    if (running < want) {
      // Watched again from here: the pod that completes the gang ends it (CheckRecovery).
      core::MutexLock l(mu_);
      auto [it, fresh] = recovering_.try_emplace(key);
      if (fresh) {
        if (!core::ParseRfc3339(cur->last_transition_time, &it->second.since)) it->second.since = now;
        it->second.signal = cur->reason;
        it->second.message = cur->message;
        it->second.want = want;
        it->second.job = {.on = EventRecord::On::kJob, .job_kind = "PodGroup", .job_ns = pg->metadata.namespace_,
                          .job_name = pg->metadata.name, .job_uid = pg->metadata.uid};
      }
      return kube::ReconcileResult::Success();
    }
    status = "False";
    reason = "Recovered";
    message = std::to_string(running) + " pods running again (the recovery ended while no fault controller watched)";
  }
  auto done = [&]() {
    if (status != "False") return;
    core::MutexLock l(mu_);
    recovered_.erase(key);
  };
  if (cur && cur->status == status && cur->reason == reason && cur->message == message) {
    done();
    return kube::ReconcileResult::Success();
  }
  api::PodGroup updated = *pg;
  api::PodGroupCondition* c = nullptr;
  for (auto& e : updated.status.conditions)
    if (e.type == kFaultConditionType) c = &e;
  if (!c) {
    updated.status.conditions.emplace_back();
    c = &updated.status.conditions.back();
    c->type = kFaultConditionType;
  }
  if (c->status != status) c->last_transition_time = core::FormatRfc3339(now);
  c->status = status;
  c->reason = reason;
  c->message = message;
  // The whole object, as the scheduler writes it: Volcano's PodGroup CRD has no status subresource. The
  // cached resourceVersion is the precondition: a 409 (the scheduler wrote meanwhile) is retried once the
  // cache has the newer object.
  auto r = kube::UpdateAs(*opts_.client, updated);
  if (!r.ok() && !core::IsNotFound(r.status()))
    return kube::ReconcileResult::Error(r.status().Annotate("setting the FaultRecovery condition of PodGroup " + key));
  done();
  return kube::ReconcileResult::Success();
}

core::Status FaultReconciler::PatchNode(const api::Node& node, const Actions& a) {
  api::json ann = api::json::object();
  auto put = [&ann](const char* key, const std::optional<std::optional<std::string>>& v) {
    if (!v) return;
    ann[key] = *v ? api::json(**v) : api::json(nullptr);
  };
  put(kFaultAnnotation, a.fault_annotation);
  put(kHeldAnnotation, a.held_annotation);
  put(kAvoidUntilAnnotation, a.avoid_annotation);
  put(kSinceAnnotation, a.since_annotation);
  api::json patch = api::json::object();
  if (a.cordon) {
    ann[kCordonedAnnotation] = *a.cordon ? api::json("true") : api::json(nullptr);
    patch["spec"] = {{"unschedulable", *a.cordon}};
  }
  if (ann.empty() && !a.cordon) return core::Status::OK();
  patch["metadata"] = {{"annotations", ann}};
  auto r = opts_.client->Patch(api::Node::Resource(), "", node.metadata.name, kube::PatchType::kMerge, patch);
  if (!r.ok()) return r.status().Annotate("recording the fault on node " + node.metadata.name);
  return core::Status::OK();
}

kube::ReconcileResult FaultReconciler::Reconcile(const std::string& key) {
  if (key.rfind("pg/", 0) == 0) return ReconcileGroup(key.substr(3));  // node names hold no '/'
  auto node = opts_.nodes->Get(key);
  if (!node) return kube::ReconcileResult::Success();
  Observed o;
  o.node = *node;
  o.now = clock_.WallNow();
  {
    core::MutexLock l(mu_);
    if (auto w = written_.find(key); w != written_.end()) {
      auto cached = node->metadata.annotations.find(kFaultAnnotation);
      const std::optional<std::string> seen =
          cached == node->metadata.annotations.end() ? std::nullopt : std::optional<std::string>(cached->second);
      if (seen == w->second.first || o.now - w->second.second > kEchoWait) written_.erase(w);
      else return kube::ReconcileResult::RequeueAfter(std::chrono::milliseconds(200));
    }
  }
  for (const auto& p : opts_.pods->ByIndex(kIndexNodeName, key)) {
    o.pods.push_back(*p);
    const std::string group = GroupKey(*p);
    if (group.empty() || o.groups.count(group)) continue;
    auto& members = o.groups[group];
    for (const auto& q : opts_.pods->ByIndex(kIndexPodGroup, group)) members.push_back(*q);
    const auto job = p->metadata.annotations.find(std::string(api::kJobNameKey));
    if (opts_.jobs && job != p->metadata.annotations.end())
      if (auto j = opts_.jobs->Get(p->metadata.namespace_, job->second))
        o.jobs[p->metadata.namespace_ + "/" + job->second] = j->metadata;
  }
  int acted = 0, marked = 0;
  const auto all = opts_.nodes->List();
  // Marks this controller wrote that the cache has not brought back yet count too: two nodes planned
  // 10 ms apart must not both take the last slot of the budget.
  std::set<std::string> written_marks;
  {
    core::MutexLock l(mu_);
    for (const auto& [name, w] : written_)
      if (w.first && o.now - w.second <= kEchoWait) written_marks.insert(name);
  }
  for (const auto& n : all) {
    const bool cached = n->metadata.annotations.count(kFaultAnnotation) > 0;
    marked += cached;
    acted += CountsAgainstBudget(*n, opts_.config, o.now) || (!cached && written_marks.count(n->metadata.name));
  }
  o.nodes_total = static_cast<int>(all.size());
  o.nodes_acted = acted;
  nodes_faulted_->Set(marked);

  {
    // A job that never runs its pods again (deleted, scaled down, stuck) is not waited for past an hour.
    core::MutexLock l(mu_);
    std::erase_if(recovering_, [&](const auto& kv) { return o.now - kv.second.since > std::chrono::hours(1); });
  }
  const Actions a = Plan(o, opts_.config);
  // The node's record first: once it is written, the fault is said once whatever happens to the deletes.
  if (core::Status s = PatchNode(*node, a); !s.ok()) return kube::ReconcileResult::Error(std::move(s));
  if (a.fault_annotation) {
    core::MutexLock l(mu_);
    written_[key] = {*a.fault_annotation, o.now};
  }
  for (const auto& sig : a.detected) {
    detected_->With({sig.name})->Inc();
    core::Clock::WallTime since;
    if (core::ParseRfc3339(sig.since, &since) && since <= o.now)
      detection_seconds_->With({sig.name})->Observe(std::chrono::duration<double>(o.now - since).count());
    log::Warn("fault detected").Kv("node", key).Kv("signal", sig.name).Kv("message", sig.message);
  }
  if (a.held_annotation && *a.held_annotation) {
    held_->With(std::vector<std::string>{})->Inc();
    log::Warn("fault actions held by the node budget").Kv("node", key).Kv("signals", **a.held_annotation);
  }
  if (a.fault_annotation && !*a.fault_annotation) log::Info("fault cleared").Kv("node", key);
  if (opts_.recorder)
    for (const auto& e : a.events) {
      const auto type = e.type == "Warning" ? kube::EventType::kWarning : kube::EventType::kNormal;
      opts_.recorder->Event(e.on == EventRecord::On::kNode ? kube::ReferenceTo(*node) : JobRef(e), type, e.reason,
                            e.message);
    }
  core::Status first;
  for (const auto& d : a.deletes) {
    kube::DeleteOptions del;
    del.grace_period_seconds = d.grace_seconds;
    del.precondition_uid = d.uid;
    // Before the delete: the group's count must still include the pod being replaced.
    if (auto pod = opts_.pods->Get(d.ns, d.name); pod && pod->metadata.deletion_timestamp.empty())
      if (auto g = pod->metadata.annotations.find(std::string(api::kPodGroupAnnotation)); g != pod->metadata.annotations.end())
        if (StartRecovery(d, g->second, !IsBatchPod(*pod), key, o.now) && controller_ && opts_.pod_groups)
          controller_->Enqueue("pg/" + d.ns + "/" + g->second);
    core::Status s = opts_.client->Delete(api::Pod::Resource(), d.ns, d.name, del);
    // Gone already, or the name now belongs to the replacement: done either way.
    if (s.ok() || core::IsNotFound(s) || core::IsConflict(s)) {
      if (s.ok()) {
        pods_deleted_->With({d.signal, d.grace_seconds && *d.grace_seconds == 0 ? "true" : "false"})->Inc();
        log::Info("pod deleted from faulted node").Kv("pod", d.ns + "/" + d.name).Kv("node", key).Kv("signal", d.signal);
      }
      continue;
    }
    if (first.ok()) first = s.Annotate("deleting pod " + d.ns + "/" + d.name + " from faulted node " + key);
  }
  if (!first.ok()) return kube::ReconcileResult::Error(std::move(first));
  if (a.requeue_after) return kube::ReconcileResult::RequeueAfter(*a.requeue_after);
  return kube::ReconcileResult::Success();
}

}  // namespace tephra::reconcilers::fault
