#include <limits>

#include <gtest/gtest.h>

#include "tephra/api/codec.h"
#include "tephra/scheduler/convert.h"

namespace tephra::scheduler {
namespace {

using api::json;

template <typename T>
T Decode(const char* text) {
  auto r = api::FromJson<T>(json::parse(text));
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

const std::set<std::string> kNames = {"volcano"};

TEST(ConvertTest, MinResourcesQuotaKeysNormalized) {
  // What the job controller writes (docs/volcano-behaviour.md, "PodGroup of a vcjob (minResources)") for 2 pods
  // of 1 cpu / 1Gi / 1 GPU.
  auto pg = Decode<api::PodGroup>(R"({
    "metadata": {"name": "j-uid", "namespace": "ns", "uid": "pg1"},
    "spec": {"minMember": 2, "minResources": {"cpu": "2", "requests.cpu": "2", "limits.cpu": "4",
             "memory": "2Gi", "requests.memory": "2Gi", "pods": "2", "count/pods": "2",
             "requests.nvidia.com/gpu": "2", "nvidia.com/gpu": "2"}}})");
  auto n = NormalizeQuotaKeys(*pg.spec.min_resources);
  EXPECT_EQ(n.size(), 4u);
  EXPECT_EQ(n.at("cpu").MilliValue(), 2000);
  EXPECT_EQ(n.at("memory").Value(), 2LL << 30);
  EXPECT_EQ(n.at("pods").Value(), 2);
  EXPECT_EQ(n.at("nvidia.com/gpu").Value(), 2);
  EXPECT_EQ(n.count("count/pods"), 0u);
  EXPECT_EQ(n.count("limits.cpu"), 0u);
}

// A vGPU gang's minimum as the job controller writes it names volcano.sh/vgpu-memory-percentage, which no
// node offers (the card model accounts for it per pod): it must not make the gang unsatisfiable at enqueue.
TEST(ConvertTest, VgpuMemoryPercentageLeavesGangMinimums) {
  auto pg = Decode<api::PodGroup>(R"({
    "metadata": {"name": "j-uid", "namespace": "ns", "uid": "pg1"},
    "spec": {"minMember": 2, "minResources": {"cpu": "2", "volcano.sh/vgpu-number": "2",
             "requests.volcano.sh/vgpu-memory-percentage": "100", "volcano.sh/vgpu-memory-percentage": "100"}}})");
  auto n = NormalizeQuotaKeys(*pg.spec.min_resources);
  EXPECT_EQ(n.count("volcano.sh/vgpu-memory-percentage"), 0u);
  EXPECT_EQ(n.count("volcano.sh/vgpu-number"), 1u);
  sched::ResourceRegistry reg;
  ToNodeInfo(Decode<api::Node>(R"({"metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "8", "volcano.sh/vgpu-number": "40"}}})"), &reg);
  sched::JobInfo j = ToJobInfo(pg, &reg, "default");
  EXPECT_TRUE(j.unoffered.empty());
  ASSERT_TRUE(j.min_resources.has_value());
  EXPECT_EQ(j.min_resources->Get(sched::kUnoffered), 0);
}

// The pod informer caches pods after CompactPodForCache; whatever the conversions read must survive it. A
// pod carrying every annotation, label and field the scheduler reads converts to the same TaskInfo and the
// same stand-in job from the compacted form as from the original. (The compaction once dropped
// volcano.sh/preemptable, so on the real control plane an annotated pod was offered as a victim.)
TEST(ConvertTest, CompactedPodConvertsLikeTheOriginal) {
  const json original = json::parse(R"({
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "creationTimestamp": "2026-11-29T07:00:00Z",
      "labels": {"app": "a", "volcano.sh/task-spec": "worker"},
      "annotations": {"volcano.sh/preemptable": "false", "scheduling.volcano.sh/queue-name": "q1",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/network-topology-mode": "hard", "volcano.sh/network-topology-highest-tier": "2",
        "nvidia.com/use-gputype": "A100", "nvidia.com/nouse-gputype": "T4",
        "volcano.sh/vgpu-use-gpuuuid": "GPU-1", "volcano.sh/vgpu-nouse-gpuuuid": "GPU-2",
        "kubectl.kubernetes.io/last-applied-configuration": "{\"big\": true}"}},
    "spec": {"schedulerName": "volcano", "priority": 7, "priorityClassName": "high", "nodeName": "",
      "nodeSelector": {"pool": "a"}, "tolerations": [{"key": "k", "operator": "Exists"}],
      "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c1"}}, {"name": "s", "secret": {"secretName": "x"}}],
      "containers": [{"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}],
        "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}],
        "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}}]},
    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}})");
  json compacted = original;
  CompactPodForCache(&compacted);
  EXPECT_FALSE(compacted["metadata"]["annotations"].contains("kubectl.kubernetes.io/last-applied-configuration"));
  EXPECT_FALSE(compacted["spec"]["containers"][0].contains("env"));
  auto a = api::FromJson<api::Pod>(original);
  auto b = api::FromJson<api::Pod>(compacted);
  ASSERT_TRUE(a.ok() && b.ok());
  sched::ResourceRegistry reg;
  const sched::TaskInfo x = ToTaskInfo(*a, &reg, kNames), y = ToTaskInfo(*b, &reg, kNames);
  EXPECT_FALSE(y.preemptable);
  EXPECT_EQ(x.preemptable, y.preemptable);
  EXPECT_EQ(x.job, y.job);
  EXPECT_EQ(x.role, y.role);
  EXPECT_EQ(x.request, y.request);
  EXPECT_EQ(x.priority, y.priority);
  EXPECT_EQ(x.priority_class_name, y.priority_class_name);
  EXPECT_EQ(x.node_selector, y.node_selector);
  EXPECT_EQ(x.labels, y.labels);
  EXPECT_EQ(x.claims, y.claims);
  EXPECT_EQ(x.host_ports.size(), y.host_ports.size());
  EXPECT_EQ(x.tolerations.size(), y.tolerations.size());
  EXPECT_TRUE(x.devices == y.devices);
  EXPECT_TRUE(y.devices.detail != nullptr);
  const sched::JobInfo jx = ImplicitJobInfo(*a, &reg, "default"), jy = ImplicitJobInfo(*b, &reg, "default");
  EXPECT_EQ(jy.queue, "q1");
  EXPECT_EQ(jx.queue, jy.queue);
  EXPECT_EQ(jx.network_topology.mode, jy.network_topology.mode);
  EXPECT_EQ(jx.network_topology.highest_tier_allowed, jy.network_topology.highest_tier_allowed);
  EXPECT_EQ(jx.priority, jy.priority);
}

