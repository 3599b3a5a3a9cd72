#include "tephra/scheduler/binder.h"

#include <algorithm>
#include <unordered_set>

#include "tephra/api/core_v1.h"
#include "tephra/scheduler/convert.h"

namespace tephra::scheduler {

using api::json;

BindResult ClassifyBind(const core::Status& s) {
  if (s.ok()) return BindResult::kBound;
  // kube::Client maps a 409 from pods/binding to kAborted with reason "Conflict" (client.h).
  if (core::IsConflict(s) || s.http_status() == 409) return BindResult::kAlreadyAssigned;
  return BindResult::kFailed;
}

std::vector<std::string> ApplyBindOutcome(sched::ClusterState& state, const BindOutcome& o) {
  switch (o.result) {
    case BindResult::kBound:
    case BindResult::kAlreadyAssigned:
      state.BindSucceeded(o.decision.task_uid);
      return {};
    case BindResult::kFailed:
      return state.BindFailed(o.decision.task_uid, o.status.message().empty() ? o.status.ToString()
                                                                               : o.status.message());
  }
  return {};
}

std::vector<RefusedBind> GuardBinds(sched::ClusterState& state, std::vector<sched::BindDecision>* binds) {
  std::vector<RefusedBind> refused;
  std::unordered_set<std::string> undone;
  for (const auto& b : *binds) {
    if (undone.count(b.task_uid)) continue;
    const sched::TaskInfo* t = state.FindTask(b.task_uid);
    // A task the state no longer holds on that node was superseded between the decision and now (nothing
    // runs in between on the state thread, so this is a bug too): refuse it without a state change.
    sched::PlacementCheck c;
    if (!t || t->status != sched::TaskStatus::kBinding || t->node != b.node) {
      c = {sched::kGuardSuperseded, "the scheduler's cache no longer has the pod binding to " + b.node};
    } else {
      c = sched::CheckPlacement(state, *t, b.node);
    }
    if (c.ok()) continue;
    RefusedBind r{b, std::move(c), {}};
    if (t && t->status == sched::TaskStatus::kBinding)
      r.rolled_back = state.BindFailed(b.task_uid, "bind refused by the bind guard (" + r.check.reason + "): " + r.check.detail);
    undone.insert(b.task_uid);
    undone.insert(r.rolled_back.begin(), r.rolled_back.end());
    refused.push_back(std::move(r));
  }
  if (!refused.empty())
    binds->erase(std::remove_if(binds->begin(), binds->end(),
                                [&](const sched::BindDecision& b) { return undone.count(b.task_uid) > 0; }),
                 binds->end());
  return refused;
}

Binder::Binder(kube::ClientPtr client, int workers, Callback on_done)
    : client_(std::move(client)), on_done_(std::move(on_done)) {
  workers = std::max(1, workers);
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Worker(); });
}

Binder::~Binder() { Stop(); }

void Binder::Submit(std::vector<sched::BindDecision> binds) {
  if (binds.empty()) return;
  {
    core::MutexLock l(mu_);
    if (stopping_) return;
    for (auto& b : binds) queue_.push_back(std::move(b));
  }
  cv_.NotifyAll();
}

size_t Binder::Drop(const std::vector<std::string>& uids) {
  if (uids.empty()) return 0;
  std::unordered_set<std::string> set(uids.begin(), uids.end());
  core::MutexLock l(mu_);
  const size_t before = queue_.size();
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [&](const sched::BindDecision& b) { return set.count(b.task_uid) > 0; }),
               queue_.end());
  const size_t dropped = before - queue_.size();
  if (queue_.empty() && in_flight_ == 0) idle_cv_.NotifyAll();
  return dropped;
}

void Binder::Stop() {
  {
    core::MutexLock l(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    queue_.clear();
  }
  cv_.NotifyAll();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  idle_cv_.NotifyAll();
}

bool Binder::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  core::MutexLock l(mu_);
  while (!(queue_.empty() && in_flight_ == 0)) {
    if (idle_cv_.WaitUntil(l, deadline) == std::cv_status::timeout) return queue_.empty() && in_flight_ == 0;
  }
  return true;
}

