#include "tephra/api/codec.h"

#include <limits>

namespace tephra::api {
namespace {
Status TypeError(const char* want, const json& j) {
  return core::InvalidArgumentError(std::string("expected ") + want + ", got " + j.type_name());
}
}  // namespace

Status Decode(const json& j, std::string* out) {
  if (j.is_null()) {
    out->clear();
    return Status::OK();
  }
  if (!j.is_string()) return TypeError("string", j);
  *out = j.get_ref<const std::string&>();
  return Status::OK();
}

Status Decode(const json& j, bool* out) {
  if (j.is_null()) {
    *out = false;
    return Status::OK();
  }
  if (!j.is_boolean()) return TypeError("boolean", j);
  *out = j.get<bool>();
  return Status::OK();
}

Status Decode(const json& j, int64_t* out) {
  if (j.is_null()) {
    *out = 0;
    return Status::OK();
  }
  if (j.is_number_integer()) {
    *out = j.get<int64_t>();
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return core::InvalidArgumentError("integer out of range");
    return Status::OK();
  }
  if (j.is_number_float()) {
    double d = j.get<double>();
    // Range check first: converting an out-of-range double to int64 is undefined behaviour
    // (a document may say 1e300 where an integer belongs).
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return core::InvalidArgumentError("integer out of range");
    if (d != static_cast<double>(static_cast<int64_t>(d))) return TypeError("integer", j);
    *out = static_cast<int64_t>(d);
    return Status::OK();
  }
  return TypeError("integer", j);
}

Status Decode(const json& j, int32_t* out) {
  int64_t v = 0;
  Status s = Decode(j, &v);
  if (!s.ok()) return s;
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    return core::InvalidArgumentError("integer " + std::to_string(v) + " out of int32 range");
  *out = static_cast<int32_t>(v);
  return Status::OK();
}

Status Decode(const json& j, double* out) {
  if (j.is_null()) {
    *out = 0;
    return Status::OK();
  }
  if (!j.is_number()) return TypeError("number", j);
  *out = j.get<double>();
  return Status::OK();
}

Status Decode(const json& j, json* out) {
  *out = j;
  return Status::OK();
}

void Encode(const std::string& v, json* j) { *j = v; }
void Encode(bool v, json* j) { *j = v; }
void Encode(int32_t v, json* j) { *j = v; }
void Encode(int64_t v, json* j) { *j = v; }
void Encode(double v, json* j) { *j = v; }
void Encode(const json& v, json* j) { *j = v; }

Status Decode(const json& j, core::Quantity* out) {
  if (j.is_null()) {
    *out = core::Quantity();
    return Status::OK();
  }
  // Go's Quantity.UnmarshalJSON parses an unquoted number's raw text the same way as a string.
  std::string text;
  if (j.is_string()) text = j.get_ref<const std::string&>();
  else if (j.is_number()) text = j.dump();
  else return TypeError("quantity (string or number)", j);
  StatusOr<core::Quantity> q = core::Quantity::Parse(text);
  if (!q.ok()) return q.status();
  *out = *q;
  return Status::OK();
}

void Encode(const core::Quantity& v, json* j) { *j = v.ToString(); }

StatusOr<json> ParseJson(std::string_view text, int max_depth) {
  // Depth is measured by one linear scan before any DOM exists, so a hostile document of 100,000 nested arrays
  // is refused before it costs anything (nlohmann's copy and destruction recurse per level). The scan only
  // tracks brackets outside strings; whatever else is wrong is the parser's to find. A separate scan plus the
  // plain parser is about twice as fast as the parser's per-token callback on API objects (bench/webhook).
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // skip the escaped character
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth)
        return core::InvalidArgumentError("JSON nested deeper than " + std::to_string(max_depth) + " levels");
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  json out = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return core::InvalidArgumentError("invalid JSON document");
  return out;
}

}  // namespace tephra::api
