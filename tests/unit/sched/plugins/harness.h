// A Session over a hand-built ClusterState with exactly the plugins under test (shared by the per-plugin
// tests in this folder).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../fixture.h"
#include "tephra/sched/framework.h"

namespace tephra::sched::testing {

// A session over a hand-built state with exactly the plugins under test.
class Harness {
 public:
  Harness() { gpu = *st.resources().Intern("nvidia.com/gpu"); }
  void Add(PluginOption o, int tier = 0) {
    auto p = PluginRegistry::Builtin().Create(o);
    ASSERT_TRUE(p.ok()) << o.name << ": " << p.status().message();
    slots.push_back({std::move(p).value(), o, tier});
  }
  Session& Open() {
    ssn = std::make_unique<Session>(&st, &conf, &slots, WallTime{}, nullptr, &out);
    core::Status s = ssn->Open();
    EXPECT_TRUE(s.ok()) << s.message();
    return *ssn;
  }
  // Returns the name; look nodes up with N() after adding them all (the slot vector may reallocate).
  std::string AddNode(const std::string& name, Resource alloc, Labels labels = {}, std::vector<Taint> taints = {}) {
    NodeInfo n;
    n.name = name;
    n.allocatable = alloc.With(kPods, 110);
    n.labels = std::move(labels);
    n.taints = std::move(taints);
    st.UpsertNode(n);
    return name;
  }
  const NodeInfo& N(const std::string& name) const { return *st.FindNode(name); }
  const TaskInfo& AddPod(TaskInfo t) {
    st.UpsertPod(t);
    return *st.FindTask(t.uid);
  }
  static TaskInfo Pod(const std::string& uid, Resource req) {
    TaskInfo t;
    t.uid = uid;
    t.ns = "ns";
    t.name = uid;
    t.request = req;
    return t;
  }
  ClusterState st;
  SchedulerConf conf;
  std::vector<PluginSlot> slots;
  CycleResult out;
  std::unique_ptr<Session> ssn;
  int gpu = 0;
};

}  // namespace tephra::sched::testing
