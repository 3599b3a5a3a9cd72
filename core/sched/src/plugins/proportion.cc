// The "proportion" plugin.
#include <cmath>
#include <map>
#include <set>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

// Divides the cluster among queues by weight, iteratively (Volcano proportion.go): every round hands the
// remaining capacity to unmet queues in proportion to weight, clamps each queue's deserved to
// min(capability, request) and raises it to its guarantee; a queue is met once its request is covered or
// its capability reached. Stops when nothing is left or a round changes nothing.
class ProportionPlugin final : public Plugin {
 public:
  std::string Name() const override { return "proportion"; }
  uint32_t Hooks() const override {
    return kHookQueueOrder | kHookOverused | kHookAllocatable | kHookJobEnqueueable | kHookReclaimable;
  }

  // Reclaim takes only a queue's surplus: a victim may go when its (reclaimable) queue, after losing it, still
  // holds at least its deserved share on some dimension it uses (its dominant one). Volcano asks whether the
  // queue is above deserved before subtracting, which lets the last eviction push the queue below deserved
  // and reclaim back; checking after subtracting cannot oscillate. (The reclaim action applies the same
  // guard to whatever tier answers.)
  std::optional<std::vector<const TaskInfo*>> Reclaimable(const Session& ssn, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    std::map<std::string, Resource> alloc;
    std::vector<const TaskInfo*> out;
    for (const TaskInfo* t : c) {
      const JobInfo* vj = ssn.state().FindJob(t->job);
      if (!vj) continue;
      const QueueInfo* vq = ssn.state().FindQueue(vj->queue);
      auto at = attrs_.find(vj->queue);
      if (!vq || !vq->reclaimable || at == attrs_.end()) continue;
      auto it = alloc.try_emplace(vj->queue, vq->allocated).first;
      Resource after = it->second - t->request;
      bool keeps = false;
      for (int i = 0; i < kMaxResources && !keeps; ++i) {
        if (i == kPods || after.Get(i) <= 0) continue;
        keeps = after.Get(i) >= at->second.deserved.Get(i);
      }
      if (!keeps) continue;
      it->second = after;
      out.push_back(t);
    }
    return out;
  }

