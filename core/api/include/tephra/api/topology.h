// topology.volcano.sh/v1alpha1 HyperNode (docs/volcano-behaviour.md, "HyperNode"): a node of the network
// topology tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/meta.h"

namespace tephra::api {

// MemberSpec.type
inline constexpr std::string_view kMemberTypeNode = "Node";
inline constexpr std::string_view kMemberTypeHyperNode = "HyperNode";

struct ExactMatch {
  std::string name;
  json extra;
};
Status Decode(const json& j, ExactMatch* out);
void Encode(const ExactMatch& in, json* j);

struct RegexMatch {
  std::string pattern;
  json extra;
};
Status Decode(const json& j, RegexMatch* out);
void Encode(const RegexMatch& in, json* j);

// Exactly one of the three is set (validated by ValidateHyperNode).
struct MemberSelector {
  std::optional<ExactMatch> exact_match;
  std::optional<RegexMatch> regex_match;
  std::optional<LabelSelector> label_match;  // Node members only
  json extra;
};
Status Decode(const json& j, MemberSelector* out);
void Encode(const MemberSelector& in, json* j);

struct MemberSpec {
  std::string type;  // "Node" | "HyperNode"
  MemberSelector selector;
  json extra;
};
Status Decode(const json& j, MemberSpec* out);
void Encode(const MemberSpec& in, json* j);

struct HyperNodeSpec {
  int32_t tier = 0;  // smaller = closer/faster
  std::string tier_name;
  std::vector<MemberSpec> members;
  json extra;
};
Status Decode(const json& j, HyperNodeSpec* out);
void Encode(const HyperNodeSpec& in, json* j);

// metav1.Condition.
struct MetaCondition {
  std::string type;
  std::string status;
  int64_t observed_generation = 0;
  std::string last_transition_time;
  std::string reason;
  std::string message;
  json extra;
};
Status Decode(const json& j, MetaCondition* out);
void Encode(const MetaCondition& in, json* j);

struct HyperNodeStatus {
  std::vector<MetaCondition> conditions;
  int64_t node_count = 0;
  json extra;
};
Status Decode(const json& j, HyperNodeStatus* out);
void Encode(const HyperNodeStatus& in, json* j);

struct HyperNode {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  HyperNodeSpec spec;
  HyperNodeStatus status;
  json extra;
};
Status Decode(const json& j, HyperNode* out);
void Encode(const HyperNode& in, json* j);

}  // namespace tephra::api