// volcano.sh/preemptable as Volcano reads it: the annotation, else the label; absent means preemptable; a
// value Go's strconv.ParseBool refuses protects the pod.
TEST(ConvertTest, PreemptableFromAnnotationElseLabelLikeVolcano) {
  auto pod = [](const char* meta) {
    return Decode<api::Pod>((std::string(R"({"metadata": {"name": "p", "namespace": "ns", "uid": "u1", )") + meta +
                             R"(}, "spec": {"containers": [{"name": "c"}]}})")
                                .c_str());
  };
  sched::ResourceRegistry reg;
  EXPECT_TRUE(ToTaskInfo(pod(R"("labels": {})"), &reg, kNames).preemptable);
  EXPECT_FALSE(ToTaskInfo(pod(R"("annotations": {"volcano.sh/preemptable": "false"})"), &reg, kNames).preemptable);
  EXPECT_FALSE(ToTaskInfo(pod(R"("labels": {"volcano.sh/preemptable": "false"})"), &reg, kNames).preemptable);
  EXPECT_FALSE(ToTaskInfo(pod(R"("labels": {"volcano.sh/preemptable": "F"})"), &reg, kNames).preemptable);
  // The annotation decides when both are there.
  EXPECT_TRUE(ToTaskInfo(pod(R"("annotations": {"volcano.sh/preemptable": "True"},
                               "labels": {"volcano.sh/preemptable": "false"})"),
                         &reg, kNames)
                  .preemptable);
  EXPECT_FALSE(ToTaskInfo(pod(R"("annotations": {"volcano.sh/preemptable": "0"},
                                "labels": {"volcano.sh/preemptable": "true"})"),
                          &reg, kNames)
                   .preemptable);
  // Not a Go boolean: not preemptable.
  EXPECT_FALSE(ToTaskInfo(pod(R"("annotations": {"volcano.sh/preemptable": "yes"})"), &reg, kNames).preemptable);
  EXPECT_TRUE(ToTaskInfo(pod(R"("labels": {"volcano.sh/preemptable": "1"})"), &reg, kNames).preemptable);
}

TEST(ConvertTest, ScoreRequestsDefaultUnsetContainerRequestsLikeKubeScheduler) {
  // kube-scheduler scores with non-zero requests: a container without a cpu (memory) request counts 100m
  // (200Mi), an explicit 0 stays 0, a limit counts as the request, init containers by the max rule, plus
  // overhead. Feasibility keeps the real requests.
  auto pod = Decode<api::Pod>(R"({
    "metadata": {"name": "p", "namespace": "ns", "uid": "u2"},
    "spec": {"schedulerName": "volcano", "overhead": {"cpu": "250m", "memory": "64Mi"},
             "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
             "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}},
                            {"name": "b"},
                            {"name": "c", "resources": {"limits": {"memory": "1Gi"}}},
                            {"name": "d", "resources": {"requests": {"cpu": "0"}}}]},
    "status": {"phase": "Pending"}})");
  sched::ResourceRegistry reg;
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  constexpr int64_t kMi = 1LL << 20;
  // cpu: max(500 + 100 + 100 + 0, init 2000) + 250; memory: 200Mi + 200Mi + 1Gi + 200Mi (init: 200Mi) + 64Mi.
  EXPECT_EQ(t.score_cpu, 2250);
  EXPECT_EQ(t.score_memory, 1688 * kMi);
  // The real requests: no defaults.
  EXPECT_EQ(t.request.Get(sched::kCpu), 2250);
  EXPECT_EQ(t.request.Get(sched::kMemory), 1088 * kMi);

  // A pod with no requests at all scores as 100m / 200Mi per container but requests nothing.
  auto empty = Decode<api::Pod>(R"({"metadata": {"name": "e", "namespace": "ns", "uid": "u3"},
    "spec": {"schedulerName": "volcano", "containers": [{"name": "a"}, {"name": "b"}]}})");
  sched::TaskInfo e = ToTaskInfo(empty, &reg, kNames);
  EXPECT_EQ(e.score_cpu, 200);
  EXPECT_EQ(e.score_memory, 400 * kMi);
  EXPECT_EQ(e.request.Get(sched::kCpu), 0);
  EXPECT_EQ(e.request.Get(sched::kMemory), 0);
}

TEST(ConvertTest, HostPortsFromAppContainersWithDefaults) {
  // kube-scheduler's NodePorts: app containers' ports with hostPort > 0; an empty hostIP is 0.0.0.0 and an
  // empty protocol TCP. Init containers' ports and container-only ports do not bind the node.
  auto pod = Decode<api::Pod>(R"({
    "metadata": {"name": "p", "namespace": "ns", "uid": "u4"},
    "spec": {"schedulerName": "volcano",
             "initContainers": [{"name": "i", "ports": [{"containerPort": 7000, "hostPort": 7000}]}],
             "containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080},
                                                     {"containerPort": 9090}]},
                            {"name": "b", "ports": [{"containerPort": 53, "hostPort": 5353, "protocol": "UDP",
                                                     "hostIP": "10.0.0.1"}]}]}})");
  sched::ResourceRegistry reg;
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  ASSERT_EQ(t.host_ports.size(), 2u);
  EXPECT_EQ(t.host_ports[0], (sched::HostPort{"0.0.0.0", "TCP", 8080}));
  EXPECT_EQ(t.host_ports[1], (sched::HostPort{"10.0.0.1", "UDP", 5353}));
}

