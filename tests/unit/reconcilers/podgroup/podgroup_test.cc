#include <gtest/gtest.h>

#include "podgroup/plan.h"
#include "podgroup/reconciler.h"
#include "testing/fake_client.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::podgroup {
namespace {

using kube::testing::FakeClient;

api::json PodJson(const std::string& name, const std::string& scheduler, bool with_owner) {
  api::json p = {{"apiVersion", "v1"}, {"kind", "Pod"},
                 {"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "pod-uid-" + name},
                               {"annotations", {{"scheduling.volcano.sh/queue-name", "team"}}}}},
                 {"spec", {{"schedulerName", scheduler}, {"priorityClassName", "high"},
                           {"containers", {{{"name", "c"}, {"image", "x"},
                                            {"resources", {{"requests", {{"cpu", "500m"}, {"memory", "1Gi"}}}}}}}}}}};
  if (with_owner)
    p["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "rs"},
                                         {"uid", "rs-uid"}, {"controller", true}}};
  return p;
}

Observed Obs(const api::json& pod) {
  Observed o;
  o.pod = api::FromJson<api::Pod>(pod).value();
  o.scheduler_names = {"volcano"};
  return o;
}

TEST(PodGroupPlan, Selection) {
  EXPECT_FALSE(Plan(Obs(PodJson("p", "default-scheduler", false))).create_pod_group);
  Observed grouped = Obs(PodJson("p", "volcano", false));
  grouped.pod.metadata.annotations[std::string(api::kPodGroupAnnotation)] = "pg";
  EXPECT_TRUE(Plan(grouped).Empty());
  Observed done = Obs(PodJson("p", "volcano", false));
  done.pod.status.phase = "Succeeded";
  EXPECT_TRUE(Plan(done).Empty());
  Observed other = Obs(PodJson("p", "mine", false));
  other.scheduler_names = {"volcano", "mine"};
  EXPECT_TRUE(Plan(other).create_pod_group);
}

TEST(PodGroupPlan, BarePodOwnsItsGroup) {
  Actions a = Plan(Obs(PodJson("p", "volcano", false)));
  ASSERT_TRUE(a.create_pod_group);
  const auto& pg = *a.create_pod_group;
  EXPECT_EQ(pg.metadata.name, "podgroup-pod-uid-p");
  EXPECT_EQ(*a.annotate_pod, "podgroup-pod-uid-p");
  ASSERT_EQ(pg.metadata.owner_references.size(), 1u);
  EXPECT_EQ(pg.metadata.owner_references[0].kind, "Pod");
  EXPECT_EQ(pg.metadata.owner_references[0].uid, "pod-uid-p");
  EXPECT_TRUE(pg.metadata.owner_references[0].controller.value_or(false));
  EXPECT_EQ(pg.spec.min_member, 1);
  EXPECT_EQ(pg.spec.queue, "team");
  EXPECT_EQ(pg.spec.priority_class_name, "high");
  EXPECT_EQ(pg.spec.min_resources->at("cpu").ToString(), "500m");
  EXPECT_FALSE(pg.spec.network_topology);
}

TEST(PodGroupPlan, OwnedPodSharesOwnersGroupAndInheritsAnnotations) {
  Observed o = Obs(PodJson("p", "volcano", true));
  o.owner_annotations = std::map<std::string, std::string>{
      {"scheduling.volcano.sh/group-min-member", "3"}, {"volcano.sh/preemptable", "true"}, {"other.io/x", "y"}};
  Actions a = Plan(o);
  ASSERT_TRUE(a.create_pod_group);
  const auto& pg = *a.create_pod_group;
  EXPECT_EQ(pg.metadata.name, "podgroup-rs-uid");
  EXPECT_EQ(pg.metadata.owner_references[0].kind, "ReplicaSet");
  EXPECT_EQ(pg.spec.min_member, 3);
  EXPECT_EQ(pg.spec.min_resources->at("cpu").ToString(), "1500m");  // usage x minMember
  EXPECT_EQ(pg.spec.min_resources->at("pods").ToString(), "3");
  EXPECT_EQ(pg.metadata.annotations.at("volcano.sh/preemptable"), "true");
  EXPECT_EQ(pg.metadata.annotations.count("other.io/x"), 0u);
  o.inherit_owner_annotations = false;
  EXPECT_TRUE(Plan(o).create_pod_group->metadata.annotations.empty());
  EXPECT_EQ(Plan(o).create_pod_group->spec.min_member, 3);  // minMember is read either way
}

TEST(PodGroupPlan, BadMinMemberFallsBackToOne) {
  Observed o = Obs(PodJson("p", "volcano", true));
  for (std::string v : {"0", "-2", "x", "3x"}) {
    o.owner_annotations = std::map<std::string, std::string>{{"scheduling.volcano.sh/group-min-member", v}};
    EXPECT_EQ(Plan(o).create_pod_group->spec.min_member, 1) << v;
  }
}

