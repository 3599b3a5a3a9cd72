#include "tephra/core/duration.h"

#include <cstdint>
#include <limits>

namespace tephra::core {
namespace {

Status DurationError(std::string_view text, std::string_view what) {
  return core::InvalidArgumentError("duration \"" + std::string(text) + "\": " + std::string(what));
}

// Unit -> nanoseconds; 0 when unknown. Go accepts both micro signs (U+00B5 and U+03BC).
int64_t UnitNanos(std::string_view u) {
  if (u == "ns") return 1;
  if (u == "us" || u == "\xc2\xb5s" || u == "\xce\xbcs") return 1'000;
  if (u == "ms") return 1'000'000;
  if (u == "s") return 1'000'000'000;
  if (u == "m") return 60LL * 1'000'000'000;
  if (u == "h") return 3600LL * 1'000'000'000;
  return 0;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

StatusOr<std::chrono::nanoseconds> ParseGoDuration(std::string_view text) {
  std::string_view s = text;
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) return DurationError(text, "empty");
  __int128 total = 0;
  while (!s.empty()) {
    __int128 whole = 0;
    size_t i = 0;
    bool digits = false;
    while (i < s.size() && IsDigit(s[i])) {
      whole = whole * 10 + (s[i] - '0');
      if (whole > std::numeric_limits<int64_t>::max()) return DurationError(text, "overflow");
      digits = true;
      ++i;
    }
    __int128 frac = 0, scale = 1;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && IsDigit(s[i])) {
        if (scale < static_cast<__int128>(1'000'000'000'000'000'000LL)) {  // extra digits cannot matter
          frac = frac * 10 + (s[i] - '0');
          scale *= 10;
        }
        digits = true;
        ++i;
      }
    }
    if (!digits) return DurationError(text, "missing number");
    size_t u = i;
    while (u < s.size() && !IsDigit(s[u]) && s[u] != '.') ++u;
    std::string_view unit = s.substr(i, u - i);
    if (unit.empty()) return DurationError(text, "missing unit");
    int64_t per = UnitNanos(unit);
    if (per == 0) return DurationError(text, "unknown unit \"" + std::string(unit) + "\"");
    total += whole * per + frac * per / scale;
    if (total > std::numeric_limits<int64_t>::max()) return DurationError(text, "overflow");
    s.remove_prefix(u);
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(neg ? -total : total));
}

namespace {
// Appends v / 10^prec with trailing fractional zeros trimmed ("1.5", "2").
void AppendFrac(std::string* out, uint64_t v, int prec) {
  uint64_t p = 1;
  for (int i = 0; i < prec; ++i) p *= 10;
  *out += std::to_string(v / p);
  uint64_t f = v % p;
  if (f == 0) return;
  std::string digits = std::to_string(f);
  digits.insert(0, static_cast<size_t>(prec) - digits.size(), '0');
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  *out += "." + digits;
}
}  // namespace

std::string FormatGoDuration(std::chrono::nanoseconds d) {
  int64_t n = d.count();
  if (n == 0) return "0s";
  std::string out = n < 0 ? "-" : "";
  uint64_t u = n < 0 ? static_cast<uint64_t>(-(n + 1)) + 1 : static_cast<uint64_t>(n);
  if (u < 1'000'000'000ULL) {
    if (u < 1'000ULL) return out + std::to_string(u) + "ns";
    if (u < 1'000'000ULL) {
      AppendFrac(&out, u, 3);
      return out + "\xc2\xb5s";
    }
    AppendFrac(&out, u, 6);
    return out + "ms";
  }
  uint64_t hours = u / 3'600'000'000'000ULL;
  uint64_t rem = u % 3'600'000'000'000ULL;
  uint64_t mins = rem / 60'000'000'000ULL;
  uint64_t secs_nanos = rem % 60'000'000'000ULL;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (hours > 0 || mins > 0) out += std::to_string(mins) + "m";
  AppendFrac(&out, secs_nanos, 9);
  return out + "s";
}

}  // namespace tephra::core
