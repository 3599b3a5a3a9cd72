#include "hypernode/plan.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <utility>

#include "tephra/api/duration.h"
#include "tephra/api/labels.h"
#include "tephra/api/validation.h"
#include "tephra/kube/yaml.h"

namespace tephra::reconcilers::hypernode {

namespace {

using api::json;

// ------------------------------------------------------------------------------------------------ SHA-256

constexpr std::array<uint32_t, 64> kK = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

constexpr uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// ------------------------------------------------------------------------------------------------ config

core::Status Invalid(const std::string& msg) { return core::InvalidArgumentError(msg); }

bool IsLabelValue(const std::string& v) { return v.empty() || (v.find('/') == std::string::npos && api::IsQualifiedName(v)); }

core::StatusOr<std::string> StringField(const json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Invalid(path + "." + key + ": must be a string");
  return it->get<std::string>();
}

core::Status ParseLegacy(const json& list, const std::string& path, TopologyType* t) {
  std::set<std::string> seen;
  std::vector<std::string> labels;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    if (!list[i].is_object()) return Invalid(p + ": must be an object with nodeLabel");
    auto l = StringField(list[i], "nodeLabel", p);
    if (!l.ok()) return l.status();
    if (l->empty()) return Invalid(p + ".nodeLabel: required");
    // Volcano rejects the type when a label repeats; a repeated label would make a domain its own parent.
    if (!seen.insert(*l).second) return Invalid(path + ": nodeLabel " + *l + " is given twice");
    labels.push_back(*l);
  }
  // The last entry is the node leaf (kubernetes.io/hostname in Volcano's examples); Volcano drops it whatever
  // it names, and so does Tephra.
  if (!labels.empty()) labels.pop_back();
  for (auto& l : labels) t->levels.push_back({l, l});  // Volcano writes the label key as tierName
  return core::Status::OK();
}

core::Status ParseProfile(const json& obj, const std::string& path, TopologyType* t) {
  t->profile = true;
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (it.key() != "nodeSelector" && it.key() != "levels")
      return Invalid(path + ": unknown field " + it.key() + " (a profile has nodeSelector and levels)");
  if (auto it = obj.find("nodeSelector"); it != obj.end() && !it->is_null()) {
    if (!it->is_object()) return Invalid(path + ".nodeSelector: must be a label selector");
    api::LabelSelector sel;
    if (auto s = api::Decode(*it, &sel); !s.ok()) return Invalid(path + ".nodeSelector: " + s.message());
    std::vector<core::SelectorError> errs;
    core::ValidateLabelSelector(sel, path + ".nodeSelector", &errs);
    if (!errs.empty()) return Invalid(path + ".nodeSelector: invalid selector");
    t->node_selector = std::move(sel);
  }
  auto levels = obj.find("levels");
  if (levels == obj.end() || !levels->is_array() || levels->size() < 2)
    return Invalid(path + ".levels: needs at least one topology level and the kubernetes.io/hostname leaf");
  std::set<std::string> labels, tiers;
  for (size_t i = 0; i < levels->size(); ++i) {
    std::string p = path + ".levels[" + std::to_string(i) + "]";
    const json& l = (*levels)[i];
    if (!l.is_object()) return Invalid(p + ": must be an object");
    for (auto it = l.begin(); it != l.end(); ++it)
      if (it.key() != "nodeLabel" && it.key() != "tierName") return Invalid(p + ": unknown field " + it.key());
    auto label = StringField(l, "nodeLabel", p);
    if (!label.ok()) return label.status();
    auto tier = StringField(l, "tierName", p);
    if (!tier.ok()) return tier.status();
    if (label->empty()) return Invalid(p + ".nodeLabel: required");
    if (!labels.insert(*label).second) return Invalid(path + ".levels: nodeLabel " + *label + " is given twice");
    bool leaf = i + 1 == levels->size();
    if (leaf) {
      if (*label != kHostnameLabel) return Invalid(p + ".nodeLabel: the last level must be kubernetes.io/hostname");
      if (!tier->empty()) return Invalid(p + ".tierName: the kubernetes.io/hostname leaf has no tier");
      break;
    }
    if (*label == kHostnameLabel) return Invalid(p + ".nodeLabel: kubernetes.io/hostname may only be the last level");
    std::string tn = tier->empty() ? *label : *tier;
    if (!tiers.insert(tn).second) return Invalid(path + ".levels: tierName " + tn + " is given twice");
    t->levels.push_back({*label, tn});
  }
  return core::Status::OK();
}

core::StatusOr<std::vector<TopologyType>> ParseLabelConfig(const json& config) {
  std::vector<TopologyType> out;
  if (config.is_null()) return out;
  if (!config.is_object()) return Invalid("label source config: must be an object");
  auto types = config.find("networkTopologyTypes");
  if (types == config.end() || types->is_null()) return out;
  if (!types->is_object()) return Invalid("networkTopologyTypes: must be a map of type name to levels");
  std::map<std::string, std::string> cleaned;  // normalized name -> type: two types must never share names
  for (auto it = types->begin(); it != types->end(); ++it) {
    std::string path = "networkTopologyTypes." + it.key();
    if (it.key().empty() || it.key().size() > kMaxTypeNameLength)
      return Invalid(path + ": the type name must have 1 to " + std::to_string(kMaxTypeNameLength) + " characters");
    TopologyType t;
    t.name = it.key();
    core::Status s = it->is_array()    ? ParseLegacy(*it, path, &t)
                     : it->is_object() ? ParseProfile(*it, path, &t)
                                       : Invalid(path + ": must be a list of {nodeLabel} or a {nodeSelector, levels} profile");
    if (!s.ok()) return s;
    std::string c = CleanName(t.name);
    // The name prefix must stay a DNS subdomain and the profile label value a label value.
    if (!api::IsDns1123Subdomain("hypernode-" + c + "-tier1-000000000000"))
      return Invalid(path + ": the type name does not make a valid HyperNode name (\"" + c + "\")");
    if (t.profile) {
      std::string v = c;
      while (!v.empty() && (v.front() == '.' || v.front() == '-')) v.erase(v.begin());
      while (!v.empty() && (v.back() == '.' || v.back() == '-')) v.pop_back();
      if (v.empty() || !IsLabelValue(v)) return Invalid(path + ": the type name does not make a valid label value");
    }
    if (auto [pos, fresh] = cleaned.emplace(c, t.name); !fresh)
      return Invalid(path + ": names the same HyperNodes as type " + pos->second + " (both normalize to " + c + ")");
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const TopologyType& a, const TopologyType& b) { return a.name < b.name; });
  return out;
}