TEST(ConvertTest, ClaimsVolumesAndClassesForTheVolumePredicates) {
  auto pod = Decode<api::Pod>(R"({
    "metadata": {"name": "p", "namespace": "ns", "uid": "u5"},
    "spec": {"schedulerName": "volcano", "containers": [{"name": "a"}],
             "volumes": [{"name": "cfg", "configMap": {"name": "c"}},
                         {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
                         {"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt", "readOnly": true}}]}})");
  sched::ResourceRegistry reg;
  EXPECT_EQ(ToTaskInfo(pod, &reg, kNames).claims, (std::vector<std::string>{"data-0", "ckpt"}));

  auto pvc = Decode<api::PersistentVolumeClaim>(R"({
    "metadata": {"name": "data-0", "namespace": "ns", "deletionTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"volumeName": "pv-1", "storageClassName": "local"}, "status": {"phase": "Bound"}})");
  EXPECT_EQ(ToClaimInfo(pvc), (sched::ClaimInfo{"pv-1", "local", true}));
  auto pv = Decode<api::PersistentVolume>(R"({
    "metadata": {"name": "pv-1"},
    "spec": {"capacity": {"storage": "1Ti"}, "local": {"path": "/mnt/nvme"},
             "nodeAffinity": {"required": {"nodeSelectorTerms": [
               {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]}]}]}}}})");
  sched::VolumeInfo v = ToVolumeInfo(pv);
  ASSERT_EQ(v.node_affinity.size(), 1u);
  EXPECT_TRUE(v.node_affinity[0].Matches({{"kubernetes.io/hostname", "n2"}}, "n2"));
  EXPECT_FALSE(v.node_affinity[0].Matches({{"kubernetes.io/hostname", "n3"}}, "n3"));
  EXPECT_TRUE(ToVolumeInfo(Decode<api::PersistentVolume>(R"({"metadata": {"name": "nfs"}, "spec": {}})")).node_affinity.empty());
  auto sc = Decode<api::StorageClass>(R"({
    "metadata": {"name": "zonal"}, "provisioner": "example.com/csi", "volumeBindingMode": "WaitForFirstConsumer",
    "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a", "c"]}]}]})");
  sched::StorageClassInfo si = ToStorageClassInfo(sc);
  EXPECT_TRUE(si.wait_for_first_consumer);
  EXPECT_FALSE(si.static_only);
  ASSERT_EQ(si.allowed_topologies.size(), 1u);
  EXPECT_TRUE(si.allowed_topologies[0].Matches({{"topology.kubernetes.io/zone", "c"}}, "n1"));
  EXPECT_FALSE(si.allowed_topologies[0].Matches({{"topology.kubernetes.io/zone", "b"}}, "n1"));
  EXPECT_FALSE(si.allowed_topologies[0].Matches({}, "n1")) << "a node without the key is not in the topology";
  EXPECT_EQ(si.provisioner, "example.com/csi");
  // VolumeZone and NodeVolumeLimits read a volume's zone labels and CSI source, and a node's CSINode.
  auto csi = Decode<api::PersistentVolume>(R"({
    "metadata": {"name": "pv-ebs", "labels": {"topology.kubernetes.io/zone": "a__b", "team": "x",
                                             "failure-domain.beta.kubernetes.io/region": "r1"}},
    "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1", "fsType": "ext4"}}})");
  sched::VolumeInfo cv = ToVolumeInfo(csi);
  EXPECT_EQ(cv.csi_driver, "ebs.csi.aws.com");
  EXPECT_EQ(cv.csi_handle, "vol-1");
  EXPECT_EQ(cv.labels.at("topology.kubernetes.io/zone"), "a__b");
  auto cn = Decode<api::CSINode>(R"({"metadata": {"name": "n1"}, "spec": {"drivers": [
      {"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}},
      {"name": "nfs.csi.k8s.io", "nodeID": "n1"}]}})");
  EXPECT_EQ(ToCsiLimits(cn), (std::map<std::string, int64_t>{{"attachable-volumes-csi-ebs.csi.aws.com", 25}}));
}

TEST(ConvertTest, PodRequestsInitMaxGroupRoleAffinity) {
  auto pod = Decode<api::Pod>(R"({
    "metadata": {"name": "w-0", "namespace": "ns", "uid": "u1",
                 "annotations": {"scheduling.k8s.io/group-name": "pg1", "volcano.sh/task-spec": "worker"},
                 "labels": {"app": "x"}},
    "spec": {"schedulerName": "volcano", "priority": 7,
             "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}],
             "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "2Gi", "nvidia.com/gpu": "8"}}},
                            {"name": "b", "resources": {"requests": {"cpu": "1"}}}],
             "nodeSelector": {"pool": "a100"},
             "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
                             {"operator": "Exists"}],
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                             {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]},
                          "preferredDuringSchedulingIgnoredDuringExecution": [
                             {"weight": 40, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}},
                             {"weight": 0, "preference": {"matchExpressions": [{"key": "x", "operator": "Exists"}]}}]},
                          "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                             {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"},
                             {"labelSelector": {"matchLabels": {"app": "y"}}, "topologyKey": "topology.kubernetes.io/zone"}],
                                              "preferredDuringSchedulingIgnoredDuringExecution": [
                             {"weight": 30, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "x"}},
                                                                "topologyKey": "kubernetes.io/hostname"}}]},
                          "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                             {"weight": 0, "podAffinityTerm": {"labelSelector": {}, "topologyKey": "zone"}},
                             {"weight": 70, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "db"}},
                                                                "namespaces": ["data"], "topologyKey": "zone"}}]}}},
    "status": {"phase": "Pending"}})");
  sched::ResourceRegistry reg;
  (void)reg.Intern("nvidia.com/gpu");  // a node offers it (only nodes intern names)
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  ASSERT_EQ(t.preferred_pod_terms.size(), 2u) << "affinity first, anti-affinity second; weight 0 skipped";
  EXPECT_EQ(t.preferred_pod_terms[0].weight, 70);
  EXPECT_FALSE(t.preferred_pod_terms[0].anti);
  EXPECT_EQ(t.preferred_pod_terms[0].term.namespaces, (std::vector<std::string>{"data"}));
  EXPECT_EQ(t.preferred_pod_terms[0].term.topology_key, "zone");
  EXPECT_EQ(t.preferred_pod_terms[1].weight, 30);
  EXPECT_TRUE(t.preferred_pod_terms[1].anti);
  EXPECT_EQ(t.preferred_pod_terms[1].term.namespaces, (std::vector<std::string>{"ns"})) << "the pod's own by default";
  EXPECT_EQ(t.uid, "u1");
  EXPECT_EQ(t.job, "ns/pg1");
  EXPECT_EQ(t.role, "worker");
  EXPECT_EQ(t.priority, 7);
  EXPECT_EQ(t.status, sched::TaskStatus::kPending);
  // cpu: max(0.5 + 1, init 3) = 3000m; memory: max(2Gi, 1Gi); gpu 8.
  EXPECT_EQ(t.request.Get(sched::kCpu), 3000);
  EXPECT_EQ(t.request.Get(sched::kMemory), 2LL << 30);
  auto gpu = reg.Find("nvidia.com/gpu");
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(t.request.Get(*gpu), 8);
  EXPECT_EQ(t.node_selector.at("pool"), "a100");
  ASSERT_EQ(t.tolerations.size(), 2u);
  EXPECT_FALSE(t.tolerations[0].op_exists);
  EXPECT_EQ(t.tolerations[0].effect, sched::TaintEffect::kNoSchedule);
  EXPECT_TRUE(t.tolerations[1].op_exists);
  EXPECT_FALSE(t.tolerations[1].effect.has_value());
  ASSERT_EQ(t.required_affinity.size(), 1u);
  ASSERT_EQ(t.required_affinity[0].match_expressions.size(), 1u);
  EXPECT_EQ(t.required_affinity[0].match_expressions[0].values, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(t.pod_anti_affinity.size(), 2u) << "terms on every topology key are modelled";
  EXPECT_EQ(t.pod_anti_affinity[0].selector.match_labels.at("app"), "x");
  EXPECT_EQ(t.pod_anti_affinity[0].topology_key, "kubernetes.io/hostname");
  EXPECT_EQ(t.pod_anti_affinity[1].topology_key, "topology.kubernetes.io/zone");
  ASSERT_EQ(t.preferred_affinity.size(), 1u) << "a zero weight is skipped, as kube-scheduler does";
  EXPECT_EQ(t.preferred_affinity[0].weight, 40);
  ASSERT_EQ(t.preferred_affinity[0].match_expressions.size(), 1u);
  EXPECT_EQ(t.preferred_affinity[0].match_expressions[0].key, "disk");
}

