#include "tephra/core/quantity.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

// Grammar (the one Kubernetes accepts, minus its leniency towards numbers without digits):
//   quantity := sign? digits ('.' digits?)? suffix | sign? '.' digits suffix
//   suffix   := "" | n u m k M G T P E | Ki Mi Gi Ti Pi Ei | (e|E) sign? digits
// Kubernetes itself parses "Gi", "-" and "." as zero; Tephra rejects them ("no digits") because a manifest
// saying `memory: Gi` is a typo, not a request for nothing.

namespace tephra::core {
namespace {

using i128 = __int128;

constexpr i128 kI128Max = static_cast<i128>((static_cast<unsigned __int128>(1) << 127) - 1);
constexpr int64_t kNanoPerUnit = 1'000'000'000;

Status ParseError(std::string_view text, std::string_view what) {
  std::string msg = "quantity \"";
  msg.append(text);
  msg += "\": ";
  msg.append(what);
  return InvalidArgumentError(std::move(msg));
}

bool MulOverflow(i128 a, i128 b, i128* out) { return __builtin_mul_overflow(a, b, out); }

bool Pow10(int e, i128* out) {
  i128 v = 1;
  for (int i = 0; i < e; ++i)
    if (MulOverflow(v, 10, &v)) return false;
  *out = v;
  return true;
}

struct Suffix {
  int base;  // 10 or 2
  int exponent;
  Quantity::Format format;
};

// Classifies a suffix; false when unknown.
bool InterpretSuffix(std::string_view s, Suffix* out) {
  using F = Quantity::Format;
  if (s.empty()) {
    *out = {10, 0, F::kDecimalSI};
    return true;
  }
  if (s.size() == 1) {
    static constexpr struct {
      char c;
      int e;
    } kDec[] = {{'n', -9}, {'u', -6}, {'m', -3}, {'k', 3}, {'M', 6}, {'G', 9}, {'T', 12}, {'P', 15}, {'E', 18}};
    for (const auto& d : kDec)
      if (d.c == s[0]) {
        *out = {10, d.e, F::kDecimalSI};
        return true;
      }
    return false;
  }
  if (s.size() == 2 && s[1] == 'i') {
    static constexpr struct {
      char c;
      int e;
    } kBin[] = {{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}, {'P', 50}, {'E', 60}};
    for (const auto& b : kBin)
      if (b.c == s[0]) {
        *out = {2, b.e, F::kBinarySI};
        return true;
      }
    return false;
  }
  if (s[0] == 'e' || s[0] == 'E') {
    std::string_view rest = s.substr(1);
    bool neg = false;
    if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
      neg = rest[0] == '-';
      rest.remove_prefix(1);
    }
    if (rest.empty() || rest.size() > 6) return false;  // > 999999 can never be in range anyway
    int e = 0;
    for (char c : rest) {
      if (c < '0' || c > '9') return false;
      e = e * 10 + (c - '0');
    }
    *out = {10, neg ? -e : e, F::kDecimalExponent};
    return true;
  }
  return false;
}

std::string I128ToString(i128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 u = neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (u > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  if (neg) s.push_back('-');
  return std::string(s.rbegin(), s.rend());
}

// Divides rounding away from zero (Kubernetes' "rounded up" for Value()/MilliValue() and parse precision).
i128 DivAwayFromZero(i128 n, i128 d) {
  i128 q = n / d;
  if (n % d != 0) q += (n < 0) ? -1 : 1;
  return q;
}

int64_t SaturateInt64(i128 v) {
  if (v > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return ParseError(text, "empty string");
  size_t pos = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    pos = 1;
  }
  // Mantissa digits, with trailing fractional zeros dropped so long literals like "1.50000000000" fit.
  std::string digits;
  int frac_digits = 0;
  bool any_digit = false;
  bool seen_dot = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c >= '0' && c <= '9') {
      any_digit = true;
      if (digits.empty() && c == '0' && !seen_dot) continue;  // leading zeros of the integer part
      digits.push_back(c);
      if (seen_dot) ++frac_digits;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  if (!any_digit) return ParseError(text, "no digits");
  std::string_view suffix = text.substr(pos);
  if (suffix.find('.') != std::string_view::npos) return ParseError(text, "more than one decimal point");
  if (!suffix.empty() && (suffix[0] == '+' || suffix[0] == '-')) return ParseError(text, "misplaced sign");
  Suffix sfx;
  if (!InterpretSuffix(suffix, &sfx)) return ParseError(text, "unknown suffix \"" + std::string(suffix) + "\"");

  while (frac_digits > 0 && !digits.empty() && digits.back() == '0') {
    digits.pop_back();
    --frac_digits;
  }
  size_t first_nonzero = digits.find_first_not_of('0');
  if (first_nonzero == std::string::npos) return Quantity(0, sfx.format);
  digits.erase(0, first_nonzero);
  if (digits.size() > 38) return ParseError(text, "too many digits");
  i128 mantissa = 0;
  for (char c : digits) mantissa = mantissa * 10 + (c - '0');

  // value = mantissa * 10^(9 - frac + e10) * 2^e2 nano-units.
  int e10 = 9 - frac_digits + (sfx.base == 10 ? sfx.exponent : 0);
  i128 nano = mantissa;
  if (sfx.base == 2) {
    for (int i = 0; i < sfx.exponent; ++i)
      if (MulOverflow(nano, 2, &nano)) return ParseError(text, "value out of range");
  }
  if (e10 >= 0) {
    i128 p;
    if (!Pow10(e10, &p) || MulOverflow(nano, p, &nano)) return ParseError(text, "value out of range");
  } else {
    // More precision than 1n: round up (away from zero), as Kubernetes does.
    i128 p;
    if (!Pow10(-e10, &p)) {
      nano = 1;  // a positive value smaller than 10^-38 nano still rounds up to 1n
    } else {
      nano = DivAwayFromZero(nano, p);
    }
  }
  if (negative) nano = -nano;
  return Quantity(nano, sfx.format);
}

Quantity Quantity::MustParse(std::string_view text) {
  StatusOr<Quantity> q = Parse(text);
  if (!q.ok()) {
    std::fprintf(stderr, "Quantity::MustParse: %s\n", q.status().message().c_str());
    std::abort();
  }
  return *q;
}

Quantity Quantity::FromMilli(int64_t milli, Format f) { return Quantity(static_cast<i128>(milli) * 1'000'000, f); }
Quantity Quantity::FromUnits(int64_t units, Format f) { return Quantity(static_cast<i128>(units) * kNanoPerUnit, f); }

int64_t Quantity::Value() const { return SaturateInt64(DivAwayFromZero(nano_, kNanoPerUnit)); }
int64_t Quantity::MilliValue() const { return SaturateInt64(DivAwayFromZero(nano_, 1'000'000)); }

std::string Quantity::ToString() const {
  if (nano_ == 0) return "0";
  const bool neg = nano_ < 0;
  // |nano_| cannot overflow for values produced by Parse/arithmetic in range; guard the single edge.
  i128 abs = neg ? (nano_ == -kI128Max - 1 ? kI128Max : -nano_) : nano_;
  std::string sign = neg ? "-" : "";

  Format f = format_;
  if (f == Format::kBinarySI) {
    // Like Kubernetes: small magnitudes and non-integers fall back to DecimalSI.
    if (abs < static_cast<i128>(1024) * kNanoPerUnit || abs % kNanoPerUnit != 0) {
      f = Format::kDecimalSI;
    } else {
      i128 units = abs / kNanoPerUnit;
      static constexpr const char* kBin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
      int idx = 0;
      while (idx < 6 && units % 1024 == 0) {
        units /= 1024;
        ++idx;
      }
      return sign + I128ToString(units) + kBin[idx];
    }
  }

  // Decimal: strip factors of ten, then lower the exponent to a multiple of three.
  i128 mantissa = abs;
  int exponent = -9;
  while (mantissa % 10 == 0) {
    mantissa /= 10;
    ++exponent;
  }
  while (((exponent % 3) + 3) % 3 != 0) {
    mantissa *= 10;  // cannot overflow: at most two digits back from what was just removed
    --exponent;
  }
  if (f == Format::kDecimalExponent) {
    if (exponent == 0) return sign + I128ToString(mantissa);
    return sign + I128ToString(mantissa) + "e" + std::to_string(exponent);
  }
  // DecimalSI suffixes stop at E (10^18); larger values keep a bigger mantissa.
  while (exponent > 18) {
    mantissa *= 10;
    --exponent;
  }
  static constexpr const char* kDec[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
  return sign + I128ToString(mantissa) + kDec[(exponent + 9) / 3];
}

}  // namespace tephra::core
