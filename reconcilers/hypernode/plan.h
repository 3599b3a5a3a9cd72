// HyperNode auto-discovery from node labels (docs/controllers.md, "HyperNode discovery"): Volcano's
// hyperNode-controller with its `label` source. A pure plan: the parsed discovery config, every Node and every
// HyperNode in, the HyperNode writes out.
//
//   1. Config (ConfigMap volcano-controller-configmap, key volcano-controller.conf): `networkTopologyDiscovery`
//      is a list of sources; only `label` is implemented (ufm/roce enabled = a warning). Its
//      `config.networkTopologyTypes` maps a type name to either the legacy list `[{nodeLabel}, ...]` (highest
//      domain first, the last entry is the node leaf and is dropped) or a profile
//      `{nodeSelector, levels: [{nodeLabel, tierName}, ...]}` whose last level must be kubernetes.io/hostname.
//   2. Per type, every selected Node (legacy and selector-less profiles: every Node) is walked from the level
//      just above the leaf (tier 1) upwards; each (type, nodeLabel, value) is one domain = one HyperNode. A
//      Node without a level stops there (it joins the tiers below only), except under a profile with an
//      explicit nodeSelector, where it is an error: the profile promised the labels.
//   3. Names are "hypernode-<type>-tier<N>-<12 hex of SHA-256(type NUL nodeLabel NUL value)>": deterministic
//      (a restart or a replica plans the same objects), DNS-valid, scoped by type.
//   4. Any error (a domain under two parents, a Node selected by two profiles, a name held by a HyperNode
//      that discovery did not create) fails the whole plan: nothing is written, the last topology stays.
//   5. Only HyperNodes labelled volcano.sh/network-topology-source=label are ever updated or deleted; a
//      user's HyperNode is never touched.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/core_v1.h"
#include "tephra/api/topology.h"
#include "tephra/core/status.h"

namespace tephra::reconcilers::hypernode {

inline constexpr std::string_view kSourceLabelValue = "label";  // volcano.sh/network-topology-source=label
inline constexpr std::string_view kProfileLabel = "volcano.sh/network-topology-profile";
inline constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
inline constexpr std::string_view kConfigKey = "volcano-controller.conf";
inline constexpr size_t kMaxTypeNameLength = 20;  // Volcano's networkTopologyTypeLength
inline constexpr std::chrono::hours kDefaultInterval{1};

struct Level {
  std::string node_label;
  std::string tier_name;
};

struct TopologyType {
  std::string name;
  bool profile = false;                              // profile form (else the legacy list)
  std::optional<api::LabelSelector> node_selector;   // profile form; nullopt = every Node
  std::vector<Level> levels;                         // highest first, without the node leaf
};

struct DiscoveryConfig {
  bool label_enabled = false;
  std::chrono::nanoseconds interval = kDefaultInterval;  // the label source's resync period
  std::vector<TopologyType> types;                       // sorted by name
  std::vector<std::string> warnings;                     // not errors: e.g. ufm enabled but not implemented
};

// Parses the JSON form of volcano-controller.conf. kInvalidArgument names the offending field.
core::StatusOr<DiscoveryConfig> ParseConfig(const api::json& conf);
// The YAML text of the ConfigMap key (through kube/yaml.h). An empty text is an empty config.
core::StatusOr<DiscoveryConfig> ParseConfigText(const std::string& yaml);

// "hypernode-<clean(type)>-tier<tier>-<hash>".
std::string HyperNodeName(const std::string& type, int tier, const std::string& node_label, const std::string& value);
// Volcano's cleanString: ASCII letters lower-cased, digits '.' '-' kept, anything else '-'.
std::string CleanName(std::string_view s);
// Lower-case hex SHA-256 (FIPS 180-4); used for the name hash only.
std::string Sha256Hex(std::string_view data);

struct Observed {
  DiscoveryConfig config;
  std::vector<api::Node> nodes;
  std::vector<api::HyperNode> hypernodes;  // all of them; the plan tells ours by the source label
};

struct Actions {
  std::vector<api::HyperNode> create;  // tier ascending: children exist before a parent names them
  std::vector<api::HyperNode> update;  // existing generated objects (resourceVersion kept), tier ascending
  std::vector<std::string> remove;     // generated, no longer discovered; tier descending (parents first)
  core::Status error;                  // set: nothing above is planned
};

// The desired generated HyperNodes (sorted by tier, then name), or the error that stops publication.
core::StatusOr<std::vector<api::HyperNode>> Discover(const DiscoveryConfig& config, const std::vector<api::Node>& nodes);

// Whether `hn` was created by label discovery.
bool IsGenerated(const api::HyperNode& hn);

// `existing` with the desired spec.tier, tierName, members and labels; whether anything changed.
bool MergeInto(const api::HyperNode& desired, api::HyperNode* existing);

Actions Plan(const Observed& obs);

}  // namespace tephra::reconcilers::hypernode