std::string ProfileLabelValue(const std::string& type) {
  std::string v = CleanName(type);
  while (!v.empty() && (v.front() == '.' || v.front() == '-')) v.erase(v.begin());
  while (!v.empty() && (v.back() == '.' || v.back() == '-')) v.pop_back();
  return v;
}

struct Domain {
  int tier = 0;
  std::string tier_name, node_label, value;
  std::set<std::string> members;
};

int TierOf(const api::HyperNode& h) { return h.spec.tier; }

}  // namespace

std::string Sha256Hex(std::string_view data) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::string msg(data);
  const uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  for (size_t off = 0; off < msg.size(); off += 64) {
    std::array<uint32_t, 64> w{};
    for (int i = 0; i < 16; ++i)
      for (int b = 0; b < 4; ++b) w[i] = (w[i] << 8) | static_cast<uint8_t>(msg[off + 4 * i + b]);
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto v = h;
    for (int i = 0; i < 64; ++i) {
      uint32_t s1 = Rotr(v[4], 6) ^ Rotr(v[4], 11) ^ Rotr(v[4], 25);
      uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
      uint32_t t1 = v[7] + s1 + ch + kK[i] + w[i];
      uint32_t s0 = Rotr(v[0], 2) ^ Rotr(v[0], 13) ^ Rotr(v[0], 22);
      uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
      uint32_t t2 = s0 + maj;
      v = {t1 + t2, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
    }
    for (int i = 0; i < 8; ++i) h[i] += v[i];
  }
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint32_t x : h)
    for (int i = 7; i >= 0; --i) out.push_back(kHex[(x >> (4 * i)) & 0xf]);
  return out;
}

std::string CleanName(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') out.push_back(static_cast<char>(c - 'A' + 'a'));
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-') out.push_back(c);
    else out.push_back('-');
  }
  return out;
}

std::string HyperNodeName(const std::string& type, int tier, const std::string& node_label, const std::string& value) {
  std::string key = type;
  key.push_back('\0');
  key += node_label;
  key.push_back('\0');
  key += value;
  return "hypernode-" + CleanName(type) + "-tier" + std::to_string(tier) + "-" + Sha256Hex(key).substr(0, 12);
}