  core::Status OnSessionOpen(Session& ssn) override {
    const ClusterState& st = ssn.state();
    total_ = ssn.total_allocatable();
    attrs_.clear();
    Resource guarantees;
    st.ForEachQueue([&](const QueueInfo& q) {
      Attr& a = attrs_[q.name];
      a.weight = std::max(1, q.weight);
      a.capability = q.capability;
      a.guarantee = q.guarantee;
      a.request = q.request;
      guarantees += q.guarantee;
    });
    st.ForEachJob([&](const JobInfo& j) {
      // What the job holds beyond its minResources (every dimension separately; a job without minResources:
      // all it holds). Enqueue does not count it against the queue: an elastic job (minAvailable <
      // replicas) that grew into idle capacity would otherwise keep every later job of its queue out,
      // although reclaim and preempt may take that surplus back (Volcano's proportion, GetElasticResources).
      if (auto e = attrs_.find(j.queue); e != attrs_.end())
        e->second.elastic += j.min_resources ? (j.allocated - *j.min_resources).ClampZero() : j.allocated;
      // A gang admitted for its reservation (docs/reservations.md) is held to its queue's capability when the
      // reservation is made, and its reservation keeps the jobs behind it off its capacity: counting it here
      // too would keep out the short jobs that may run before it.
      if (j.phase != PodGroupPhase::kInqueue || !j.min_resources || j.sched.admitted_for_reservation) return;
      auto it = attrs_.find(j.queue);
      if (it != attrs_.end()) it->second.inqueue += (*j.min_resources - j.allocated).ClampZero();
    });
    for (auto& [name, a] : attrs_) {
      // realCapability: capability, bounded by what the others' guarantees leave.
      a.real_capability = a.capability.Min((total_ - guarantees + a.guarantee).ClampZero());
    }
    Resource remaining = total_;
    std::set<std::string> met;
    for (int round = 0; round < 64; ++round) {
      int64_t total_weight = 0;
      for (const auto& [name, a] : attrs_)
        if (!met.count(name)) total_weight += a.weight;
      if (total_weight == 0) break;
      Resource before = remaining;
      Resource increased, decreased;
      for (auto& [name, a] : attrs_) {
        if (met.count(name)) continue;
        Resource old = a.deserved;
        // Shares are rounded to the nearest unit, not down: flooring strands the last few units of every
        // round (e.g. 1m split 3:1 gives 0 and 0), so a queue could deserve 3999m of an exact 4000m share and
        // its last 1-CPU pod would wait with a CPU idle. Rounding up by at most one unit per queue and round
        // may promise a few millicores more than exist; the clamp of `remaining` absorbs that.
        for (int i = 0; i < kMaxResources; ++i) {
          double add = static_cast<double>(remaining.Get(i)) * a.weight / static_cast<double>(total_weight);
          a.deserved.Set(i, a.deserved.Get(i) + static_cast<int64_t>(std::llround(add)));
        }
        a.deserved = a.deserved.Min(a.real_capability).Min(a.request).Max(a.guarantee.Min(a.request));
        if (a.request.LessEqual(a.deserved) || a.real_capability.LessEqual(a.deserved)) met.insert(name);
        for (int i = 0; i < kMaxResources; ++i) {
          int64_t d = a.deserved.Get(i) - old.Get(i);
          if (d > 0) increased.Set(i, increased.Get(i) + d);
          else decreased.Set(i, decreased.Get(i) - d);
        }
      }
      remaining = (remaining - increased + decreased).ClampZero();
      if (remaining.IsZero() || remaining == before) break;
    }
    auto& out = ssn.queue_deserved();
    out.clear();
    for (const auto& [name, a] : attrs_) out[name] = a.deserved;
    return core::Status::OK();
  }

