#include "tephra/sched/devices.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <tuple>

namespace tephra::sched {

using core::Status;
using core::StatusCode;

const char* CardTopologyName(CardTopology t) {
  switch (t) {
    case CardTopology::kFlat: return "flat";
    case CardTopology::kAscendRing4: return "module";
    case CardTopology::kAscendBox16: return "module-910b-16";
    case CardTopology::kAscendA3: return "module-a3-16";
    case CardTopology::kNvLink: return "nvlink";
  }
  return "flat";
}

CardTopology AscendTopologyOf(std::string_view accelerator_type) {
  if (accelerator_type == "module") return CardTopology::kAscendRing4;
  if (accelerator_type == "module-910b-16") return CardTopology::kAscendBox16;
  if (accelerator_type == "module-a3-16") return CardTopology::kAscendA3;
  return CardTopology::kFlat;  // module-910b-8 is a full mesh; unknown products get no ring rule
}

int NodeDevices::FindCard(std::string_view id) const {
  for (size_t i = 0; i < cards.size(); ++i)
    if (cards[i].id == id) return static_cast<int>(i);
  return -1;
}
int NodeDevices::HealthyCount() const {
  return static_cast<int>(std::count_if(cards.begin(), cards.end(), [](const Card& c) { return c.Healthy(); }));
}
int NodeDevices::WholeFreeCount() const {
  return static_cast<int>(std::count_if(cards.begin(), cards.end(), [](const Card& c) { return c.WholeFree(); }));
}

Status CheckWholeCount(CardTopology topology, int node_cards, int32_t count) {
  if (count <= 0) return Status::OK();
  switch (topology) {
    case CardTopology::kAscendRing4:
      if (count == 1 || count == 2 || count == 4 || count == node_cards) return Status::OK();
      return Status(StatusCode::kInvalidArgument,
                    "accelerator-type module gives a pod 1, 2 or 4 cards inside one HCCS ring of 4, or all " +
                        std::to_string(node_cards) + " cards of the node; " + std::to_string(count) +
                        " is none of these (split the job into pods of 8 for more)");
    case CardTopology::kAscendBox16:
      if (count <= 8 || (count % 2 == 0 && count <= node_cards)) return Status::OK();
      return Status(StatusCode::kInvalidArgument,
                    "accelerator-type module-910b-16 gives a pod 1-8 cards inside one HCCS ring of 8, or an even "
                    "count up to " + std::to_string(node_cards) + " as cross-ring pairs; " + std::to_string(count) +
                        " cards cannot be placed");
    case CardTopology::kAscendA3:
      if (count == 1 || (count % 2 == 0 && count <= node_cards)) return Status::OK();
      return Status(StatusCode::kInvalidArgument,
                    "accelerator-type module-a3-16 gives a pod 1 card or an even count up to " +
                        std::to_string(node_cards) + " as whole HiAM pairs; " + std::to_string(count) +
                        " cards cannot be placed");
    case CardTopology::kFlat:
    case CardTopology::kNvLink:
      return Status::OK();
  }
  return Status::OK();
}

namespace {

Status NoFit(std::string message) { return Status(StatusCode::kFailedPrecondition, std::move(message)); }

// Positions of the whole-free cards, by physical index: pos[index] = position in node.cards, or -1 when the
// card is missing or not free.
std::vector<int> FreeByIndex(const NodeDevices& node) {
  int max_index = -1;
  for (const auto& c : node.cards) max_index = std::max(max_index, c.index);
  std::vector<int> pos(static_cast<size_t>(max_index + 1), -1);
  for (size_t i = 0; i < node.cards.size(); ++i)
    if (node.cards[i].WholeFree() && node.cards[i].index >= 0) pos[static_cast<size_t>(node.cards[i].index)] = static_cast<int>(i);
  return pos;
}

// Whole cards inside one group of `size` consecutive indices (an HCCS ring). Among the groups that can hold
// the request, the choice keeps whole groups whole, then leaves an even number free (a later pair still fits),
// then takes the group with the fewest free cards (best fit). For 1 card in rings of 4 this is the published
// order 1 > 3 > 2 > 4 free cards.
std::vector<int> InOneGroup(const std::vector<int>& free_pos, int size, int groups, int count) {
  int best = -1;
  std::tuple<bool, bool, int> best_key;
  for (int g = 0; g < groups; ++g) {
    int free = 0;
    for (int i = g * size; i < (g + 1) * size && i < static_cast<int>(free_pos.size()); ++i) free += free_pos[static_cast<size_t>(i)] >= 0;
    if (free < count) continue;
    std::tuple<bool, bool, int> key{free == size, (free - count) % 2 == 1, free};
    if (best < 0 || key < best_key) best = g, best_key = key;
  }
  std::vector<int> out;
  if (best < 0) return out;
  for (int i = best * size; i < (best + 1) * size && static_cast<int>(out.size()) < count; ++i)
    if (i < static_cast<int>(free_pos.size()) && free_pos[static_cast<size_t>(i)] >= 0) out.push_back(free_pos[static_cast<size_t>(i)]);
  return out;
}

// `pairs` pairs (a, b) with both cards free, where b = partner(a); pairs whose cards are both free, lowest first.
template <typename Partner>
std::vector<int> WholePairs(const std::vector<int>& free_pos, int first_count, int pairs, Partner partner) {
  std::vector<int> out;
  for (int a = 0; a < first_count && static_cast<int>(out.size()) < 2 * pairs; ++a) {
    int b = partner(a);
    auto ok = [&](int i) { return i >= 0 && i < static_cast<int>(free_pos.size()) && free_pos[static_cast<size_t>(i)] >= 0; };
    if (ok(a) && ok(b)) {
      out.push_back(free_pos[static_cast<size_t>(a)]);
      out.push_back(free_pos[static_cast<size_t>(b)]);
    }
  }
  if (static_cast<int>(out.size()) < 2 * pairs) out.clear();
  return out;
}

int32_t LinkScore(const NodeDevices& node, int a, int b) {
  const auto& l = node.links;
  if (static_cast<size_t>(a) >= l.size() || static_cast<size_t>(b) >= l[static_cast<size_t>(a)].size()) return 0;
  return l[static_cast<size_t>(a)][static_cast<size_t>(b)];
}

// NVLink: the set of `count` free cards with the highest sum of pair scores (what the NVIDIA device plugin's
// best-effort policy maximises). Exhaustive while the number of subsets is small, else greedy from each start.
std::vector<int> BestLinked(const NodeDevices& node, const std::vector<int>& free, int count) {
  const int n = static_cast<int>(free.size());
  auto score = [&](const std::vector<int>& set) {
    int64_t s = 0;
    for (size_t i = 0; i < set.size(); ++i)
      for (size_t j = i + 1; j < set.size(); ++j) s += LinkScore(node, set[i], set[j]);
    return s;
  };
  double subsets = 1;
  for (int i = 0; i < count; ++i) subsets = subsets * (n - i) / (i + 1);
  std::vector<int> best;
  int64_t best_score = -1;
  if (subsets <= 4096) {
    std::vector<int> pick(static_cast<size_t>(count));
    std::iota(pick.begin(), pick.end(), 0);
    while (true) {
      std::vector<int> set;
      for (int p : pick) set.push_back(free[static_cast<size_t>(p)]);
      int64_t s = score(set);
      if (s > best_score) best_score = s, best = set;
      int i = count - 1;
      while (i >= 0 && pick[static_cast<size_t>(i)] == n - count + i) --i;
      if (i < 0) break;
      ++pick[static_cast<size_t>(i)];
      for (int j = i + 1; j < count; ++j) pick[static_cast<size_t>(j)] = pick[static_cast<size_t>(j - 1)] + 1;
    }
    return best;
  }
  for (int start = 0; start < n; ++start) {
    std::vector<int> set{free[static_cast<size_t>(start)]};
    std::vector<bool> used(static_cast<size_t>(n), false);
    used[static_cast<size_t>(start)] = true;
    while (static_cast<int>(set.size()) < count) {
      int pick = -1;
      int64_t pick_gain = -1;
      for (int c = 0; c < n; ++c) {
        if (used[static_cast<size_t>(c)]) continue;
        int64_t gain = 0;
        for (int m : set) gain += LinkScore(node, m, free[static_cast<size_t>(c)]);
        if (gain > pick_gain) pick = c, pick_gain = gain;
      }
      used[static_cast<size_t>(pick)] = true;
      set.push_back(free[static_cast<size_t>(pick)]);
    }
    int64_t s = score(set);
    if (s > best_score) best_score = s, best = set;
  }
  std::sort(best.begin(), best.end());
  return best;
}

std::string FreePerGroup(const std::vector<int>& free_pos, int size, int groups) {
  std::string out;
  for (int g = 0; g < groups; ++g) {
    int free = 0;
    for (int i = g * size; i < (g + 1) * size && i < static_cast<int>(free_pos.size()); ++i) free += free_pos[static_cast<size_t>(i)] >= 0;
    if (!out.empty()) out += ", ";
    out += std::to_string(free);
  }
  return out;
}

core::StatusOr<std::vector<int>> ChooseWhole(const NodeDevices& node, int32_t count) {
  const int total = static_cast<int>(node.cards.size());
  const int n = static_cast<int>(count);
  if (Status s = CheckWholeCount(node.topology, total, count); !s.ok()) return s;
  const int free_count = node.WholeFreeCount();
  if (n > free_count)
    return NoFit("needs " + std::to_string(n) + " whole cards; " + std::to_string(free_count) + " of " +
                 std::to_string(total) + " are free (" + std::to_string(node.HealthyCount()) + " healthy)");
  std::vector<int> free_pos = FreeByIndex(node);
  std::vector<int> out;
  auto whole_node = [&] {
    std::vector<int> all;
    for (int p : free_pos)
      if (p >= 0) all.push_back(p);
    return all;
  };
  switch (node.topology) {
    case CardTopology::kAscendRing4: {
      const int rings = (static_cast<int>(free_pos.size()) + 3) / 4;
      if (n == total) return whole_node();  // free_count == total here
      out = InOneGroup(free_pos, 4, rings, n);
      if (out.empty())
        return NoFit("needs " + std::to_string(n) + " cards inside one HCCS ring of 4 (module); free per ring: " +
                     FreePerGroup(free_pos, 4, rings));
      return out;
    }
    case CardTopology::kAscendBox16: {
      if (n == total) return whole_node();
      if (n <= 8) {
        out = InOneGroup(free_pos, 8, 2, n);
        if (out.empty())
          return NoFit("needs " + std::to_string(n) + " cards inside one HCCS ring of 8 (module-910b-16); free per ring: " +
                       FreePerGroup(free_pos, 8, 2));
        return out;
      }
      out = WholePairs(free_pos, 8, n / 2, [](int a) { return a + 8; });
      if (out.empty())
        return NoFit("needs " + std::to_string(n / 2) + " free cross-ring pairs (i, i+8) (module-910b-16)");
      return out;
    }
    case CardTopology::kAscendA3: {
      if (n == 1) {
        // A card whose pair partner is taken first, so whole pairs stay whole.
        out = InOneGroup(free_pos, 2, (static_cast<int>(free_pos.size()) + 1) / 2, 1);
        return out;
      }
      out = WholePairs(free_pos, static_cast<int>(free_pos.size()), n / 2, [](int a) { return a % 2 == 0 ? a + 1 : -1; });
      if (out.empty()) return NoFit("needs " + std::to_string(n / 2) + " free HiAM pairs (module-a3-16)");
      return out;
    }
    case CardTopology::kNvLink:
      if (!node.links.empty() && n > 1) {
        std::vector<int> free;
        for (int p : free_pos)
          if (p >= 0) free.push_back(p);
        return BestLinked(node, free, n);
      }
      [[fallthrough]];
    case CardTopology::kFlat:
      for (int p : free_pos)
        if (p >= 0 && static_cast<int>(out.size()) < n) out.push_back(p);
      return out;
  }
  return out;
}

}  // namespace

namespace {

bool ContainsNoCase(std::string_view hay, std::string_view needle) {
  auto lower = [](char ch) { return static_cast<char>(std::tolower(static_cast<unsigned char>(ch))); };
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != hay.end();
}

bool AnyContained(std::string_view hay, const std::vector<std::string>& needles) {
  return std::any_of(needles.begin(), needles.end(), [&](const std::string& n) { return ContainsNoCase(hay, n); });
}

}  // namespace

bool DeviceDetail::AllowsModel(std::string_view model) const {
  if (!use_types.empty()) return AnyContained(model, use_types);
  return !AnyContained(model, nouse_types);
}

bool DeviceDetail::Allows(std::string_view type, std::string_view id) const {
  if (!AllowsModel(type)) return false;
  if (!use_ids.empty() && std::find(use_ids.begin(), use_ids.end(), id) == use_ids.end()) return false;
  return std::find(nouse_ids.begin(), nouse_ids.end(), id) == nouse_ids.end();
}

bool ShareFits(const Card& c, const DeviceRequest& req) {
  if (!c.Healthy() || c.owners > 0 || c.sharers >= c.max_sharers) return false;
  const int64_t memory = req.MemoryOn(c);
  if (memory > 0 && c.memory - c.used_memory < memory) return false;
  if (req.cores >= 1000 && c.sharers > 0) return false;  // all of the compute = the card alone
  if (req.cores == 0 && c.used_cores >= 1000) return false;
  return 1000 - c.used_cores >= req.cores;
}

namespace {

core::StatusOr<std::vector<int>> ChooseShared(const NodeDevices& node, const DeviceRequest& req, SharePolicy policy) {
  std::vector<int> fit;
  for (size_t i = 0; i < node.cards.size(); ++i)
    if (ShareFits(node.cards[i], req) && req.Allows(node, node.cards[i])) fit.push_back(static_cast<int>(i));
  if (static_cast<int>(fit.size()) < req.shared) {
    const std::string memory = req.memory_percent > 0 ? std::to_string(req.memory_percent) + "% of the memory"
                                                       : std::to_string(req.memory) + " MiB";
    return NoFit("needs " + std::to_string(req.shared) + " shared cards with " + memory + " and " +
                 std::to_string(req.cores / 10) + "% compute free" +
                 (req.detail && req.detail->HasFilter() ? " among the GPUs the pod accepts" : "") + "; " +
                 std::to_string(fit.size()) + " of " + std::to_string(node.cards.size()) + " have that");
  }
  auto load = [&](int p) {
    const Card& c = node.cards[static_cast<size_t>(p)];
    return std::make_tuple(c.used_cores, c.memory > 0 ? c.used_memory * 1000 / c.memory : 0, c.sharers);
  };
  std::stable_sort(fit.begin(), fit.end(), [&](int a, int b) {
    return policy == SharePolicy::kBinpack ? load(a) > load(b) : load(a) < load(b);
  });
  fit.resize(static_cast<size_t>(req.shared));
  return fit;
}

}  // namespace

core::StatusOr<std::vector<int>> ChooseCards(const NodeDevices& node, const DeviceRequest& req, SharePolicy policy) {
  if (req.whole > 0) return ChooseWhole(node, req.whole);
  if (req.shared > 0) return ChooseShared(node, req, policy);
  return std::vector<int>{};
}

bool CardsFit(const NodeDevices& node, const DeviceRequest& req) {
  if (req.empty()) return true;
  if (req.shared > 0) {
    int fit = 0;
    for (const auto& c : node.cards) fit += ShareFits(c, req) && req.Allows(node, c);
    return fit >= req.shared;
  }
  if (node.WholeFreeCount() < req.whole) return false;
  if (node.topology == CardTopology::kFlat || node.topology == CardTopology::kNvLink)
    return CheckWholeCount(node.topology, static_cast<int>(node.cards.size()), req.whole).ok();
  return ChooseWhole(node, req.whole).ok();
}

void HoldCards(NodeDevices& node, const DeviceRequest& req, const std::vector<std::string>& ids, int sign) {
  for (const auto& id : ids) {
    int p = node.FindCard(id);
    if (p < 0) continue;
    Card& c = node.cards[static_cast<size_t>(p)];
    if (req.whole > 0) {
      c.owners += sign;
    } else {
      c.sharers += sign;
      c.used_memory += sign * req.MemoryOn(c);
      c.used_cores += sign * req.cores;
    }
  }
}

}  // namespace tephra::sched
