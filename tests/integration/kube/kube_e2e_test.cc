// The client runtime against a real kube-apiserver (label e2e; run inside tests/e2e/run-with-cluster.sh, or by
// hand after `cluster.sh up <dir>` + `eval "$(cluster.sh env <dir>)"`). Uses $KUBECONFIG.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <atomic>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "tephra/kube/config.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/transport.h"

namespace tephra::kube {
namespace {

using Clock = std::chrono::steady_clock;

const ResourceInfo kNamespaces{"", "v1", "Namespace", "namespaces", false};
const ResourceInfo kConfigMaps{"", "v1", "ConfigMap", "configmaps", true};
const ResourceInfo kPods{"", "v1", "Pod", "pods", true};
const ResourceInfo kNodes{"", "v1", "Node", "nodes", false};
const ResourceInfo kCrds{"apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false};
const ResourceInfo kGadgets{"e2e.tephra.io", "v1", "Gadget", "gadgets", true};

// A ConfigMap as a typed kind for informer tests.
struct ConfigMap {
  static const ResourceInfo& Resource() { return kConfigMaps; }
  api::ObjectMeta metadata;
  std::map<std::string, std::string> data;
  json extra;
};
Status Decode(const json& j, ConfigMap* out) {
  api::FieldReader r(j, &out->extra);
  r.Get("metadata", &out->metadata).Get("data", &out->data);
  return r.status();
}

template <typename F>
bool PollUntil(F f, std::chrono::milliseconds within) {
  auto deadline = Clock::now() + within;
  while (Clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return f();
}

class KubeE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cfg = LoadConfig();
    ASSERT_TRUE(cfg.ok()) << cfg.status();
    cfg->qps = 500;
    cfg->burst = 1000;
    auto c = NewClient(*cfg);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = new ClientPtr(*c);
  }
  void SetUp() override {
    if (!client_) GTEST_SKIP() << "no client";
    ns_ = "kc-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (auto& ch : ns_) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    // Unique per run (a deleted namespace lingers while it terminates); names are limited to 63 characters.
    ns_ = ns_.substr(0, 40) + "-" + std::to_string(::getpid());
    auto r = c().Create(kNamespaces, "", json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(r.ok() || core::IsAlreadyExists(r.status())) << r.status();
  }
  void TearDown() override {
    if (client_ && !ns_.empty()) (void)c().Delete(kNamespaces, "", ns_);
  }
  Client& c() { return **client_; }
  json Cm(const std::string& name, const std::string& v) {
    // Labelled so lists and informers ignore kube-root-ca.crt, which the controller manager publishes.
    return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}, {"labels", {{"kc", "1"}}}}},
            {"data", {{"v", v}}}};
  }
  static ClientPtr* client_;
  std::string ns_;
};
ClientPtr* KubeE2eTest::client_ = nullptr;

