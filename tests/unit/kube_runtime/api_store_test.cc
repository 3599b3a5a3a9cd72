// The one fake API store (both fakes' semantics): resourceVersions and 409s, watch history and 410, selectors,
// merge vs strategic merge, subresources only where the kind serves them, finalizers.
#include "testing/api_store.h"

#include <gtest/gtest.h>

#include "tephra/core/clock.h"
#include "testing/fake_client.h"

namespace tephra::kube::testing {
namespace {

const ResourceInfo kPods{"", "v1", "Pod", "pods", true};
const ResourceInfo kPodGroups{"scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", true};
const ResourceInfo kJobs{"batch.volcano.sh", "v1alpha1", "Job", "jobs", true};
const ResourceInfo kCommands{"bus.volcano.sh", "v1alpha1", "Command", "commands", true};
const ResourceInfo kConfigMaps{"", "v1", "ConfigMap", "configmaps", true};

json Pod(const std::string& name, json containers = json::array(), std::map<std::string, std::string> labels = {}) {
  json j = {{"metadata", {{"name", name}}}, {"spec", {{"containers", std::move(containers)}}}};
  if (!labels.empty()) j["metadata"]["labels"] = labels;
  return j;
}

std::string Rv(const json& j) { return j["metadata"]["resourceVersion"].get<std::string>(); }

const auto kNow = std::chrono::steady_clock::time_point::min();  // NextEvents without waiting
bool NoWake() { return false; }

std::vector<std::string> Names(const json& list) {
  std::vector<std::string> out;
  for (const auto& c : list) out.push_back(c.value("name", ""));
  return out;
}

TEST(ApiStoreTest, ResourceVersionsAnd409s) {
  ApiStore s;
  auto a = s.Create(kPods, "ns", Pod("a"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Rv(*a), std::to_string(s.ResourceVersion()));
  EXPECT_EQ((*a)["metadata"]["generation"], 1);
  EXPECT_FALSE((*a)["metadata"]["uid"].get<std::string>().empty());

  auto dup = s.Create(kPods, "ns", Pod("a"));
  EXPECT_TRUE(core::IsAlreadyExists(dup.status()));
  EXPECT_EQ(dup.status().http_status(), 409);
  EXPECT_EQ(dup.status().reason(), "AlreadyExists");

  json upd = *a;
  upd["spec"]["nodeName"] = "n1";
  auto b = s.Update(kPods, "ns", upd);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_GT(std::stoll(Rv(*b)), std::stoll(Rv(*a)));
  EXPECT_EQ((*b)["metadata"]["generation"], 2);
  auto stale = s.Update(kPods, "ns", upd);  // still carries a's resourceVersion
  EXPECT_TRUE(core::IsConflict(stale.status()));
  EXPECT_EQ(stale.status().http_status(), 409);
  EXPECT_EQ(stale.status().reason(), "Conflict");

  // A write that changes nothing keeps the resourceVersion.
  const int64_t before = s.ResourceVersion();
  ASSERT_TRUE(s.Update(kPods, "ns", *b).ok());
  EXPECT_EQ(s.ResourceVersion(), before);

  // A uid in the body is a precondition too.
  json other_uid = *b;
  other_uid["metadata"]["uid"] = "someone-else";
  EXPECT_TRUE(core::IsConflict(s.Update(kPods, "ns", other_uid).status()));
  DeleteOptions d;
  d.precondition_resource_version = Rv(*a);
  EXPECT_TRUE(core::IsConflict(s.Delete(kPods, "ns", "a", d).status()));
}

TEST(ApiStoreTest, WatchReplaysHistoryAndAnswers410BelowTheCompactionPoint) {
  ApiStore s;
  auto a = s.Create(kPods, "ns", Pod("a")).value();
  ListOptions from_a;
  from_a.resource_version = Rv(a);
  std::vector<WatchEvent> initial;
  auto lagging = s.OpenWatch(kPods, "ns", from_a, &initial);
  ASSERT_TRUE(lagging.ok()) << lagging.status();
  EXPECT_TRUE(initial.empty());

  ASSERT_TRUE(s.Create(kPods, "ns", Pod("b")).ok());
  ASSERT_TRUE(s.Create(kPods, "other", Pod("c")).ok());
  ASSERT_TRUE(s.Delete(kPods, "ns", "a").ok());
  auto replay = s.OpenWatch(kPods, "ns", from_a, &initial);
  ASSERT_TRUE(replay.ok());
  std::vector<WatchEvent> got;
  ASSERT_TRUE(s.NextEvents(*replay, &got, kNow, NoWake).ok());
  ASSERT_EQ(got.size(), 2u);  // b added, a deleted; c is in another namespace
  EXPECT_EQ(got[0].type, WatchEvent::Type::kAdded);
  EXPECT_EQ(got[1].type, WatchEvent::Type::kDeleted);

  // RV "": synthetic ADDED for what exists now.
  std::vector<WatchEvent> now;
  ASSERT_TRUE(s.OpenWatch(kPods, "", ListOptions{}, &now).ok());
  EXPECT_EQ(now.size(), 2u);

  s.Compact();
  auto gone = s.OpenWatch(kPods, "ns", from_a, &initial);
  EXPECT_TRUE(core::IsGone(gone.status()));
  EXPECT_EQ(gone.status().http_status(), 410);
  // A watch that had not caught up when history was compacted learns it at its next read.
  ASSERT_TRUE(s.Create(kPods, "ns", Pod("d")).ok());
  std::vector<WatchEvent> lost;
  EXPECT_TRUE(core::IsGone(s.NextEvents(*lagging, &lost, kNow, NoWake)));
  // The one that had caught up carries on.
  ASSERT_TRUE(s.NextEvents(*replay, &got, kNow, NoWake).ok());
  EXPECT_EQ(got.back().object["metadata"]["name"], "d");
}

TEST(ApiStoreTest, SelectorsUseTheCoreModel) {
  ApiStore s;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(s.Create(kPods, "ns", Pod("p" + std::to_string(i), json::array(), {{"tier", i % 2 ? "a" : "b"}})).ok());
  ASSERT_TRUE(s.Create(kPods, "ns", Pod("bare")).ok());
  auto count = [&](const std::string& labels, const std::string& fields = "") {
    ListOptions o;
    o.label_selector = labels;
    o.field_selector = fields;
    auto l = s.List(kPods, "ns", o);
    return l.ok() ? static_cast<int>(l->items.size()) : -1;
  };
  EXPECT_EQ(count("tier=a"), 2);
  EXPECT_EQ(count("tier==a"), 2);
  EXPECT_EQ(count("tier!=a"), 3);  // an absent key matches !=
  EXPECT_EQ(count("tier"), 4);
  EXPECT_EQ(count("!tier"), 1);
  EXPECT_EQ(count("tier in (a, b)"), 4);
  EXPECT_EQ(count("tier notin (a)"), 3);
  EXPECT_EQ(count("tier in (a),!nope"), 2);
  EXPECT_EQ(count("", "metadata.name=p2"), 1);
  EXPECT_EQ(count("tier=b", "metadata.name!=p2"), 1);
  EXPECT_EQ(count("", "spec.nodeName="), 5);
  EXPECT_EQ(count("tier in (a"), -1);
  ListOptions bad;
  bad.label_selector = "=x";
  EXPECT_EQ(s.List(kPods, "ns", bad).status().http_status(), 400);

  // A watch with a selector sees an object leave its selection as DELETED and come back as ADDED.
  ListOptions sel;
  sel.label_selector = "tier=a";
  sel.resource_version = std::to_string(s.ResourceVersion());
  std::vector<WatchEvent> initial, got;
  auto w = s.OpenWatch(kPods, "ns", sel, &initial);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(s.Patch(kPods, "ns", "p1", PatchType::kMerge, json{{"metadata", {{"labels", {{"tier", "c"}}}}}}).ok());
  ASSERT_TRUE(s.Patch(kPods, "ns", "p1", PatchType::kMerge, json{{"metadata", {{"labels", {{"tier", "a"}}}}}}).ok());
  ASSERT_TRUE(s.Patch(kPods, "ns", "p0", PatchType::kMerge, json{{"metadata", {{"labels", {{"x", "y"}}}}}}).ok());
  ASSERT_TRUE(s.NextEvents(*w, &got, kNow, NoWake).ok());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].type, WatchEvent::Type::kDeleted);
  EXPECT_EQ(got[1].type, WatchEvent::Type::kAdded);
}

TEST(ApiStoreTest, MergePatchReplacesListsStrategicMergeMergesByKey) {
  ApiStore s;
  json containers = json::array({{{"name", "main"}, {"image", "v1"}, {"env", {{{"name", "A"}, {"value", "1"}}}}},
                                 {{"name", "side"}, {"image", "s1"}}});
  ASSERT_TRUE(s.Create(kPods, "ns", Pod("merge", containers)).ok());
  ASSERT_TRUE(s.Create(kPods, "ns", Pod("smp", containers)).ok());
  const json patch = {{"spec", {{"containers", {{{"name", "main"}, {"image", "v2"}, {"env", {{{"name", "B"}, {"value", "2"}}}}}}}}}};

  auto m = s.Patch(kPods, "ns", "merge", PatchType::kMerge, patch);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(Names((*m)["spec"]["containers"]), std::vector<std::string>{"main"});  // RFC 7386: the list is replaced
  EXPECT_EQ(Names((*m)["spec"]["containers"][0]["env"]), std::vector<std::string>{"B"});

  auto p = s.Patch(kPods, "ns", "smp", PatchType::kStrategicMerge, patch);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Names((*p)["spec"]["containers"]), (std::vector<std::string>{"main", "side"}));  // merged by name
  EXPECT_EQ((*p)["spec"]["containers"][0]["image"], "v2");
  EXPECT_EQ(Names((*p)["spec"]["containers"][0]["env"]), (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ((*p)["spec"]["containers"][1]["image"], "s1");

  // Directives: delete one element by its key, replace a whole list.
  auto del = s.Patch(kPods, "ns", "smp", PatchType::kStrategicMerge,
                     json{{"spec", {{"containers", {{{"name", "side"}, {"$patch", "delete"}}}}}}});
  ASSERT_TRUE(del.ok()) << del.status();
  EXPECT_EQ(Names((*del)["spec"]["containers"]), std::vector<std::string>{"main"});
  auto rep = s.Patch(kPods, "ns", "smp", PatchType::kStrategicMerge,
                     json{{"spec", {{"containers", {{{"name", "only"}}, {{"$patch", "replace"}}}}}}});
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_EQ(Names((*rep)["spec"]["containers"]), std::vector<std::string>{"only"});
  EXPECT_FALSE((*rep)["spec"]["containers"][0].contains("image"));

  // Pod conditions merge by type on the status subresource (how the scheduler writes PodScheduled).
  ASSERT_TRUE(s.Patch(kPods, "ns", "smp", PatchType::kMerge,
                      json{{"status", {{"conditions", {{{"type", "Ready"}, {"status", "False"}}}}}}}, "status").ok());
  auto cond = s.Patch(kPods, "ns", "smp", PatchType::kStrategicMerge,
                      json{{"status", {{"conditions", {{{"type", "PodScheduled"}, {"status", "False"}}}}}}}, "status");
  ASSERT_TRUE(cond.ok()) << cond.status();
  EXPECT_EQ((*cond)["status"]["conditions"].size(), 2u);

  EXPECT_EQ(s.Patch(kPods, "ns", "smp", PatchType::kStrategicMerge,
                    json{{"spec", {{"containers", {{{"image", "no-name"}}}}}}}).status().http_status(), 422);
  // Custom resources have no merge keys: the API server refuses strategic merge for them.
  ASSERT_TRUE(s.Create(kJobs, "ns", json{{"metadata", {{"name", "j"}}}}).ok());
  EXPECT_EQ(s.Patch(kJobs, "ns", "j", PatchType::kStrategicMerge, json{{"spec", {{"minAvailable", 1}}}})
                .status().http_status(), 415);
  // A built-in kind without list rules still takes it as a map merge.
  ASSERT_TRUE(s.Create(kConfigMaps, "ns", json{{"metadata", {{"name", "cm"}}}, {"data", {{"a", "1"}}}}).ok());
  auto cm = s.Patch(kConfigMaps, "ns", "cm", PatchType::kStrategicMerge, json{{"data", {{"b", "2"}, {"a", nullptr}}}});
  ASSERT_TRUE(cm.ok());
  EXPECT_EQ((*cm)["data"], (json{{"b", "2"}}));
}

TEST(ApiStoreTest, StatusSubresourceOnlyWhereTheKindServesIt) {
  ApiStore s;
  EXPECT_FALSE(HasStatusSubresource("podgroups.scheduling.volcano.sh"));
  EXPECT_FALSE(HasStatusSubresource("commands.bus.volcano.sh"));
  EXPECT_TRUE(HasStatusSubresource("jobs.batch.volcano.sh"));
  EXPECT_TRUE(HasStatusSubresource("queues.scheduling.volcano.sh"));
  EXPECT_TRUE(HasStatusSubresource("pods"));

  auto pg = s.Create(kPodGroups, "ns", json{{"metadata", {{"name", "pg"}}}, {"spec", {{"minMember", 1}}}}).value();
  pg["status"] = {{"phase", "Running"}};
  for (auto st : {s.Update(kPodGroups, "ns", pg, "status"),
                  s.Patch(kPodGroups, "ns", "pg", PatchType::kMerge, json{{"status", {{"phase", "Running"}}}}, "status"),
                  s.Get(kPodGroups, "ns", "pg", "status")}) {
    EXPECT_TRUE(core::IsNotFound(st.status())) << st.status();
    EXPECT_EQ(st.status().http_status(), 404);
  }
  // Without the subresource a plain write stores the status it carries.
  auto upd = s.Update(kPodGroups, "ns", pg);
  ASSERT_TRUE(upd.ok()) << upd.status();
  EXPECT_EQ((*upd)["status"]["phase"], "Running");
  ASSERT_TRUE(s.Create(kCommands, "ns", json{{"metadata", {{"name", "c"}}}}).ok());
  EXPECT_TRUE(core::IsNotFound(
      s.Patch(kCommands, "ns", "c", PatchType::kMerge, json{{"status", {{"x", 1}}}}, "status").status()));

  // With it, a plain write keeps the stored status and a status write changes only status.
  auto pod = s.Create(kPods, "ns", Pod("p")).value();
  pod["status"] = {{"phase", "Running"}};
  pod["spec"]["nodeName"] = "n1";
  auto plain = s.Update(kPods, "ns", pod);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->contains("status"));
  EXPECT_EQ((*plain)["spec"]["nodeName"], "n1");
  json st = *plain;
  st["status"] = {{"phase", "Running"}};
  st["spec"]["nodeName"] = "elsewhere";
  auto status = s.Update(kPods, "ns", st, "status");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ((*status)["status"]["phase"], "Running");
  EXPECT_EQ((*status)["spec"]["nodeName"], "n1");
  EXPECT_TRUE(core::IsNotFound(s.Update(kPods, "ns", st, "scale").status()));
}

TEST(ApiStoreTest, FinalizersHoldDeletionUntilTheLastGoes) {
  core::FakeClock clock;
  ApiStore s(&clock);
  json pod = Pod("f");
  pod["metadata"]["finalizers"] = {"a/x", "b/y"};
  auto created = s.Create(kPods, "ns", pod).value();
  ListOptions from;
  from.resource_version = Rv(created);
  std::vector<WatchEvent> initial, got;
  auto w = s.OpenWatch(kPods, "ns", from, &initial).value();

  auto marked = s.Delete(kPods, "ns", "f");
  ASSERT_TRUE(marked.ok());
  EXPECT_TRUE((*marked)["metadata"].contains("deletionTimestamp"));
  ASSERT_TRUE(s.Lookup(kPods, "ns", "f").has_value());
  const int64_t rv = s.ResourceVersion();
  ASSERT_TRUE(s.Delete(kPods, "ns", "f").ok());  // deleting again changes nothing
  EXPECT_EQ(s.ResourceVersion(), rv);
  // The strategic merge directive removes one finalizer from the set.
  auto one = s.Patch(kPods, "ns", "f", PatchType::kStrategicMerge,
                     json{{"metadata", {{"$deleteFromPrimitiveList/finalizers", {"a/x"}}}}});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)["metadata"]["finalizers"], json({"b/y"}));
  ASSERT_TRUE(s.Patch(kPods, "ns", "f", PatchType::kMerge, json{{"metadata", {{"finalizers", nullptr}}}}).ok());
  EXPECT_FALSE(s.Lookup(kPods, "ns", "f").has_value());

  ASSERT_TRUE(s.NextEvents(w, &got, kNow, NoWake).ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].type, WatchEvent::Type::kModified);
  EXPECT_EQ(got[1].type, WatchEvent::Type::kModified);
  EXPECT_EQ(got[2].type, WatchEvent::Type::kDeleted);
}

TEST(ApiStoreTest, TwoFrontsShareOneStore) {
  auto store = std::make_shared<ApiStore>();
  FakeClient a(store), b(store);
  ASSERT_TRUE(a.Create(kPods, "ns", Pod("p")).ok());
  EXPECT_TRUE(b.Get(kPods, "ns", "p").ok());
  EXPECT_EQ(a.CurrentResourceVersion(), b.CurrentResourceVersion());
  EXPECT_TRUE(b.Bind("ns", "p", "", "n1").ok());
  EXPECT_TRUE(core::IsConflict(a.Bind("ns", "p", "", "n2")));
}

}  // namespace
}  // namespace tephra::kube::testing
