// The "overcommit" plugin.
#include <cstdio>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

class OvercommitPlugin final : public Plugin {
 public:
  explicit OvercommitPlugin(ArgParser& args) : factor_(args.Double("overcommit-factor", 1.2)) {}
  std::string Name() const override { return "overcommit"; }
  uint32_t Hooks() const override { return kHookJobEnqueueable; }
  core::Status OnSessionOpen(Session& ssn) override {
    const ClusterState& st = ssn.state();
    Resource total = ssn.total_allocatable(), used;
    for (int idx : ssn.node_order()) used += ssn.node(idx).used;
    budget_ = Resource();
    for (int i = 0; i < kMaxResources; ++i)
      budget_.Set(i, static_cast<int64_t>(static_cast<double>(total.Get(i)) * factor_) - used.Get(i));
    inqueue_ = Resource();
    st.ForEachJob([&](const JobInfo& j) {
      // A gang enqueue admitted past this budget to get a reservation (docs/reservations.md) does not count:
      // its reservation, not this budget, keeps the jobs behind it off the capacity it waits for, and counting
      // it would keep out the short jobs that may run before it.
      if (j.phase == PodGroupPhase::kInqueue && j.min_resources && !j.sched.admitted_for_reservation)
        inqueue_ += (*j.min_resources - j.allocated).ClampZero();
    });
    return core::Status::OK();
  }
  Vote JobEnqueueable(const Session&, const JobInfo& j) const override {
    if (!j.min_resources) return Vote::kPermit;
    return (*j.min_resources + inqueue_).FitsIn(budget_) ? Vote::kPermit : Vote::kReject;
  }
  Refusal ExplainEnqueue(const Session& ssn, const JobInfo& j) const override {
    const auto& fmt = ssn.state().resources();
    const Resource& need = *j.min_resources;
    Resource room = (budget_ - inqueue_).ClampZero();
    return {"OverClusterCapacity",
            "the cluster cannot admit the job's minimum (" + fmt.Format(need) + "): with overcommit-factor " +
                FormatFactor() + " there is room for " + fmt.FormatDims(room, need) +
                " after the running and admitted jobs; short by " + fmt.Format(Shortfall(need, room))};
  }
  void OnJobEnqueued(Session&, const JobInfo& j) override {
    if (j.min_resources && !j.sched.admitted_for_reservation) inqueue_ += (*j.min_resources - j.allocated).ClampZero();
  }

 private:
  std::string FormatFactor() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", factor_);
    return buf;
  }
  double factor_;
  Resource budget_, inqueue_;
};

}  // namespace

Made NewOvercommit(const PluginOption& o) { return Make<OvercommitPlugin>(o); }

}  // namespace tephra::sched::plugins