TEST_F(KubeE2eTest, CoreVerbs) {
  auto created = c().Create(kConfigMaps, ns_, Cm("a", "1"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(core::IsAlreadyExists(c().Create(kConfigMaps, ns_, Cm("a", "1")).status()));
  auto got = c().Get(kConfigMaps, ns_, "a");
  ASSERT_TRUE(got.ok()) << got.status();
  json upd = *got;
  upd["data"]["v"] = "2";
  ASSERT_TRUE(c().Update(kConfigMaps, ns_, upd).ok());
  auto stale = c().Update(kConfigMaps, ns_, upd);
  EXPECT_TRUE(core::IsConflict(stale.status())) << stale.status();
  auto mp = c().Patch(kConfigMaps, ns_, "a", PatchType::kMerge, json{{"data", {{"m", "x"}}}});
  ASSERT_TRUE(mp.ok()) << mp.status();
  auto jp = c().Patch(kConfigMaps, ns_, "a", PatchType::kJson,
                      json::array({{{"op", "add"}, {"path", "/data/j"}, {"value", "y"}}}));
  ASSERT_TRUE(jp.ok()) << jp.status();
  auto sp = c().Patch(kConfigMaps, ns_, "a", PatchType::kStrategicMerge, json{{"data", {{"s", "z"}}}});
  ASSERT_TRUE(sp.ok()) << sp.status();
  EXPECT_EQ((*sp)["data"], (json{{"v", "2"}, {"m", "x"}, {"j", "y"}, {"s", "z"}}));
  ListOptions lo;
  lo.label_selector = "nothing=here";
  auto none = c().List(kConfigMaps, ns_, lo);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->items.empty());
  DeleteOptions d;
  d.precondition_uid = "wrong";
  EXPECT_TRUE(core::IsConflict(c().Delete(kConfigMaps, ns_, "a", d))) << "uid precondition";
  d.precondition_uid = (*sp)["metadata"]["uid"].get<std::string>();
  d.propagation_policy = "Background";
  EXPECT_TRUE(c().Delete(kConfigMaps, ns_, "a", d).ok());
  EXPECT_TRUE(core::IsNotFound(c().Get(kConfigMaps, ns_, "a").status()));
  EXPECT_TRUE(core::IsNotFound(c().Delete(kConfigMaps, ns_, "a")));
}

TEST_F(KubeE2eTest, PodStatusBindEvict) {
  json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "kc-node-1"}}}};
  auto n = c().Create(kNodes, "", node);
  ASSERT_TRUE(n.ok() || core::IsAlreadyExists(n.status())) << n.status();
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}}},
              {"spec", {{"schedulerName", "none"}, {"containers", json::array({{{"name", "c"}, {"image", "x"}}})}}}};
  auto p = c().Create(kPods, ns_, pod);
  ASSERT_TRUE(p.ok()) << p.status();
  json st = *p;
  st["status"]["phase"] = "Pending";
  st["status"]["conditions"] = json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}});
  auto su = c().Update(kPods, ns_, st, "status");
  ASSERT_TRUE(su.ok()) << su.status();
  EXPECT_EQ((*su)["status"]["conditions"][0]["reason"], "Unschedulable");
  Status b = c().Bind(ns_, "p", (*p)["metadata"]["uid"], "kc-node-1");
  ASSERT_TRUE(b.ok()) << b;
  EXPECT_EQ((*c().Get(kPods, ns_, "p"))["spec"]["nodeName"], "kc-node-1");
  Status again = c().Bind(ns_, "p", (*p)["metadata"]["uid"], "kc-node-2");
  EXPECT_TRUE(core::IsConflict(again)) << again;
  DeleteOptions d;
  d.grace_period_seconds = 0;
  Status e = c().Evict(ns_, "p", d);
  ASSERT_TRUE(e.ok()) << e;
  EXPECT_TRUE(PollUntil([&] { return core::IsNotFound(c().Get(kPods, ns_, "p").status()); }, std::chrono::seconds(20)));
}

TEST_F(KubeE2eTest, CustomResourceVerbs) {
  json crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.e2e.tephra.io"},
    "spec": {"group": "e2e.tephra.io", "scope": "Namespaced",
      "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
      "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})");
  auto r = c().Create(kCrds, "", crd);
  ASSERT_TRUE(r.ok() || core::IsAlreadyExists(r.status())) << r.status();
  ASSERT_TRUE(PollUntil([&] { return c().List(kGadgets, ns_, {}).ok(); }, std::chrono::seconds(30)));
  json g = {{"apiVersion", "e2e.tephra.io/v1"}, {"kind", "Gadget"}, {"metadata", {{"name", "g"}}}, {"spec", {{"n", 1}}}};
  auto created = c().Create(kGadgets, ns_, g);
  ASSERT_TRUE(created.ok()) << created.status();
  json st = *created;
  st["status"] = {{"phase", "Ready"}};
  st["spec"]["n"] = 99;  // ignored by the status subresource
  auto su = c().Update(kGadgets, ns_, st, "status");
  ASSERT_TRUE(su.ok()) << su.status();
  EXPECT_EQ((*su)["status"]["phase"], "Ready");
  EXPECT_EQ((*su)["spec"]["n"], 1);
  auto mp = c().Patch(kGadgets, ns_, "g", PatchType::kMerge, json{{"spec", {{"m", 2}}}});
  ASSERT_TRUE(mp.ok()) << mp.status();
  auto sp = c().Patch(kGadgets, ns_, "g", PatchType::kStrategicMerge, json{{"spec", {{"m", 3}}}});
  EXPECT_EQ(sp.status().code(), core::StatusCode::kUnknown) << sp.status();  // 415: CRDs have no strategic merge
  auto ps = c().Patch(kGadgets, ns_, "g", PatchType::kMerge, json{{"status", {{"phase", "Done"}}}}, "status");
  ASSERT_TRUE(ps.ok()) << ps.status();
  EXPECT_EQ((*ps)["status"]["phase"], "Done");
  EXPECT_TRUE(c().Delete(kGadgets, ns_, "g").ok());
}

