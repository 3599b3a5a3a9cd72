#include "tephra/nodesim/simulator.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <tuple>
#include <unordered_set>

#include "tephra/api/devices.h"
#include "tephra/kube/log.h"
#include "tephra/kube/rate_limiter.h"

namespace tephra::nodesim {
namespace {

using core::Status;
using kube::log::Info;
using kube::log::Warn;

// Every bound pod, finished ones included, as a kubelet watches its node's pods (docs/nodesim.md, "Finished
// pods stay watched"): a finished pod can still be given a deletionTimestamp, and only we can complete it.
constexpr const char* kPodFieldSelector = "spec.nodeName!=";

// resourceVersion as a number for "is this older than what I have" checks. etcd-backed servers use
// integers; anything else compares as unknown (-1) and is accepted.
int64_t RvNumber(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return -1;
  auto rv = m->find("resourceVersion");
  if (rv == m->end() || !rv->is_string()) return -1;
  const std::string& s = rv->get_ref<const std::string&>();
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(s);
}

std::string NameOf(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return {};
  auto n = m->find("name");
  return n != m->end() && n->is_string() ? n->get<std::string>() : std::string();
}

std::string UidOf(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return {};
  auto n = m->find("uid");
  return n != m->end() && n->is_string() ? n->get<std::string>() : std::string();
}

std::unique_ptr<kube::RateLimiter> RetryLimiter(std::chrono::milliseconds base) {
  // Per-key backoff for failed writes only; the overall write rate is the client's QPS limiter.
  return std::make_unique<kube::ItemExponentialFailureRateLimiter>(base, std::chrono::seconds(30));
}

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

}  // namespace

// Keeps only pods bound to our nodes, as compact PodViews, and queues them. A pod leaves the watch only when
// it is deleted (the selector is on spec.nodeName, which never changes once set).
class Simulator::PodSink final : public kube::ReflectorSink {
 public:
  explicit PodSink(Simulator* s) : s_(s) {}
  void Replace(std::vector<json>&& items) override {
    std::unordered_set<std::string> seen;
    for (const json& j : items) {
      auto v = DecodePodView(j);
      if (v.ok()) seen.insert(v->Key());
      s_->UpsertPod(j);
    }
    core::MutexLock l(s_->mu_);
    std::erase_if(s_->pods_, [&](const auto& kv) { return !seen.count(kv.first); });
    items.clear();
  }
  void Apply(kube::WatchEvent::Type type, json&& object) override {
    if (type == kube::WatchEvent::Type::kDeleted) {
      auto v = DecodePodView(object);
      if (!v.ok()) return;
      core::MutexLock l(s_->mu_);
      auto it = s_->pods_.find(v->Key());
      if (it != s_->pods_.end() && it->second.view.uid == v->uid) s_->pods_.erase(it);
      return;
    }
    s_->UpsertPod(object);
  }
  void MarkSynced() override { synced_ = true; }
  std::atomic<bool> synced_{false};

 private:
  Simulator* s_;
};

class Simulator::NodeSink final : public kube::ReflectorSink {
 public:
  explicit NodeSink(Simulator* s) : s_(s) {}
  void Replace(std::vector<json>&& items) override {
    for (const json& j : items) s_->ObserveNode(j, false);
    items.clear();
  }
  void Apply(kube::WatchEvent::Type type, json&& object) override {
    s_->ObserveNode(object, type == kube::WatchEvent::Type::kDeleted);
  }
  void MarkSynced() override {}