size_t Binder::Pending() const {
  core::MutexLock l(mu_);
  return queue_.size() + static_cast<size_t>(in_flight_);
}

// The volume binder's PreBind for a pre-created volume: spec.claimRef names the claim, as the volume
// controller's own binding would (it then binds the claim to the volume). An update, so a volume another
// scheduler claimed since it was read is a conflict, never overwritten; a volume already naming the claim is
// done.
core::Status Binder::ClaimVolume(const std::string& ns, const sched::BindDecision::VolumeBinding& vb) {
  auto pv = client_->Get(api::PersistentVolume::Resource(), "", vb.volume);
  if (!pv.ok()) return pv.status();
  json obj = std::move(pv).value();
  const json* ref = obj.contains("spec") && obj["spec"].contains("claimRef") ? &obj["spec"]["claimRef"] : nullptr;
  if (ref && ref->is_object() && !ref->value("name", "").empty()) {
    if (ref->value("namespace", "") == ns && ref->value("name", "") == vb.claim) return core::Status::OK();
    return core::Status(core::StatusCode::kAborted, "the volume is bound to claim " + ref->value("namespace", "") + "/" +
                                                        ref->value("name", "") + " meanwhile");
  }
  obj["spec"]["claimRef"] = {{"kind", "PersistentVolumeClaim"}, {"apiVersion", "v1"}, {"namespace", ns},
                             {"name", vb.claim},         {"uid", vb.claim_uid}};
  obj["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] = "yes";
  auto updated = client_->Update(api::PersistentVolume::Resource(), "", obj);
  return updated.ok() ? core::Status::OK() : updated.status();
}

void Binder::Worker() {
  for (;;) {
    sched::BindDecision d;
    {
      core::MutexLock l(mu_);
      while (!stopping_ && queue_.empty()) cv_.Wait(l);
      if (stopping_) return;
      d = std::move(queue_.front());
      queue_.pop_front();
      ++in_flight_;
    }
    BindOutcome o;
    const auto t0 = std::chrono::steady_clock::now();
    auto ms_since = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    };
    // Kubernetes' volume binder does this in PreBind: the chosen volume learns its claim, the claim to be
    // provisioned learns its node, so a failure here fails the bind (the gang is rolled back and retried)
    // instead of binding a pod whose volume never comes.
    bool claims_named = true;
    for (const auto& vb : d.bind_volumes) {
      if (core::Status s = ClaimVolume(d.ns, vb); !s.ok()) {
        o.status = s.Annotate("binding volume " + vb.volume + " to claim " + d.ns + "/" + vb.claim);
        claims_named = false;
        break;
      }
    }
    for (size_t i = 0; claims_named && i < d.select_node_claims.size(); ++i) {
      const auto& claim = d.select_node_claims[i];
      auto patched = client_->Patch(api::PersistentVolumeClaim::Resource(), d.ns, claim, kube::PatchType::kMerge,
                                    {{"metadata", {{"annotations", {{"volume.kubernetes.io/selected-node", d.node}}}}}});
      if (!patched.ok()) {
        o.status = patched.status().Annotate("naming node " + d.node + " on claim " + d.ns + "/" + claim);
        claims_named = false;
        break;
      }
    }
    if (claims_named) o.prebind_ms = d.bind_volumes.empty() && d.select_node_claims.empty() ? 0 : ms_since(t0);
    if (claims_named) {
      const auto t1 = std::chrono::steady_clock::now();
      // Chosen cards travel on the Binding: the pod and its device annotations change in one write, so the
      // node's device plugin never sees the pod bound without them.
      o.status = client_->Bind(d.ns, d.name, d.task_uid, d.node, DeviceBindAnnotations(d, std::chrono::system_clock::now()));
      o.result = ClassifyBind(o.status);
      o.bind_ms = ms_since(t1);
    } else {
      o.result = BindResult::kFailed;  // never "already assigned": the pod was not bound at all
    }
    o.decision = std::move(d);
    if (on_done_) on_done_(o);
    {
      core::MutexLock l(mu_);
      --in_flight_;
      if (queue_.empty() && in_flight_ == 0) idle_cv_.NotifyAll();
    }
  }
}

}  // namespace tephra::scheduler
