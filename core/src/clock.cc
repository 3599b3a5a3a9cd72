#include "tephra/core/clock.h"

#include <cstdio>
#include <ctime>

namespace tephra::core {

std::string FormatRfc3339(Clock::WallTime t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool ParseRfc3339(std::string_view s, Clock::WallTime* out) {
  int y, mo, d, h, mi, sec;
  std::string str(s);
  int consumed = 0;
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &consumed) != 6) return false;
  size_t i = static_cast<size_t>(consumed);
  long nanos = 0;
  if (i < str.size() && str[i] == '.') {
    ++i;
    long scale = 100000000;
    while (i < str.size() && str[i] >= '0' && str[i] <= '9') {
      nanos += (str[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
  }
  long offset = 0;
  if (i < str.size() && (str[i] == 'Z' || str[i] == 'z')) {
    ++i;
  } else if (i < str.size() && (str[i] == '+' || str[i] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(str.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return false;
    offset = (oh * 3600L + om * 60L) * (str[i] == '+' ? 1 : -1);
    i += 6;
  } else {
    return false;
  }
  if (i != str.size()) return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  std::time_t tt = timegm(&tm);
  *out = std::chrono::system_clock::from_time_t(tt - offset) +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(nanos));
  return true;
}

}  // namespace tephra::core
