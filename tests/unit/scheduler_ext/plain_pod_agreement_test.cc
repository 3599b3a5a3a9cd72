// The scheduler's stand-in job for a plain pod (ImplicitJobInfo) and the PodGroup the controller later
// creates for the same pod (reconcilers/podgroup BuildPodGroup, read back by ToJobInfo) must describe the
// same job: same key, queue, minMember, minResources, priority class and network topology. If they
// disagreed, a pod placed before its PodGroup existed would be accounted one way and then another.
#include <gtest/gtest.h>

#include "podgroup/plan.h"
#include "tephra/api/labels.h"
#include "tephra/scheduler/convert.h"

namespace tephra::scheduler {
namespace {

api::Pod MakePod(const std::map<std::string, std::string>& annotations, const std::string& cpu,
                 const std::string& priority_class) {
  api::Pod p;
  p.metadata.name = "p";
  p.metadata.namespace_ = "team-a";
  p.metadata.uid = "0d9f6c1e";
  p.metadata.creation_timestamp = "2026-11-24T08:00:00Z";
  p.metadata.annotations = annotations;
  p.spec.scheduler_name = "volcano";
  p.spec.priority_class_name = priority_class;
  api::Container c;
  c.name = "c";
  c.resources.requests["cpu"] = core::Quantity::MustParse(cpu);
  c.resources.requests["memory"] = core::Quantity::MustParse("1Gi");
  c.resources.limits["nvidia.com/gpu"] = core::Quantity::MustParse("2");
  p.spec.containers.push_back(c);
  return p;
}

void ExpectSameJob(const api::Pod& pod) {
  const std::set<std::string> names = {"volcano"};
  ASSERT_TRUE(IsImplicitGangOfOne(pod, names));
  sched::ResourceRegistry reg;
  sched::JobInfo implicit = ImplicitJobInfo(pod, &reg, "default");

  reconcilers::podgroup::Observed obs;
  obs.pod = pod;
  obs.scheduler_names = names;
  api::PodGroup pg = reconcilers::podgroup::BuildPodGroup(obs);
  pg.metadata.uid = "pg-uid";
  pg.metadata.creation_timestamp = pod.metadata.creation_timestamp;
  sched::JobInfo real = ToJobInfo(pg, &reg, "default");

  EXPECT_TRUE(implicit.implicit);
  EXPECT_FALSE(real.implicit);
  EXPECT_EQ(implicit.key, real.key);
  EXPECT_EQ(implicit.queue, real.queue);
  EXPECT_EQ(implicit.min_member, real.min_member);
  ASSERT_TRUE(implicit.min_resources && real.min_resources);
  EXPECT_TRUE(*implicit.min_resources == *real.min_resources);
  EXPECT_EQ(implicit.priority_class_name, real.priority_class_name);
  EXPECT_EQ(implicit.network_topology.mode, real.network_topology.mode);
  EXPECT_EQ(implicit.network_topology.highest_tier_allowed, real.network_topology.highest_tier_allowed);
  EXPECT_EQ(implicit.creation_time, real.creation_time);
  // And the pod itself is filed under that key.
  EXPECT_EQ(ToTaskInfo(pod, &reg, names).job, real.key);
}

TEST(PlainPodAgreement, DefaultQueue) { ExpectSameJob(MakePod({}, "500m", "")); }

TEST(PlainPodAgreement, QueueAnnotationAndPriorityClass) {
  ExpectSameJob(MakePod({{std::string(api::kSchedulingQueueNameAnnotation), "research"}}, "2", "high"));
}

TEST(PlainPodAgreement, NetworkTopologyAnnotations) {
  ExpectSameJob(MakePod({{std::string(api::kNetworkTopologyHighestTierAnnotation), "2"}}, "1", ""));
  ExpectSameJob(MakePod({{std::string(api::kNetworkTopologyModeAnnotation), "soft"},
                         {std::string(api::kNetworkTopologyHighestTierAnnotation), "1"}},
                        "1", ""));
  ExpectSameJob(MakePod({{std::string(api::kNetworkTopologyModeAnnotation), "sideways"}}, "1", ""));
}

TEST(PlainPodAgreement, OnlyUnownedUngroupedManagedPods) {
  const std::set<std::string> names = {"volcano"};
  api::Pod p = MakePod({}, "1", "");
  EXPECT_TRUE(IsImplicitGangOfOne(p, names));
  api::Pod named = p;
  named.metadata.annotations[std::string(api::kPodGroupAnnotation)] = "g";
  EXPECT_FALSE(IsImplicitGangOfOne(named, names));
  sched::ResourceRegistry reg;
  EXPECT_EQ(ToTaskInfo(named, &reg, names).job, "team-a/g");
  api::Pod owned = p;
  api::OwnerReference r;
  r.api_version = "batch.volcano.sh/v1alpha1";
  r.kind = "Job";
  r.name = "j";
  r.uid = "j-uid";
  r.controller = true;
  owned.metadata.owner_references.push_back(r);
  EXPECT_FALSE(IsImplicitGangOfOne(owned, names));
  EXPECT_EQ(ToTaskInfo(owned, &reg, names).job, "");  // waits for its PodGroup
  api::Pod foreign = p;
  foreign.spec.scheduler_name = "default-scheduler";
  EXPECT_FALSE(IsImplicitGangOfOne(foreign, names));
}

}  // namespace
}  // namespace tephra::scheduler