TEST(ConvertTest, PodStatusMappingAndTracking) {
  auto base = [](const char* sched, const char* node, const char* phase, bool deleting) {
    api::Pod p;
    p.metadata.uid = "u";
    p.spec.scheduler_name = sched;
    p.spec.node_name = node;
    p.status.phase = phase;
    if (deleting) p.metadata.deletion_timestamp = "2026-01-01T00:00:00Z";
    return p;
  };
  EXPECT_EQ(PodStatusOf(base("volcano", "", "Pending", false)), sched::TaskStatus::kPending);
  EXPECT_EQ(PodStatusOf(base("volcano", "n1", "Pending", false)), sched::TaskStatus::kBound);
  EXPECT_EQ(PodStatusOf(base("volcano", "n1", "Running", false)), sched::TaskStatus::kRunning);
  EXPECT_EQ(PodStatusOf(base("volcano", "n1", "Running", true)), sched::TaskStatus::kReleasing);
  EXPECT_EQ(PodStatusOf(base("volcano", "n1", "Succeeded", false)), sched::TaskStatus::kSucceeded);
  EXPECT_EQ(PodStatusOf(base("volcano", "n1", "Failed", true)), sched::TaskStatus::kFailed);
  // Foreign pods count only while they hold a node.
  EXPECT_TRUE(ShouldTrack(base("volcano", "", "Pending", false), kNames));
  EXPECT_FALSE(ShouldTrack(base("default-scheduler", "", "Pending", false), kNames));
  EXPECT_TRUE(ShouldTrack(base("default-scheduler", "n1", "Running", false), kNames));
  EXPECT_FALSE(ShouldTrack(base("default-scheduler", "n1", "Succeeded", false), kNames));
  EXPECT_FALSE(ShouldTrack(base("", "", "Pending", false), kNames));
  EXPECT_TRUE(ShouldTrack(base("", "", "Pending", false), {"default-scheduler"}));
  // A foreign pod never joins a gang even if annotated.
  api::Pod f = base("default-scheduler", "n1", "Running", false);
  f.metadata.namespace_ = "ns";
  f.metadata.annotations["scheduling.k8s.io/group-name"] = "pg";
  sched::ResourceRegistry reg;
  EXPECT_EQ(ToTaskInfo(f, &reg, kNames).job, "");
}

TEST(ConvertTest, NodeReadyTaintsAllocatable) {
  auto node = Decode<api::Node>(R"({
    "metadata": {"name": "n1", "labels": {"tephra.io/leaf": "leaf-0"}},
    "spec": {"unschedulable": true, "taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]},
    "status": {"capacity": {"cpu": "64"}, "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8",
                                                          "attachable-volumes-csi-ebs.csi.aws.com": "25"},
               "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]}})");
  sched::ResourceRegistry reg;
  sched::NodeInfo n = ToNodeInfo(node, &reg);
  EXPECT_EQ(n.name, "n1");
  EXPECT_TRUE(n.ready);
  EXPECT_TRUE(n.unschedulable);
  EXPECT_EQ(n.allocatable.Get(sched::kCpu), 32000);
  EXPECT_EQ(n.allocatable.Get(sched::kPods), 110);
  EXPECT_EQ(n.allocatable.Get(*reg.Find("nvidia.com/gpu")), 8);
  ASSERT_EQ(n.taints.size(), 1u);
  EXPECT_EQ(n.taints[0].effect, sched::TaintEffect::kNoExecute);
  EXPECT_EQ(n.labels.at("tephra.io/leaf"), "leaf-0");
  EXPECT_EQ(n.volume_limits, (std::map<std::string, int64_t>{{"attachable-volumes-csi-ebs.csi.aws.com", 25}}));
  EXPECT_FALSE(reg.Find("attachable-volumes-csi-ebs.csi.aws.com").has_value()) << "an attach limit is not a resource";
  node.status.conditions[1].status = "Unknown";
  EXPECT_FALSE(ToNodeInfo(node, &reg).ready);
}

TEST(ConvertTest, PodGroupQueueHyperNode) {
  auto pg = Decode<api::PodGroup>(R"({
    "metadata": {"name": "pg1", "namespace": "ns", "uid": "g1", "creationTimestamp": "2026-11-22T09:00:00Z"},
    "spec": {"minMember": 4, "minTaskMember": {"worker": 3}, "minResources": {"cpu": "4", "nvidia.com/gpu": "32"},
             "priorityClassName": "high", "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
             "subGroupPolicy": [
               {"name": "worker", "subGroupSize": 4, "minSubGroups": 2, "matchLabelKeys": ["volcano.sh/partition-id"],
                "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
                "networkTopology": {"mode": "soft", "highestTierName": "leaf"}},
               {"name": "bare"}]},
    "status": {"phase": "Inqueue"}})");
  sched::ResourceRegistry reg;
  sched::JobInfo j = ToJobInfo(pg, &reg, "default");
  EXPECT_EQ(j.key, "ns/pg1");
  EXPECT_EQ(j.queue, "default") << "empty spec.queue falls back to --default-queue";
  EXPECT_EQ(j.min_member, 4);
  EXPECT_EQ(j.min_task_member.at("worker"), 3);
  ASSERT_TRUE(j.min_resources.has_value());
  EXPECT_EQ(j.min_resources->Get(sched::kCpu), 4000);
  EXPECT_EQ(j.phase, sched::PodGroupPhase::kInqueue);
  EXPECT_EQ(j.network_topology.mode, sched::TopologyMode::kHard);
  EXPECT_EQ(j.network_topology.highest_tier_allowed, 1);
  ASSERT_EQ(j.sub_group_policies.size(), 2u);
  const sched::SubGroupPolicy& sg = j.sub_group_policies[0];
  EXPECT_EQ(sg.name, "worker");
  EXPECT_EQ(sg.size, 4);
  EXPECT_EQ(sg.min_groups, 2);
  EXPECT_EQ(sg.match_label_keys, std::vector<std::string>{"volcano.sh/partition-id"});
  ASSERT_TRUE(sg.selector.has_value());
  EXPECT_EQ(sg.selector->match_labels.at("volcano.sh/task-spec"), "worker");
  EXPECT_EQ(sg.network_topology.mode, sched::TopologyMode::kSoft);
  EXPECT_EQ(sg.network_topology.highest_tier_name, "leaf");
  EXPECT_EQ(j.sub_group_policies[1].size, 1) << "subGroupSize defaults to 1";
  EXPECT_EQ(j.sub_group_policies[1].min_groups, 0);
  EXPECT_FALSE(j.sub_group_policies[1].selector.has_value());
  EXPECT_EQ(j.sub_group_policies[1].network_topology.mode, sched::TopologyMode::kNone);
  EXPECT_EQ(Rfc3339(j.creation_time), "2026-11-22T09:00:00Z");

  auto q = Decode<api::Queue>(R"({"metadata": {"name": "q"}, "spec": {"capability": {"cpu": "10"}, "reclaimable": false}})");
  sched::QueueInfo qi = ToQueueInfo(q, &reg);
  EXPECT_EQ(qi.weight, 1) << "weight 0/unset counts as 1";
  EXPECT_EQ(qi.capability.Get(sched::kCpu), 10000);
  EXPECT_EQ(qi.capability.Get(sched::kMemory), sched::kUnlimited) << "unnamed dimensions stay unlimited";
  EXPECT_FALSE(qi.reclaimable);

  auto hn = Decode<api::HyperNode>(R"({"metadata": {"name": "leaf0"}, "spec": {"tier": 1, "members": [
      {"type": "Node", "selector": {"exactMatch": {"name": "n1"}}},
      {"type": "Node", "selector": {"regexMatch": {"pattern": "gpu-[0-3]"}}},
      {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"tephra.io/leaf": "leaf-0"}}}}]}})");
  sched::HyperNodeInfo h = ToHyperNodeInfo(hn);
  ASSERT_EQ(h.members.size(), 3u);
  EXPECT_EQ(h.members[0].kind, sched::MemberSelectorKind::kExact);
  EXPECT_EQ(h.members[1].kind, sched::MemberSelectorKind::kRegex);
  EXPECT_EQ(h.members[1].name_or_pattern, "gpu-[0-3]");
  EXPECT_EQ(h.members[2].kind, sched::MemberSelectorKind::kLabel);
  EXPECT_TRUE(h.members[2].label_selector.Matches({{"tephra.io/leaf", "leaf-0"}}));
  EXPECT_FALSE(h.members[2].label_selector.Matches({{"tephra.io/leaf", "leaf-1"}}));
}