core::StatusOr<DiscoveryConfig> ParseConfig(const json& conf) {
  DiscoveryConfig out;
  if (conf.is_null()) return out;
  if (!conf.is_object()) return Invalid(std::string(kConfigKey) + ": must be a YAML map");
  auto list = conf.find("networkTopologyDiscovery");
  if (list == conf.end() || list->is_null()) return out;
  if (!list->is_array()) return Invalid("networkTopologyDiscovery: must be a list of sources");
  bool seen_label = false;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    std::string path = "networkTopologyDiscovery[" + std::to_string(i) + "]";
    if (!e.is_object()) return Invalid(path + ": must be a map");
    auto source = StringField(e, "source", path);
    if (!source.ok()) return source.status();
    bool enabled = false;
    if (auto it = e.find("enabled"); it != e.end() && !it->is_null()) {
      if (!it->is_boolean()) return Invalid(path + ".enabled: must be true or false");
      enabled = it->get<bool>();
    }
    if (!enabled) continue;
    if (*source != kSourceLabelValue) {
      // ufm and roce are Volcano's other sources; Tephra has neither, and says so instead of failing.
      out.warnings.push_back(path + ": source \"" + *source + "\" is enabled but not implemented by Tephra (only label); ignored");
      continue;
    }
    if (seen_label) {
      out.warnings.push_back(path + ": a second enabled label source; only the first is used");
      continue;
    }
    seen_label = true;
    out.label_enabled = true;
    auto interval = StringField(e, "interval", path);
    if (!interval.ok()) return interval.status();
    if (!interval->empty()) {
      auto d = api::ParseGoDuration(*interval);
      if (!d.ok()) return Invalid(path + ".interval: " + d.status().message());
      if (d->count() <= 0) return Invalid(path + ".interval: must be positive");
      out.interval = *d;
    }
    auto types = ParseLabelConfig(e.contains("config") ? e["config"] : json());
    if (!types.ok()) return Invalid(path + ".config." + types.status().message());
    out.types = std::move(*types);
  }
  return out;
}

core::StatusOr<DiscoveryConfig> ParseConfigText(const std::string& yaml) {
  auto docs = kube::YamlDocumentsToJson(yaml, std::string(kConfigKey));
  if (!docs.ok()) return docs.status();
  if (docs->empty()) return DiscoveryConfig{};
  return ParseConfig(docs->front());
}

core::StatusOr<std::vector<api::HyperNode>> Discover(const DiscoveryConfig& config, const std::vector<api::Node>& nodes) {
  std::vector<const api::Node*> sorted;
  for (const auto& n : nodes) sorted.push_back(&n);
  // Sorted input: the first error reported, like every name, does not depend on the cache's order.
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->metadata.name < b->metadata.name; });

  // A Node selected by two explicit profile selectors has two topologies: ambiguous, so refused.
  std::map<std::string, std::string> selected_by;
  for (const auto& t : config.types) {
    if (!t.node_selector) continue;
    for (const auto* n : sorted) {
      if (!t.node_selector->Matches(n->metadata.labels)) continue;
      auto [it, fresh] = selected_by.emplace(n->metadata.name, t.name);
      if (!fresh)
        return core::FailedPreconditionError("node " + n->metadata.name + " is selected by the profiles " + it->second +
                                             " and " + t.name);
    }
  }

  std::vector<api::HyperNode> out;
  for (const auto& t : config.types) {
    std::map<std::string, Domain> domains;
    std::map<std::string, std::string> parent_of;  // "<tier of child>/<child>" -> parent HyperNode
    const int depth = static_cast<int>(t.levels.size());
    for (const auto* n : sorted) {
      if (t.node_selector && !t.node_selector->Matches(n->metadata.labels)) continue;
      std::string child = n->metadata.name;
      for (int tier = 1; tier <= depth; ++tier) {
        const Level& level = t.levels[depth - tier];
        auto lv = n->metadata.labels.find(level.node_label);
        if (lv == n->metadata.labels.end()) {
          // Legacy lists and selector-less profiles keep Volcano's partial behaviour: the Node joins the tiers
          // below. A profile that selected the Node by its labels promised every level.
          if (t.node_selector)
            return core::FailedPreconditionError("node " + n->metadata.name + " is selected by profile " + t.name +
                                                 " but has no label " + level.node_label);
          break;
        }
        std::string name = HyperNodeName(t.name, tier, level.node_label, lv->second);
        Domain& d = domains[name];
        if (d.tier == 0) {
          d.tier = tier;
          d.tier_name = level.tier_name;
          d.node_label = level.node_label;
          d.value = lv->second;
        } else if (d.node_label != level.node_label || d.value != lv->second) {
          return core::FailedPreconditionError("HyperNode name " + name + " is shared by two domains of type " + t.name);
        }
        d.members.insert(child);
        auto [pit, fresh] = parent_of.emplace(std::to_string(tier - 1) + "/" + child, name);
        if (!fresh && pit->second != name) {
          const Domain& other = domains[pit->second];
          std::string what = "node " + child;
          if (auto b = domains.find(child); tier > 1 && b != domains.end())
            what = "domain " + b->second.node_label + "=" + b->second.value;
          return core::FailedPreconditionError(
              "type " + t.name + ": " + what + " is under two parents (" +
              level.node_label + "=" + other.value + " and " + level.node_label + "=" + lv->second + ", seen on node " +
              n->metadata.name + ")");
        }
        child = name;
      }
    }
    for (auto& [name, d] : domains) {
      api::HyperNode h;
      h.metadata.name = name;
      h.metadata.labels[std::string(api::kNetworkTopologySourceLabel)] = std::string(kSourceLabelValue);
      if (IsLabelValue(d.value)) h.metadata.labels[d.node_label] = d.value;  // Volcano's domain label
      if (t.profile) h.metadata.labels[std::string(kProfileLabel)] = ProfileLabelValue(t.name);
      h.spec.tier = d.tier;
      h.spec.tier_name = d.tier_name;
      for (const auto& m : d.members) {
        api::MemberSpec ms;
        ms.type = std::string(d.tier == 1 ? api::kMemberTypeNode : api::kMemberTypeHyperNode);
        ms.selector.exact_match = api::ExactMatch{m, {}};
        h.spec.members.push_back(std::move(ms));
      }
      out.push_back(std::move(h));
    }
  }
  std::sort(out.begin(), out.end(), [](const api::HyperNode& a, const api::HyperNode& b) {
    return std::pair(TierOf(a), a.metadata.name) < std::pair(TierOf(b), b.metadata.name);
  });
  return out;
}

