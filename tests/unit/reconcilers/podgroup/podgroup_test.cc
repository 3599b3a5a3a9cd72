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

class PodGroupReconcilerTest : public ::testing::Test {
 protected:
  PodGroupReconcilerTest() : client_(std::make_shared<FakeClient>()), pods_(client_), pgs_(client_) {
    PodGroupReconcilerOptions o;
    o.client = client_;
    o.pods = &pods_;
    o.pod_groups = &pgs_;
    rec_ = std::make_unique<PodGroupReconciler>(o);
  }
  void Refresh() {
    auto l = client_->List(api::Pod::Resource(), "", {});
    pods_.Replace(std::move(l.value().items));
    auto p = client_->List(api::PodGroup::Resource(), "", {});
    pgs_.Replace(std::move(p.value().items));
  }
  std::shared_ptr<FakeClient> client_;
  kube::Informer<api::Pod> pods_;
  kube::Informer<api::PodGroup> pgs_;
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

}  // namespace
}  // namespace tephra::reconcilers::podgroup
