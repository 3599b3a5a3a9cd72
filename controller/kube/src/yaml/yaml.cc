// YAML <-> JSON for command-line manifests. The only yaml-cpp user outside the kubeconfig loader; exceptions
// from yaml-cpp and nlohmann are caught here and returned as Status.
#include "tephra/kube/yaml.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <regex>
#include <sstream>
#include <string_view>

namespace tephra::kube {
namespace {

using api::json;

bool OneOf(std::string_view s, std::initializer_list<std::string_view> set) {
  for (auto v : set)
    if (s == v) return true;
  return false;
}

// Integer forms of go-yaml v2 (strconv.ParseInt with base 0 after dropping '_'): decimal, 0x, 0o, 0b and
// leading-0 octal, with an optional sign.
bool ParseInt(std::string_view in, json* out) {
  std::string s;
  for (char c : in)
    if (c != '_') s += c;
  if (s.empty()) return false;
  bool neg = false;
  size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    i = 1;
  }
  int base = 10;
  if (s.size() > i + 1 && s[i] == '0') {
    char p = s[i + 1];
    if (p == 'x' || p == 'X') base = 16, i += 2;
    else if (p == 'o' || p == 'O') base = 8, i += 2;
    else if (p == 'b' || p == 'B') base = 2, i += 2;
    else base = 8, i += 1;
  }
  if (i >= s.size()) return false;
  uint64_t mag = 0;
  auto [p, ec] = std::from_chars(s.data() + i, s.data() + s.size(), mag, base);
  if (ec != std::errc() || p != s.data() + s.size()) return false;
  if (neg) {
    if (mag > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = mag == static_cast<uint64_t>(INT64_MAX) + 1 ? INT64_MIN : -static_cast<int64_t>(mag);
  } else if (mag <= static_cast<uint64_t>(INT64_MAX)) {
    *out = static_cast<int64_t>(mag);
  } else {
    *out = mag;
  }
  return true;
}

enum class Plain { kString, kNull, kBool, kNumber, kNonJson };

// Resolves a plain (unquoted, untagged) scalar the way kubectl's decoder does.
Plain Resolve(const std::string& s, json* out) {
  if (OneOf(s, {"", "~", "null", "Null", "NULL"})) {
    *out = nullptr;
    return Plain::kNull;
  }
  if (OneOf(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
    *out = true;
    return Plain::kBool;
  }
  if (OneOf(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
    *out = false;
    return Plain::kBool;
  }
  if (OneOf(s, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN",
                ".NAN"}))
    return Plain::kNonJson;
  if (std::string_view("+-.0123456789").find(s[0]) == std::string_view::npos) {
    *out = s;
    return Plain::kString;
  }
  if (ParseInt(s, out)) return Plain::kNumber;
  static const std::regex kFloat(R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$)");
  std::string plain;
  for (char c : s)
    if (c != '_') plain += c;
  if (std::regex_match(plain, kFloat)) {
    try {
      double d = std::stod(plain);
      if (!std::isfinite(d)) return Plain::kNonJson;
      *out = d;
      return Plain::kNumber;
    } catch (...) {
      return Plain::kNonJson;
    }
  }
  *out = s;
  return Plain::kString;
}

std::string Where(const YAML::Mark& m) {
  if (m.line < 0) return "";
  return " (line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1) + ")";
}

core::Status ToJson(const YAML::Node& n, const std::string& path, json* out) {
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      *out = nullptr;
      return core::Status::OK();
    case YAML::NodeType::Scalar: {
      const std::string& tag = n.Tag();
      if (tag == "!" || tag == "tag:yaml.org,2002:str") {  // quoted, or explicitly a string
        *out = n.Scalar();
        return core::Status::OK();
      }
      if (Resolve(n.Scalar(), out) == Plain::kNonJson)
        return core::InvalidArgumentError(path + ": " + n.Scalar() + " cannot be represented in JSON" + Where(n.Mark()));
      return core::Status::OK();
    }
    case YAML::NodeType::Sequence: {
      *out = json::array();
      size_t i = 0;
      for (const auto& e : n) {
        json v;
        TEPHRA_RETURN_IF_ERROR(ToJson(e, path + "[" + std::to_string(i++) + "]", &v));
        out->push_back(std::move(v));
      }
      return core::Status::OK();
    }
    case YAML::NodeType::Map: {
      *out = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar())
          return core::InvalidArgumentError(path + ": a mapping key must be a scalar" + Where(kv.first.Mark()));
        const std::string key = kv.first.Scalar();
        json v;
        TEPHRA_RETURN_IF_ERROR(ToJson(kv.second, path.empty() ? key : path + "." + key, &v));
        (*out)[key] = std::move(v);
      }
      return core::Status::OK();
    }
  }
  return core::Status::OK();
}

