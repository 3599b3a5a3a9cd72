#include "tephra/api/codec.h"
#include "tephra/api/json_pruned.h"

#include <limits>
#include <set>

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

namespace {

// A DOM builder for nlohmann's (iterative) SAX parser that drops what is nested too deep. The DOM parser of the
// library keeps the same stack of open containers; this one also keeps the path to them.
class PruningBuilder {
 public:
  PruningBuilder(int max_depth, size_t path_components) : max_depth_(max_depth), path_components_(path_components) {}

  bool null() { return Put(json(nullptr)); }
  bool boolean(bool v) { return Put(json(v)); }
  bool number_integer(json::number_integer_t v) { return Put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Put(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return Put(json(v)); }
  bool string(json::string_t& v) { return Put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return Put(json::binary(std::move(v))); }
  bool key(json::string_t& k) {
    if (skip_ == 0) key_ = k;
    return true;
  }
  bool start_object(std::size_t) { return Open(json::value_t::object); }
  bool start_array(std::size_t) { return Open(json::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

  json root;
  std::set<std::vector<std::string>> pruned;
  std::string error_;

 private:
  // The slot the next value goes to, as a path component.
  std::string Slot() const {
    const json* parent = open_.back();
    return parent->is_object() ? key_ : std::to_string(parent->size());
  }
  json* Insert(json v) {
    if (open_.empty()) {
      root = std::move(v);
      return &root;
    }
    json* parent = open_.back();
    if (parent->is_object()) return &((*parent)[key_] = std::move(v));
    parent->push_back(std::move(v));
    return &parent->back();
  }
  bool Put(json v) {
    if (skip_ == 0) Insert(std::move(v));
    return true;
  }
  bool Open(json::value_t type) {
    if (skip_ > 0) {
      ++skip_;
      return true;
    }
    if (static_cast<int>(open_.size()) >= max_depth_) {
      std::vector<std::string> where(path_.begin(), path_.begin() + std::min(path_.size(), path_components_));
      if (where.size() < path_components_) where.push_back(Slot());
      if (pruned.size() < 1000) pruned.insert(std::move(where));
      Insert(json(nullptr));
      skip_ = 1;
      return true;
    }
    std::string slot = open_.empty() ? "" : Slot();
    json* c = Insert(json(type));
    if (!open_.empty()) path_.push_back(std::move(slot));
    open_.push_back(c);
    return true;
  }
  bool Close() {
    if (skip_ > 0) {
      --skip_;
      return true;
    }
    open_.pop_back();
    if (!open_.empty()) path_.pop_back();
    return true;
  }

  const int max_depth_;
  const size_t path_components_;
  std::vector<json*> open_;
  std::vector<std::string> path_;  // path_[i]: where open_[i + 1] sits in open_[i]
  std::string key_;
  int64_t skip_ = 0;  // > 0: inside a dropped container, this many levels deep
};

}  // namespace

StatusOr<PrunedJson> ParseJsonPruned(std::string_view text, int max_depth, size_t path_components) {
  PruningBuilder b(std::max(1, max_depth), path_components);
  const bool ok = json::sax_parse(text.begin(), text.end(), &b);
  if (!ok) return core::InvalidArgumentError("invalid JSON document" + (b.error_.empty() ? "" : ": " + b.error_));
  PrunedJson out;
  out.value = std::move(b.root);
  out.pruned.assign(b.pruned.begin(), b.pruned.end());
  return out;
}

}  // namespace tephra::api