// Issue 41: only nodes take a dimension of the resource table. Made-up names in pods' requests (a tenant's) fill
// nothing, so a resource a node offers later still gets one; until a node offers it, a pod requesting it fits
// no node and says which resource.
TEST(ConvertTest, MadeUpNamesOnPodsTakeNoDimension) {
  sched::ResourceRegistry reg;
  for (int i = 0; i < 12; ++i) {
    const std::string name = "example.com/junk-" + std::to_string(i);
    auto pod = Decode<api::Pod>(R"({"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
      "spec": {"schedulerName": "volcano", "containers": [{"name": "a"}]}})");
    pod.spec.containers[0].resources.requests[name] = core::Quantity::MustParse("1");
    pod.spec.containers[0].resources.requests["cpu"] = core::Quantity::MustParse("1");
    sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
    EXPECT_EQ(t.request.Get(sched::kUnoffered), 1) << name;
    EXPECT_EQ(t.request.Get(sched::kCpu), 1000);
    EXPECT_EQ(t.unoffered, std::vector<std::string>{name});
  }
  EXPECT_EQ(reg.size(), 3) << "cpu, memory, pods: nothing interned from pods";
  // A PodGroup and a Queue naming made-up resources take nothing either.
  auto pg = Decode<api::PodGroup>(R"({"metadata": {"name": "g", "namespace": "ns"},
    "spec": {"minMember": 1, "minResources": {"requests.example.com/a": "1", "example.com/b": "0", "cpu": "1"}}})");
  sched::JobInfo j = ToJobInfo(pg, &reg, "default");
  ASSERT_TRUE(j.min_resources.has_value());
  EXPECT_EQ(j.min_resources->Get(sched::kUnoffered), 1);
  EXPECT_EQ(j.unoffered, std::vector<std::string>{"example.com/a"}) << "a zero request asks for nothing";
  auto q = Decode<api::Queue>(R"({"metadata": {"name": "q"}, "spec": {"capability": {"cpu": "10", "example.com/c": "1"},
    "guarantee": {"resource": {"example.com/d": "5"}}, "deserved": {"example.com/e": "5"}}})");
  sched::QueueInfo qi = ToQueueInfo(q, &reg);
  EXPECT_EQ(qi.capability.Get(sched::kCpu), 10000);
  EXPECT_EQ(qi.capability.Get(sched::kUnoffered), sched::kUnlimited) << "a capability on no node's resource limits nothing";
  EXPECT_TRUE(qi.guarantee.IsZero());
  ASSERT_TRUE(qi.spec_deserved.has_value());
  EXPECT_TRUE(qi.spec_deserved->IsZero());
  EXPECT_EQ(reg.size(), 3);

  // The node's new resource (a MIG profile) gets a dimension, and the pod that requests it fits there; a pod
  // requesting a made-up name fits no node, the new one included.
  auto node = Decode<api::Node>(R"({"metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/mig-1g.5gb": "7"}}})");
  sched::NodeInfo n = ToNodeInfo(node, &reg);
  ASSERT_TRUE(reg.Find("nvidia.com/mig-1g.5gb").has_value());
  const int mig = *reg.Find("nvidia.com/mig-1g.5gb");
  EXPECT_LT(mig, sched::kUnoffered);
  EXPECT_EQ(n.allocatable.Get(mig), 7);
  EXPECT_EQ(n.allocatable.Get(sched::kUnoffered), 0);
  auto pod = Decode<api::Pod>(R"({"metadata": {"name": "m", "namespace": "ns", "uid": "m"},
    "spec": {"schedulerName": "volcano", "containers": [{"name": "a", "resources": {"requests": {"nvidia.com/mig-1g.5gb": "1"}}}]}})");
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  EXPECT_EQ(t.request.Get(mig), 1);
  EXPECT_EQ(t.request.Get(sched::kUnoffered), 0);
  EXPECT_TRUE(t.unoffered.empty());
  EXPECT_TRUE(t.request.FitsIn(n.allocatable));
  pod.spec.containers[0].resources.requests["example.com/junk-0"] = core::Quantity::MustParse("1");
  t = ToTaskInfo(pod, &reg, kNames);
  EXPECT_FALSE(t.request.FitsIn(n.allocatable)) << "a resource no node offers fits nowhere";
  EXPECT_EQ(sched::UnofferedText(t.unoffered), "example.com/junk-0, which no node offers");
}

