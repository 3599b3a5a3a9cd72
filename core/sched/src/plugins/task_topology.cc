// The "task-topology" plugin.
#include <map>
#include <set>
#include <sstream>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

// Annotations name task roles that should share nodes (affinity) or avoid each other (anti-affinity).
// Score for node N = weight * 10 * (#job tasks on N whose role is affine - #job tasks on N whose role is
// anti-affine); it depends only on this job's placements on N, honouring the NodeScore contract.
class TaskTopologyPlugin final : public Plugin {
 public:
  explicit TaskTopologyPlugin(ArgParser& args) : weight_(args.Double("task-topology.weight", 1)) {}
  std::string Name() const override { return "task-topology"; }
  uint32_t Hooks() const override { return kHookNodeOrder | kHookTaskOrder; }
  core::Status OnSessionOpen(Session&) override {
    parsed_.clear();
    return core::Status::OK();
  }
  bool JobDependentScore(const Session& ssn, const JobInfo& job) const override {
    const Parsed* p = Get(ssn, job.key);
    return p && (!p->affinity.empty() || !p->anti.empty());
  }

  double NodeScore(const Session& ssn, const TaskInfo& t, const NodeInfo& n) const override {
    const Parsed* p = Get(ssn, t.job);
    if (!p || (p->affinity.empty() && p->anti.empty())) return 0;
    auto aff = p->affinity.find(t.role);
    auto anti = p->anti.find(t.role);
    if (aff == p->affinity.end() && anti == p->anti.end()) return 0;
    int score = 0;
    ssn.state().ForEachTaskOnNode(n.name, [&](const TaskInfo& o) {
      if (o.job != t.job || o.uid == t.uid) return;
      if (!OnNodeForScheduling(o.status)) return;
      if (aff != p->affinity.end() && aff->second.count(o.role)) ++score;
      if (anti != p->anti.end() && anti->second.count(o.role)) --score;
    });
    return weight_ * 10 * score;
  }
  int TaskOrder(const Session& ssn, const TaskInfo& a, const TaskInfo& b) const override {
    if (a.job != b.job) return 0;
    const Parsed* p = Get(ssn, a.job);
    if (!p || p->order.empty()) return 0;
    auto rank = [&](const std::string& role) {
      auto it = p->order.find(role);
      return it == p->order.end() ? (1 << 20) : static_cast<int>(it->second);
    };
    int ra = rank(a.role), rb = rank(b.role);
    return ra == rb ? 0 : (ra < rb ? -1 : 1);
  }

 private:
  struct Parsed {
    std::map<std::string, std::set<std::string>> affinity, anti;
    std::map<std::string, int> order;
  };
  static std::vector<std::string> Split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string x;
    while (std::getline(ss, x, sep)) {
      x.erase(0, x.find_first_not_of(' '));
      x.erase(x.find_last_not_of(' ') + 1);
      if (!x.empty()) out.push_back(x);
    }
    return out;
  }
  const Parsed* Get(const Session& ssn, const std::string& job) const {
    auto it = parsed_.find(job);
    if (it != parsed_.end()) return &it->second;
    const JobInfo* j = ssn.state().FindJob(job);
    Parsed p;
    if (j) {
      for (const auto& group : Split(j->task_topology_affinity, ';')) {
        auto roles = Split(group, ',');
        for (const auto& r : roles) p.affinity[r].insert(roles.begin(), roles.end());
      }
      for (const auto& group : Split(j->task_topology_anti_affinity, ';')) {
        auto roles = Split(group, ',');
        for (const auto& r : roles) p.anti[r].insert(roles.begin(), roles.end());
      }
      int i = 0;
      for (const auto& r : Split(j->task_topology_order, ',')) p.order.emplace(r, i++);
    }
    return &parsed_.emplace(job, std::move(p)).first->second;
  }
  double weight_;
  mutable std::map<std::string, Parsed> parsed_;
};

}  // namespace

Made NewTaskTopology(const PluginOption& o) { return Make<TaskTopologyPlugin>(o); }

}  // namespace tephra::sched::plugins