bool IsSeparator(std::string_view line) {
  return line.substr(0, 3) == "---" && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

// The 1-based document a parser error at `line` (0-based) belongs to: separators above it, plus one when
// content precedes the first separator (a stream may or may not open with "---").
int DocumentOfLine(const std::string& text, int line) {
  std::istringstream in(text);
  std::string l;
  int n = 0, doc = 0;
  bool content_before_first = false, seen_separator = false;
  while (n <= line && std::getline(in, l)) {
    if (IsSeparator(l)) {
      ++doc;
      seen_separator = true;
    } else if (!seen_separator) {
      auto first = l.find_first_not_of(" \t\r");
      if (first != std::string::npos && l[first] != '#') content_before_first = true;
    }
    ++n;
  }
  return std::max(1, doc + (content_before_first ? 1 : 0));
}

// YAML 1.1 timestamps stay strings when read here, but kubectl and other YAML 1.1 readers would turn them
// into times: quote them, as kubectl's -o yaml does.
bool LooksLikeTimestamp(const std::string& s) {
  static const std::regex kTs(R"(^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?$)");
  return std::regex_match(s, kTs);
}

void Emit(const json& j, YAML::Emitter* e) {
  switch (j.type()) {
    case json::value_t::object:
      if (j.empty()) {
        *e << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      *e << YAML::BeginMap;
      for (auto it = j.begin(); it != j.end(); ++it) {
        *e << YAML::Key;
        Emit(json(it.key()), e);
        *e << YAML::Value;
        Emit(it.value(), e);
      }
      *e << YAML::EndMap;
      return;
    case json::value_t::array:
      if (j.empty()) {
        *e << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      *e << YAML::BeginSeq;
      for (const auto& v : j) Emit(v, e);
      *e << YAML::EndSeq;
      return;
    case json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      json probe;
      // Multi-line strings are double-quoted too: yaml-cpp's literal blocks cannot say "no final newline".
      if (s.find('\n') != std::string::npos || Resolve(s, &probe) != Plain::kString || LooksLikeTimestamp(s)) {
        *e << YAML::DoubleQuoted << s;
      } else {
        *e << s;
      }
      return;
    }
    case json::value_t::null:
      *e << YAML::Null;
      return;
    case json::value_t::boolean:
      *e << (j.get<bool>() ? "true" : "false");
      return;
    default:  // numbers: nlohmann's shortest round-trip text
      *e << j.dump();
      return;
  }
}

}  // namespace

core::StatusOr<std::vector<json>> YamlDocumentsToJson(const std::string& text, const std::string& source_name) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    return core::InvalidArgumentError(source_name + ": document " + std::to_string(DocumentOfLine(text, e.mark.line)) +
                                      ": " + e.msg + Where(e.mark));
  }
  std::vector<json> out;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (!docs[i] || docs[i].IsNull()) continue;
    json j;
    core::Status s = ToJson(docs[i], "", &j);
    if (!s.ok()) return core::InvalidArgumentError(source_name + ": document " + std::to_string(i + 1) + ": " + s.message());
    out.push_back(std::move(j));
  }
  return out;
}

std::string JsonToYaml(const json& value) {
  YAML::Emitter e;
  e.SetIndent(2);
  Emit(value, &e);
  std::string s = e.c_str();
  if (s.empty() || s.back() != '\n') s += '\n';
  return s;
}

}  // namespace tephra::kube