bool IsGenerated(const api::HyperNode& hn) {
  auto it = hn.metadata.labels.find(std::string(api::kNetworkTopologySourceLabel));
  return it != hn.metadata.labels.end() && it->second == kSourceLabelValue;
}

bool MergeInto(const api::HyperNode& desired, api::HyperNode* existing) {
  bool changed = false;
  for (const auto& [k, v] : desired.metadata.labels) {
    auto& cur = existing->metadata.labels[k];
    if (cur != v) {
      cur = v;
      changed = true;
    }
  }
  if (existing->spec.tier != desired.spec.tier) {
    existing->spec.tier = desired.spec.tier;
    changed = true;
  }
  if (existing->spec.tier_name != desired.spec.tier_name) {
    existing->spec.tier_name = desired.spec.tier_name;
    changed = true;
  }
  // Members compared as encoded JSON: fields the codec keeps verbatim count too, so a hand-edited member of
  // a generated HyperNode is put back.
  json want = json::array(), have = json::array();
  for (const auto& m : desired.spec.members) want.push_back(api::ToJson(m));
  for (const auto& m : existing->spec.members) have.push_back(api::ToJson(m));
  if (want != have) {
    existing->spec.members = desired.spec.members;
    changed = true;
  }
  return changed;
}

Actions Plan(const Observed& obs) {
  Actions a;
  std::vector<api::HyperNode> desired;
  if (obs.config.label_enabled) {
    auto d = Discover(obs.config, obs.nodes);
    if (!d.ok()) {
      a.error = d.status();
      return a;
    }
    desired = std::move(*d);
  }
  std::map<std::string, const api::HyperNode*> existing;
  for (const auto& h : obs.hypernodes) existing[h.metadata.name] = &h;
  std::set<std::string> wanted;
  for (auto& d : desired) {
    wanted.insert(d.metadata.name);
    auto it = existing.find(d.metadata.name);
    if (it == existing.end()) {
      a.create.push_back(std::move(d));
      continue;
    }
    if (!IsGenerated(*it->second)) {
      // Someone else's object under our deterministic name: never overwritten, and nothing is published
      // (a tree with a foreign node in it would not be the discovered topology).
      a.create.clear();
      a.update.clear();
      a.error = core::FailedPreconditionError("HyperNode " + d.metadata.name +
                                              " exists without the label volcano.sh/network-topology-source=label; "
                                              "discovery does not touch it");
      return a;
    }
    api::HyperNode cur = *it->second;
    if (MergeInto(d, &cur)) a.update.push_back(std::move(cur));
  }
  std::vector<const api::HyperNode*> gone;
  for (const auto& h : obs.hypernodes)
    if (IsGenerated(h) && !wanted.count(h.metadata.name)) gone.push_back(&h);
  std::sort(gone.begin(), gone.end(), [](auto* x, auto* y) {
    return std::pair(-TierOf(*x), x->metadata.name) < std::pair(-TierOf(*y), y->metadata.name);
  });
  for (const auto* h : gone) a.remove.push_back(h->metadata.name);
  return a;
}

}  // namespace tephra::reconcilers::hypernode