// More extended names than the table holds: the node keeps the first ones, the rest are reported (the process
// logs and counts them), and a pod requesting a dropped one fits no node rather than being placed as if it
// had not asked for it.
TEST(ConvertTest, NodeNamesPastTheTableAreDroppedAndPodsRequestingThemFitNowhere) {
  sched::ResourceRegistry reg;
  auto node = Decode<api::Node>(R"({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "32"}}})");
  constexpr int kExtended = sched::kUnoffered - sched::kFirstScalar;
  for (int i = 0; i < kExtended + 2; ++i)
    node.status.allocatable["example.com/r" + std::to_string(10 + i)] = core::Quantity::MustParse("4");
  std::set<std::string> dropped;
  sched::NodeInfo n = ToNodeInfo(node, &reg, nullptr, &dropped);
  EXPECT_EQ(reg.size(), sched::kFirstScalar + kExtended);
  ASSERT_EQ(dropped.size(), 2u);
  const std::string lost = *dropped.begin();
  EXPECT_FALSE(reg.Find(lost).has_value());
  auto pod = Decode<api::Pod>(R"({"metadata": {"name": "m", "namespace": "ns", "uid": "m"},
    "spec": {"schedulerName": "volcano", "containers": [{"name": "a"}]}})");
  pod.spec.containers[0].resources.requests[lost] = core::Quantity::MustParse("1");
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  EXPECT_EQ(t.unoffered, std::vector<std::string>{lost});
  EXPECT_FALSE(t.request.FitsIn(n.allocatable));
}

// Quantities are tenant input: each is clamped to [0, kMaxQuantity] where it is converted, so the core's sums
// over many pods neither overflow nor wrap to negatives that would fit, and a clamped request fits no real node.
TEST(ConvertTest, HugeAndNegativeQuantitiesAreClamped) {
  sched::ResourceRegistry reg;
  auto node = Decode<api::Node>(R"({"metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "256", "memory": "4Ti", "pods": "110", "nvidia.com/gpu": "8"}}})");
  sched::NodeInfo n = ToNodeInfo(node, &reg);
  auto pod = Decode<api::Pod>(R"({"metadata": {"name": "p", "namespace": "ns", "uid": "p"},
    "spec": {"schedulerName": "volcano", "containers": [{"name": "a", "resources": {"requests": {
      "cpu": "9223372036854775807m", "memory": "8Ei", "nvidia.com/gpu": "-3"}}}]}})");
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  EXPECT_EQ(t.request.Get(sched::kCpu), sched::kMaxQuantity);
  EXPECT_EQ(t.request.Get(sched::kMemory), sched::kMaxQuantity);
  EXPECT_EQ(t.request.Get(*reg.Find("nvidia.com/gpu")), 0) << "a negative request asks for nothing";
  EXPECT_FALSE(t.request.FitsIn(n.allocatable));
  sched::Resource sum;
  for (int i = 0; i < 100'000; ++i) sum += t.request;
  EXPECT_GT(sum.Get(sched::kCpu), 0);
  EXPECT_GT(sum.Get(sched::kMemory), 0);
  EXPECT_LT(sum.Get(sched::kMemory), sched::kUnlimited);
  EXPECT_FALSE(sum.FitsIn(n.allocatable));
  EXPECT_FALSE(t.request.FitsIn(n.allocatable - sum)) << "no wrap-around: what remains is negative, nothing fits";
  // The same ceiling on what a node offers.
  node.status.allocatable["memory"] = core::Quantity::MustParse("8Ei");
  EXPECT_EQ(ToNodeInfo(node, &reg).allocatable.Get(sched::kMemory), sched::kMaxQuantity);
  EXPECT_EQ(ClampQuantity(-5), 0);
  EXPECT_EQ(ClampQuantity(std::numeric_limits<int64_t>::max()), sched::kMaxQuantity);
}

// Aggregates keep the larger ceiling (kMaxAggregateQuantity): a 200-pod gang of 2Ti nodes has a 400Ti
// minimum, and a large cluster's queue a capability of Pi; cut to the pod ceiling (16Ti), enqueue would admit
// such a gang into 16Ti and a queue would be capped at 16Ti. Past 1Pi they are clamped too.
TEST(ConvertTest, GangMinimumsAndQueueQuantitiesKeepTheAggregateCeiling) {
  sched::ResourceRegistry reg;
  ToNodeInfo(Decode<api::Node>(R"({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "256", "memory": "2Ti"}}})"),
             &reg);
  auto pg = Decode<api::PodGroup>(R"({"metadata": {"name": "big", "namespace": "ns", "uid": "pg"},
    "spec": {"minMember": 200, "minResources": {"memory": "400Ti", "cpu": "8Ei"}}})");
  sched::JobInfo j = ToJobInfo(pg, &reg, "default");
  ASSERT_TRUE(j.min_resources.has_value());
  EXPECT_EQ(j.min_resources->Get(sched::kMemory), int64_t{400} << 40);
  EXPECT_EQ(j.min_resources->Get(sched::kCpu), sched::kMaxAggregateQuantity);
  auto q = Decode<api::Queue>(R"({"metadata": {"name": "q"}, "spec": {"weight": 1,
    "capability": {"memory": "2Pi"}, "guarantee": {"resource": {"memory": "100Ti"}}, "deserved": {"memory": "300Ti"}}})");
  sched::QueueInfo qi = ToQueueInfo(q, &reg);
  EXPECT_EQ(qi.capability.Get(sched::kMemory), sched::kMaxAggregateQuantity);
  EXPECT_EQ(qi.guarantee.Get(sched::kMemory), int64_t{100} << 40);
  ASSERT_TRUE(qi.spec_deserved.has_value());
  EXPECT_EQ(qi.spec_deserved->Get(sched::kMemory), int64_t{300} << 40);
}

TEST(ConvertTest, ResourceRoundTripForQueueStatus) {
  sched::ResourceRegistry reg;
  api::ResourceList in = {{"cpu", core::Quantity::MustParse("1500m")},
                          {"memory", core::Quantity::MustParse("3Gi")},
                          {"nvidia.com/gpu", core::Quantity::MustParse("4")}};
  sched::Resource r = ToResource(in, &reg);
  api::ResourceList out = FromResource(r, reg);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.at("cpu").MilliValue(), 1500);
  EXPECT_EQ(out.at("memory").Value(), 3LL << 30);
  EXPECT_EQ(out.at("nvidia.com/gpu").Value(), 4);
}

