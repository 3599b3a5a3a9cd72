// The simulated device plugins: what a node's Ascend or vGPU device plugin would do with a pod bound to it. The
// scheduler names the cards in the pod's annotations (`huawei.com/Ascend910`, `volcano.sh/vgpu-ids-new`); a real
// plugin mounts exactly those, and the kubelet fails the pod (reason UnexpectedAdmissionError) when the plugin
// cannot. nodesim refuses a pod whose cards are missing, of the wrong count, not on the node, unhealthy, held by
// another pod of the node (shared cards: past their memory, compute or sharer count), or against the node's
// HCCS ring rule, so the e2e tests prove the scheduler's choice is one a device plugin could honour.
//
// A card that goes bad under a running pod fails it, as a CUDA or CANN error fails the process using the
// card (DeviceFailure): Ascend cards the node lists unhealthy, vGPU cards its register marks unhealthy, and
// for plain nvidia.com/gpu the last `unhealthy_gpus` cards of the node, the pods holding cards in start order.
//
// The ring rules are written here from the products' documentation, independently of the scheduler's card
// choice (core/sched devices.cc), so a bug there is not mirrored here.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tephra/api/devices.h"

namespace tephra::nodesim {

using json = nlohmann::json;

// What the device plugin knows about its node.
struct NodeCards {
  std::string accelerator_type = {};  // node label accelerator-type
  int npus = 0;                  // capacity huawei.com/Ascend910: cards Ascend910-0 .. npus-1
  std::set<std::string> unhealthy = {};  // the node's huawei.com/Ascend910-Unhealthy annotation
  std::vector<api::VgpuCard> vgpus = {};  // the node's volcano.sh/node-vgpu-register annotation
  int64_t gpus = 0;                       // capacity nvidia.com/gpu
  int64_t unhealthy_gpus = 0;             // tephra.io/sim-unhealthy-gpus: the last cards are the bad ones
};
// From the Node object (labels, annotations) and the group's configured NPU count.
NodeCards ReadNodeCards(const json& node, int npus);

// What a pod asks and was given.
struct PodCards {
  int64_t requested = 0;            // huawei.com/Ascend910 over the containers (limits, else requests)
  std::vector<std::string> assigned = {};  // the pod's huawei.com/Ascend910 annotation
  bool annotated = false;           // the annotation is present
  // Volcano vGPU: volcano.sh/vgpu-number / -memory / -cores over the containers, and volcano.sh/vgpu-ids-new.
  int64_t vgpu_number = 0, vgpu_memory = 0, vgpu_cores = 0;
  std::vector<api::VgpuAssignment> vgpu = {};
  // Per container that asks for vGPUs, in order: its count, memory (MiB, 0 = by percentage) and memory
  // percentage (0 = by MiB); and the annotation's non-empty container entries, in order.
  struct VgpuAsk {
    int64_t number = 0, memory = 0, percent = 0;
  };
  std::vector<VgpuAsk> vgpu_asks = {};
  std::vector<std::vector<api::VgpuAssignment>> vgpu_containers = {};
  bool vgpu_annotated = false;
  int64_t gpus = 0;  // nvidia.com/gpu over the containers (limits, else requests)
  bool Asks() const { return requested > 0 || vgpu_number > 0 || gpus > 0; }
};
PodCards ReadPodCards(const json& pod);

// "" when the plugins can mount the pod's cards; else why not, in a kubelet-like sentence. `others`: the
// pods the plugins admitted on the node before (their cards are held).
std::string AdmitCards(const NodeCards& node, const PodCards& pod, const std::vector<const PodCards*>& others);

// "" while the cards a running pod holds are healthy; else the device error its workload meets.
// `gpu_offset`: the first of the node's nvidia.com/gpu cards the pod holds (the GPUs held by the node's pods
// that started before it).
std::string DeviceFailure(const NodeCards& node, const PodCards& pod, int64_t gpu_offset);

}  // namespace tephra::nodesim
