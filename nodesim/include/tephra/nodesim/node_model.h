// What a simulated kubelet says about its node: the Node object at registration, its status (Ready
// condition, capacity/allocatable, addresses, nodeInfo), its Lease, and the fault annotations that bend
// them. Pure functions of their inputs, so tests pin every field.
//
// Fault annotations on the Node (set and cleared with `kubectl annotate node ...`):
//   tephra.io/sim-fail=true          Ready=False and the Lease is no longer renewed; pods are left as they are.
//   tephra.io/sim-unhealthy-gpus=N   allocatable nvidia.com/gpu = capacity - N (at least 0).
//   tephra.io/sim-conditions=GpuXidError,NetworkUnavailable   these node conditions are reported True, as
//                                    node-problem-detector or NVSentinel would set them.
//   huawei.com/Ascend910-Unhealthy=Ascend910-3,...   (the Ascend device plugin's own report) allocatable
//                                    huawei.com/Ascend910 = capacity - the cards listed.
// Removing an annotation heals the node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tephra/api/devices.h"
#include "tephra/core/clock.h"
#include "tephra/nodesim/config.h"

namespace tephra::nodesim {

using json = nlohmann::json;

inline constexpr const char* kFailAnnotation = "tephra.io/sim-fail";
inline constexpr const char* kUnhealthyGpusAnnotation = "tephra.io/sim-unhealthy-gpus";
inline constexpr const char* kConditionsAnnotation = "tephra.io/sim-conditions";
inline constexpr const char* kLeaseNamespace = "kube-node-lease";

// Fake addresses: node i has InternalIP 10.0.0.0/10 + i + 1 and pod CIDR 10.64.0.0/10 + i*256 (/24 each),
// enough for 4 million nodes / 16,384 nodes' worth of distinct /24s respectively (documented limits).
std::string NodeInternalIp(int index);
std::string PodCidr(int index);
// The k-th pod address on node `index` (k wraps within the /24, skipping .0, .1 and .255).
std::string PodIp(int index, uint32_t k);

struct NodeFaults {
  bool fail = false;
  int unhealthy_gpus = 0;
  int unhealthy_npus = 0;
  std::vector<std::string> conditions;  // extra node conditions reported True
  std::string problem;  // an unreadable annotation value, for the log ("" when fine)
  // When these faults began (the conditions' lastTransitionTime); zero = at registration. Not compared: a
  // fault is the same fault whenever it is read again.
  core::Clock::WallTime since{};
  friend bool operator==(const NodeFaults& a, const NodeFaults& b) {
    return a.fail == b.fail && a.unhealthy_gpus == b.unhealthy_gpus && a.unhealthy_npus == b.unhealthy_npus &&
           a.conditions == b.conditions;
  }
};
// Reads the fault annotations from a Node object's metadata.annotations.
NodeFaults ReadFaults(const json& node);

// The status the simulated kubelet reports: capacity, allocatable (minus unhealthy GPUs), conditions
// (Ready plus the pressure conditions a kubelet reports as False), addresses, nodeInfo, heartbeat `now`.
json BuildNodeStatus(const NodeSpec& n, const NodeFaults& f, core::Clock::WallTime now);
// The cards a vGPU node registers (volcano.sh/node-vgpu-register): "GPU-<node>-<i>", empty without vgpu.
std::vector<api::VgpuCard> VgpuCards(const NodeSpec& n);
// metadata.annotations at registration (the vGPU registration among them).
json NodeAnnotations(const NodeSpec& n);
// The whole Node object for registration (spec.taints, podCIDR, labels, status).
json BuildNode(const NodeSpec& n, const NodeFaults& f, core::Clock::WallTime now);
// The node's Lease in kube-node-lease, owned by the Node (so the garbage collector removes it with the node).
json BuildLease(const std::string& node, const std::string& node_uid, int duration_seconds,
                core::Clock::WallTime now);

}  // namespace tephra::nodesim