 private:
  Simulator* s_;
};

const kube::ResourceInfo& Simulator::NodeResource() {
  static const kube::ResourceInfo r{"", "v1", "Node", "nodes", false};
  return r;
}
const kube::ResourceInfo& Simulator::PodResource() {
  static const kube::ResourceInfo r{"", "v1", "Pod", "pods", true};
  return r;
}
const kube::ResourceInfo& Simulator::LeaseResource() {
  static const kube::ResourceInfo r{"coordination.k8s.io", "v1", "Lease", "leases", true};
  return r;
}
const kube::ResourceInfo& Simulator::EventResource() {
  static const kube::ResourceInfo r{"", "v1", "Event", "events", true};
  return r;
}

Simulator::Simulator(kube::ClientPtr client, kube::ClientPtr heartbeat_client, std::vector<NodeSpec> nodes,
                     SimulatorOptions opts)
    : client_(std::move(client)),
      heartbeat_client_(heartbeat_client ? std::move(heartbeat_client) : client_),
      nodes_(std::move(nodes)),
      opts_(opts),
      clock_(opts.clock ? *opts.clock : core::RealClock::Get()) {
  for (const NodeSpec& n : nodes_) node_state_[n.name].spec = &n;
  kube::WorkQueueOptions q;
  q.name = "nodesim";
  q.clock = &clock_;
  q.rate_limiter = RetryLimiter(opts.retry_base_delay);
  queue_ = std::make_unique<kube::WorkQueue>(std::move(q));
  kube::WorkQueueOptions h;
  h.name = "nodesim_heartbeat";
  h.clock = &clock_;
  h.rate_limiter = RetryLimiter(opts.retry_base_delay);
  heartbeat_queue_ = std::make_unique<kube::WorkQueue>(std::move(h));
}

Simulator::~Simulator() { Stop(); }

Status Simulator::Start() {
  if (started_) return Status::OK();
  // Adopt what already exists so a restart neither recreates nodes nor loses their uids (lease owners).
  kube::ListOptions lo;
  lo.limit = 500;
  auto existing = kube::ListAll(*client_, NodeResource(), "", lo);
  if (!existing.ok()) return std::move(existing).status().Annotate("listing nodes");
  for (const json& n : existing->items) ObserveNode(n, false);
  int adopted = RegisteredNodes();
  stats_.nodes_adopted = adopted;
  Info("nodesim starting").Kv("nodes", static_cast<int64_t>(nodes_.size())).Kv("adopted", adopted);

  started_ = true;
  const auto n = static_cast<int64_t>(std::max<size_t>(nodes_.size(), 1));
  const auto adopt_spread = std::min<std::chrono::milliseconds>(opts_.node_status_interval, std::chrono::seconds(60));
  for (size_t i = 0; i < nodes_.size(); ++i) {
    bool now;
    {
      core::MutexLock l(mu_);
      const NodeState& st = node_state_[nodes_[i].name];
      now = !st.registered || !st.ready_on_server || !(st.faults == NodeFaults{});
    }
    // New or faulted nodes are written at once; adopted healthy ones get their status refreshed spread over
    // up to a minute (their Leases carry liveness meanwhile), so a restart with 5,000 nodes does not put
    // 5,000 node writes in front of the pods' status writes.
    if (now) queue_->Add("n/" + nodes_[i].name);
    else queue_->AddAfter("n/" + nodes_[i].name, adopt_spread * static_cast<int64_t>(i) / n);
    // Spread renewals over the interval so 5,000 nodes make a steady trickle, not a burst every 10 s.
    heartbeat_queue_->AddAfter("l/" + nodes_[i].name,
                               opts_.lease_renew_interval * static_cast<int64_t>(i) / n);
  }

  kube::InformerOptions po;
  po.field_selector = kPodFieldSelector;
  po.min_watch_timeout_seconds = opts_.min_watch_timeout_seconds;
  po.max_watch_timeout_seconds = opts_.max_watch_timeout_seconds;
  pod_sink_ = std::make_unique<PodSink>(this);
  pod_reflector_ = std::make_unique<kube::Reflector>(client_, PodResource(), po, pod_sink_.get());
  kube::InformerOptions no;
  no.min_watch_timeout_seconds = opts_.min_watch_timeout_seconds;
  no.max_watch_timeout_seconds = opts_.max_watch_timeout_seconds;
  node_sink_ = std::make_unique<NodeSink>(this);
  node_reflector_ = std::make_unique<kube::Reflector>(client_, NodeResource(), no, node_sink_.get());
  threads_.emplace_back([this] { pod_reflector_->Run(); });
  threads_.emplace_back([this] { node_reflector_->Run(); });
  for (int i = 0; i < std::max(1, opts_.workers); ++i) threads_.emplace_back([this] { Worker(); });
  for (int i = 0; i < std::max(1, opts_.heartbeat_workers); ++i) threads_.emplace_back([this] { HeartbeatWorker(); });
  return Status::OK();
}

void Simulator::Stop() {
  if (stopped_.exchange(true)) return;
  if (pod_reflector_) pod_reflector_->Stop();
  if (node_reflector_) node_reflector_->Stop();
  queue_->ShutDown();
  heartbeat_queue_->ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

int Simulator::RegisteredNodes() const {
  core::MutexLock l(mu_);
  int n = 0;
  for (const auto& [name, st] : node_state_) n += st.registered ? 1 : 0;
  return n;
}

size_t Simulator::TrackedPods() const {
  core::MutexLock l(mu_);
  return pods_.size();
}

void Simulator::ObserveNode(const json& node, bool deleted) {
  const std::string name = NameOf(node);
  bool enqueue = false;
  std::vector<std::string> pods_to_check;  // the node's pods, when its faults changed (a card may be gone)
  {
    core::MutexLock l(mu_);
    auto it = node_state_.find(name);
    if (it == node_state_.end()) return;
    NodeState& st = it->second;
    if (deleted) {
      // Someone deleted our node: register it again, as a running kubelet would.
      st.registered = false;
      st.uid.clear();
      enqueue = true;
    } else {
      st.registered = true;
      st.uid = UidOf(node);
      st.ready_on_server = false;
      if (auto s = node.find("status"); s != node.end() && s->is_object()) {
        if (auto c = s->find("conditions"); c != s->end() && c->is_array()) {
          for (const json& cond : *c) {
            if (cond.is_object() && cond.value("type", "") == "Ready") st.ready_on_server = cond.value("status", "") == "True";
          }
        }
      }
      int npus = 0;
      if (auto c = st.spec->group->capacity.find(kNpuResource); c != st.spec->group->capacity.end()) npus = static_cast<int>(c->second.Value());
      st.cards = ReadNodeCards(node, npus);
      NodeFaults f = ReadFaults(node);
      if (!f.problem.empty() && !(f == st.faults)) Warn("bad node fault annotation").Kv("node", name).Kv("problem", f.problem);
      if (!(f == st.faults)) {
        const bool cards_changed = f.unhealthy_gpus != st.faults.unhealthy_gpus || f.unhealthy_npus != st.faults.unhealthy_npus;
        f.since = WallNow();
        st.faults = f;
        st.status_stale = true;
        enqueue = true;
        if (cards_changed)
          for (const auto& [k, rec] : pods_)
            if (rec.view.node_name == name && rec.view.phase == "Running" && rec.cards.Asks()) pods_to_check.push_back(k);
      }
    }
  }
  // The pods first: a workload meets a dead card at once, while the kubelet reports the device plugin's
  // lower allocatable with its next node status (seconds later on a real node; a second here).
  if (started_)
    for (const auto& k : pods_to_check) queue_->Add("p/" + k);
  if (enqueue && started_) {
    if (pods_to_check.empty()) queue_->Add("n/" + name);
    else queue_->AddAfter("n/" + name, std::chrono::seconds(1));
    heartbeat_queue_->Add("l/" + name);
  }
}

bool Simulator::UpsertPod(const json& pod) {
  auto v = DecodePodView(pod);
  if (!v.ok()) return false;
  const int64_t rv = RvNumber(pod);
  const std::string key = v->Key();
  {
    core::MutexLock l(mu_);
    if (!node_state_.count(v->node_name)) return false;
    auto [it, inserted] = pods_.try_emplace(key);
    PodRecord& rec = it->second;
    // Never step back: a watch event older than our own write's response must not undo it.
    if (!inserted && rec.view.uid == v->uid && rv >= 0 && rec.rv >= 0 && rv < rec.rv) return true;
    rec.view = std::move(*v);
    rec.rv = rv;
    rec.cards = ReadPodCards(pod);
  }
  if (started_) queue_->Add("p/" + key);
  return true;
}

void Simulator::Worker() {
  while (auto key = queue_->Get()) {
    if (key->rfind("p/", 0) == 0) {
      HandlePod(key->substr(2));
    } else if (key->rfind("n/", 0) == 0) {
      HandleNode(key->substr(2));
    }
    queue_->Done(*key);
  }
}

void Simulator::HeartbeatWorker() {
  while (auto key = heartbeat_queue_->Get()) {
    if (key->rfind("l/", 0) == 0) HandleLease(key->substr(2));
    heartbeat_queue_->Done(*key);
  }
}

void Simulator::HandleNode(const std::string& name) {
  const std::string key = "n/" + name;
  NodeState st;
  {
    core::MutexLock l(mu_);
    auto it = node_state_.find(name);
    if (it == node_state_.end()) return;
    st = it->second;
  }
  if (!st.registered) {
    auto created = client_->Create(NodeResource(), "", BuildNode(*st.spec, st.faults, WallNow()));
    if (created.ok() || core::IsAlreadyExists(created.status())) {
      core::MutexLock l(mu_);
      NodeState& s = node_state_[name];
      s.registered = true;
      if (created.ok()) {
        s.uid = UidOf(*created);
        s.status_stale = false;
        stats_.nodes_created++;
      }
      // AlreadyExists: the node reflector tells us its uid and annotations; write our status over it.
    } else {
      stats_.write_errors++;
      Warn("registering node failed").Kv("node", name).Kv("error", created.status());
      queue_->AddRateLimited(key);
      return;
    }
    if (created.ok()) {
      queue_->Forget(key);
      queue_->AddAfter(key, opts_.node_status_interval);
      heartbeat_queue_->Add("l/" + name);
      return;
    }
  }
  json patch = {{"status", BuildNodeStatus(*st.spec, st.faults, WallNow())}};
  auto r = client_->Patch(NodeResource(), "", name, kube::PatchType::kMerge, patch, "status");
  if (!r.ok()) {
    stats_.write_errors++;
    if (core::IsNotFound(r.status())) {
      core::MutexLock l(mu_);
      node_state_[name].registered = false;
    }
    queue_->AddRateLimited(key);
    return;
  }
  stats_.node_status_writes++;
  {
    core::MutexLock l(mu_);
    NodeState& s = node_state_[name];
    s.uid = UidOf(*r);
    if (s.faults == st.faults) s.status_stale = false;
  }
  queue_->Forget(key);
  queue_->AddAfter(key, opts_.node_status_interval);
}

void Simulator::HandleLease(const std::string& name) {
  const std::string key = "l/" + name;
  bool registered, failed;
  std::string uid;
  {
    core::MutexLock l(mu_);
    auto it = node_state_.find(name);
    if (it == node_state_.end()) return;
    registered = it->second.registered;
    failed = it->second.faults.fail;
    uid = it->second.uid;
  }
  // A failed node stops renewing so the node lifecycle controller sees it die, as with a dead kubelet.
  if (!registered || failed) {
    heartbeat_queue_->AddAfter(key, opts_.lease_renew_interval);
    return;
  }
  const auto now = WallNow();
  json patch = {{"spec",
                 {{"holderIdentity", name},
                  {"leaseDurationSeconds", opts_.lease_duration_seconds},
                  {"renewTime", FormatMicroTime(now)}}}};
  auto r = heartbeat_client_->Patch(LeaseResource(), kLeaseNamespace, name, kube::PatchType::kMerge, patch);
  if (!r.ok() && core::IsNotFound(r.status())) {
    auto c = heartbeat_client_->Create(LeaseResource(), kLeaseNamespace,
                                       BuildLease(name, uid, opts_.lease_duration_seconds, now));
    if (c.ok() || core::IsAlreadyExists(c.status())) r = json::object();
    else r = c.status();
  }
  if (!r.ok()) {
    stats_.write_errors++;
    Warn("renewing lease failed").Kv("node", name).Kv("error", r.status());
    heartbeat_queue_->AddRateLimited(key);
    return;
  }
  stats_.lease_renewals++;
  heartbeat_queue_->Forget(key);
  heartbeat_queue_->AddAfter(key, opts_.lease_renew_interval);
}

// Deletes the pod with grace 0 (the kubelet's confirmation), guarded by its uid so a namesake is never hit.
// Gone or replaced already counts as done. On another error `retry_key` is retried later; returns false then.
bool Simulator::DeletePodNow(const std::string& key, const std::string& uid, const std::string& retry_key) {
  const auto slash = key.find('/');
  kube::DeleteOptions d;
  d.grace_period_seconds = 0;
  d.precondition_uid = uid;
  Status s = client_->Delete(PodResource(), key.substr(0, slash), key.substr(slash + 1), d);
  if (!s.ok() && !core::IsNotFound(s) && !core::IsConflict(s)) {
    stats_.write_errors++;
    Warn("pod delete failed").Kv("pod", key).Kv("error", s);
    queue_->AddRateLimited(retry_key);
    return false;
  }
  stats_.pod_deletes++;
  return true;
}

void Simulator::HandlePod(const std::string& key) {
  const std::string qkey = "p/" + key;
  PodView view;
  std::string warned;
  std::string refusal, device_error;
  bool delete_sent = false;
  PodPlanContext ctx;
  ctx.now = WallNow();
  ctx.max_grace_seconds = opts_.max_grace_seconds;
  {
    core::MutexLock l(mu_);
    auto it = pods_.find(key);
    if (it == pods_.end()) return;  // deleted meanwhile
    view = it->second.view;
    warned = it->second.warned_uid;
    delete_sent = it->second.deleted_uid == view.uid;
    auto nit = node_state_.find(view.node_name);
    if (nit == node_state_.end()) return;
    ctx.host_ip = NodeInternalIp(nit->second.spec->index);
    if (view.phase.empty() || view.phase == "Pending") {
      if (view.deletion_timestamp.empty()) refusal = AdmitDevicesLocked(key);
    } else if (view.phase == "Running" && view.deletion_timestamp.empty()) {
      device_error = DeviceFailureLocked(key);
    }
    if (view.pod_ip.empty() && view.phase != "Running" && !view.Finished()) {
      ctx.pod_ip = PodIp(nit->second.spec->index, nit->second.next_pod_ip++);
    }
  }
  PodPlan plan = PlanPod(view, ctx);
  if (!refusal.empty()) {
    // What the kubelet does when a device plugin cannot allocate: the pod fails at admission.
    plan = {};
    plan.action = PodPlan::Action::kWriteStatus;
    plan.new_phase = "Failed";
    plan.status_patch = {{"metadata", {{"uid", view.uid}}},
                         {"status", {{"phase", "Failed"}, {"reason", "UnexpectedAdmissionError"}, {"message", refusal}}}};
    stats_.device_refusals++;
    Warn("device plugin refused pod").Kv("pod", key).Kv("reason", refusal);
  }
  if (!device_error.empty()) {
    // The workload meets the error and exits; the kubelet reports the pod Failed.
    plan = DeviceFailurePlan(view, device_error, ctx.now);
    stats_.device_failures++;
    Warn("pod failed on a bad card").Kv("pod", key).Kv("error", device_error);
  }
  if (!plan.problems.empty() && warned != view.uid) {
    ReportProblems(view, plan.problems);
    core::MutexLock l(mu_);
    auto it = pods_.find(key);
    if (it != pods_.end()) it->second.warned_uid = view.uid;
  }
  switch (plan.action) {
    case PodPlan::Action::kNone:
      break;
    case PodPlan::Action::kWriteStatus: {
      auto r = client_->Patch(PodResource(), view.namespace_, view.name, kube::PatchType::kMerge, plan.status_patch,
                              "status");
      if (!r.ok()) {
        // Gone, or replaced by a namesake (uid precondition): the watch brings whatever is there now.
        if (core::IsNotFound(r.status()) || core::IsConflict(r.status())) {
          queue_->Forget(qkey);
          return;
        }
        stats_.write_errors++;
        Warn("pod status write failed").Kv("pod", key).Kv("error", r.status());
        queue_->AddRateLimited(qkey);
        return;
      }
      stats_.pod_status_writes++;
      if (plan.new_phase == "Running") stats_.pods_running++;
      else stats_.pods_finished++;
      // Keep the written state (with its resourceVersion) so an older watch event cannot step the pod back.
      // If the pod was deleted while we wrote its end, the response carries the deletionTimestamp and the
      // re-plan this queues deletes it.
      UpsertPod(*r);
      break;
    }
    case PodPlan::Action::kDelete: {
      if (delete_sent) break;
      if (!DeletePodNow(key, view.uid, qkey)) return;
      if (view.Finished()) stats_.deletes_confirmed_after_finish++;
      core::MutexLock l(mu_);
      auto it = pods_.find(key);
      if (it != pods_.end()) it->second.deleted_uid = view.uid;
      break;
    }
  }
  queue_->Forget(qkey);
  if (plan.next) {
    auto delay = std::chrono::duration_cast<kube::Duration>(*plan.next - ctx.now);
    queue_->AddAfter(qkey, delay);
  }
}

NodeCards Simulator::NodeCardsLocked(const NodeState& st) const {
  // Until the node is observed, the plugin knows what nodesim registers: the group's cards and labels.
  NodeCards cards = st.cards;
  const NodeSpec& spec = *st.spec;
  if (cards.npus == 0)
    if (auto c = spec.group->capacity.find(kNpuResource); c != spec.group->capacity.end()) cards.npus = static_cast<int>(c->second.Value());
  if (cards.accelerator_type.empty())
    if (auto l = spec.labels.find(std::string(api::kAcceleratorTypeLabel)); l != spec.labels.end()) cards.accelerator_type = l->second;
  if (cards.vgpus.empty()) cards.vgpus = VgpuCards(spec);
  if (auto c = spec.group->capacity.find(kGpuResource); c != spec.group->capacity.end()) cards.gpus = c->second.Value();
  cards.unhealthy_gpus = st.faults.unhealthy_gpus;
  return cards;
}

std::string Simulator::DeviceFailureLocked(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end() || !it->second.cards.Asks()) return "";
  const PodRecord& rec = it->second;
  auto nit = node_state_.find(rec.view.node_name);
  if (nit == node_state_.end()) return "";
  // The node's plain GPUs go to its running pods in start order; the pod holds the ones after those.
  int64_t offset = 0;
  if (rec.cards.gpus > 0)
    for (const auto& [k, other] : pods_) {
      if (k == key || other.view.node_name != rec.view.node_name || other.view.phase != "Running" || other.cards.gpus == 0)
        continue;
      if (std::tie(other.view.start_time, k) < std::tie(rec.view.start_time, key)) offset += other.cards.gpus;
    }
  return DeviceFailure(NodeCardsLocked(nit->second), rec.cards, offset);
}

std::string Simulator::AdmitDevicesLocked(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return "";
  PodRecord& rec = it->second;
  if (!rec.cards.Asks() || rec.admitted_uid == rec.view.uid) return "";
  auto nit = node_state_.find(rec.view.node_name);
  if (nit == node_state_.end()) return "";
  // Cards held on the node: pods the plugin admitted, and running ones (admitted before a restart). A pod
  // scan, paid only by pods that ask for cards.
  std::vector<const PodCards*> held;
  for (const auto& [k, other] : pods_) {
    if (k == key || other.view.node_name != rec.view.node_name || other.view.Finished() || !other.cards.Asks()) continue;
    if (other.admitted_uid == other.view.uid || other.view.phase == "Running") held.push_back(&other.cards);
  }
  std::string why = AdmitCards(NodeCardsLocked(nit->second), rec.cards, held);
  if (why.empty()) rec.admitted_uid = rec.view.uid;
  return why;
}

void Simulator::ReportProblems(const PodView& pod, const std::vector<std::string>& problems) {
  std::string msg;
  for (const auto& p : problems) msg += (msg.empty() ? "" : "; ") + p;
  Warn("invalid simulation annotation").Kv("pod", pod.Key()).Kv("problem", msg);
  const std::string now = core::FormatRfc3339(WallNow());
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"name", pod.name + "." + RandomSuffix()}, {"namespace", pod.namespace_}}},
             {"involvedObject",
              {{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", pod.namespace_}, {"name", pod.name}, {"uid", pod.uid}}},
             {"reason", "InvalidSimAnnotation"},
             {"message", msg},
             {"type", "Warning"},
             {"source", {{"component", "tephra-nodesim"}, {"host", pod.node_name}}},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"count", 1}};
  auto r = client_->Create(EventResource(), pod.namespace_, ev);
  if (r.ok()) {
    stats_.events++;
  } else {
    Warn("event create failed").Kv("pod", pod.Key()).Kv("error", r.status());
  }
}

}  // namespace tephra::nodesim
