// The web view (docs/web-view.md): the snapshot JSON of a small built state, the node fault ring, and the
// embedded files (what /ui/ serves is byte for byte the file in scheduler-ext/web/).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tephra/api/labels.h"
#include "tephra/scheduler/webview.h"

namespace tephra::scheduler {
namespace {

using api::json;
constexpr int64_t kGi = 1024LL * 1024 * 1024;
const sched::WallTime kNow = sched::WallTime(std::chrono::seconds(2'000'000'000));

std::string ReadSource(const std::string& rel) {
  std::ifstream f(std::string(TEPHRA_SOURCE_DIR) + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

kube::ServerRequest Get(const std::string& path) {
  kube::ServerRequest r;
  r.method = "GET";
  r.path = path;
  return r;
}

api::Node ApiNode(const std::string& name, bool ready) {
  api::Node n;
  n.metadata.name = name;
  api::NodeCondition c;
  c.type = "Ready";
  c.status = ready ? "True" : "False";
  n.status.conditions.push_back(c);
  return n;
}

// A spine s1 over leaves l1 (n1, n2) and l2 (n3); n4 in no HyperNode. Every node: 8 cpu, 32Gi, 4 GPUs.
// Queues default and research; gang `train` (4 pods of 2 GPUs) runs on n1 and n2; `big` and `big2` (2 pods of
// 8 GPUs each) can never fit and wait in default, in that order; n3 is dead and marked by the fault controller.
class WebViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = sched::Scheduler::Create(sched::SchedulerConf::Default());
    ASSERT_TRUE(s.ok()) << s.status().message();
    core_ = std::move(*s);
    auto& st = core_->state();
    gpu_ = *st.resources().Intern("nvidia.com/gpu");
    for (const auto& [leaf, nodes] :
         std::vector<std::pair<std::string, std::vector<std::string>>>{{"l1", {"n1", "n2"}}, {"l2", {"n3"}}}) {
      sched::HyperNodeInfo h;
      h.name = leaf;
      h.tier = 1;
      h.tier_name = "leaf";
      for (const auto& n : nodes) h.members.push_back({sched::HyperNodeMemberType::kNode, sched::MemberSelectorKind::kExact, n, {}});
      st.UpsertHyperNode(h);
    }
    sched::HyperNodeInfo spine;
    spine.name = "s1";
    spine.tier = 2;
    spine.tier_name = "spine";
    for (const char* l : {"l1", "l2"})
      spine.members.push_back({sched::HyperNodeMemberType::kHyperNode, sched::MemberSelectorKind::kExact, l, {}});
    st.UpsertHyperNode(spine);
    for (const char* name : {"n1", "n2", "n3", "n4"}) {
      sched::NodeInfo n;
      n.name = name;
      n.allocatable = sched::Resource::CpuMem(8000, 32 * kGi).With(sched::kPods, 110).With(gpu_, 4);
      n.ready = std::string(name) != "n3";
      n.unschedulable = std::string(name) == "n3";  // the fault mark keeps Tephra's pods off (convert.cc)
      st.UpsertNode(n);
    }
    for (auto [name, weight] : {std::pair<const char*, int>{"default", 1}, {"research", 3}}) {
      sched::QueueInfo q;
      q.name = name;
      q.weight = weight;
      q.parent = "root";
      st.UpsertQueue(q);
    }
    sched::JobInfo train = Job("train", "research", 4, 1);
    train.phase = sched::PodGroupPhase::kRunning;
    st.UpsertJob(train);
    for (int i = 0; i < 4; ++i) {
      sched::TaskInfo t = Pod(train, i, sched::Resource::CpuMem(1000, 2 * kGi).With(gpu_, 2));
      t.status = sched::TaskStatus::kRunning;
      t.node = i < 2 ? "n1" : "n2";
      st.UpsertPod(t);
    }
    for (auto [name, created] : {std::pair<const char*, int>{"big", 2}, {"big2", 3}}) {
      sched::JobInfo j = Job(name, "default", 2, created);
      st.UpsertJob(j);
      for (int i = 0; i < 2; ++i) st.UpsertPod(Pod(j, i, sched::Resource::CpuMem(1000, kGi).With(gpu_, 8)));
    }
    api::Node dead = ApiNode("n3", false);
    dead.metadata.annotations[std::string(api::kFaultAnnotation)] = "NotReady";
    for (const char* n : {"n1", "n2", "n4"}) rec_.ObserveNode(n, nullptr, kNow);  // unknown and gone: nothing
    api::Node healthy = ApiNode("n1", true);
    rec_.ObserveNode("n1", &healthy, kNow);
    rec_.ObserveNode("n3", &dead, kNow);
    // Two cycles, positions being recomputed at most every 2 s.
    for (int i = 0; i < 2; ++i) {
      sched::CycleResult res = core_->RunCycle(kNow + std::chrono::seconds(3 * i));
      ASSERT_TRUE(res.status.ok()) << res.status.message();
      for (const auto& u : res.pod_groups) emitted_[u.job] = u.conditions;
      rec_.ObserveCycle(res, st);
    }
  }

  sched::JobInfo Job(const std::string& name, const std::string& queue, int min, int created) {
    sched::JobInfo j;
    j.key = "ns/" + name;
    j.ns = "ns";
    j.name = name;
    j.uid = "uid-" + name;
    j.queue = queue;
    j.min_member = min;
    j.creation_time = sched::WallTime(std::chrono::seconds(1000 + created));
    return j;
  }
  sched::TaskInfo Pod(const sched::JobInfo& j, int i, sched::Resource req) {
    sched::TaskInfo t;
    t.uid = j.name + "-" + std::to_string(i);
    t.ns = j.ns;
    t.name = t.uid;
    t.job = j.key;
    t.request = req;
    t.creation_index = static_cast<uint64_t>(++seq_);
    return t;
  }
  json Snapshot() {
    WebExtras x;
    x.now = kNow;
    x.leading = true;
    x.cycles = 2;
    x.faults = rec_.Faults();
    x.node_signals = rec_.NodeSignals();
    x.conditions = &rec_.conditions();
    // Through text, as the browser gets it.
    return json::parse(BuildWebSnapshot(*core_, x).dump());
  }
  static const json* Find(const json& list, const std::string& key, const std::string& value) {
    for (const auto& e : list)
      if (e.value(key, "") == value) return &e;
    return nullptr;
  }

  std::unique_ptr<sched::Scheduler> core_;
  int gpu_ = 0;
  int seq_ = 0;
  WebViewRecorder rec_;
  EmittedConditions emitted_;
};

TEST_F(WebViewTest, QueuesWithDeservedSharesAndJobCounts) {
  json s = Snapshot();
  EXPECT_EQ(s["schemaVersion"], 1);
  EXPECT_EQ(s["scheduler"]["leading"], true);
  EXPECT_EQ(s["scheduler"]["nodes"], 4);
  const json* research = Find(s["queues"], "name", "research");
  const json* def = Find(s["queues"], "name", "default");
  ASSERT_TRUE(research && def) << s["queues"].dump();
  EXPECT_EQ((*research)["weight"], 3);
  EXPECT_EQ((*research)["state"], "Open");
  EXPECT_EQ((*research)["parent"], "root");
  EXPECT_EQ((*research)["allocated"]["nvidia.com/gpu"], 8);
  EXPECT_DOUBLE_EQ((*research)["allocated"]["cpu"].get<double>(), 4.0);
  EXPECT_EQ((*research)["running"], 1);
  EXPECT_EQ((*research)["pending"], 0);
  EXPECT_EQ((*def)["pending"], 2);
  EXPECT_EQ((*def)["request"]["nvidia.com/gpu"], 32);
  EXPECT_TRUE((*research)["capability"].empty()) << "unlimited dimensions are left out";
  // proportion runs in the default configuration: deserved is known, and the share is allocated/deserved at
  // its largest.
  ASSERT_TRUE((*research)["deserved"].is_object()) << research->dump();
  ASSERT_TRUE((*research)["share"].is_number());
  double want = 0;
  for (const auto& [r, alloc] : (*research)["allocated"].items()) {
    const double des = (*research)["deserved"].value(r, 0.0);
    want = std::max(want, des > 0 ? alloc.get<double>() / des : 1.0);
  }
  EXPECT_NEAR((*research)["share"].get<double>(), want, 1e-9);
  EXPECT_GT(want, 0);
}

TEST_F(WebViewTest, PendingJobsInQueueOrderWithTheReasonTheCoreEmitted) {
  json s = Snapshot();
  ASSERT_EQ(s["pending"].size(), 2u) << s["pending"].dump(2);
  EXPECT_EQ(s["pendingTotal"], 2);
  const json& big = s["pending"][0];
  EXPECT_EQ(big["name"], "big");
  EXPECT_EQ(big["namespace"], "ns");
  EXPECT_EQ(big["queue"], "default");
  EXPECT_EQ(big["minMember"], 2);
  EXPECT_EQ(big["position"], 1);
  EXPECT_EQ(s["pending"][1]["name"], "big2");
  EXPECT_EQ(s["pending"][1]["position"], 2);
  // The reason is the Unschedulable condition the core last emitted for the PodGroup, word for word.
  ASSERT_TRUE(emitted_.count("ns/big"));
  std::string reason, message, queued;
  for (const auto& c : emitted_["ns/big"]) {
    if (c.type == "Unschedulable") reason = c.reason, message = c.message;
    if (c.type == "Queued") queued = c.message;
  }
  ASSERT_FALSE(reason.empty());
  EXPECT_EQ(big["reason"], reason);
  EXPECT_EQ(big["message"], message);
  EXPECT_EQ(big["queued"], queued);
  EXPECT_NE(queued.find("position 1 in queue default"), std::string::npos) << queued;
  EXPECT_TRUE(big["estimate"].is_null()) << "reservations are off";
}

TEST_F(WebViewTest, RunningGangWithPlacementAndLeaf) {
  json s = Snapshot();
  ASSERT_EQ(s["running"].size(), 1u) << s["running"].dump(2);
  const json& train = s["running"][0];
  EXPECT_EQ(train["name"], "train");
  EXPECT_EQ(train["queue"], "research");
  EXPECT_EQ(train["running"], 4);
  EXPECT_EQ(train["minMember"], 4);
  EXPECT_EQ(train["placement"], json({{"n1", 2}, {"n2", 2}}));
  EXPECT_EQ(train["leaves"], json::array({"l1"}));
}

TEST_F(WebViewTest, ClusterMapBySpineAndLeafWithTheFaultedNode) {
  json s = Snapshot();
  const json& c = s["cluster"];
  ASSERT_EQ(c["groups"].size(), 1u) << c.dump(2);
  const json& spine = c["groups"][0];
  EXPECT_EQ(spine["name"], "s1");
  EXPECT_EQ(spine["tier"], 2);
  ASSERT_EQ(spine["leaves"].size(), 2u);
  EXPECT_EQ(spine["leaves"][0]["name"], "l1");
  EXPECT_EQ(spine["leaves"][1]["name"], "l2");
  ASSERT_EQ(spine["leaves"][0]["nodes"].size(), 2u);
  const json& n1 = spine["leaves"][0]["nodes"][0];
  EXPECT_EQ(n1["name"], "n1");
  EXPECT_EQ(n1["ready"], true);
  EXPECT_EQ(n1["faulted"], false);
  EXPECT_EQ(n1["pods"], 2);
  EXPECT_DOUBLE_EQ(n1["cpu"]["allocated"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(n1["cpu"]["allocatable"].get<double>(), 8.0);
  EXPECT_EQ(n1["memory"]["allocated"], 4 * kGi);
  ASSERT_EQ(n1["devices"].size(), 1u);
  EXPECT_EQ(n1["devices"][0], json({{"name", "nvidia.com/gpu"}, {"allocated", 4}, {"allocatable", 4}, {"device", true}}));
  const json& n3 = spine["leaves"][1]["nodes"][0];
  EXPECT_EQ(n3["name"], "n3");
  EXPECT_EQ(n3["ready"], false);
  EXPECT_EQ(n3["unschedulable"], true);
  EXPECT_EQ(n3["faulted"], true);
  EXPECT_EQ(n3["signals"], json::array({"Fault:NotReady", "NotReady"}));
  ASSERT_EQ(c["ungrouped"].size(), 1u);
  EXPECT_EQ(c["ungrouped"][0]["name"], "n4");
  EXPECT_EQ(c["tierNames"]["1"], "leaf");
  EXPECT_EQ(c["tierNames"]["2"], "spine");
  ASSERT_EQ(s["faults"].size(), 1u) << s["faults"].dump();
  EXPECT_EQ(s["faults"][0], json({{"time", core::FormatRfc3339(kNow)}, {"node", "n3"}, {"kind", "fault"},
                                  {"signals", {"Fault:NotReady", "NotReady"}}}));
}

TEST(WebViewRecorderTest, FaultsRecoveriesAndABoundedRing) {
  WebViewRecorder rec(3);
  const sched::WallTime t0 = kNow;
  api::Node n = ApiNode("gpu-1", true);
  n.status.capacity["nvidia.com/gpu"] = core::Quantity::FromUnits(8);
  n.status.allocatable["nvidia.com/gpu"] = core::Quantity::FromUnits(8);
  rec.ObserveNode("gpu-1", &n, t0);
  EXPECT_TRUE(rec.Faults().empty()) << "a healthy node is no news";
  n.status.allocatable["nvidia.com/gpu"] = core::Quantity::FromUnits(7);
  rec.ObserveNode("gpu-1", &n, t0 + std::chrono::seconds(1));
  rec.ObserveNode("gpu-1", &n, t0 + std::chrono::seconds(2));  // a heartbeat: nothing new
  api::NodeCondition xid;
  xid.type = "GpuXidError";
  xid.status = "True";
  n.status.conditions.push_back(xid);
  n.spec.unschedulable = true;
  rec.ObserveNode("gpu-1", &n, t0 + std::chrono::seconds(3));
  n.status.conditions.pop_back();
  n.spec.unschedulable = false;
  n.status.allocatable["nvidia.com/gpu"] = core::Quantity::FromUnits(8);
  rec.ObserveNode("gpu-1", &n, t0 + std::chrono::seconds(4));
  auto f = rec.Faults();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].kind, "recovery");
  EXPECT_EQ(f[0].signals, (std::vector<std::string>{"Unschedulable", "GpuXidError", "DeviceUnhealthy:nvidia.com/gpu 7/8"}))
      << "a recovery says what cleared";
  EXPECT_EQ(f[1].kind, "change");
  EXPECT_EQ(f[2].kind, "fault");
  EXPECT_EQ(f[2].signals, (std::vector<std::string>{"DeviceUnhealthy:nvidia.com/gpu 7/8"}));
  EXPECT_EQ(f[2].at, t0 + std::chrono::seconds(1));
  EXPECT_TRUE(rec.NodeSignals().empty());
  // The ring keeps the newest `capacity`.
  api::Node dead = ApiNode("other", false);
  rec.ObserveNode("other", &dead, t0 + std::chrono::seconds(5));
  rec.ObserveNode("other", nullptr, t0 + std::chrono::seconds(6));
  f = rec.Faults();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].kind, "removed");
  EXPECT_EQ(f[0].signals, std::vector<std::string>{"NotReady"});
  EXPECT_EQ(f[1].kind, "fault");
  EXPECT_EQ(f[2].kind, "recovery");
}

TEST(WebViewAssetsTest, ServedFilesAreTheSourceFiles) {
  for (const char* name : {"index.html", "app.js", "app.css"}) {
    const WebAsset* a = FindWebAsset(name);
    ASSERT_NE(a, nullptr) << name;
    EXPECT_EQ(std::string(a->body), ReadSource(std::string("scheduler-ext/web/") + name)) << name;
  }
  EXPECT_EQ(FindWebAsset("index.html")->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(FindWebAsset("app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(FindWebAsset("app.css")->content_type, "text/css; charset=utf-8");
  EXPECT_EQ(FindWebAsset("missing.js"), nullptr);

  std::map<std::string, kube::HttpHandler> routes;
  for (auto& [path, h] : WebViewRoutes([] { return std::pair<int, std::string>{503, R"({"error":"x"})"}; }))
    routes[path] = h;
  for (const char* p : {"/ui", "/ui/", "/ui/index.html"}) {
    ASSERT_TRUE(routes.count(p)) << p;
    kube::ServerResponse r = routes[p](Get(p));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, ReadSource("scheduler-ext/web/index.html")) << p;
  }
  ASSERT_TRUE(routes.count("/ui/app.js"));
  EXPECT_EQ(routes["/ui/app.js"](Get("/ui/app.js")).body, ReadSource("scheduler-ext/web/app.js"));
  kube::ServerResponse snap = routes["/ui/api/v1/snapshot"](Get("/ui/api/v1/snapshot"));
  EXPECT_EQ(snap.status, 503);
  EXPECT_EQ(snap.content_type, "application/json");
  EXPECT_EQ(routes.size(), 6u) << "read-only: the page, its two files, the snapshot";
}

}  // namespace
}  // namespace tephra::scheduler