TEST_F(KubeE2eTest, PaginationOverTwoThousandObjects) {
  const int n = 2000;
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      for (int i = t; i < n; i += 8)
        if (!c().Create(kConfigMaps, ns_, Cm("cm-" + std::to_string(i), "x")).ok()) failures++;
    });
  for (auto& t : ts) t.join();
  ASSERT_EQ(failures.load(), 0);
  ListOptions o;
  o.limit = 500;
  o.label_selector = "kc=1";
  auto first = c().List(kConfigMaps, ns_, o);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->items.size(), 500u);
  EXPECT_FALSE(first->metadata.continue_token.empty());
  auto all = ListAll(c(), kConfigMaps, ns_, o);
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<std::string> names;
  for (const auto& i : all->items) names.insert(i["metadata"]["name"].get<std::string>());
  EXPECT_EQ(names.size(), static_cast<size_t>(n));
  // An informer over the same objects syncs all of them (list from the watch cache, RV "0").
  InformerOptions io;
  io.namespace_ = ns_;
  io.label_selector = "kc=1";
  Informer<ConfigMap> inf(*client_, io);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(Clock::now() + std::chrono::seconds(30)));
  EXPECT_EQ(inf.Size(), names.size());
}

// Restarts the kube-apiserver started by cluster.sh in $TEPHRA_E2E_DIR with its original command line.
bool RestartApiserver(std::chrono::seconds down_for) {
  const char* dir = std::getenv("TEPHRA_E2E_DIR");
  if (!dir) return false;
  std::string pidfile = std::string(dir) + "/run/kube-apiserver.pid";
  std::ifstream pf(pidfile);
  int pid = 0;
  if (!(pf >> pid) || pid <= 0) return false;
  std::ifstream cl("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(cl)), std::istreambuf_iterator<char>());
  if (raw.empty()) return false;
  std::string cmd;
  std::stringstream ss(raw);
  std::string arg;
  while (std::getline(ss, arg, '\0')) cmd += " '" + arg + "'";
  ::kill(-pid, SIGTERM);  // cluster.sh starts each daemon in its own session: pid == process group
  // Wait until the old server is gone (its /proc entry disappears or it is a zombie).
  auto gone = [pid] {
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string a, b, state;
    return !(st >> a >> b >> state) || state == "Z";
  };
  // kube-apiserver drains on SIGTERM and keeps serving open watches (and keep-alive connections) until they
  // end, which can be minutes: kill it after 5 s, like a crash.
  for (int i = 0; i < 50 && !gone(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (!gone()) ::kill(-pid, SIGKILL);
  for (int i = 0; i < 100 && !gone(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::cout << "apiserver " << pid << " stopped\n";
  std::this_thread::sleep_for(down_for);
  const std::string script = std::string(dir) + "/kc-restart-apiserver.sh";
  std::ofstream(script) << "setsid" << cmd << " >>'" << dir << "/logs/kube-apiserver.log' 2>&1 </dev/null &\n"
                        << "echo $! >'" << pidfile << "'\n";
  return std::system(("bash '" + script + "'").c_str()) == 0;
}

TEST_F(KubeE2eTest, InformerSurvivesApiserverRestartWithoutLostOrDoubledEvents) {
  if (!std::getenv("TEPHRA_E2E_DIR")) GTEST_SKIP() << "needs TEPHRA_E2E_DIR (cluster.sh)";
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c().Create(kConfigMaps, ns_, Cm("before-" + std::to_string(i), "0")).ok());
  InformerOptions opts;
  opts.namespace_ = ns_;
  opts.label_selector = "kc=1";
  opts.backoff_initial = std::chrono::milliseconds(200);
  opts.backoff_max = std::chrono::seconds(2);
  Informer<ConfigMap> inf(*client_, opts);
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> seen;  // key -> "add v" / "update v" / "delete"
  inf.AddEventHandler({[&](const auto& o) {
                         std::lock_guard l(mu);
                         seen[o->metadata.name].push_back("add " + o->data.at("v"));
                       },
                       [&](const auto& a, const auto& b) {
                         std::lock_guard l(mu);
                         seen[b->metadata.name].push_back("update " + b->data.at("v"));
                       },
                       [&](const auto& o) {
                         std::lock_guard l(mu);
                         seen[o->metadata.name].push_back("delete");
                       }});
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(Clock::now() + std::chrono::seconds(30)));
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(c().Patch(kConfigMaps, ns_, "before-" + std::to_string(i), PatchType::kMerge, json{{"data", {{"v", "1"}}}}).ok());
  ASSERT_TRUE(PollUntil([&] {
    std::lock_guard l(mu);
    return seen["before-9"].size() == 2;
  }, std::chrono::seconds(20)));

  const int64_t watches_before = inf.stats().watches.load();
  ASSERT_TRUE(RestartApiserver(std::chrono::seconds(3)));
  // Writes as soon as the server answers again; the informer must catch up with each exactly once.
  ASSERT_TRUE(PollUntil([&] { return c().Get(kNamespaces, "", ns_).ok(); }, std::chrono::seconds(90)));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(c().Create(kConfigMaps, ns_, Cm("after-" + std::to_string(i), "0")).ok());
  for (int i = 10; i < 15; ++i)
    ASSERT_TRUE(c().Patch(kConfigMaps, ns_, "before-" + std::to_string(i), PatchType::kMerge, json{{"data", {{"v", "2"}}}}).ok());
  for (int i = 15; i < 20; ++i) ASSERT_TRUE(c().Delete(kConfigMaps, ns_, "before-" + std::to_string(i)).ok());
  ASSERT_TRUE(PollUntil([&] {
    std::lock_guard l(mu);
    return seen["after-9"].size() == 1 && seen["before-19"].size() == 2 && seen["before-14"].size() == 2;
  }, std::chrono::seconds(60)));
  // A barrier instead of a pause: a watch delivers in resourceVersion order, so once a write made after all
  // of the above has been seen, any duplicate of an earlier event would already have arrived.
  ASSERT_TRUE(c().Create(kConfigMaps, ns_, Cm("sentinel", "0")).ok());
  ASSERT_TRUE(PollUntil([&] {
    std::lock_guard l(mu);
    return seen["sentinel"].size() == 1;
  }, std::chrono::seconds(60)));
  std::lock_guard l(mu);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(seen["before-" + std::to_string(i)], (std::vector<std::string>{"add 0", "update 1"})) << i;
  for (int i = 10; i < 15; ++i)
    EXPECT_EQ(seen["before-" + std::to_string(i)], (std::vector<std::string>{"add 0", "update 2"})) << i;
  for (int i = 15; i < 20; ++i)
    EXPECT_EQ(seen["before-" + std::to_string(i)], (std::vector<std::string>{"add 0", "delete"})) << i;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(seen["after-" + std::to_string(i)], std::vector<std::string>{"add 0"}) << i;
  std::cout << "lists=" << inf.stats().lists.load() << " relists_after_410=" << inf.stats().relists_after_410.load()
            << " watches=" << inf.stats().watches.load() << " watch_errors=" << inf.stats().watch_errors.load() << "\n";
  EXPECT_EQ(inf.Size(), 15u + 10u + 1u);  // + the sentinel
  // The old connection cannot outlive the old process: the informer must have re-watched.
  EXPECT_GT(inf.stats().watches.load(), watches_before);
}


// Delegates to a real client; while paused, running watches end at their next event (which is dropped, so
// the informer never sees it) and new watches fail as if the server were unreachable. Everything else passes
// through. This is how the test makes the informer miss a stretch of history.
class PausableWatchClient final : public Client {
 public:
  explicit PausableWatchClient(ClientPtr inner) : inner_(std::move(inner)) {}
  void SetPaused(bool p) { paused_ = p; }
  int64_t refused() const { return refused_.load(); }

  StatusOr<json> Get(const ResourceInfo& r, const std::string& ns, const std::string& name,
                     const std::string& sub) override {
    return inner_->Get(r, ns, name, sub);
  }
  StatusOr<ObjectList> List(const ResourceInfo& r, const std::string& ns, const ListOptions& o) override {
    return inner_->List(r, ns, o);
  }
  StatusOr<json> Create(const ResourceInfo& r, const std::string& ns, const json& obj, const std::string& sub) override {
    return inner_->Create(r, ns, obj, sub);
  }
  StatusOr<json> Update(const ResourceInfo& r, const std::string& ns, const json& obj, const std::string& sub) override {
    return inner_->Update(r, ns, obj, sub);
  }
  StatusOr<json> Patch(const ResourceInfo& r, const std::string& ns, const std::string& name, PatchType t,
                       const json& patch, const std::string& sub) override {
    return inner_->Patch(r, ns, name, t, patch, sub);
  }
  Status Delete(const ResourceInfo& r, const std::string& ns, const std::string& name, const DeleteOptions& o) override {
    return inner_->Delete(r, ns, name, o);
  }
  Status Bind(const std::string& ns, const std::string& pod, const std::string& uid, const std::string& node,
              const std::map<std::string, std::string>& a) override {
    return inner_->Bind(ns, pod, uid, node, a);
  }
  Status Evict(const std::string& ns, const std::string& pod, const DeleteOptions& o) override {
    return inner_->Evict(ns, pod, o);
  }
  Status Watch(const ResourceInfo& r, const std::string& ns, const ListOptions& o,
               const std::function<bool(WatchEvent&&)>& handler) override {
    if (paused_) {
      refused_++;
      return core::UnavailableError("watch paused by the test");
    }
    return inner_->Watch(r, ns, o, [&](WatchEvent&& ev) { return paused_ ? false : handler(std::move(ev)); });
  }
  StatusOr<json> Raw(const std::string& method, const std::string& path, const json* body,
                     const std::string& content_type) override {
    return inner_->Raw(method, path, body, content_type);
  }

 private:
  ClientPtr inner_;
  std::atomic<bool> paused_{false};
  std::atomic<int64_t> refused_{0};
};

// Forces a real 410 "too old resource version": the informer misses creates/updates/deletes, etcd is compacted
// past its resourceVersion and the apiserver restarted (its new watch cache starts at the current revision),
// then the informer re-watches from its old RV. It must relist exactly once and converge on the server's list,
// turning objects that vanished meanwhile into deletes.
TEST_F(KubeE2eTest, InformerRelistsOnceAfterCompactionAnd410) {
  const char* etcd = std::getenv("TEPHRA_E2E_ETCD_URL");
  if (!etcd || !std::getenv("TEPHRA_E2E_DIR")) GTEST_SKIP() << "needs TEPHRA_E2E_ETCD_URL/TEPHRA_E2E_DIR (cluster.sh)";
  std::string first_rv;
  for (int i = 0; i < 10; ++i) {
    auto cm = c().Create(kConfigMaps, ns_, Cm("old-" + std::to_string(i), "0"));
    ASSERT_TRUE(cm.ok()) << cm.status();
    if (i == 0) first_rv = (*cm)["metadata"]["resourceVersion"].get<std::string>();
  }
  auto pausable = std::make_shared<PausableWatchClient>(*client_);
  InformerOptions opts;
  opts.namespace_ = ns_;
  opts.label_selector = "kc=1";
  opts.backoff_initial = std::chrono::milliseconds(200);
  opts.backoff_max = std::chrono::seconds(1);
  Informer<ConfigMap> inf(pausable, opts);
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> seen;
  inf.AddEventHandler({[&](const auto& o) {
                         std::lock_guard l(mu);
                         seen[o->metadata.name].push_back("add " + o->data.at("v"));
                       },
                       [&](const auto&, const auto& b) {
                         std::lock_guard l(mu);
                         seen[b->metadata.name].push_back("update " + b->data.at("v"));
                       },
                       [&](const auto& o) {
                         std::lock_guard l(mu);
                         seen[o->metadata.name].push_back("delete");
                       }});
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(Clock::now() + std::chrono::seconds(30)));
  ASSERT_EQ(inf.Size(), 10u);
  // Pause, then make sure the running watch noticed: a throwaway write ends it (its event is dropped) and the
  // reflector's next attempts are refused.
  pausable->SetPaused(true);
  ASSERT_TRUE(c().Create(kConfigMaps, ns_, Cm("new-0", "0")).ok());
  ASSERT_TRUE(PollUntil([&] { return pausable->refused() > 0; }, std::chrono::seconds(20)));
  for (int i = 1; i < 5; ++i) ASSERT_TRUE(c().Create(kConfigMaps, ns_, Cm("new-" + std::to_string(i), "0")).ok());
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(c().Patch(kConfigMaps, ns_, "old-" + std::to_string(i), PatchType::kMerge, json{{"data", {{"v", "1"}}}}).ok());
  std::string last_rv;
  for (int i = 5; i < 10; ++i) ASSERT_TRUE(c().Delete(kConfigMaps, ns_, "old-" + std::to_string(i)).ok());
  {
    auto marker = c().Create(kConfigMaps, ns_, json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "rv-marker"}}}});
    ASSERT_TRUE(marker.ok()) << marker.status();
    last_rv = (*marker)["metadata"]["resourceVersion"].get<std::string>();  // an etcd revision
  }
  {
    const std::string cmd = "ETCDCTL_API=3 etcdctl --endpoints='" + std::string(etcd) + "' compact " + last_rv;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  EXPECT_EQ(inf.stats().lists.load(), 1);
  EXPECT_EQ(inf.stats().relists_after_410.load(), 0);
  ASSERT_TRUE(RestartApiserver(std::chrono::seconds(0)));
  ASSERT_TRUE(PollUntil([&] { return c().Get(kNamespaces, "", ns_).ok(); }, std::chrono::seconds(90)));
  {
    // The client maps the server's answer for a compacted RV to IsGone. (A fixed RV like "1" is not enough: a
    // fresh apiserver's watch cache may still start below it and stream events instead.)
    ListOptions o;
    o.resource_version = first_rv;
    o.timeout_seconds = 5;
    Status s = c().Watch(kConfigMaps, ns_, o, [](WatchEvent&&) { return true; });
    EXPECT_TRUE(core::IsGone(s)) << s;
  }
  pausable->SetPaused(false);

  ASSERT_TRUE(PollUntil([&] { return inf.stats().relists_after_410.load() >= 1 && inf.Size() == 10u; },
                        std::chrono::seconds(60)))
      << "relists_after_410=" << inf.stats().relists_after_410.load() << " size=" << inf.Size();
  // The cache is updated before handlers run: wait for the relist's last delivery (23 calls in all) too.
  ASSERT_TRUE(PollUntil([&] {
    std::lock_guard l(mu);
    size_t n = 0;
    for (const auto& [k, v] : seen) n += v.size();
    return n >= 23;
  }, std::chrono::seconds(10)));
  // Convergence: the cache equals a quorum list from the server (names and resourceVersions).
  ListOptions lo;
  lo.label_selector = "kc=1";
  auto server = ListAll(c(), kConfigMaps, ns_, lo);
  ASSERT_TRUE(server.ok()) << server.status();
  std::map<std::string, std::string> want, got;
  for (const auto& i : server->items)
    want[i["metadata"]["name"].get<std::string>()] = i["metadata"]["resourceVersion"].get<std::string>();
  for (const auto& o : inf.List()) got[o->metadata.name] = o->metadata.resource_version;
  EXPECT_EQ(got, want);
  std::cout << "lists=" << inf.stats().lists.load() << " relists_after_410=" << inf.stats().relists_after_410.load()
            << " watches=" << inf.stats().watches.load() << " watch_errors=" << inf.stats().watch_errors.load()
            << " refused_while_paused=" << pausable->refused() << "\n";
  EXPECT_EQ(inf.stats().relists_after_410.load(), 1);
  EXPECT_EQ(inf.stats().lists.load(), 2) << "the initial list and exactly one relist";
  std::lock_guard l(mu);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(seen["old-" + std::to_string(i)], (std::vector<std::string>{"add 0", "update 1"})) << i;
  for (int i = 3; i < 5; ++i) EXPECT_EQ(seen["old-" + std::to_string(i)], std::vector<std::string>{"add 0"}) << i;
  for (int i = 5; i < 10; ++i) EXPECT_EQ(seen["old-" + std::to_string(i)], (std::vector<std::string>{"add 0", "delete"})) << i;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(seen["new-" + std::to_string(i)], std::vector<std::string>{"add 0"}) << i;
  EXPECT_EQ(seen.count("rv-marker"), 0u) << "unlabelled: outside the informer's selector";
}

}  // namespace
}  // namespace tephra::kube
