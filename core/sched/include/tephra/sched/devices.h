// Device-level placement: which accelerator cards of a node a pod gets (docs/devices.md).
//
// Kubernetes counts `nvidia.com/gpu` and `huawei.com/Ascend910` as plain numbers; the device plugin on the
// node then picks cards itself, blind to the rest of the cluster and to the gang. Tephra instead chooses the
// cards inside the cycle (the Statement records them, so a gang's cards are all-or-nothing like its nodes) and
// tells the device plugin through the annotations it already reads. This header is the pure model and the
// rules: a node's cards (identity, health, topology group, memory and core capacity, who shares them), a pod's
// device request, and ChooseCards, which applies each product's topology rule. ClusterState keeps the usage
// current as tasks move (types.h NodeInfo::devices, TaskInfo::cards).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/core/status.h"

namespace tephra::sched {

enum class DeviceKind : uint8_t { kNone, kNvidiaGpu, kAscend };

// The inter-card topology rule of a node, from its product (Ascend `accelerator-type` label, NVIDIA GFD).
enum class CardTopology : uint8_t {
  kFlat,        // no rule: any free cards (910B 8-card full mesh, GPUs without link data)
  kAscendRing4,  // 910A `module`: 8 cards in HCCS rings {0-3} {4-7}; a pod takes 1, 2 or 4 in one ring, or 8
  kAscendBox16,  // 910B `module-910b-16`: rings {0-7} {8-15}; 1-8 inside one ring, or an even count of
                 // cross-ring pairs (i, i+8); 9, 11, 13 and 15 are refused
  kAscendA3,     // `module-a3-16`: 16 chips in 8 HiAM pairs (2i, 2i+1); 1 or an even count of whole pairs
  kNvLink,       // NVIDIA whole GPUs chosen to maximise the pair link scores (NodeDevices::links)
};
const char* CardTopologyName(CardTopology t);
// The rule for an Ascend `accelerator-type` label value; kFlat for unknown or empty values.
CardTopology AscendTopologyOf(std::string_view accelerator_type);

enum class CardHealth : uint8_t { kHealthy, kUnhealthy, kRecovering };

struct Card {
  std::string id;  // what the device plugin calls it: "Ascend910-3", a GPU UUID, or "GPU-<index>"
  int index = 0;   // physical index on the node (ring membership is by index)
  std::string type = {};  // product as the device plugin registered it ("NVIDIA-A100-SXM4-80GB"); "" = the node's model
  CardHealth health = CardHealth::kHealthy;
  int64_t memory = 0;        // MiB; 0 = unknown (memory requests cannot use it)
  int32_t max_sharers = 0;   // how many pods may share it (vGPU split count); 0 = not shareable
  // ---- maintained by ClusterState from the tasks holding it ----
  int64_t used_memory = 0;   // MiB held by sharing pods
  int32_t used_cores = 0;    // compute held by sharing pods, in thousandths of the card (1000 = all of it)
  int32_t sharers = 0;       // sharing pods on it
  int32_t owners = 0;        // whole-card pods holding it (above 1 only while the API shows a conflict)
  bool Healthy() const { return health == CardHealth::kHealthy; }
  // Free for a whole-card request: healthy, nobody on it.
  bool WholeFree() const { return Healthy() && owners == 0 && sharers == 0; }
  bool operator==(const Card&) const = default;
};

// A node's accelerators. Empty `cards` = the node is not modelled: device requests are then counted as plain
// resources only (the pre-device behaviour), never refused for want of a model.
struct NodeDevices {
  DeviceKind kind = DeviceKind::kNone;
  CardTopology topology = CardTopology::kFlat;
  std::string model;  // GPU product (`nvidia.com/gpu.product`) or Ascend accelerator type
  std::vector<Card> cards;
  // kNvLink: links[i][j] is the score of the pair (cards[i], cards[j]) (go-gpuallocator's scale: 100 per NVLink,
  // 10-60 for PCIe paths). Empty = no link data: the topology behaves as kFlat.
  std::vector<std::vector<int32_t>> links;
  bool operator==(const NodeDevices&) const = default;
  int FindCard(std::string_view id) const;  // position in `cards`, or -1
  int HealthyCount() const;
  int WholeFreeCount() const;
};

// What a pod asks beyond counts, rare enough to live behind one pointer (most pods carry none): which cards
// it accepts, and how its shared cards are split among its containers.
struct DeviceDetail {
  // Product filters, matched case-insensitively as substrings of a card's type (or the node's GPU model when
  // its cards are not modelled): `use_types` non-empty = one of them must match; else none of `nouse_types`.
  // From `nvidia.com/use-gputype` / `nvidia.com/nouse-gputype`.
  std::vector<std::string> use_types, nouse_types;
  // Card id filters (`volcano.sh/vgpu-use-gpuuuid` / `vgpu-nouse-gpuuuid`): exact ids.
  std::vector<std::string> use_ids, nouse_ids;
  // Shared cards per requesting container, in container order (sums to DeviceRequest::shared); empty = one
  // container asks for them all.
  std::vector<int32_t> per_container;
  bool HasFilter() const { return !use_types.empty() || !nouse_types.empty() || !use_ids.empty() || !nouse_ids.empty(); }
  // Whether a card of this type and id passes the filters.
  bool Allows(std::string_view type, std::string_view id) const;
  // Whether a node whose cards are not modelled passes the type filters on its GPU model ("" = unknown:
  // passes only when no `use_types` are asked for).
  bool AllowsModel(std::string_view model) const;
  bool operator==(const DeviceDetail&) const = default;
};

// What a pod asks of a node's cards. Whole cards (nvidia.com/gpu, huawei.com/Ascend910) and shared cards
// (volcano.sh/vgpu-number with vgpu-memory / vgpu-cores) are exclusive of each other in one pod.
struct DeviceRequest {
  DeviceKind kind = DeviceKind::kNone;
  int32_t whole = 0;   // whole cards
  int32_t shared = 0;  // shared cards (each on a distinct card)
  int64_t memory = 0;  // MiB on each shared card
  int32_t memory_percent = 0;  // percent of each shared card's memory (0 = unset); see MemoryOn
  int32_t cores = 0;   // thousandths of each shared card's compute (volcano.sh/vgpu-cores percent x 10)
  std::shared_ptr<const DeviceDetail> detail = {};  // null = no filters, one container
  bool empty() const { return whole == 0 && shared == 0; }
  // MiB one share of this request takes on card `c`.
  // (A pod whose containers ask one by MiB and one by percentage takes the larger on each card.)
  int64_t MemoryOn(const Card& c) const {
    return memory_percent > 0 ? std::max(memory, c.memory * memory_percent / 100) : memory;
  }
  bool Allows(const NodeDevices& node, const Card& c) const {
    return !detail || detail->Allows(c.type.empty() ? std::string_view(node.model) : std::string_view(c.type), c.id);
  }
  bool operator==(const DeviceRequest& o) const {
    return kind == o.kind && whole == o.whole && shared == o.shared && memory == o.memory &&
           memory_percent == o.memory_percent && cores == o.cores &&
           (detail == o.detail || (detail && o.detail && *detail == *o.detail));
  }
};

enum class SharePolicy : uint8_t { kBinpack, kSpread };

// The cards of `node` that `req` gets, as positions in node.cards, or FailedPrecondition with a reason a user
// can act on ("module-910b-16 takes 9 cards only as ... "). Unhealthy and recovering cards are never chosen.
// Whole cards follow the node's topology rule and prefer the choice that keeps the most whole rings (pairs,
// islands) free; shared cards go to the fullest card that fits (binpack) or the emptiest (spread).
core::StatusOr<std::vector<int>> ChooseCards(const NodeDevices& node, const DeviceRequest& req,
                                             SharePolicy policy = SharePolicy::kBinpack);
// Whether one share of `req` fits card `c`: healthy, no whole-card owner, below its sharer limit, with the
// memory and compute left; a request for all of a card's compute only on a card nobody shares yet, and a
// request for no compute never on a card whose compute is all taken (the vGPU device plugin's rules). The
// product and id filters are the caller's (DeviceRequest::Allows).
bool ShareFits(const Card& c, const DeviceRequest& req);
// Whether some placement exists (ChooseCards without building the answer's message on the fast path).
bool CardsFit(const NodeDevices& node, const DeviceRequest& req);
// The count rule alone, independent of which cards are free: InvalidArgument naming the rule when no node
// of this topology can ever give `count` whole cards to one pod (so a 9-card pod on Box16 says why at once).
core::Status CheckWholeCount(CardTopology topology, int node_cards, int32_t count);

// Applies (sign +1) or releases (sign -1) a task's hold on the cards `ids` of `node`. Unknown ids are skipped
// (a card that left the node's report keeps no usage).
void HoldCards(NodeDevices& node, const DeviceRequest& req, const std::vector<std::string>& ids, int sign);

}  // namespace tephra::sched
