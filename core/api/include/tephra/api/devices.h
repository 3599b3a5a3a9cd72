// The device plugins' protocols, as annotations and resource names (docs/devices.md): how a node says which
// accelerator cards it has and which are healthy, and how the scheduler tells the node's device plugin which
// cards a pod gets. Pure encode/decode, shared by the scheduler (which writes the choice), nodesim (which
// plays the device plugin's part and checks it) and the tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tephra::api {

// ---- Huawei Ascend (MindCluster's device plugin and its Volcano plugin) ----
inline constexpr std::string_view kAscend910Resource = "huawei.com/Ascend910";
// Node label naming the product, which decides the HCCS ring rule ("module", "module-910b-16", ...).
inline constexpr std::string_view kAcceleratorTypeLabel = "accelerator-type";
// Pod annotation the scheduler writes with the chosen cards, "Ascend910-0,Ascend910-1" (same key as the
// resource), and the time it chose them: the device plugin serves the pending pod with the oldest time.
inline constexpr std::string_view kAscendPredicateTimeAnnotation = "predicate-time";
// Card health, as the device plugin reports it: keys of the DeviceList in the `mindx-dl-deviceinfo-<node>`
// ConfigMap (data key DeviceInfoCfg), and, on older installations, node annotations of the same names.
inline constexpr std::string_view kAscendUnhealthyKey = "huawei.com/Ascend910-Unhealthy";
inline constexpr std::string_view kAscendNetworkUnhealthyKey = "huawei.com/Ascend910-NetworkUnhealthy";
inline constexpr std::string_view kAscendRecoveringKey = "huawei.com/Ascend910-Recovering";
inline constexpr std::string_view kAscendDeviceInfoPrefix = "mindx-dl-deviceinfo-";
inline constexpr std::string_view kAscendDeviceInfoKey = "DeviceInfoCfg";
inline constexpr std::string_view kAscendCardPrefix = "Ascend910-";

// A card list "Ascend910-0,Ascend910-3" (empty items dropped; whitespace trimmed).
std::vector<std::string> SplitCardList(std::string_view list);
std::string JoinCardList(const std::vector<std::string>& cards);
// The physical index of "Ascend910-3" (3), or nullopt for anything else.
std::optional<int> AscendCardIndex(std::string_view id);

// What a node's Ascend device plugin reports: the card lists per health state.
struct AscendDeviceInfo {
  std::vector<std::string> unhealthy, network_unhealthy, recovering;
};
// Parses the DeviceInfoCfg JSON ({"DeviceInfo": {"DeviceList": {...}, "UpdateTime": ...}, "CheckCode": ...});
// nullopt when it is not that shape.
std::optional<AscendDeviceInfo> ParseAscendDeviceInfo(std::string_view device_info_cfg);

// ---- Volcano vGPU (HAMi-core) ----
inline constexpr std::string_view kVgpuNumberResource = "volcano.sh/vgpu-number";
inline constexpr std::string_view kVgpuMemoryResource = "volcano.sh/vgpu-memory";  // MiB per card
inline constexpr std::string_view kVgpuMemoryPercentageResource = "volcano.sh/vgpu-memory-percentage";
inline constexpr std::string_view kVgpuCoresResource = "volcano.sh/vgpu-cores";  // percent per card
// Node annotation the vGPU device plugin registers its cards with.
inline constexpr std::string_view kVgpuRegisterAnnotation = "volcano.sh/node-vgpu-register";
// Node annotation listing unhealthy GPU indices ("0,3").
inline constexpr std::string_view kGpuUnhealthyIdsAnnotation = "volcano.sh/gpu-unhealthy-ids";
// Pod annotations the scheduler writes for the vGPU device plugin.
inline constexpr std::string_view kVgpuIdsAnnotation = "volcano.sh/vgpu-ids-new";
inline constexpr std::string_view kVgpuToAllocateAnnotation = "volcano.sh/devices-to-allocate";
inline constexpr std::string_view kVgpuNodeAnnotation = "volcano.sh/vgpu-node";
inline constexpr std::string_view kVgpuTimeAnnotation = "volcano.sh/vgpu-time";
inline constexpr std::string_view kVgpuBindTimeAnnotation = "volcano.sh/bind-time";
inline constexpr std::string_view kVgpuBindPhaseAnnotation = "volcano.sh/bind-phase";

