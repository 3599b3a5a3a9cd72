#include "tephra/core/labels.h"

#include <limits>

namespace tephra::core {

SelectorOp ParseSelectorOp(std::string_view t) {
  if (t == "In") return SelectorOp::kIn;
  if (t == "NotIn") return SelectorOp::kNotIn;
  if (t == "Exists") return SelectorOp::kExists;
  if (t == "DoesNotExist") return SelectorOp::kDoesNotExist;
  if (t == "Gt") return SelectorOp::kGt;
  if (t == "Lt") return SelectorOp::kLt;
  return SelectorOp::kInvalid;
}

std::string_view SelectorOpName(SelectorOp op) {
  switch (op) {
    case SelectorOp::kIn: return "In";
    case SelectorOp::kNotIn: return "NotIn";
    case SelectorOp::kExists: return "Exists";
    case SelectorOp::kDoesNotExist: return "DoesNotExist";
    case SelectorOp::kGt: return "Gt";
    case SelectorOp::kLt: return "Lt";
    case SelectorOp::kInvalid: return "";
  }
  return "";
}

bool ParseSelectorInt(std::string_view s, int64_t* out) {
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == s.size()) return false;
  // Accumulate negatively so INT64_MIN parses without overflow.
  int64_t v = 0;
  const int64_t min = std::numeric_limits<int64_t>::min();
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c < '0' || c > '9') return false;
    int d = c - '0';
    if (v < (min + d) / 10) return false;
    v = v * 10 - d;
  }
  if (!neg) {
    if (v == min) return false;
    v = -v;
  }
  *out = v;
  return true;
}

namespace {
bool Contains(const std::vector<std::string>& values, std::string_view v) {
  for (const auto& x : values)
    if (x == v) return true;
  return false;
}

// One requirement against one value (nullptr: the key is absent). Shared by labels and node fields.
bool MatchValue(const SelectorRequirement& r, const std::string* value) {
  switch (r.op) {
    case SelectorOp::kIn: return value && Contains(r.values, *value);
    case SelectorOp::kNotIn: return !value || !Contains(r.values, *value);
    case SelectorOp::kExists: return value != nullptr;
    case SelectorOp::kDoesNotExist: return value == nullptr;
    case SelectorOp::kGt:
    case SelectorOp::kLt: {
      int64_t have = 0, bound = 0;
      if (!value || r.values.size() != 1 || !ParseSelectorInt(*value, &have) || !ParseSelectorInt(r.values[0], &bound))
        return false;
      return r.op == SelectorOp::kGt ? have > bound : have < bound;
    }
    case SelectorOp::kInvalid: return false;
  }
  return false;
}
}  // namespace

bool SelectorRequirement::Matches(const Labels& labels) const {
  auto it = labels.find(key);
  return MatchValue(*this, it == labels.end() ? nullptr : &it->second);
}

bool LabelSelector::Matches(const Labels& labels) const {
  for (const auto& [k, v] : match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& r : match_expressions)
    if (!r.Matches(labels)) return false;
  return true;
}

bool LabelSelector::Valid() const {
  for (const auto& r : match_expressions)
    if (r.op != SelectorOp::kIn && r.op != SelectorOp::kNotIn && r.op != SelectorOp::kExists &&
        r.op != SelectorOp::kDoesNotExist)
      return false;
  return true;
}

bool NodeSelectorTerm::Matches(const Labels& node_labels, std::string_view node_name) const {
  if (match_expressions.empty() && match_fields.empty()) return false;
  for (const auto& r : match_expressions)
    if (!r.Matches(node_labels)) return false;
  for (const auto& r : match_fields) {
    if (r.key != "metadata.name") return false;  // the only node field Kubernetes supports
    // MatchValue needs a std::string; compare by hand for the two operators fields allow, so no copy of
    // the name is made on this hot path (static predicates).
    bool in = false;
    for (const auto& v : r.values)
      if (v == node_name) in = true;
    if (r.op == SelectorOp::kIn ? !in : r.op == SelectorOp::kNotIn ? in : true) return false;
  }
  return true;
}

bool NodeSelectorTerm::Valid() const {
  for (const auto& r : match_expressions)
    if (r.op == SelectorOp::kInvalid) return false;
  for (const auto& r : match_fields)
    if (r.op == SelectorOp::kInvalid) return false;
  return true;
}

void ValidateRequirement(const SelectorRequirement& r, SelectorKind kind, const std::string& path,
                         std::vector<SelectorError>* out) {
  if (r.key.empty()) out->push_back({path + ".key", "Required value"});
  const std::string op_path = path + ".operator";
  const std::string vals_path = path + ".values";
  const std::string written = r.op == SelectorOp::kInvalid ? r.op_text : std::string(SelectorOpName(r.op));
  switch (kind) {
    case SelectorKind::kNodeField:
      if (r.key != "metadata.name" && !r.key.empty())
        out->push_back({path + ".key", "Invalid value: \"" + r.key + "\": not a valid field selector key"});
      if (r.op != SelectorOp::kIn && r.op != SelectorOp::kNotIn) {
        out->push_back({op_path, "Unsupported value: \"" + written + "\": supported values: \"In\", \"NotIn\""});
        return;
      }
      if (r.values.size() != 1) out->push_back({vals_path, "must have one element"});
      return;
    case SelectorKind::kLabel:
    case SelectorKind::kNode:
      break;
  }
  switch (r.op) {
    case SelectorOp::kIn:
    case SelectorOp::kNotIn:
      if (r.values.empty()) out->push_back({vals_path, "must be specified when `operator` is 'In' or 'NotIn'"});
      return;
    case SelectorOp::kExists:
    case SelectorOp::kDoesNotExist:
      if (!r.values.empty()) out->push_back({vals_path, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"});
      return;
    case SelectorOp::kGt:
    case SelectorOp::kLt:
      if (kind == SelectorKind::kNode) {
        int64_t v = 0;
        if (r.values.size() != 1) out->push_back({vals_path, "must be specified single value when `operator` is 'Lt' or 'Gt'"});
        else if (!ParseSelectorInt(r.values[0], &v))
          out->push_back({vals_path + "[0]", "Invalid value: \"" + r.values[0] + "\": must be an integer"});
        return;
      }
      [[fallthrough]];
    case SelectorOp::kInvalid:
      out->push_back({op_path, "Unsupported value: \"" + written + "\": supported values: " +
                                   (kind == SelectorKind::kNode
                                        ? "\"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""
                                        : "\"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"")});
      return;
  }
}

void ValidateLabelSelector(const LabelSelector& s, const std::string& path, std::vector<SelectorError>* out) {
  for (size_t i = 0; i < s.match_expressions.size(); ++i)
    ValidateRequirement(s.match_expressions[i], SelectorKind::kLabel,
                        path + ".matchExpressions[" + std::to_string(i) + "]", out);
}

void ValidateNodeSelectorTerm(const NodeSelectorTerm& t, const std::string& path, std::vector<SelectorError>* out) {
  for (size_t i = 0; i < t.match_expressions.size(); ++i)
    ValidateRequirement(t.match_expressions[i], SelectorKind::kNode,
                        path + ".matchExpressions[" + std::to_string(i) + "]", out);
  for (size_t i = 0; i < t.match_fields.size(); ++i)
    ValidateRequirement(t.match_fields[i], SelectorKind::kNodeField, path + ".matchFields[" + std::to_string(i) + "]",
                        out);
}

}  // namespace tephra::core