TEST(PodGroupPlan, TopologyFromPodAnnotations) {
  Observed o = Obs(PodJson("p", "volcano", false));
  o.pod.metadata.annotations[std::string(api::kNetworkTopologyModeAnnotation)] = "soft";
  o.pod.metadata.annotations[std::string(api::kNetworkTopologyHighestTierAnnotation)] = "2";
  auto nt = Plan(o).create_pod_group->spec.network_topology;
  ASSERT_TRUE(nt);
  EXPECT_EQ(nt->mode, "soft");
  EXPECT_EQ(nt->highest_tier_allowed.value_or(-1), 2);
}

TEST(PodGroupPlan, ExistingGroupOnlyAnnotates) {
  Observed o = Obs(PodJson("p", "volcano", false));
  o.pod_group_exists = true;
  Actions a = Plan(o);
  EXPECT_FALSE(a.create_pod_group);
  ASSERT_TRUE(a.annotate_pod);
}

api::PodGroup GroupOf(const std::string& owner_uid) {
  api::PodGroup pg;
  pg.metadata.name = "podgroup-" + owner_uid;
  pg.metadata.namespace_ = "ns";
  pg.metadata.uid = "pg-uid";
  api::OwnerReference r;
  r.kind = "ReplicaSet";
  r.name = "rs";
  r.uid = owner_uid;
  pg.metadata.owner_references.push_back(r);
  return pg;
}

TEST(PodGroupPlan, ScaledToZeroDeletesTheOwnersGroupOnly) {
  api::ObjectMeta rs;
  rs.name = "rs";
  rs.namespace_ = "ns";
  rs.uid = "rs-uid";
  api::PodGroup pg = GroupOf("rs-uid");
  EXPECT_EQ(PlanScaledToZero(rs, 0, &pg), std::optional<std::string>("podgroup-rs-uid"));
  EXPECT_FALSE(PlanScaledToZero(rs, 1, &pg));        // still has replicas
  EXPECT_FALSE(PlanScaledToZero(rs, 0, nullptr));    // no group (never had pods, or already deleted)
  api::PodGroup foreign = pg;
  foreign.metadata.owner_references[0].uid = "other";
  EXPECT_FALSE(PlanScaledToZero(rs, 0, &foreign));   // same name, not the owner's
  api::PodGroup other_name = GroupOf("other");
  other_name.metadata.owner_references[0].uid = "rs-uid";
  EXPECT_FALSE(PlanScaledToZero(rs, 0, &other_name));
  api::ObjectMeta deleting = rs;
  deleting.deletion_timestamp = "2026-11-22T10:00:00Z";
  EXPECT_FALSE(PlanScaledToZero(deleting, 0, &pg));  // the garbage collector takes the group along
  api::PodGroup going = pg;
  going.metadata.deletion_timestamp = "2026-11-22T10:00:00Z";
  EXPECT_FALSE(PlanScaledToZero(rs, 0, &going));
}

TEST(PodGroupWorkload, DecodesReplicasWithServerDefault) {
  ReplicaSet rs;
  ASSERT_TRUE(Decode(api::json{{"metadata", {{"name", "rs"}, {"namespace", "ns"}, {"uid", "u"}}},
                               {"spec", {{"replicas", 0}}}},
                     &rs)
                  .ok());
  EXPECT_EQ(rs.replicas, 0);
  EXPECT_EQ(rs.metadata.Key(), "ns/rs");
  StatefulSet sts;
  ASSERT_TRUE(Decode(api::json{{"metadata", {{"name", "s"}}}, {"spec", api::json::object()}}, &sts).ok());
  EXPECT_EQ(sts.replicas, 1);
  EXPECT_EQ(StatefulSet::Resource().plural, "statefulsets");
  EXPECT_FALSE(Decode(api::json::array(), &sts).ok());
}

class PodGroupReconcilerTest : public ::testing::Test {
 protected:
  PodGroupReconcilerTest()
      : client_(std::make_shared<FakeClient>()), pods_(client_), pgs_(client_), rss_(client_), stss_(client_) {
    PodGroupReconcilerOptions o;
    o.client = client_;
    o.pods = &pods_;
    o.pod_groups = &pgs_;
    o.replica_sets = &rss_;
    o.stateful_sets = &stss_;
    rec_ = std::make_unique<PodGroupReconciler>(o);
  }
  void Refresh() {
    auto l = client_->List(api::Pod::Resource(), "", {});
    pods_.Replace(std::move(l.value().items));
    auto p = client_->List(api::PodGroup::Resource(), "", {});
    pgs_.Replace(std::move(p.value().items));
    auto r = client_->List(ReplicaSet::Resource(), "", {});
    rss_.Replace(std::move(r.value().items));
  }
  std::shared_ptr<FakeClient> client_;
  kube::Informer<api::Pod> pods_;
  kube::Informer<api::PodGroup> pgs_;
  kube::Informer<ReplicaSet> rss_;
  kube::Informer<StatefulSet> stss_;
  std::unique_ptr<PodGroupReconciler> rec_;
};