// One registered GPU: "UUID,split,memMiB,type,healthy,mode" in the register annotation (entries joined by ':').
struct VgpuCard {
  std::string uuid;
  int32_t split = 0;    // how many pods may share it
  int64_t memory = 0;   // MiB
  std::string type;     // e.g. "NVIDIA-Tesla V100"
  bool healthy = true;
  std::string mode;     // "hami-core" or "mig"
  bool operator==(const VgpuCard&) const = default;
};
// Entries with fewer than six fields are skipped; `errors` counts them.
std::vector<VgpuCard> ParseVgpuRegister(std::string_view annotation, int* errors = nullptr);
std::string EncodeVgpuRegister(const std::vector<VgpuCard>& cards);

// One card given to a container: "UUID,NVIDIA,memMiB,cores:" in vgpu-ids-new; containers joined by ';'.
struct VgpuAssignment {
  std::string uuid;
  int64_t memory = 0;
  int32_t cores = 0;  // percent
  bool operator==(const VgpuAssignment&) const = default;
};
std::string EncodeVgpuIds(const std::vector<std::vector<VgpuAssignment>>& per_container);
std::vector<std::vector<VgpuAssignment>> DecodeVgpuIds(std::string_view annotation);

// Pod annotations that restrict which GPUs a vGPU (or counted GPU) request accepts: product substrings,
// case-insensitive, comma-separated ("A100,H100"); and exact card UUIDs.
inline constexpr std::string_view kGpuUseTypeAnnotation = "nvidia.com/use-gputype";
inline constexpr std::string_view kGpuNoUseTypeAnnotation = "nvidia.com/nouse-gputype";
inline constexpr std::string_view kVgpuUseUuidAnnotation = "volcano.sh/vgpu-use-gpuuuid";
inline constexpr std::string_view kVgpuNoUseUuidAnnotation = "volcano.sh/vgpu-nouse-gpuuuid";

// ---- NVIDIA device plugin and GPU Feature Discovery ----
inline constexpr std::string_view kNvidiaGpuResource = "nvidia.com/gpu";
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";  // "A100-SXM4-80GB"
inline constexpr std::string_view kGpuCountLabel = "nvidia.com/gpu.count";
inline constexpr std::string_view kGpuMemoryLabel = "nvidia.com/gpu.memory";      // MiB
inline constexpr std::string_view kMigCapableLabel = "nvidia.com/mig.capable";    // "true"
inline constexpr std::string_view kMigStrategyLabel = "nvidia.com/mig.strategy";  // none | single | mixed
inline constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

// A MIG profile, "<slices>g.<memory>gb" with an optional "+<extension>" ("1g.10gb", "1g.10gb+me").
// Under the `mixed` strategy each profile is its own resource, nvidia.com/mig-1g.10gb; under `single` the
// slices are advertised as nvidia.com/gpu and GFD appends "-MIG-1g.10gb" to the product label.
struct MigProfile {
  int32_t slices = 0;     // compute slices (GPCs), 1-7
  int32_t memory_gb = 0;  // memory in GB
  std::string extension = {};  // "me" in "1g.10gb+me"; usually empty
  std::string Name() const;          // "1g.10gb"
  std::string ResourceName() const;  // "nvidia.com/mig-1g.10gb"
  bool operator==(const MigProfile&) const = default;
};
std::optional<MigProfile> ParseMigProfile(std::string_view name);
// The profile a mixed-strategy resource name stands for; nullopt for any other name.
std::optional<MigProfile> MigProfileOfResource(std::string_view resource);
// The profile a single-strategy node's product label carries ("A100-SXM4-40GB-MIG-1g.5gb"); nullopt when
// the product is a whole GPU.
std::optional<MigProfile> MigProfileOfProduct(std::string_view product);

// A comma-separated list of annotation values, trimmed, empty items dropped (same rule as SplitCardList).
inline std::vector<std::string> SplitAnnotationList(std::string_view list) { return SplitCardList(list); }

}  // namespace tephra::api
