// Field-preserving JSON codec helpers shared by every typed API object.
//
// The rule (issue #2): an object Tephra decodes and re-encodes must keep every field it does not model,
// so an update written by Tephra never drops what a newer API version or another tool set. Each modeled
// struct therefore carries `nlohmann::json extra` holding the keys it did not claim, at every level.
//
//   Status Decode(const json& j, Foo* out) {
//     FieldReader r(j, &out->extra);        // extra = copy of j; each Get() moves its key out
//     r.Get("name", &out->name);
//     r.Get("spec", &out->spec);           // nested struct with its own Decode()
//     return r.status();                   // first type error, naming the JSON path
//   }
//   void Encode(const Foo& in, json* j) {
//     FieldWriter w(in.extra, j);          // start from the unknown fields
//     w.Set("name", in.name);              // omitted when empty/zero (Go's omitempty)
//   }
//
// Decode is strict about types ("spec.replicas: expected integer, got string") but never about unknown
// keys. Decode never throws.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "tephra/core/labels.h"
#include "tephra/core/quantity.h"
#include "tephra/core/status.h"

namespace tephra::api {

using json = nlohmann::json;
using core::Status;
using core::StatusOr;

// Indirect<T>: an optional T kept on the heap. Same interface as std::optional<T> for what API code uses
// (has_value / bool, ->, *, value(), emplace, reset, assignment from T or nullopt; deep copies), but only
// 8 bytes when empty. Used for big, often-absent sub-structs of objects that caches hold by the hundred
// thousand (ContainerState's waiting/running/terminated, Volume sources), where std::optional would
// reserve the full struct inline in every element.
template <typename T>
class Indirect {
 public:
  Indirect() = default;
  Indirect(std::nullopt_t) {}                                     // NOLINT(google-explicit-constructor)
  Indirect(const T& v) : p_(std::make_unique<T>(v)) {}            // NOLINT(google-explicit-constructor)
  Indirect(T&& v) : p_(std::make_unique<T>(std::move(v))) {}      // NOLINT(google-explicit-constructor)
  Indirect(const Indirect& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Indirect(Indirect&&) noexcept = default;
  Indirect& operator=(const Indirect& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Indirect& operator=(Indirect&&) noexcept = default;
  Indirect& operator=(std::nullopt_t) {
    p_.reset();
    return *this;
  }
  Indirect& operator=(const T& v) {
    p_ = std::make_unique<T>(v);
    return *this;
  }
  Indirect& operator=(T&& v) {
    p_ = std::make_unique<T>(std::move(v));
    return *this;
  }
  template <typename... Args>
  T& emplace(Args&&... args) {
    p_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *p_;
  }
  void reset() { p_.reset(); }
  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return p_ != nullptr; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  // Precondition: has_value() (like optional::value() without the exception: a bug, not an input error).
  T& value() { return *p_; }
  const T& value() const { return *p_; }
  friend bool operator==(const Indirect& a, std::nullopt_t) { return !a.p_; }

 private:
  std::unique_ptr<T> p_;
};

// Types with `static Status Decode(const json&, T*)` style free functions are "codec types".
// Overloads for primitives live here; each API header adds Decode/Encode for its structs.
Status Decode(const json& j, std::string* out);
Status Decode(const json& j, bool* out);
Status Decode(const json& j, int32_t* out);
Status Decode(const json& j, int64_t* out);
Status Decode(const json& j, double* out);
Status Decode(const json& j, json* out);  // raw passthrough (unmodeled subtrees)
void Encode(const std::string& v, json* j);
void Encode(bool v, json* j);
void Encode(int32_t v, json* j);
void Encode(int64_t v, json* j);
void Encode(double v, json* j);
void Encode(const json& v, json* j);
// Quantities: decoded from a JSON string ("500m") or number (2, 0.5); encoded as the canonical string.
// Declared here (not in core_v1.h) because Quantity lives in tephra::core, where argument-dependent lookup
// from the container templates below would not find overloads declared later in tephra::api.
Status Decode(const json& j, core::Quantity* out);
void Encode(const core::Quantity& v, json* j);
// Selectors are core types too (tephra/core/labels.h: the one selector model, shared with the scheduling
// core), declared here for the same reason. An unknown operator decodes to kInvalid with its text kept in
// op_text; members the codec does not model are kept as JSON text in `unknown`. Defined in core_v1.cc.
Status Decode(const json& j, core::SelectorRequirement* out);
void Encode(const core::SelectorRequirement& in, json* j);
Status Decode(const json& j, core::LabelSelector* out);
void Encode(const core::LabelSelector& in, json* j);
Status Decode(const json& j, core::NodeSelectorTerm* out);
void Encode(const core::NodeSelectorTerm& in, json* j);

// Prefixes a decode error with one path segment, joining segments the way the file comment shows
// ("spec" + "tasks[1].replicas: ..." -> "spec.tasks[1].replicas: ..."). A message starts with a path when
// its text before the first ": " has no space or quote outside [map keys]; leaf messages ("expected integer,
// got string", `quantity "12x": ...`) always have one.
inline Status PrefixPath(const Status& s, std::string_view segment) {
  const std::string& msg = s.message();
  bool has_path = false;
  int depth = 0;
  for (size_t i = 0; i + 1 < msg.size(); ++i) {
    char c = msg[i];
    if (c == '[') {
      ++depth;
    } else if (c == ']') {
      --depth;
    } else if (depth == 0) {
      if (c == ':' && msg[i + 1] == ' ') {
        has_path = i > 0;
        break;
      }
      if (c == ' ' || c == '"') break;
    }
  }
  std::string out(segment);
  if (has_path) out += (msg[0] == '[' ? "" : ".");
  else out += ": ";
  out += msg;
  return Status(s.code(), std::move(out));
}

// Forward declarations so the container templates can nest in any order (vector<map<...>>, ...).
template <typename T>
Status Decode(const json& j, std::vector<T>* out);
template <typename T>
Status Decode(const json& j, std::map<std::string, T>* out);
template <typename T>
Status Decode(const json& j, std::optional<T>* out);
template <typename T>
Status Decode(const json& j, Indirect<T>* out);
template <typename T>
void Encode(const std::vector<T>& v, json* j);
template <typename T>
void Encode(const std::map<std::string, T>& v, json* j);
template <typename T>
void Encode(const std::optional<T>& v, json* j);
template <typename T>
void Encode(const Indirect<T>& v, json* j);

template <typename T>
Status Decode(const json& j, std::vector<T>* out) {
  out->clear();
  if (j.is_null()) return Status::OK();
  if (!j.is_array()) return core::InvalidArgumentError(std::string("expected array, got ") + j.type_name());
  out->reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    T v{};
    Status s = Decode(j[i], &v);
    if (!s.ok()) return PrefixPath(s, "[" + std::to_string(i) + "]");
    out->push_back(std::move(v));
  }
  return Status::OK();
}
template <typename T>
Status Decode(const json& j, std::map<std::string, T>* out) {
  out->clear();
  if (j.is_null()) return Status::OK();
  if (!j.is_object()) return core::InvalidArgumentError(std::string("expected object, got ") + j.type_name());
  for (auto it = j.begin(); it != j.end(); ++it) {
    T v{};
    Status s = Decode(it.value(), &v);
    if (!s.ok()) return PrefixPath(s, "[" + it.key() + "]");
    out->emplace(it.key(), std::move(v));
  }
  return Status::OK();
}
template <typename T>
Status Decode(const json& j, std::optional<T>* out) {
  if (j.is_null()) {
    out->reset();
    return Status::OK();
  }
  T v{};
  Status s = Decode(j, &v);
  if (!s.ok()) return s;
  *out = std::move(v);
  return Status::OK();
}
template <typename T>
void Encode(const std::vector<T>& v, json* j) {
  *j = json::array();
  for (const auto& e : v) {
    json x;
    Encode(e, &x);
    j->push_back(std::move(x));
  }
}
template <typename T>
void Encode(const std::map<std::string, T>& v, json* j) {
  *j = json::object();
  for (const auto& [k, e] : v) Encode(e, &(*j)[k]);
}
template <typename T>
void Encode(const std::optional<T>& v, json* j) {
  if (v) Encode(*v, j);
  else *j = nullptr;
}
template <typename T>
Status Decode(const json& j, Indirect<T>* out) {
  if (j.is_null()) {
    out->reset();
    return Status::OK();
  }
  T v{};
  Status s = Decode(j, &v);
  if (!s.ok()) return s;
  *out = std::move(v);
  return Status::OK();
}
template <typename T>
void Encode(const Indirect<T>& v, json* j) {
  if (v) Encode(*v, j);
  else *j = nullptr;
}

// Whether a value counts as empty for omitempty purposes.
inline bool IsEmptyValue(const std::string& v) { return v.empty(); }
inline bool IsEmptyValue(bool v) { return !v; }
inline bool IsEmptyValue(int32_t v) { return v == 0; }
inline bool IsEmptyValue(int64_t v) { return v == 0; }
inline bool IsEmptyValue(double v) { return v == 0; }
inline bool IsEmptyValue(const json& v) { return v.is_null(); }
// A resource.Quantity is a struct in Go, so omitempty never drops it.
inline bool IsEmptyValue(const core::Quantity&) { return false; }
template <typename T>
bool IsEmptyValue(const std::vector<T>& v) { return v.empty(); }
template <typename T>
bool IsEmptyValue(const std::map<std::string, T>& v) { return v.empty(); }
template <typename T>
bool IsEmptyValue(const std::optional<T>& v) { return !v.has_value(); }
template <typename T>
bool IsEmptyValue(const Indirect<T>& v) { return !v.has_value(); }
// Structs: empty when the encoding is an empty object.
template <typename T>
  requires std::is_class_v<T>
bool IsEmptyValue(const T& v) {
  json j;
  Encode(v, &j);
  return j.is_null() || (j.is_object() && j.empty());
}

// Reads known keys out of an object, leaving the rest in *extra.
//
// Unknown keys are copied into *extra once, when the reader goes out of scope (so decoding a document is
// linear in its size, rather than copying every subtree once per nesting level). An object with no unknown
// keys leaves *extra null rather than an empty object: an empty nlohmann object still allocates, and
// informer caches hold 150k pods with a dozen structs each.
class FieldReader {
 public:
  FieldReader(const json& j, json* extra) : extra_(extra) {
    *extra_ = nullptr;
    if (j.is_object()) {
      j_ = &j;
    } else if (!j.is_null()) {
      status_ = core::InvalidArgumentError(std::string("expected object, got ") + j.type_name());
    }
  }
  template <typename T>
  FieldReader& Get(std::string_view key, T* out) {
    if (j_ == nullptr) return *this;
    auto it = j_->find(key);
    if (it == j_->end()) return *this;
    if (std::find(claimed_.begin(), claimed_.end(), &it.key()) == claimed_.end()) claimed_.push_back(&it.key());
    if (status_.ok()) {
      Status s = Decode(*it, out);
      if (!s.ok()) status_ = PrefixPath(s, key);
    }
    return *this;
  }
  Status status() const { return status_; }
  ~FieldReader() {
    if (j_ == nullptr || claimed_.size() >= j_->size()) return;
    for (auto it = j_->begin(); it != j_->end(); ++it) {
      bool claimed = false;
      for (const std::string* c : claimed_)
        if (c == &it.key()) claimed = true;
      if (!claimed) (*extra_)[it.key()] = it.value();
    }
  }
  FieldReader(const FieldReader&) = delete;
  FieldReader& operator=(const FieldReader&) = delete;