TEST_F(PodGroupReconcilerTest, CreatesGroupFromOwnerAndAnnotatesPods) {
  client_->SetRawHandler([](const std::string& method, const std::string& path, const api::json*) -> core::StatusOr<api::json> {
    if (method == "GET" && path == "/apis/apps/v1/namespaces/ns/replicasets/rs")
      return api::json{{"metadata", {{"name", "rs"}, {"annotations", {{"scheduling.volcano.sh/group-min-member", "2"}}}}}};
    return core::NotFoundError(path);
  });
  client_->Seed(api::Pod::Resource(), PodJson("a", "volcano", true));
  client_->Seed(api::Pod::Resource(), PodJson("b", "volcano", true));
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/a").status.ok());
  // b's reconcile runs before the cache saw the new group: the create answers AlreadyExists, still fine.
  ASSERT_TRUE(rec_->Reconcile("ns/b").status.ok());
  auto pg = kube::GetAs<api::PodGroup>(*client_, "ns", "podgroup-rs-uid");
  ASSERT_TRUE(pg.ok()) << pg.status();
  EXPECT_EQ(pg->spec.min_member, 2);
  for (const char* n : {"a", "b"}) {
    auto p = kube::GetAs<api::Pod>(*client_, "ns", n).value();
    EXPECT_EQ(p.metadata.annotations.at(std::string(api::kPodGroupAnnotation)), "podgroup-rs-uid") << n;
  }
  // Converged: nothing more to write.
  Refresh();
  client_->ClearActions();
  ASSERT_TRUE(rec_->Reconcile("ns/a").status.ok());
  EXPECT_TRUE(client_->Actions().empty());
}

TEST_F(PodGroupReconcilerTest, OwnerReadErrorRetries) {
  client_->SetRawHandler([](const std::string&, const std::string&, const api::json*) -> core::StatusOr<api::json> {
    return core::UnavailableError("injected");
  });
  client_->Seed(api::Pod::Resource(), PodJson("a", "volcano", true));
  Refresh();
  auto r = rec_->Reconcile("ns/a");
  EXPECT_FALSE(r.status.ok());
  EXPECT_FALSE(r.terminal);
  EXPECT_FALSE(client_->Get(api::PodGroup::Resource(), "ns", "podgroup-rs-uid").ok());
}

TEST_F(PodGroupReconcilerTest, UnreadableOwnerKindStillGetsAGroup) {
  // RBAC forbids reading the owner (a custom resource): the pod gets its PodGroup without owner annotations.
  client_->SetRawHandler([](const std::string&, const std::string& path, const api::json*) -> core::StatusOr<api::json> {
    return core::PermissionDeniedError("replicasets.apps is forbidden: " + path);
  });
  client_->Seed(api::Pod::Resource(), PodJson("a", "volcano", true));
  Refresh();
  auto r = rec_->Reconcile("ns/a");
  ASSERT_TRUE(r.status.ok()) << r.status;
  auto pg = kube::GetAs<api::PodGroup>(*client_, "ns", "podgroup-rs-uid");
  ASSERT_TRUE(pg.ok()) << pg.status();
  EXPECT_EQ(pg->spec.min_member, 1);
}

TEST_F(PodGroupReconcilerTest, ReplicaSetScaledToZeroDeletesItsGroup) {
  client_->SetRawHandler([](const std::string&, const std::string& path, const api::json*) -> core::StatusOr<api::json> {
    return core::NotFoundError(path);
  });
  api::json rs = client_->Seed(ReplicaSet::Resource(),
                               {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"},
                                {"metadata", {{"name", "rs"}, {"namespace", "ns"}}}, {"spec", {{"replicas", 2}}}});
  const std::string uid = rs["metadata"]["uid"];
  const std::string group = "podgroup-" + uid;
  api::json pod = PodJson("a", "volcano", true);
  pod["metadata"]["ownerReferences"][0]["uid"] = uid;
  client_->Seed(api::Pod::Resource(), pod);
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/a").status.ok());
  Refresh();
  ASSERT_TRUE(client_->Get(api::PodGroup::Resource(), "ns", group).ok());
  // Two replicas: the workload key changes nothing.
  ASSERT_TRUE(rec_->Reconcile("ReplicaSet:ns/rs").status.ok());
  ASSERT_TRUE(client_->Get(api::PodGroup::Resource(), "ns", group).ok());
  // Scaled to 0: the group goes.
  rs["spec"]["replicas"] = 0;
  ASSERT_TRUE(client_->Update(ReplicaSet::Resource(), "ns", rs).ok());
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ReplicaSet:ns/rs").status.ok());
  EXPECT_TRUE(core::IsNotFound(client_->Get(api::PodGroup::Resource(), "ns", group).status()));
  // Again, from a cache that still shows the group: NotFound counts as done.
  ASSERT_TRUE(rec_->Reconcile("ReplicaSet:ns/rs").status.ok());
  // Unknown workloads are no-ops.
  EXPECT_TRUE(rec_->Reconcile("ReplicaSet:ns/nope").status.ok());
  EXPECT_TRUE(rec_->Reconcile("StatefulSet:ns/nope").status.ok());
}

}  // namespace
}  // namespace tephra::reconcilers::podgroup
