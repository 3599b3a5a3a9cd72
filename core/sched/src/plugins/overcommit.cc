// The "overcommit" plugin.
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
      if (j.phase == PodGroupPhase::kInqueue && j.min_resources) inqueue_ += (*j.min_resources - j.allocated).ClampZero();
    });
    return core::Status::OK();
  }
  Vote JobEnqueueable(const Session&, const JobInfo& j) const override {
    if (!j.min_resources) return Vote::kPermit;
    return (*j.min_resources + inqueue_).FitsIn(budget_) ? Vote::kPermit : Vote::kReject;
  }
  void OnJobEnqueued(Session&, const JobInfo& j) override {
    if (j.min_resources) inqueue_ += (*j.min_resources - j.allocated).ClampZero();
  }

 private:
  double factor_;
  Resource budget_, inqueue_;
};

}  // namespace

Made NewOvercommit(const PluginOption& o) { return Make<OvercommitPlugin>(o); }

}  // namespace tephra::sched::plugins