TEST(ConvertTest, ApplyPodGroupStatusOnlyReportsRealChanges) {
  api::PodGroupStatus st;
  st.phase = "Pending";
  sched::PodGroupStatusUpdate u;
  u.phase = sched::PodGroupPhase::kInqueue;
  u.conditions = {{"Unschedulable", "True", "NotEnoughResources", "3/4 tasks in gang unschedulable", {}}};
  EXPECT_TRUE(ApplyPodGroupStatus(u, "2026-11-22T09:00:00Z", &st));
  EXPECT_EQ(st.phase, "Inqueue");
  ASSERT_EQ(st.conditions.size(), 1u);
  EXPECT_EQ(st.conditions[0].last_transition_time, "2026-11-22T09:00:00Z");
  EXPECT_FALSE(ApplyPodGroupStatus(u, "2026-11-22T09:00:05Z", &st)) << "same decision: no write";
  u.phase = sched::PodGroupPhase::kRunning;
  u.running = 4;
  u.conditions = {{"Scheduled", "True", "tasks in gang are ready to be scheduled", "", {}}};
  EXPECT_TRUE(ApplyPodGroupStatus(u, "2026-11-22T09:00:10Z", &st));
  EXPECT_EQ(st.running, 4);
  ASSERT_EQ(st.conditions.size(), 2u) << "conditions are merged by type";
  EXPECT_EQ(st.conditions[1].type, "Scheduled");
}

// An operator Kubernetes does not define is never read as In: it becomes kInvalid, which matches nothing.
TEST(ConvertTest, UnknownSelectorOperatorIsInvalidNotIn) {
  auto pod = Decode<api::Pod>(R"({
    "metadata": {"name": "w-0", "namespace": "ns", "uid": "u1", "annotations": {"scheduling.k8s.io/group-name": "pg1"}},
    "spec": {"schedulerName": "volcano", "containers": [{"name": "a"}],
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                             {"matchExpressions": [{"key": "zone", "operator": "in", "values": ["a"]}]}]}},
                          "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                             {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Within", "values": ["x"]}]},
                              "topologyKey": "kubernetes.io/hostname"}]}}},
    "status": {"phase": "Pending"}})");
  sched::ResourceRegistry reg;
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  ASSERT_EQ(t.required_affinity.size(), 1u);
  ASSERT_EQ(t.required_affinity[0].match_expressions.size(), 1u);
  EXPECT_EQ(t.required_affinity[0].match_expressions[0].op, sched::SelectorOp::kInvalid) << "operators are case-sensitive";
  EXPECT_FALSE(sched::MatchesRequirement(t.required_affinity[0].match_expressions[0], {{"zone", "a"}}));
  ASSERT_EQ(t.pod_anti_affinity.size(), 1u);
  EXPECT_FALSE(t.pod_anti_affinity[0].Valid());
}

// The typed API affinity maps onto the core's terms and selectors (the same types): node affinity terms
// keep expressions and fields; anti-affinity keeps every term with a selector ({} = every pod) and drops
// null selectors (they select no pod).
TEST(ConvertTest, TypedAffinityMapsToCoreSelectors) {
  auto pod = Decode<api::Pod>(R"({
    "metadata": {"name": "w-0", "namespace": "ns", "uid": "u1", "annotations": {"scheduling.k8s.io/group-name": "pg1"}},
    "spec": {"schedulerName": "volcano", "containers": [{"name": "a"}],
             "affinity": {
               "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                   {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["5"]}],
                    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]},
                   {"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}]},
                 "preferredDuringSchedulingIgnoredDuringExecution": [
                   {"weight": 5, "preference": {"matchExpressions": [{"key": "x", "operator": "Exists"}]}}]},
               "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                   {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"},
                   {"labelSelector": {}, "topologyKey": "kubernetes.io/hostname"},
                   {"topologyKey": "kubernetes.io/hostname"},
                   {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "topology.kubernetes.io/zone"}]}}},
    "status": {"phase": "Pending"}})");
  sched::ResourceRegistry reg;
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  ASSERT_EQ(t.required_affinity.size(), 2u);
  EXPECT_TRUE(t.required_affinity[0].Matches({{"gen", "6"}}, "n2"));
  EXPECT_FALSE(t.required_affinity[0].Matches({{"gen", "6"}}, "n3"));
  EXPECT_FALSE(t.required_affinity[0].Matches({{"gen", "5"}}, "n1"));
  EXPECT_TRUE(t.required_affinity[1].Matches({}, "any"));
  ASSERT_EQ(t.pod_anti_affinity.size(), 3u);
  EXPECT_TRUE(t.pod_anti_affinity[0].selector.Matches({{"app", "db"}}));
  EXPECT_FALSE(t.pod_anti_affinity[0].selector.Matches({{"app", "web"}}));
  EXPECT_TRUE(t.pod_anti_affinity[1].selector.Matches({{"app", "web"}})) << "an empty selector selects every pod";
  EXPECT_EQ(t.pod_anti_affinity[2].topology_key, "topology.kubernetes.io/zone");
  EXPECT_EQ(t.pod_anti_affinity[2].namespaces, (std::vector<std::string>{"ns"})) << "no namespaces: the pod's own";
}

// Required pod affinity terms, resolved as kube-scheduler does for the incoming pod: listed namespaces,
// namespaceSelector {} (every namespace), a namespaceSelector with requirements (not decidable here: the
// pod is refused with a reason), a null selector (selects nothing), matchLabelKeys/mismatchLabelKeys
// folded in from the pod's own labels (a key the pod does not carry is ignored).
TEST(ConvertTest, PodAffinityTermsResolveNamespacesAndLabelKeys) {
  auto pod = Decode<api::Pod>(R"({
    "metadata": {"name": "w-0", "namespace": "ns", "uid": "u1", "labels": {"job": "j1", "rev": "3"},
                 "annotations": {"scheduling.k8s.io/group-name": "pg1"}},
    "spec": {"schedulerName": "volcano", "containers": [{"name": "a"}],
             "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                 {"labelSelector": {"matchLabels": {"role": "ps"}}, "namespaces": ["a", "b"], "topologyKey": "zone",
                  "matchLabelKeys": ["job", "missing"], "mismatchLabelKeys": ["rev"]},
                 {"labelSelector": {}, "namespaceSelector": {}, "topologyKey": "rack"},
                 {"labelSelector": {}, "namespaceSelector": {"matchLabels": {"team": "x"}}, "topologyKey": "rack"},
                 {"topologyKey": "zone"}]}}},
    "status": {"phase": "Pending"}})");
  sched::ResourceRegistry reg;
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  ASSERT_EQ(t.pod_affinity.size(), 4u);
  const auto& first = t.pod_affinity[0];
  EXPECT_EQ(first.namespaces, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(first.topology_key, "zone");
  sched::TaskInfo other;
  other.ns = "b";
  other.labels = {{"role", "ps"}, {"job", "j1"}, {"rev", "2"}};
  EXPECT_TRUE(first.Selects(other));
  other.labels["rev"] = "3";
  EXPECT_FALSE(first.Selects(other)) << "mismatchLabelKeys: the same value is excluded";
  other.labels = {{"role", "ps"}, {"job", "j2"}, {"rev", "2"}};
  EXPECT_FALSE(first.Selects(other)) << "matchLabelKeys: another value is excluded";
  other.labels = {{"role", "ps"}, {"job", "j1"}};
  other.ns = "ns";
  EXPECT_FALSE(first.Selects(other)) << "listed namespaces replace the pod's own";
  EXPECT_TRUE(t.pod_affinity[1].all_namespaces);
  other.ns = "anywhere";
  EXPECT_TRUE(t.pod_affinity[1].Selects(other));
  EXPECT_TRUE(t.pod_affinity[2].unsupported_namespace_selector);
  EXPECT_FALSE(t.pod_affinity[2].Valid());
  EXPECT_TRUE(t.pod_affinity[3].null_selector);
  other.ns = "ns";
  EXPECT_FALSE(t.pod_affinity[3].Selects(other)) << "a null labelSelector selects no pod";
}

