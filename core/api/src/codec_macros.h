// Private to tephra_api: generates Decode/Encode pairs from one field list, so the JSON name, the member
// and the omitempty rule of each field are written exactly once.
//
//   #define FOO_FIELDS(F, A) F("name", name) A("port", port)
//   TEPHRA_API_CODEC(Foo, FOO_FIELDS)
//
// F = omitempty (Go `json:",omitempty"`), A = always written (Go tag without omitempty).
#pragma once

#include "tephra/api/codec.h"

#define TEPHRA_API_GET_(name, member) r.Get(name, &out->member);
#define TEPHRA_API_SET_(name, member) w.Set(name, in.member);
#define TEPHRA_API_SETA_(name, member) w.SetAlways(name, in.member);

#define TEPHRA_API_CODEC(Type, FIELDS)                \
  Status Decode(const json& j, Type* out) {           \
    *out = Type{};                                    \
    FieldReader r(j, &out->extra);                    \
    FIELDS(TEPHRA_API_GET_, TEPHRA_API_GET_)          \
    return r.status();                                \
  }                                                   \
  void Encode(const Type& in, json* j) {              \
    FieldWriter w(in.extra, j);                       \
    FIELDS(TEPHRA_API_SET_, TEPHRA_API_SETA_)         \
  }

// Top-level kinds: also apiVersion/kind (read as given, written from Type::Resource()) and Resource().
#define TEPHRA_API_KIND(Type, FIELDS, GROUP, VERSION, PLURAL, NAMESPACED)                          \
  const ResourceInfo& Type::Resource() {                                                           \
    static const ResourceInfo kInfo{GROUP, VERSION, #Type, PLURAL, NAMESPACED};                     \
    return kInfo;                                                                                  \
  }                                                                                                \
  Status Decode(const json& j, Type* out) {                                                        \
    *out = Type{};                                                                                 \
    FieldReader r(j, &out->extra);                                                                 \
    r.Get("apiVersion", &out->api_version).Get("kind", &out->kind);                                \
    FIELDS(TEPHRA_API_GET_, TEPHRA_API_GET_)                                                       \
    return r.status();                                                                             \
  }                                                                                                \
  void Encode(const Type& in, json* j) {                                                           \
    FieldWriter w(in.extra, j);                                                                    \
    w.SetAlways("apiVersion", Type::Resource().ApiVersion())                                        \
        .SetAlways("kind", std::string(Type::Resource().kind));                                     \
    FIELDS(TEPHRA_API_SET_, TEPHRA_API_SETA_)                                                      \
  }
