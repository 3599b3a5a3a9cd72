#include "hypernode/reconciler.h"

#include "tephra/api/labels.h"
#include "tephra/kube/log.h"

namespace tephra::reconcilers::hypernode {

namespace log = kube::log;

HyperNodeReconciler::HyperNodeReconciler(HyperNodeReconcilerOptions opts) : opts_(std::move(opts)) {}

void HyperNodeReconciler::RegisterHandlers(kube::Controller& c) {
  // Heartbeats change a Node's status every few seconds; only a label change can change the topology.
  opts_.nodes->AddEventHandler({
      .on_add = [&c](const auto&) { c.Enqueue(kKey); },
      .on_update =
          [&c](const auto& old_obj, const auto& new_obj) {
            if (old_obj->metadata.labels != new_obj->metadata.labels) c.Enqueue(kKey);
          },
      .on_delete = [&c](const auto&) { c.Enqueue(kKey); },
  });
  opts_.hypernodes->AddEventHandler({
      .on_add = [&c](const auto&) { c.Enqueue(kKey); },
      .on_update = [&c](const auto&, const auto&) { c.Enqueue(kKey); },
      .on_delete = [&c](const auto&) { c.Enqueue(kKey); },
  });
  opts_.configmaps->AddEventHandler({
      .on_add = [&c](const auto&) { c.Enqueue(kKey); },
      .on_update = [&c](const auto&, const auto&) { c.Enqueue(kKey); },
      .on_delete = [&c](const auto&) { c.Enqueue(kKey); },
  });
}

void HyperNodeReconciler::Warn(const api::ConfigMap* cm, const std::string& reason, const std::string& message) {
  {
    core::MutexLock lock(mu_);
    if (last_warned_ == reason + message) return;  // same problem, same world: said once
    last_warned_ = reason + message;
  }
  log::Warn("hypernode discovery").Kv("reason", reason).Kv("message", message);
  if (cm && opts_.recorder) opts_.recorder->Event(kube::ReferenceTo(*cm), kube::EventType::kWarning, reason, message);
}

core::Status HyperNodeReconciler::Put(api::HyperNode want) {
  auto& client = *opts_.client;
  const api::HyperNode desired = want;
  for (int attempt = 0;; ++attempt) {
    auto r = client.Update(api::HyperNode::Resource(), "", api::ToJson(want));
    if (r.ok()) {
      log::Info("hypernode discovery updated HyperNode").Kv("hypernode", want.metadata.name);
      return core::Status::OK();
    }
    // A 409 means our copy was stale: read the object again and merge the desired state into it, once; a
    // second conflict goes back to the queue (backoff) and a fresh plan.
    if (!core::IsConflict(r.status()) || attempt > 0) return r.status().Annotate("updating HyperNode " + want.metadata.name);
    auto got = client.Get(api::HyperNode::Resource(), "", want.metadata.name);
    if (!got.ok()) return got.status().Annotate("re-reading HyperNode " + want.metadata.name);
    api::HyperNode cur;
    if (auto s = api::Decode(*got, &cur); !s.ok()) return s;
    if (!IsGenerated(cur))
      return core::FailedPreconditionError("HyperNode " + cur.metadata.name + " lost the label " +
                                           std::string(api::kNetworkTopologySourceLabel) + "; not touching it");
    if (!MergeInto(desired, &cur)) return core::Status::OK();
    want = std::move(cur);
  }
}

core::Status HyperNodeReconciler::Apply(const Actions& a) {
  auto& client = *opts_.client;
  for (const auto& h : a.create) {
    auto r = client.Create(api::HyperNode::Resource(), "", api::ToJson(h));
    if (r.ok()) {
      log::Info("hypernode discovery created HyperNode").Kv("hypernode", h.metadata.name).Kv("tier", h.spec.tier);
      continue;
    }
    if (!core::IsAlreadyExists(r.status())) return r.status().Annotate("creating HyperNode " + h.metadata.name);
    // Created by an earlier pass the cache has not seen yet, or by someone else: the server's copy decides.
    auto got = client.Get(api::HyperNode::Resource(), "", h.metadata.name);
    if (!got.ok()) return got.status().Annotate("reading existing HyperNode " + h.metadata.name);
    api::HyperNode cur;
    if (auto s = api::Decode(*got, &cur); !s.ok()) return s;
    if (!IsGenerated(cur))
      return core::FailedPreconditionError("HyperNode " + h.metadata.name + " exists without the label " +
                                           std::string(api::kNetworkTopologySourceLabel) + "=label; not touching it");
    if (MergeInto(h, &cur)) TEPHRA_RETURN_IF_ERROR(Put(std::move(cur)));
  }
  for (const auto& h : a.update) TEPHRA_RETURN_IF_ERROR(Put(h));
  for (const auto& name : a.remove) {
    auto s = client.Delete(api::HyperNode::Resource(), "", name);
    if (!s.ok() && !core::IsNotFound(s)) return s.Annotate("deleting HyperNode " + name);
    if (s.ok()) log::Info("hypernode discovery deleted HyperNode").Kv("hypernode", name);
  }
  return core::Status::OK();
}

kube::ReconcileResult HyperNodeReconciler::Reconcile(const std::string&) {
  Observed obs;
  auto cm = opts_.configmaps->Get(opts_.config_namespace, opts_.config_name);
  // No ConfigMap, or none of its key: nothing says what the topology is, so nothing is written and the
  // generated HyperNodes stay (as in Volcano). A ConfigMap deleted by mistake, or recreated by a chart
  // upgrade, must not take the scheduler's topology away; an explicit `enabled: false` removes them.
  if (!cm) return kube::ReconcileResult::Success();
  auto it = cm->data.find(std::string(kConfigKey));
  if (it == cm->data.end()) return kube::ReconcileResult::Success();
  {
    auto parsed = ParseConfigText(it->second);
    if (!parsed.ok()) {
      Warn(cm.get(), "InvalidNetworkTopologyConfig",
           "HyperNode discovery config is invalid, the existing HyperNodes are kept: " + parsed.status().message());
      return kube::ReconcileResult::Terminal(parsed.status());
    }
    obs.config = std::move(*parsed);
  }
  {
    // Logged when they change, not at every pass (the interval and every Node relabel run a pass).
    std::string joined;
    for (const auto& w : obs.config.warnings) joined += w + "\n";
    core::MutexLock lock(mu_);
    if (joined != last_source_warnings_)
      for (const auto& w : obs.config.warnings) log::Warn("hypernode discovery").Kv("warning", w);
    last_source_warnings_ = joined;
  }
  for (const auto& n : opts_.nodes->List()) obs.nodes.push_back(*n);
  for (const auto& h : opts_.hypernodes->List()) obs.hypernodes.push_back(*h);
  Actions a = Plan(obs);
  if (!a.error.ok()) {
    Warn(cm.get(), "NetworkTopologyDiscoveryFailed",
         "HyperNode discovery from node labels failed, the existing HyperNodes are kept: " + a.error.message());
    return kube::ReconcileResult::Terminal(a.error);
  }
  if (auto s = Apply(a); !s.ok()) {
    if (s.code() == core::StatusCode::kFailedPrecondition) {
      Warn(cm.get(), "NetworkTopologyDiscoveryFailed", s.message());
      return kube::ReconcileResult::Terminal(s);
    }
    return kube::ReconcileResult::Error(s);
  }
  {
    core::MutexLock lock(mu_);
    last_warned_.clear();  // a clean pass: the next problem is news again
  }
  if (obs.config.label_enabled)
    return kube::ReconcileResult::RequeueAfter(std::chrono::duration_cast<kube::Duration>(obs.config.interval));
  return kube::ReconcileResult::Success();
}

}  // namespace tephra::reconcilers::hypernode
