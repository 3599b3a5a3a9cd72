// Kubernetes resource quantities ("100m", "1.5", "2Gi", "500Mi", "1e3", "0.1"), parsed and computed exactly.
//
// Representation: a signed 128-bit count of nano-units (10^-9), which holds every quantity Kubernetes
// itself accepts at nano precision (up to ~1.7e29 units, far above 8Ei) without rounding. Values with
// more precision than 1n are rounded up, as Kubernetes does when it canonicalizes.
//
// Formatting is canonical in the format the value was parsed in (BinarySI for "Ki".."Ei", DecimalExponent
// for "e"/"E" forms, DecimalSI otherwise), like resource.Quantity.String(): "1500m" stays "1500m",
// "1.5" becomes "1500m", "2048Mi" becomes "2Gi", "1e3" becomes "1e3".
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "tephra/core/status.h"

namespace tephra::core {

class Quantity {
 public:
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  Quantity() = default;

  // Parses a Kubernetes quantity string. Errors (kInvalidArgument) quote the input:
  //   quantity "12x": unknown suffix "x"
  static StatusOr<Quantity> Parse(std::string_view text);
  // Like Parse() but aborts on error; for literals in code and tests only.
  static Quantity MustParse(std::string_view text);

  static Quantity FromMilli(int64_t milli, Format f = Format::kDecimalSI);
  static Quantity FromUnits(int64_t units, Format f = Format::kDecimalSI);

  // Value rounded up to an integer number of units (bytes, GPUs, pods).
  int64_t Value() const;
  // Value in milli-units rounded up ("100m" cpu -> 100, "1" -> 1000). Saturates at INT64_MAX.
  int64_t MilliValue() const;
  __int128 NanoValue() const { return nano_; }
  Format format() const { return format_; }
  bool IsZero() const { return nano_ == 0; }
  int Sign() const { return nano_ < 0 ? -1 : (nano_ > 0 ? 1 : 0); }

  // Canonical string (see file comment).
  std::string ToString() const;

  Quantity& operator+=(const Quantity& o) {
    nano_ += o.nano_;
    return *this;
  }
  Quantity& operator-=(const Quantity& o) {
    nano_ -= o.nano_;
    return *this;
  }
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend Quantity operator-(Quantity a, const Quantity& b) { return a -= b; }
  Quantity operator*(int64_t k) const {
    Quantity q = *this;
    q.nano_ *= k;
    return q;
  }
  // Comparison ignores format: "1Ki" == "1024".
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nano_ == b.nano_; }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.nano_ <=> b.nano_;
  }

 private:
  Quantity(__int128 nano, Format f) : nano_(nano), format_(f) {}
  __int128 nano_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace tephra::core
