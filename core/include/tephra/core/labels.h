// Labels, label selectors and node selector terms: the one selector model of Tephra.
//
// The API types (tephra_api: Pod affinity, NetworkPolicy, PodGroup subgroups, HyperNode members) and the
// scheduling core (tephra_sched, which may not use tephra_api) both use these types and this matcher, so
// an operator means the same thing everywhere. Kubernetes' semantics:
//   In            the key is present and its value is one of `values`
//   NotIn         the key is absent, or its value is none of `values`
//   Exists        the key is present;   DoesNotExist: the key is absent
//   Gt / Lt       node selectors only: the key is present, and both its value and the single entry of
//                 `values` parse as base-10 64-bit integers, value > (<) entry; anything else: no match
//   unknown       never matches (kInvalid). The API server refuses such objects; one can only arrive
//                 through a bug or a bypassed validation, and reading it as In (or as "no constraint")
//                 would place pods where their owner did not ask. Validate*() reports it.
// A selector is matchLabels AND every matchExpression. An empty selector ({}) matches everything; a null
// (absent) selector matches nothing: callers keep that distinction with std::optional<LabelSelector>
// (Matches(optional, labels) below). A NodeSelectorTerm with no requirement matches nothing; a list of
// terms is ORed by the caller.
//
// I/O-free (tephra_core): the JSON codecs live in tephra_api. Members of a selector object the codec does
// not model are carried here verbatim, as JSON text (`unknown`), so a decode/encode round trip keeps them;
// core never reads them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tephra::core {

using Labels = std::map<std::string, std::string>;  // ordered: determinism and cheap equality

enum class SelectorOp : uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt, kInvalid };

// Case-sensitive, as Kubernetes: "in" is kInvalid.
SelectorOp ParseSelectorOp(std::string_view text);
// "In", "NotIn", ...; "" for kInvalid.
std::string_view SelectorOpName(SelectorOp op);
// Go's strconv.ParseInt(s, 10, 64): optional sign, digits only, no spaces, no overflow.
bool ParseSelectorInt(std::string_view text, int64_t* out);

// JSON members a codec did not model: name -> value as JSON text.
using UnknownFields = std::vector<std::pair<std::string, std::string>>;

struct SelectorRequirement {
  std::string key;
  SelectorOp op = SelectorOp::kIn;
  std::vector<std::string> values;
  std::string op_text = {};  // the operator as written when op is kInvalid (re-encoded unchanged), else ""
  UnknownFields unknown = {};
  bool operator==(const SelectorRequirement&) const = default;

  bool Matches(const Labels& labels) const;
};

struct LabelSelector {
  Labels match_labels;
  std::vector<SelectorRequirement> match_expressions;
  UnknownFields unknown = {};
  bool operator==(const LabelSelector&) const = default;

  // Empty selector: everything.
  bool Matches(const Labels& labels) const;
  // Every expression uses an operator label selectors have (In, NotIn, Exists, DoesNotExist). Matching
  // does not need this (kInvalid never matches; Gt/Lt work); the scheduler uses it to explain a refusal.
  bool Valid() const;
};

// Null selector: nothing; empty selector: everything.
inline bool Matches(const std::optional<LabelSelector>& selector, const Labels& labels) {
  return selector.has_value() && selector->Matches(labels);
}

struct NodeSelectorTerm {
  std::vector<SelectorRequirement> match_expressions;  // on node labels; Gt/Lt allowed
  std::vector<SelectorRequirement> match_fields;       // on node fields: only "metadata.name"
  UnknownFields unknown = {};
  bool operator==(const NodeSelectorTerm&) const = default;

  // A term without requirements matches nothing. Allocation-free.
  bool Matches(const Labels& node_labels, std::string_view node_name) const;
  // No kInvalid operator anywhere (the scheduler uses it to explain a refusal).
  bool Valid() const;
};

// ---- validation (what the API server would refuse); paths are JSON paths below `path` ----
struct SelectorError {
  std::string path;
  std::string message;
  bool operator==(const SelectorError&) const = default;
};
enum class SelectorKind : uint8_t {
  kLabel,      // metav1.LabelSelector expressions: In, NotIn, Exists, DoesNotExist
  kNode,       // NodeSelectorRequirement on labels: also Gt, Lt
  kNodeField,  // NodeSelectorRequirement on fields: key metadata.name, In/NotIn, exactly one value
};
void ValidateRequirement(const SelectorRequirement& r, SelectorKind kind, const std::string& path,
                         std::vector<SelectorError>* out);
void ValidateLabelSelector(const LabelSelector& s, const std::string& path, std::vector<SelectorError>* out);
void ValidateNodeSelectorTerm(const NodeSelectorTerm& t, const std::string& path, std::vector<SelectorError>* out);

}  // namespace tephra::core
