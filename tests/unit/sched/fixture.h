// Test helpers: build small clusters for the scheduling core.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tephra/sched/scheduler.h"

namespace tephra::sched::testing {

inline constexpr int64_t kGi = 1024LL * 1024 * 1024;

// A required pod (anti-)affinity term selecting `match` in namespace "ns" (the fixtures' namespace).
inline PodAffinityTerm Term(Labels match, std::string topology_key, std::vector<std::string> namespaces = {"ns"}) {
  PodAffinityTerm t;
  t.selector.match_labels = std::move(match);
  t.topology_key = std::move(topology_key);
  t.namespaces = std::move(namespaces);
  return t;
}
inline PodAffinityTerm HostnameTerm(Labels match) { return Term(std::move(match), "kubernetes.io/hostname"); }
// A DoNotSchedule topology spread constraint counting the pods whose labels match `match`.
inline SpreadConstraint Spread(Labels match, std::string topology_key, int32_t max_skew = 1) {
  SpreadConstraint c;
  c.selector.match_labels = std::move(match);
  c.topology_key = std::move(topology_key);
  c.max_skew = max_skew;
  return c;
}

class Cluster {
 public:
  explicit Cluster(SchedulerConf conf = Conf()) {
    auto s = Scheduler::Create(std::move(conf));
    EXPECT_TRUE(s.ok()) << s.status().message();
    s_ = std::move(s).value();
    gpu_ = *s_->state().resources().Intern("nvidia.com/gpu");
  }
  // Helm default plus the topology plugins, so every implemented plugin is on.
  static SchedulerConf Conf() {
    SchedulerConf c = SchedulerConf::Default();
    c.tiers[1].plugins.push_back(PluginOption::Named("task-topology"));
    c.tiers[1].plugins.push_back(PluginOption::Named("network-topology-aware"));
    return c;
  }
  Scheduler& s() { return *s_; }
  ClusterState& st() { return s_->state(); }
  int gpu() const { return gpu_; }

  NodeInfo& Node(const std::string& name, int64_t cpu_milli, int64_t mem, int64_t gpus = 0, Labels labels = {}) {
    NodeInfo n;
    n.name = name;
    n.allocatable = Resource::CpuMem(cpu_milli, mem).With(kPods, 110).With(gpu_, gpus);
    n.labels = std::move(labels);
    st().UpsertNode(n);
    return const_cast<NodeInfo&>(*st().FindNode(name));
  }
  void Queue(const std::string& name, int weight = 1, Resource cap = Resource::Unlimited()) {
    QueueInfo q;
    q.name = name;
    q.weight = weight;
    q.capability = cap;
    st().UpsertQueue(q);
  }
  JobInfo Job(const std::string& name, int min_member, const std::string& queue = "default", int priority = 0) {
    JobInfo j;
    j.key = "ns/" + name;
    j.ns = "ns";
    j.name = name;
    j.uid = "uid-" + name;
    j.queue = queue;
    j.min_member = min_member;
    j.priority = priority;
    j.creation_time = WallTime(std::chrono::seconds(1000 + seq_++));
    return j;
  }
  void AddJob(const JobInfo& j) { st().UpsertJob(j); }
  TaskInfo Pod(const JobInfo& j, int i, Resource req, const std::string& role = "worker") {
    TaskInfo t;
    t.uid = j.name + "-" + std::to_string(i);
    t.ns = j.ns;
    t.name = t.uid;
    t.job = j.key;
    t.role = role;
    t.request = req;
    t.creation_index = static_cast<uint64_t>(seq_++);
    return t;
  }
  // A gang of n identical pods.
  JobInfo Gang(const std::string& name, int n, Resource req, const std::string& queue = "default", int min = -1) {
    JobInfo j = Job(name, min < 0 ? n : min, queue);
    AddJob(j);
    for (int i = 0; i < n; ++i) st().UpsertPod(Pod(j, i, req));
    return j;
  }
  CycleResult Run() { return s_->RunCycle(WallTime(std::chrono::seconds(2'000'000'000))); }
  CycleResult RunAt(int64_t seconds_after) {
    return s_->RunCycle(WallTime(std::chrono::seconds(2'000'000'000 + seconds_after)));
  }
  int BoundCount(const std::string& job_key) {
    int n = 0;
    for (const TaskInfo* t : st().TasksOfJob(job_key))
      if (t->status == TaskStatus::kBinding || t->status == TaskStatus::kBound || t->status == TaskStatus::kRunning) ++n;
    return n;
  }

 private:
  std::unique_ptr<Scheduler> s_;
  int gpu_ = 0;
  int seq_ = 0;
};

}  // namespace tephra::sched::testing