 private:
  const json* j_ = nullptr;
  json* extra_;
  Status status_;
  std::vector<const std::string*> claimed_;  // keys of *j_ already decoded (addresses are stable)
};

// Writes known keys on top of the unknown ones. Set() omits empty values (Go omitempty);
// SetAlways() writes even zero values (fields without omitempty, or *int pointers that are set).
class FieldWriter {
  template <typename T>
  struct IsContainer : std::false_type {};
  template <typename T>
  struct IsContainer<std::vector<T>> : std::true_type {};
  template <typename T>
  struct IsContainer<std::map<std::string, T>> : std::true_type {};
  template <typename T>
  struct IsContainer<std::optional<T>> : std::true_type {};
  template <typename T>
  struct IsContainer<Indirect<T>> : std::true_type {};

 public:
  FieldWriter(const json& extra, json* j) : j_(j) { *j_ = extra.is_object() ? extra : json::object(); }
  template <typename T>
  FieldWriter& Set(std::string_view key, const T& v) {
    if constexpr (std::is_class_v<T> && !std::is_same_v<T, std::string> && !std::is_same_v<T, json> &&
                  !std::is_same_v<T, core::Quantity> && !IsContainer<T>::value) {
      // Structs: encode once and test the result, instead of encoding twice (IsEmptyValue would
      // re-encode the subtree at every nesting level).
      json tmp;
      Encode(v, &tmp);
      if (tmp.is_null() || (tmp.is_object() && tmp.empty())) j_->erase(std::string(key));
      else (*j_)[std::string(key)] = std::move(tmp);
      return *this;
    }
    if (IsEmptyValue(v)) {
      j_->erase(std::string(key));
      return *this;
    }
    Encode(v, &(*j_)[std::string(key)]);
    return *this;
  }
  template <typename T>
  FieldWriter& SetAlways(std::string_view key, const T& v) {
    Encode(v, &(*j_)[std::string(key)]);
    return *this;
  }

 private:
  json* j_;
};

// Convenience: decode a whole document, with a context prefix on errors.
template <typename T>
StatusOr<T> FromJson(const json& j) {
  T out{};
  Status s = Decode(j, &out);
  if (!s.ok()) return s;
  return out;
}
template <typename T>
json ToJson(const T& v) {
  json j;
  Encode(v, &j);
  return j;
}
// Parses text without throwing; rejects documents nested deeper than max_depth before building a DOM.
StatusOr<json> ParseJson(std::string_view text, int max_depth = 512);

}  // namespace tephra::api
