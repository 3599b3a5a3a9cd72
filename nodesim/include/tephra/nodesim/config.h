// Which nodes the simulator registers: node groups from command-line flags or a YAML file.
//
// A node group is `count` identical nodes named <namePrefix><i> (i from 0), with one capacity (which is
// also the allocatable: simulated nodes reserve nothing for system daemons), labels, taints and an optional
// two-level network topology (leaf switches grouped under spine switches) written as node labels.
//
// YAML (`--config nodes.yaml`):
//   nodes:
//   - namePrefix: gpu-            # default "tephra-sim-"; must differ between groups
//     count: 64
//     capacity: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
//     labels: {pool: a100}
//     taints: ["dedicated=gpu:NoSchedule", {key: k, value: v, effect: NoExecute}]
//     topology: {nodesPerLeaf: 8, leavesPerSpine: 4}
// Errors name the field and the value: `nodes[1].capacity.cpu: quantity "abc": ...`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tephra/core/quantity.h"
#include "tephra/core/status.h"

namespace tephra::nodesim {

// Labels written on every simulated node (documented in docs/nodesim.md).
inline constexpr const char* kSimLabel = "tephra.io/nodesim";         // "true": created by nodesim
inline constexpr const char* kLeafLabel = "tephra.io/leaf";           // leaf switch name
inline constexpr const char* kSpineLabel = "tephra.io/spine";         // spine switch name
inline constexpr const char* kGpuResource = "nvidia.com/gpu";
inline constexpr const char* kNpuResource = "huawei.com/Ascend910";

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
  friend bool operator==(const Taint&, const Taint&) = default;
};

struct NodeGroup {
  std::string name_prefix = "tephra-sim-";
  int count = 0;
  std::map<std::string, core::Quantity> capacity;  // resource name -> amount (capacity == allocatable)
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  int nodes_per_leaf = 0;    // 0: no topology labels
  int leaves_per_spine = 0;  // 0: leaf labels only
  // Volcano's vGPU device plugin (docs/devices.md): with split > 0, each nvidia.com/gpu card is registered in
  // volcano.sh/node-vgpu-register for up to `split` pods sharing `vgpu_memory_mib` MiB, and the node advertises
  // volcano.sh/vgpu-number, -memory and -cores. YAML: `vgpu: {split: 10, memoryMiB: 16384}`.
  int vgpu_split = 0;
  int64_t vgpu_memory_mib = 0;
  // GPU Feature Discovery and the NVIDIA device plugin's MIG strategies (docs/devices.md). A product adds the
  // GFD labels nvidia.com/gpu.product and gpu.count. With MIG, each GPU is cut into `mig_profiles` (profile ->
  // slices per GPU, at most 7 compute slices per GPU): `mixed` advertises nvidia.com/mig-<profile> instead of
  // nvidia.com/gpu; `single` (one profile) advertises the slices as nvidia.com/gpu and suffixes the product
  // label with -MIG-<profile>. YAML: `gpu: {product: A100-SXM4-80GB, mig: {strategy: mixed, profiles:
  // {1g.10gb: 7}}}`.
  std::string gpu_product;
  std::string mig_strategy;  // "" (none), "single" or "mixed"
  std::map<std::string, int> mig_profiles;
};

struct SimConfig {
  std::vector<NodeGroup> groups;
};

// The command-line form: one group. Strings are kept as typed so errors can quote them.
struct FlagValues {
  int nodes = 0;
  std::string name_prefix = "tephra-sim-";
  std::string cpu = "32";
  std::string memory = "256Gi";
  std::string pods = "110";
  std::string ephemeral_storage = "1Ti";
  int gpus = 8;
  int npus = 0;
  std::string labels;  // k=v,k2=v2
  std::string taints;  // k=v:Effect,k2:Effect
  int nodes_per_leaf = 0;
  int leaves_per_spine = 0;
  int vgpu_split = 0;
  int64_t vgpu_memory_mib = 16384;
  std::string gpu_product;
  std::string mig_strategy;
  std::string mig_profiles;  // 1g.10gb=7,2g.20gb=1
};

core::StatusOr<NodeGroup> GroupFromFlags(const FlagValues& f);

// Parses the YAML document described above. `source` names the file in errors.
core::StatusOr<SimConfig> ParseConfigYaml(const std::string& text, const std::string& source = "config");

// "k=v,k2=v2" -> map. Errors: `"k" is not key=value`.
core::StatusOr<std::map<std::string, std::string>> ParseLabelList(const std::string& text);
// "k=v:NoSchedule" or "k:NoExecute". Errors: `"k=v" has no effect (want key=value:NoSchedule|...)`.
core::StatusOr<Taint> ParseTaint(const std::string& text);
core::StatusOr<std::vector<Taint>> ParseTaintList(const std::string& text);

// One concrete node to register.
struct NodeSpec {
  std::string name;
  int index = 0;  // position over all groups; fixes the node's fake addresses
  const NodeGroup* group = nullptr;
  std::map<std::string, std::string> labels;  // group labels + topology + hostname + kSimLabel
};

// Expands groups into nodes. Fails when two groups would produce the same node name.
core::StatusOr<std::vector<NodeSpec>> ExpandNodes(const SimConfig& cfg);

}  // namespace tephra::nodesim