// Topology spread: only DoNotSchedule constraints reach the core (ScheduleAnyway only scores); the optional
// fields take kube-scheduler's defaults; matchLabelKeys fold in as In on the pod's own values; no
// labelSelector matches nothing.
TEST(ConvertTest, SpreadConstraintsWithKubeSchedulersDefaults) {
  auto pod = Decode<api::Pod>(R"({
    "metadata": {"name": "w-0", "namespace": "ns", "uid": "u1", "labels": {"app": "web", "rev": "3"}},
    "spec": {"schedulerName": "volcano", "containers": [{"name": "a"}],
             "topologySpreadConstraints": [
               {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["rev", "missing"]},
               {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}}},
               {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 3,
                "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor", "matchLabelKeys": ["rev"]}]},
    "status": {"phase": "Pending"}})");
  sched::ResourceRegistry reg;
  sched::TaskInfo t = ToTaskInfo(pod, &reg, kNames);
  ASSERT_EQ(t.spread.size(), 2u);
  const auto& zone = t.spread[0];
  EXPECT_EQ(zone.max_skew, 2);
  EXPECT_EQ(zone.topology_key, "zone");
  EXPECT_EQ(zone.min_domains, 1);
  EXPECT_TRUE(zone.honor_node_affinity);
  EXPECT_FALSE(zone.honor_node_taints);
  EXPECT_TRUE(zone.Matches({{"app", "web"}, {"rev", "3"}}));
  EXPECT_FALSE(zone.Matches({{"app", "web"}, {"rev", "2"}})) << "matchLabelKeys: another revision is not counted";
  const auto& rack = t.spread[1];
  EXPECT_EQ(rack.topology_key, "rack");
  EXPECT_EQ(rack.min_domains, 3);
  EXPECT_FALSE(rack.honor_node_affinity);
  EXPECT_TRUE(rack.honor_node_taints);
  EXPECT_TRUE(rack.null_selector);
  EXPECT_FALSE(rack.Matches({{"app", "web"}, {"rev", "3"}})) << "no labelSelector: matches nothing";
  ASSERT_EQ(t.soft_spread.size(), 1u) << "ScheduleAnyway constraints are kept apart: they only score";
  EXPECT_EQ(t.soft_spread[0].topology_key, "kubernetes.io/hostname");
  EXPECT_TRUE(t.soft_spread[0].Matches({{"app", "web"}}));
}

// kube-scheduler's DefaultSelector reads the controlling owner only when it is exactly an apps/v1
// ReplicaSet or StatefulSet or a v1 ReplicationController.
TEST(ConvertTest, SpreadControllerIsTheControllingOwnerOfAKnownKind) {
  auto owned_by = [](const char* api_version, const char* kind, bool controller) {
    api::Pod pod;
    pod.metadata.owner_references.push_back({api_version, kind, "o", "uid-o", controller, std::nullopt, {}});
    return SpreadControllerOf(pod);
  };
  EXPECT_EQ(owned_by("apps/v1", "ReplicaSet", true), "ReplicaSet/o");
  EXPECT_EQ(owned_by("apps/v1", "StatefulSet", true), "StatefulSet/o");
  EXPECT_EQ(owned_by("v1", "ReplicationController", true), "ReplicationController/o");
  EXPECT_EQ(owned_by("apps/v1beta2", "ReplicaSet", true), "");
  EXPECT_EQ(owned_by("batch.volcano.sh/v1alpha1", "Job", true), "");
  EXPECT_EQ(owned_by("apps/v1", "ReplicaSet", false), "") << "an owner that is not the controller";
  EXPECT_EQ(SpreadControllerOf(api::Pod{}), "");
}

TEST(ConvertTest, WorkloadSelectorsForTheDefaultSpreadSelector) {
  auto rs = Decode<api::ReplicaSet>(R"({"apiVersion": "apps/v1", "kind": "ReplicaSet",
    "metadata": {"name": "web-1", "namespace": "ns"},
    "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"},
             "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}]}}})");
  EXPECT_EQ(rs.replicas, 0);
  sched::LabelSelector want;
  want.match_labels = {{"app", "web"}};
  want.match_expressions.push_back({"tier", sched::SelectorOp::kIn, {"fe"}});
  EXPECT_EQ(ToSpreadSelector(rs), want);
  auto rc = Decode<api::ReplicationController>(R"({"apiVersion": "v1", "kind": "ReplicationController",
    "metadata": {"name": "web", "namespace": "ns"}, "spec": {"selector": {"app": "web"}}})");
  EXPECT_EQ(rc.replicas, 1) << "the API server's default";
  sched::LabelSelector map;
  map.match_labels = {{"app", "web"}};
  EXPECT_EQ(ToSpreadSelector(rc), map);
  // A selector kube-scheduler could not parse adds nothing; a malformed one never loses the object.
  auto bad = Decode<api::StatefulSet>(R"({"metadata": {"name": "s"},
    "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]}}})");
  EXPECT_EQ(ToSpreadSelector(bad), sched::LabelSelector{});
  auto odd = Decode<api::StatefulSet>(R"({"metadata": {"name": "s"}, "spec": {"replicas": 3, "selector": 7}})");
  EXPECT_EQ(odd.replicas, 3);
  EXPECT_FALSE(odd.selector.has_value());
}

}  // namespace
}  // namespace tephra::scheduler
