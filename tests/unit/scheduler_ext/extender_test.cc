// The kube-scheduler extender handlers (filter, prioritize, bind) over a synthetic ClusterState, plus the
// endpoints over a loopback HttpServer. No cluster; milliseconds.
#include <mutex>

#include <gtest/gtest.h>
#include <httplib.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"
#include "tephra/sched/cluster_state.h"
#include "tephra/scheduler/convert.h"
#include "tephra/scheduler/extender.h"

namespace tephra::scheduler {
namespace {

using api::json;
using kube::testing::FakeClient;

sched::NodeInfo Node(const std::string& name, int64_t cpu_milli) {
  sched::NodeInfo n;
  n.name = name;
  n.allocatable = sched::Resource::CpuMem(cpu_milli, 16LL << 30).With(sched::kPods, 110);
  return n;
}

// A running foreign pod holding `cpu_milli` on `node` (how the process feeds pods kube-scheduler placed).
void Occupy(sched::ClusterState& st, const std::string& uid, const std::string& node, int64_t cpu_milli) {
  sched::TaskInfo t;
  t.uid = uid;
  t.ns = "default";
  t.name = uid;
  t.status = sched::TaskStatus::kRunning;
  t.node = node;
  t.request = sched::Resource::CpuMem(cpu_milli, 1LL << 30);
  st.UpsertPod(t);
}

json PodJson(const std::string& cpu, const std::string& group = "") {
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "uid-p"}}},
            {"spec",
             {{"containers", json::array({{{"name", "c"}, {"image", "busybox"},
                                           {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}})}}}};
  if (!group.empty()) p["metadata"]["annotations"] = {{"scheduling.k8s.io/group-name", group}};
  return p;
}

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = Extender::Create(sched::SchedulerConf::Default(), sched::PluginRegistry::Builtin());
    ASSERT_TRUE(e.ok()) << e.status();
    ext_ = std::move(*e);
    st_.UpsertNode(Node("free", 8000));
    st_.UpsertNode(Node("full", 8000));
    Occupy(st_, "big", "full", 7500);  // 0.5 cpu left: a 1-cpu pod does not fit (kube-scheduler may not know)
    sched::NodeInfo tainted = Node("tainted", 8000);
    tainted.taints.push_back({"dedicated", "gpu", sched::TaintEffect::kNoSchedule});
    st_.UpsertNode(tainted);
    st_.UpsertNode(Node("half", 8000));
    Occupy(st_, "mid", "half", 4000);
  }
  json Call(ExtenderReply (Extender::*fn)(sched::ClusterState&, const std::string&), const json& body) {
    ExtenderReply r = (ext_.get()->*fn)(st_, body.dump());
    EXPECT_EQ(r.http_status, 200) << r.body;
    return json::parse(r.body);
  }
  std::unique_ptr<Extender> ext_;
  sched::ClusterState st_;
};

TEST_F(ExtenderTest, FilterByNodeNamesGivesPredicateReasons) {
  json res = Call(&Extender::Filter, {{"Pod", PodJson("1")}, {"NodeNames", {"free", "full", "tainted", "half", "ghost"}}});
  EXPECT_EQ(res["NodeNames"], json({"free", "half"}));
  EXPECT_EQ(res["FailedNodes"]["full"], "node(s) had insufficient cpu");
  EXPECT_EQ(res["FailedNodes"]["tainted"], "node(s) had untolerated taint {dedicated: gpu}");
  EXPECT_NE(res["FailedNodes"]["ghost"].get<std::string>().find("unknown to the Tephra scheduler"), std::string::npos);
  // A taint cannot be fixed by preemption; a resource shortage can.
  EXPECT_EQ(res["FailedAndUnresolvableNodes"], json({{"tainted", "node(s) had untolerated taint {dedicated: gpu}"}}));
  EXPECT_EQ(res["Error"], "");
  EXPECT_FALSE(res.contains("Nodes"));

  // A smaller pod fits the nearly full node; the filter reads the live accounting, not a copy.
  res = Call(&Extender::Filter, {{"Pod", PodJson("500m")}, {"NodeNames", {"full"}}});
  EXPECT_EQ(res["NodeNames"], json({"full"}));
  st_.RemovePod("big");
  res = Call(&Extender::Filter, {{"Pod", PodJson("4")}, {"NodeNames", {"full"}}});
  EXPECT_EQ(res["NodeNames"], json({"full"}));
}

