// The scheduler's state gauges (docs/metrics.md): values from a small cluster after a cycle, and series of
// things that are gone removed on the next export.
#include "tephra/scheduler/state_metrics.h"

#include <gtest/gtest.h>

#include "unit/sched/fixture.h"

namespace tephra::scheduler {
namespace {

using sched::testing::Cluster;
using sched::testing::kGi;

bool Has(const std::string& text, const std::string& line) { return text.find("\n" + line + "\n") != std::string::npos; }

TEST(StateMetrics, QueuesNodesHyperNodesJobsAndPositions) {
  Cluster c;
  kube::metrics::Registry reg;
  StateMetrics m(reg);
  c.Node("n1", 8000, 32 * kGi, 4, {{"leaf", "a"}});
  c.Node("n2", 8000, 32 * kGi, 4, {{"leaf", "a"}});
  sched::HyperNodeInfo leaf;
  leaf.name = "leaf-a";
  leaf.tier = 1;
  sched::HyperNodeMember member;
  member.kind = sched::MemberSelectorKind::kLabel;
  member.label_selector.match_labels = {{"leaf", "a"}};
  leaf.members.push_back(member);
  c.st().UpsertHyperNode(leaf);
  c.Queue("default");
  c.Queue("research", 2, sched::Resource::CpuMem(12000, 64 * kGi));
  // A gang of two that fits (2 GPUs each), and one of three that cannot (4 GPUs each on two 4-GPU nodes).
  c.Gang("train", 2, sched::Resource::CpuMem(1000, kGi).With(c.gpu(), 2), "research");
  c.Gang("huge", 3, sched::Resource::CpuMem(1000, kGi).With(c.gpu(), 4));
  c.Run();
  m.Export(c.s());
  const std::string out = "\n" + reg.Expose();

  EXPECT_TRUE(Has(out, R"(volcano_queue_allocated_milli_cpu{queue_name="research"} 2000)")) << out;
  EXPECT_TRUE(Has(out, R"(volcano_queue_allocated_scalar_resources{queue_name="research",resource="nvidia.com/gpu"} 4)"));
  EXPECT_TRUE(Has(out, R"(volcano_queue_capacity_milli_cpu{queue_name="research"} 12000)"));
  // No capability: unlimited, no series.
  EXPECT_EQ(out.find(R"(volcano_queue_capacity_milli_cpu{queue_name="default"})"), std::string::npos);
  // Real capacity: the cluster (16 cpu) capped by the capability (12).
  EXPECT_TRUE(Has(out, R"(volcano_queue_real_capacity_milli_cpu{queue_name="research"} 12000)"));
  EXPECT_TRUE(Has(out, R"(volcano_queue_real_capacity_milli_cpu{queue_name="default"} 16000)"));
  EXPECT_TRUE(Has(out, R"(volcano_queue_weight{queue_name="research"} 2)"));
  EXPECT_TRUE(Has(out, R"(volcano_queue_request_scalar_resources{queue_name="default",resource="nvidia.com/gpu"} 12)"));
  // The proportion plugin's deserved share exists for both queues, and the share is allocated over it.
  EXPECT_NE(out.find(R"(volcano_queue_deserved_milli_cpu{queue_name="research"})"), std::string::npos);
  EXPECT_NE(out.find(R"(volcano_queue_share{queue_name="research"})"), std::string::npos);
  // The running gang holds half the cluster's GPUs: its dominant share.
  EXPECT_TRUE(Has(out, R"(volcano_job_share{job_ns="ns",job_id="train"} 0.5)"));
  EXPECT_TRUE(Has(out, R"(volcano_namespace_share{namespace_name="ns"} 0.5)"));
  EXPECT_TRUE(Has(out, R"(volcano_unschedule_task_count{job_id="huge"} 3)"));
  EXPECT_TRUE(Has(out, R"(tephra_job_queue_position{namespace="ns",podgroup="huge",queue="default"} 1)"));
  EXPECT_TRUE(Has(out, R"(tephra_node_resource_allocatable{node="n1",resource="nvidia.com/gpu"} 4)"));
  EXPECT_TRUE(Has(out, R"(tephra_hypernode_resource_allocatable{hypernode="leaf-a",tier="1",resource="nvidia.com/gpu"} 8)"));
  EXPECT_TRUE(Has(out, R"(tephra_hypernode_resource_allocated{hypernode="leaf-a",tier="1",resource="nvidia.com/gpu"} 4)"));
  int gpus_used = 0;
  for (const char* n : {"n1", "n2"})
    for (int g = 0; g <= 4; ++g)
      if (Has(out, std::string("tephra_node_resource_allocated{node=\"") + n + "\",resource=\"nvidia.com/gpu\"} " +
                       std::to_string(g)))
        gpus_used += g;
  EXPECT_EQ(gpus_used, 4);

  // Gone: a node, a queue and a job take their series with them.
  c.st().RemoveNode("n2");
  c.st().RemoveJob("ns/huge");
  c.st().RemoveQueue("research");
  m.Export(c.s());
  const std::string after = reg.Expose();
  EXPECT_EQ(after.find(R"(node="n2")"), std::string::npos);
  EXPECT_EQ(after.find(R"(job_id="huge")"), std::string::npos);
  EXPECT_EQ(after.find(R"(queue_name="research")"), std::string::npos);
  EXPECT_NE(after.find(R"(node="n1")"), std::string::npos);
}

TEST(StateMetrics, SharedCardsPerCardAndPerPod) {
  Cluster c;
  kube::metrics::Registry reg;
  StateMetrics m(reg);
  sched::NodeInfo& n = c.Node("v1", 8000, 32 * kGi, 1);
  sched::NodeInfo node = n;
  node.devices.kind = sched::DeviceKind::kNvidiaGpu;
  sched::Card card;
  card.id = "GPU-aaaa";
  card.memory = 16384;
  card.max_sharers = 4;
  node.devices.cards = {card};
  c.st().UpsertNode(node);
  c.Queue("default");
  sched::JobInfo j = c.Job("share", 1);
  c.AddJob(j);
  sched::TaskInfo t = c.Pod(j, 0, sched::Resource::CpuMem(1000, kGi));
  t.devices.kind = sched::DeviceKind::kNvidiaGpu;
  t.devices.shared = 1;
  t.devices.memory = 2048;
  t.devices.cores = 250;
  t.status = sched::TaskStatus::kRunning;
  t.node = "v1";
  t.cards = {"GPU-aaaa"};
  c.st().UpsertPod(t);
  m.Export(c.s());
  const std::string out = "\n" + reg.Expose();
  EXPECT_TRUE(Has(out, R"(volcano_vgpu_device_shared_number{devID="GPU-aaaa",NodeName="v1"} 1)")) << out;
  EXPECT_TRUE(Has(out, R"(volcano_vgpu_device_allocated_memory{devID="GPU-aaaa",NodeName="v1"} 2048)"));
  EXPECT_TRUE(Has(out, R"(volcano_vgpu_device_allocated_cores{devID="GPU-aaaa",NodeName="v1"} 25)"));
  EXPECT_TRUE(Has(out, R"(volcano_vgpu_device_memory_limit{devID="GPU-aaaa",NodeName="v1"} 16384)"));
  EXPECT_TRUE(Has(out, R"(volcano_vgpu_device_memory_allocation_for_a_certain_pod{devID="GPU-aaaa",NodeName="v1",podName="share-0"} 2048)"));
  EXPECT_TRUE(Has(out, R"(volcano_vgpu_device_core_allocation_for_a_certain_pod{devID="GPU-aaaa",NodeName="v1",podName="share-0"} 25)"));
}

}  // namespace
}  // namespace tephra::scheduler
