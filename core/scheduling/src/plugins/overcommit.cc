// The "overcommit" plugin.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "plugins/builtin.h"

namespace tephra::sched::plugins {

namespace {

class OvercommitPlugin final : public Plugin {
 public:
  explicit OvercommitPlugin(const PluginOption& o) : factor_(ArgDouble(o.arguments, "overcommit-factor", 1.2)) {}
  std::string Name() const override { return "overcommit"; }
  uint32_t Hooks() const override { return kHookJobEnqueueable; }
  void OnSessionOpen(Session& ssn) override {
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

std::unique_ptr<Plugin> NewOvercommitPlugin(const PluginOption& option) {
  return std::make_unique<OvercommitPlugin>(option);
}

}  // namespace tephra::sched::plugins