// The e2e_feasibility test compares these answers with kube-scheduler v1.20.2's; this is the same pair of
// cases without a cluster: a bound foreign pod's host port, and a cordon the pod tolerates.
TEST_F(ExtenderTest, FilterSeesForeignHostPortsAndTheCordonToleration) {
  json held = PodJson("100m");
  held["metadata"] = {{"name", "db"}, {"namespace", "default"}, {"uid", "uid-db"}};
  held["spec"]["nodeName"] = "free";
  held["spec"]["containers"][0]["ports"] = {{{"containerPort", 8080}, {"hostPort", 8080}, {"protocol", "TCP"}}};
  held["status"] = {{"phase", "Running"}};
  api::Pod db;
  ASSERT_TRUE(api::Decode(held, &db).ok());
  st_.UpsertPod(ToTaskInfo(db, &st_.resources(), {"volcano"}));

  json want = PodJson("100m");
  want["spec"]["containers"][0]["ports"] = {{{"containerPort", 80}, {"hostPort", 8080}}};
  json res = Call(&Extender::Filter, {{"Pod", want}, {"NodeNames", {"free", "half"}}});
  EXPECT_EQ(res["NodeNames"], json({"half"}));
  EXPECT_EQ(res["FailedNodes"]["free"], "node(s) didn't have free ports for the requested pod ports");

  sched::NodeInfo cordoned = Node("cordoned", 8000);
  cordoned.unschedulable = true;
  st_.UpsertNode(cordoned);
  res = Call(&Extender::Filter, {{"Pod", PodJson("100m")}, {"NodeNames", {"cordoned"}}});
  EXPECT_EQ(res["FailedNodes"]["cordoned"], "node(s) were unschedulable");
  for (json tol : {json{{"key", "node.kubernetes.io/unschedulable"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                   json{{"operator", "Exists"}}}) {
    json p = PodJson("100m");
    p["spec"]["tolerations"] = json::array({tol});
    res = Call(&Extender::Filter, {{"Pod", p}, {"NodeNames", {"cordoned"}}});
    EXPECT_EQ(res["NodeNames"], json({"cordoned"})) << tol.dump();
  }
}

TEST_F(ExtenderTest, FilterEchoesTheNodeListWhenNotNodeCacheCapable) {
  json nodes = {{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", json::object()},
                {"items", {{{"metadata", {{"name", "free"}, {"labels", {{"a", "b"}}}}}, {"status", {{"x", 1}}}},
                           {{"metadata", {{"name", "full"}}}}}}};
  json res = Call(&Extender::Filter, {{"Pod", PodJson("1")}, {"Nodes", nodes}});
  ASSERT_TRUE(res.contains("Nodes")) << res;
  ASSERT_EQ(res["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(res["Nodes"]["items"][0], nodes["items"][0]);  // passed through whole
  EXPECT_EQ(res["Nodes"]["kind"], "NodeList");
  EXPECT_EQ(res["FailedNodes"]["full"], "node(s) had insufficient cpu");
  EXPECT_FALSE(res.contains("NodeNames"));
}

TEST_F(ExtenderTest, KeysAreMatchedCaseInsensitivelyLikeGo) {
  json res = Call(&Extender::Filter, {{"pod", PodJson("1")}, {"nodenames", {"free", "full"}}});
  EXPECT_EQ(res["NodeNames"], json({"free"}));
}

TEST_F(ExtenderTest, MalformedRequestsAre400WithTheReason) {
  auto r = ext_->Filter(st_, "{not json");
  EXPECT_EQ(r.http_status, 400);
  EXPECT_NE(r.body.find("body is not JSON"), std::string::npos) << r.body;
  r = ext_->Filter(st_, R"({"NodeNames":["free"]})");
  EXPECT_EQ(r.http_status, 400);
  EXPECT_NE(r.body.find("ExtenderArgs.Pod is missing"), std::string::npos) << r.body;
  r = ext_->Prioritize(st_, json({{"Pod", PodJson("1")}}).dump());
  EXPECT_EQ(r.http_status, 400);
  EXPECT_NE(r.body.find("neither NodeNames nor Nodes"), std::string::npos) << r.body;
  r = ext_->Filter(st_, json({{"Pod", PodJson("1")}, {"NodeNames", {1, 2}}}).dump());
  EXPECT_EQ(r.http_status, 400);
  EXPECT_NE(r.body.find("array of strings"), std::string::npos) << r.body;
  r = ext_->Filter(st_, "[]");
  EXPECT_EQ(r.http_status, 400);
}

TEST_F(ExtenderTest, GangPodsWaitForAdmission) {
  sched::JobInfo j;
  j.key = "default/pg";
  j.ns = "default";
  j.name = "pg";
  j.min_member = 4;
  j.phase = sched::PodGroupPhase::kPending;
  st_.UpsertJob(j);
  json res = Call(&Extender::Filter, {{"Pod", PodJson("1", "pg")}, {"NodeNames", {"free", "half"}}});
  EXPECT_EQ(res["NodeNames"], json::array());
  const std::string msg = res["FailedAndUnresolvableNodes"]["free"];
  EXPECT_NE(msg.find("gang not admitted: PodGroup default/pg is Pending"), std::string::npos) << msg;
  EXPECT_EQ(res["FailedNodes"]["half"], msg);

  res = Call(&Extender::Filter, {{"Pod", PodJson("1", "missing")}, {"NodeNames", {"free"}}});
  EXPECT_NE(res["FailedNodes"]["free"].get<std::string>().find("default/missing is unknown"), std::string::npos);

  st_.RemoveJob("default/pg");
  j.phase = sched::PodGroupPhase::kInqueue;
  st_.UpsertJob(j);
  res = Call(&Extender::Filter, {{"Pod", PodJson("1", "pg")}, {"NodeNames", {"free", "full"}}});
  EXPECT_EQ(res["NodeNames"], json({"free"}));  // admitted: the ordinary predicates apply again
}

TEST_F(ExtenderTest, PrioritizeScalesTephraScoresToZeroTen) {
  // Binpack only (weight 1, cpu and memory): the fuller node is preferred.
  sched::SchedulerConf conf;
  conf.actions = {"allocate"};
  conf.tiers = {{{sched::PluginOption::Named("binpack")}}};
  ASSERT_TRUE(ext_->UpdateConf(conf).ok());
  json res = Call(&Extender::Prioritize, {{"Pod", PodJson("1")}, {"NodeNames", {"free", "half", "ghost"}}});
  ASSERT_EQ(res.size(), 3u);
  EXPECT_EQ(res[0], json({{"Host", "free"}, {"Score", 0}}));
  EXPECT_EQ(res[1], json({{"Host", "half"}, {"Score", 10}}));
  EXPECT_EQ(res[2], json({{"Host", "ghost"}, {"Score", 0}}));

  // nodeorder with leastrequested only: the emptier node wins instead.
  sched::PluginOption no = sched::PluginOption::Named("nodeorder");
  no.arguments = {{"balancedresource.weight", "0"}};
  conf.tiers = {{{no}}};
  ASSERT_TRUE(ext_->UpdateConf(conf).ok());
  res = Call(&Extender::Prioritize, {{"Pod", PodJson("1")}, {"NodeNames", {"free", "half"}}});
  EXPECT_EQ(res[0]["Score"], 10);
  EXPECT_EQ(res[1]["Score"], 0);

  // Equal scores: no preference (all 0).
  res = Call(&Extender::Prioritize, {{"Pod", PodJson("1")}, {"NodeNames", {"free", "tainted"}}});
  EXPECT_EQ(res[0]["Score"], 0);
  EXPECT_EQ(res[1]["Score"], 0);

  // A bad configuration is refused and the previous one stays.
  sched::SchedulerConf bad = conf;
  bad.actions.push_back("no-such-action");  // rejected by Volcano too (an unknown plugin is only skipped)
  EXPECT_FALSE(ext_->UpdateConf(bad).ok());
  res = Call(&Extender::Prioritize, {{"Pod", PodJson("1")}, {"NodeNames", {"free", "half"}}});
  EXPECT_EQ(res[0]["Score"], 10);
}

TEST(ExtenderBindTest, BindsThroughTheClient) {
  FakeClient fc;
  json stored = fc.Seed(api::Pod::Resource(), PodJson("1"));
  const std::string uid = stored["metadata"]["uid"];
  json args = {{"PodName", "p"}, {"PodNamespace", "default"}, {"PodUID", uid}, {"Node", "free"}};
  auto r = Bind(fc, args.dump());
  ASSERT_EQ(r.http_status, 200);
  EXPECT_EQ(json::parse(r.body), json({{"Error", ""}}));
  auto got = fc.Get(api::Pod::Resource(), "default", "p");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["spec"]["nodeName"], "free");

  // Second bind: the API says 409, reported as an error kube-scheduler shows.
  r = Bind(fc, args.dump());
  EXPECT_NE(json::parse(r.body)["Error"].get<std::string>().find("already assigned"), std::string::npos) << r.body;
  r = Bind(fc, json({{"PodName", "nope"}, {"PodNamespace", "default"}, {"Node", "free"}}).dump());
  EXPECT_NE(json::parse(r.body)["Error"].get<std::string>().find("binding default/nope to free"), std::string::npos);

  r = Bind(fc, R"({"PodName":"p"})");
  EXPECT_EQ(r.http_status, 400);
  EXPECT_NE(r.body.find("ExtenderBindingArgs.Node is missing"), std::string::npos) << r.body;
  EXPECT_EQ(Bind(fc, R"({"PodName":"p","Node":3})").http_status, 400);
}

TEST_F(ExtenderTest, EndpointsUnderAPrefixTakeTheStateLock) {
  std::mutex mu;
  int locked_calls = 0;
  kube::HttpServer srv;
  InstallExtenderEndpoints(srv, "/tephra/", ext_.get(),
                           [&](const std::function<void(sched::ClusterState&)>& fn) {
                             std::lock_guard l(mu);
                             ++locked_calls;
                             fn(st_);
                           },
                           std::make_shared<FakeClient>());
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  httplib::Client c("127.0.0.1", srv.port());
  auto r = c.Post("/tephra/filter", json({{"Pod", PodJson("1")}, {"NodeNames", {"free", "full"}}}).dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(r->body)["NodeNames"], json({"free"}));
  r = c.Post("/tephra/prioritize", "{oops", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("bad extender request: body is not JSON"), std::string::npos);
  r = c.Post("/tephra/bind", R"({"PodName":"x","PodNamespace":"default","Node":"free"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(c.Post("/filter", "{}", "application/json")->status, 404);
  srv.Stop();
  std::lock_guard l(mu);
  // Only the well-formed filter reached the state: a body that does not parse is answered before, and bind
  // does not touch the state.
  EXPECT_EQ(locked_calls, 1);
}

}  // namespace
}  // namespace tephra::scheduler