  // Queue.spec.priority first (higher first), then the smaller share, as Volcano's proportion orders them:
  // a high-priority queue is served before any share comparison.
  int QueueOrder(const Session& ssn, const QueueInfo& a, const QueueInfo& b) const override {
    if (a.priority != b.priority) return a.priority > b.priority ? -1 : 1;
    return Cmp(Share(a), Share(b));
  }
  bool Overused(const Session&, const QueueInfo& q) const override {
    auto it = attrs_.find(q.name);
    if (it == attrs_.end()) return false;
    return it->second.deserved.LessEqual(q.allocated);
  }
  bool Allocatable(const Session&, const QueueInfo& q, const TaskInfo& t) const override {
    auto it = attrs_.find(q.name);
    if (it == attrs_.end()) return true;
    return (q.allocated + t.request).FitsIn(it->second.deserved);
  }
  Vote JobEnqueueable(const Session& ssn, const JobInfo& j) const override {
    if (!j.min_resources) return Vote::kPermit;
    auto it = attrs_.find(j.queue);
    if (it == attrs_.end()) return Vote::kReject;
    const QueueInfo* q = ssn.state().FindQueue(j.queue);
    Resource need = (*j.min_resources + (q ? q->allocated : Resource()) + it->second.inqueue - it->second.elastic).ClampZero();
    return need.FitsIn(it->second.real_capability) ? Vote::kPermit : Vote::kReject;
  }
  Refusal ExplainEnqueue(const Session& ssn, const JobInfo& j) const override {
    auto it = attrs_.find(j.queue);
    if (it == attrs_.end()) return {"QueueNotFound", "queue " + j.queue + " is unknown to the proportion plugin"};
    const auto& fmt = ssn.state().resources();
    const QueueInfo* q = ssn.state().FindQueue(j.queue);
    const Attr& a = it->second;
    Resource used = ((q ? q->allocated : Resource()) + a.inqueue - a.elastic).ClampZero();
    Resource short_by = Shortfall(*j.min_resources + used, a.real_capability);
    // The limit is the queue's own capability only where the queue sets one below what the cluster leaves it;
    // otherwise it is the cluster (its total less other queues' guarantees), and the user's lever differs.
    bool own_cap = false;
    for (int i = 0; i < kMaxResources; ++i)
      if (short_by.Get(i) > 0 && a.capability.Get(i) <= a.real_capability.Get(i)) own_cap = true;
    std::string tail = ": the job's minimum is " + fmt.Format(*j.min_resources) + ", the queue already holds " +
                       fmt.FormatDims(used, *j.min_resources) + " (allocated and admitted";
    if (!a.elastic.IsZero())
      tail += ", not counting " + fmt.FormatDims(a.elastic, *j.min_resources) + " its jobs hold beyond their minimum";
    tail += ")";
    if (own_cap) {
      return {"OverCapability", "queue " + j.queue + " would exceed its capability (" +
                                    fmt.FormatDims(a.real_capability, *j.min_resources) + ") by " +
                                    fmt.Format(short_by) + tail};
    }
    return {"OverClusterCapacity", "queue " + j.queue + " would exceed what the cluster leaves it (" +
                                       fmt.FormatDims(a.real_capability, *j.min_resources) +
                                       ": the cluster's total less other queues' guarantees) by " +
                                       fmt.Format(short_by) + tail};
  }
  Refusal ExplainOverused(const Session& ssn, const QueueInfo& q) const override {
    auto it = attrs_.find(q.name);
    if (it == attrs_.end()) return {};
    const auto& fmt = ssn.state().resources();
    return {"OverDeserved", "queue " + q.name + " already uses its deserved share (" +
                                fmt.Format(it->second.deserved, "nothing") + "; allocated " +
                                fmt.Format(q.allocated, "nothing") +
                                "); its jobs wait until other queues' demand falls or the cluster grows"};
  }
  Refusal ExplainAllocatable(const Session& ssn, const QueueInfo& q, const TaskInfo& t) const override {
    auto it = attrs_.find(q.name);
    if (it == attrs_.end()) return {};
    const auto& fmt = ssn.state().resources();
    Resource short_by = Shortfall(q.allocated + t.request, it->second.deserved);
    return {"OverDeserved", "queue " + q.name + " would exceed its deserved share (" +
                                fmt.FormatDims(it->second.deserved, t.request) + ") by " + fmt.Format(short_by) +
                                " with the next pod (" + fmt.Format(t.request) + "); allocated " +
                                fmt.FormatDims(q.allocated, t.request)};
  }
  void OnJobEnqueued(Session&, const JobInfo& j) override {
    auto it = attrs_.find(j.queue);
    if (it != attrs_.end() && j.min_resources && !j.sched.admitted_for_reservation)
      it->second.inqueue += (*j.min_resources - j.allocated).ClampZero();
  }

 private:
  struct Attr {
    int32_t weight = 1;
    Resource capability, real_capability, guarantee, request, deserved, inqueue;
    Resource elastic;  // what the queue's jobs hold beyond their minResources
  };
  double Share(const QueueInfo& q) const {
    auto it = attrs_.find(q.name);
    if (it == attrs_.end()) return 0;
    double s = 0;
    for (int i = 0; i < kMaxResources; ++i) {
      if (i == kPods) continue;
      int64_t d = it->second.deserved.Get(i);
      if (d <= 0) continue;
      s = std::max(s, static_cast<double>(q.allocated.Get(i)) / static_cast<double>(d));
    }
    return s;
  }
  Resource total_;
  std::map<std::string, Attr> attrs_;
};

}  // namespace

Made NewProportion(const PluginOption& o) { return Make<ProportionPlugin>(o); }

}  // namespace tephra::sched::plugins
