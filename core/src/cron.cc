#include "tephra/core/cron.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

namespace tephra::core::cron {
namespace {

constexpr int64_t kDay = 86400;
// robfig marks a field given as "*" or "?" with this bit: it decides the day-of-month/day-of-week rule.
constexpr uint64_t kStarBit = uint64_t{1} << 63;

class FixedOffsetZone final : public Zone {
 public:
  FixedOffsetZone(std::string name, int32_t offset) : name_(std::move(name)), offset_(offset) {}
  int32_t OffsetAt(int64_t) const override { return offset_; }
  const std::string& Name() const override { return name_; }

 private:
  std::string name_;
  int32_t offset_;
};

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian, as Go's time package).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = FloorDiv(y, 400);
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, int* m, int* d) {
  z += 719468;
  const int64_t era = FloorDiv(z, 146097);
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  *m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

int64_t ToUnix(Time t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}
Time FromUnix(int64_t s) { return Time(std::chrono::seconds(s)); }

// ------------------------------------------------------------------------------------------------- parsing

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// robfig's mustParseInt: a decimal integer, negative ones refused.
std::optional<int64_t> ParseUint(const std::string& s, std::string* err) {
  std::string_view v = s;
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  if (!v.empty() && v.front() == '-') {
    *err = "negative number (" + s + ") not allowed";
    return std::nullopt;
  }
  if (v.empty() || v.size() > 9 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    *err = "failed to parse int from " + s;
    return std::nullopt;
  }
  return std::stoll(std::string(v));
}

struct Bounds {
  int64_t min, max;
  const std::map<std::string, int64_t>* names;
};

const std::map<std::string, int64_t> kMonths = {{"jan", 1}, {"feb", 2}, {"mar", 3}, {"apr", 4},
                                                {"may", 5}, {"jun", 6}, {"jul", 7}, {"aug", 8},
                                                {"sep", 9}, {"oct", 10}, {"nov", 11}, {"dec", 12}};
const std::map<std::string, int64_t> kDays = {{"sun", 0}, {"mon", 1}, {"tue", 2}, {"wed", 3},
                                              {"thu", 4}, {"fri", 5}, {"sat", 6}};
const Bounds kMinuteB{0, 59, nullptr}, kHourB{0, 23, nullptr}, kDomB{1, 31, nullptr}, kMonthB{1, 12, &kMonths},
    kDowB{0, 6, &kDays};

std::optional<int64_t> IntOrName(const std::string& s, const Bounds& b, std::string* err) {
  if (b.names) {
    if (auto it = b.names->find(Lower(s)); it != b.names->end()) return it->second;
  }
  return ParseUint(s, err);
}

uint64_t Bits(int64_t min, int64_t max, int64_t step) {
  uint64_t bits = 0;
  for (int64_t i = min; i <= max; i += step) bits |= uint64_t{1} << i;
  return bits;
}
uint64_t All(const Bounds& b) { return Bits(b.min, b.max, 1) | kStarBit; }

// robfig's getRange: one comma-separated element "*", "?", "a", "a-b", each with an optional "/step".
std::optional<uint64_t> ParseRange(const std::string& expr, const Bounds& b, std::string* err) {
  std::vector<std::string> range_and_step = Split(expr, '/');
  if (range_and_step.size() > 2) {
    *err = "too many slashes: " + expr;
    return std::nullopt;
  }
  std::vector<std::string> low_high = Split(range_and_step[0], '-');
  const bool single = low_high.size() == 1;
  int64_t start = 0, end = 0, step = 1;
  uint64_t extra = 0;
  if (low_high[0] == "*" || low_high[0] == "?") {
    if (low_high.size() > 1) {
      *err = "too many hyphens: " + expr;
      return std::nullopt;
    }
    start = b.min;
    end = b.max;
    extra = kStarBit;
  } else {
    auto s = IntOrName(low_high[0], b, err);
    if (!s) return std::nullopt;
    start = end = *s;
    if (low_high.size() == 2) {
      auto e = IntOrName(low_high[1], b, err);
      if (!e) return std::nullopt;
      end = *e;
    } else if (low_high.size() > 2) {
      *err = "too many hyphens: " + expr;
      return std::nullopt;
    }
  }
  if (range_and_step.size() == 2) {
    auto st = ParseUint(range_and_step[1], err);
    if (!st) return std::nullopt;
    step = *st;
    // "5/10" means "from 5 to the end, every 10".
    if (single && low_high[0] != "*" && low_high[0] != "?") end = b.max;
    if (step > 1) extra = 0;  // "*/2" is not "*" for the day rule
  }
  if (start < b.min) {
    *err = "beginning of range (" + std::to_string(start) + ") below minimum (" + std::to_string(b.min) + "): " + expr;
    return std::nullopt;
  }
  if (end > b.max) {
    *err = "end of range (" + std::to_string(end) + ") above maximum (" + std::to_string(b.max) + "): " + expr;
    return std::nullopt;
  }
  if (start > end) {
    *err = "beginning of range (" + std::to_string(start) + ") beyond end of range (" + std::to_string(end) +
           "): " + expr;
    return std::nullopt;
  }
  if (step == 0) {
    *err = "step of range should be a positive number: " + expr;
    return std::nullopt;
  }
  return Bits(start, end, step) | extra;
}

std::optional<uint64_t> ParseField(const std::string& field, const Bounds& b, std::string* err) {
  uint64_t bits = 0;
  for (const std::string& part : Split(field, ',')) {
    auto r = ParseRange(part, b, err);
    if (!r) return std::nullopt;
    bits |= *r;
  }
  return bits;
}

// Go's time.ParseDuration, in nanoseconds (units ns us µs μs ms s m h, decimals, a sign, or "0").
std::optional<double> ParseGoDuration(std::string_view s) {
  double sign = 1;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    if (s.front() == '-') sign = -1;
    s.remove_prefix(1);
  }
  if (s == "0") return 0.0;
  if (s.empty()) return std::nullopt;
  static const std::vector<std::pair<std::string_view, double>> kUnits = {
      {"ns", 1}, {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"\xCE\xBCs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
  double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    bool digits = false;
    std::string num;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) num.push_back(s[i++]), digits = true;
    if (i < s.size() && s[i] == '.') {
      num.push_back(s[i++]);
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) num.push_back(s[i++]), digits = true;
    }
    if (!digits) return std::nullopt;
    s.remove_prefix(i);
    const std::pair<std::string_view, double>* unit = nullptr;
    for (const auto& u : kUnits) {
      // "ms" before "m", "ns"/"us" before "s": the list is ordered so the first prefix match is the longest.
      if (s.substr(0, u.first.size()) == u.first && (!unit || u.first.size() > unit->first.size())) unit = &u;
    }
    if (!unit) return std::nullopt;
    s.remove_prefix(unit->first.size());
    total += std::stod(num) * unit->second;
  }
  return sign * total;
}

}  // namespace

const Zone& Utc() {
  static const FixedOffsetZone kUtc("UTC", 0);
  return kUtc;
}

std::shared_ptr<const Zone> FixedZone(std::string name, int32_t offset_seconds) {
  return std::make_shared<FixedOffsetZone>(std::move(name), offset_seconds);
}

Civil ToCivil(int64_t unix_seconds, const Zone& zone) {
  const int64_t local = unix_seconds + zone.OffsetAt(unix_seconds);
  const int64_t days = FloorDiv(local, kDay);
  const int64_t secs = local - days * kDay;
  Civil c{};
  CivilFromDays(days, &c.year, &c.month, &c.day);
  c.hour = static_cast<int>(secs / 3600);
  c.minute = static_cast<int>(secs / 60 % 60);
  c.second = static_cast<int>(secs % 60);
  c.weekday = static_cast<int>(((days % 7) + 11) % 7);  // 1970-01-01 was a Thursday (4)
  return c;
}

int64_t FromCivil(int64_t year, int64_t month, int64_t day, int64_t hour, int64_t minute, int64_t second,
                  const Zone& zone) {
  // Month overflow carries into the year; day, hour, minute and second are plain offsets (Go normalizes the
  // same way).
  int64_t m0 = month - 1;
  year += FloorDiv(m0, 12);
  m0 -= FloorDiv(m0, 12) * 12;
  const int64_t local = (DaysFromCivil(year, m0 + 1, 1) + day - 1) * kDay + hour * 3600 + minute * 60 + second;
  // Go's Date: guess the offset at the wall time read as UTC, then take the offset in effect at the
  // resulting instant. A skipped wall time (02:30 on a New York spring-forward day) lands one hour early
  // (01:30 EST) and a repeated one takes the earlier offset, Go's answers, so Next() walks as in Volcano.
  const int32_t guess = zone.OffsetAt(local);
  return local - zone.OffsetAt(local - guess);
}

std::string FormatRfc3339In(int64_t unix_seconds, const Zone& zone) {
  const Civil c = ToCivil(unix_seconds, zone);
  const int32_t off = zone.OffsetAt(unix_seconds);
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02d-%02dT%02d:%02d:%02d", static_cast<long long>(c.year), c.month,
                        c.day, c.hour, c.minute, c.second);
  std::string out(buf, static_cast<size_t>(n));
  if (off == 0) return out + "Z";
  const int32_t a = off < 0 ? -off : off;
  std::snprintf(buf, sizeof buf, "%c%02d:%02d", off < 0 ? '-' : '+', a / 3600, a / 60 % 60);
  return out + buf;
}

StatusOr<Schedule> Schedule::Parse(std::string_view spec_in) {
  std::string spec(spec_in);
  while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.front()))) spec.erase(spec.begin());
  while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.back()))) spec.pop_back();
  if (spec.empty()) return InvalidArgumentError("empty spec string");
  Schedule s;
  if (spec.rfind("TZ=", 0) == 0 || spec.rfind("CRON_TZ=", 0) == 0) {
    const size_t eq = spec.find('='), sp = spec.find(' ');
    if (sp == std::string::npos) return InvalidArgumentError("provided bad location " + spec.substr(eq + 1));
    s.prefix_zone_ = spec.substr(eq + 1, sp - eq - 1);
    spec = spec.substr(sp);
    while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.front()))) spec.erase(spec.begin());
  }
  if (!spec.empty() && spec.front() == '@') {
    if (spec == "@yearly" || spec == "@annually") {
      s.minute_ = 1, s.hour_ = 1, s.dom_ = 1 << 1, s.month_ = 1 << 1, s.dow_ = All(kDowB);
    } else if (spec == "@monthly") {
      s.minute_ = 1, s.hour_ = 1, s.dom_ = 1 << 1, s.month_ = All(kMonthB), s.dow_ = All(kDowB);
    } else if (spec == "@weekly") {
      s.minute_ = 1, s.hour_ = 1, s.dom_ = All(kDomB), s.month_ = All(kMonthB), s.dow_ = 1;
    } else if (spec == "@daily" || spec == "@midnight") {
      s.minute_ = 1, s.hour_ = 1, s.dom_ = All(kDomB), s.month_ = All(kMonthB), s.dow_ = All(kDowB);
    } else if (spec == "@hourly") {
      s.minute_ = 1, s.hour_ = All(kHourB), s.dom_ = All(kDomB), s.month_ = All(kMonthB), s.dow_ = All(kDowB);
    } else if (spec.rfind("@every ", 0) == 0) {
      auto ns = ParseGoDuration(std::string_view(spec).substr(7));
      if (!ns) return InvalidArgumentError("failed to parse duration " + spec);
      // robfig's Every: at least one second, whole seconds.
      int64_t secs = static_cast<int64_t>(std::trunc(*ns / 1e9));
      s.every_seconds_ = std::max<int64_t>(secs, 1);
    } else {
      return InvalidArgumentError("unrecognized descriptor: " + spec);
    }
    return s;
  }
  std::vector<std::string> fields;
  std::string cur;
  for (char c : spec) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) fields.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) fields.push_back(cur);
  if (fields.size() != 5)
    return InvalidArgumentError("expected exactly 5 fields, found " + std::to_string(fields.size()) + ": [" + spec +
                                "]");
  std::string err;
  const Bounds* bounds[5] = {&kMinuteB, &kHourB, &kDomB, &kMonthB, &kDowB};
  uint64_t* out[5] = {&s.minute_, &s.hour_, &s.dom_, &s.month_, &s.dow_};
  for (size_t i = 0; i < 5; ++i) {
    auto bits = ParseField(fields[i], *bounds[i], &err);
    if (!bits) return InvalidArgumentError(err);
    *out[i] = *bits;
  }
  return s;
}

bool Schedule::DayMatches(const Civil& c) const {
  const bool dom = (uint64_t{1} << c.day) & dom_;
  const bool dow = (uint64_t{1} << c.weekday) & dow_;
  // robfig: when either field is "*", both must match; otherwise either may (Vixie cron's rule).
  if ((dom_ & kStarBit) || (dow_ & kStarBit)) return dom && dow;
  return dom || dow;
}

// robfig/cron v3 SpecSchedule.Next, step for step (the seconds field is always "0"). `t` is already whole
// seconds. Each field is advanced until it matches; an increment that wraps the field restarts from the
// month, since earlier fields may no longer match.
std::optional<int64_t> Schedule::NextSpec(int64_t t, const Zone& zone) const {
  t += 1;  // the earliest possible time is the next second
  bool added = false;
  const int64_t year_limit = ToCivil(t, zone).year + 5;
  auto has = [](uint64_t bits, int v) { return ((uint64_t{1} << v) & bits) != 0; };
wrap:
  Civil c = ToCivil(t, zone);
  if (c.year > year_limit) return std::nullopt;
  while (!has(month_, c.month)) {
    if (!added) {
      added = true;
      t = FromCivil(c.year, c.month, 1, 0, 0, 0, zone);
      c = ToCivil(t, zone);
    }
    t = FromCivil(c.year, c.month + 1, c.day, c.hour, c.minute, c.second, zone);  // AddDate(0, 1, 0)
    c = ToCivil(t, zone);
    if (c.month == 1) goto wrap;
  }
  while (!DayMatches(c)) {
    if (!added) {
      added = true;
      t = FromCivil(c.year, c.month, c.day, 0, 0, 0, zone);
      c = ToCivil(t, zone);
    }
    t = FromCivil(c.year, c.month, c.day + 1, c.hour, c.minute, c.second, zone);  // AddDate(0, 0, 1)
    c = ToCivil(t, zone);
    // A zone whose midnight does not exist (DST at 00:00) lands on 23:00 or 01:00: back to the day's start.
    if (c.hour != 0) {
      t += c.hour > 12 ? (24 - c.hour) * 3600 : -c.hour * 3600;
      c = ToCivil(t, zone);
    }
    if (c.day == 1) goto wrap;
  }
  while (!has(hour_, c.hour)) {
    if (!added) {
      added = true;
      t = FromCivil(c.year, c.month, c.day, c.hour, 0, 0, zone);
      c = ToCivil(t, zone);
    }
    t += 3600;  // absolute hours: a skipped wall hour is skipped, a repeated one is seen twice
    c = ToCivil(t, zone);
    if (c.hour == 0) goto wrap;
  }
  while (!has(minute_, c.minute)) {
    if (!added) {
      added = true;
      t -= ((t % 60) + 60) % 60;  // Truncate(time.Minute)
      c = ToCivil(t, zone);
    }
    t += 60;
    c = ToCivil(t, zone);
    if (c.minute == 0) goto wrap;
  }
  while (c.second != 0) {
    if (!added) added = true;
    t += 1;
    c = ToCivil(t, zone);
    if (c.second == 0) goto wrap;
  }
  return t;
}

std::optional<Time> Schedule::Next(Time t, const Zone& zone) const {
  const int64_t base = ToUnix(t);
  if (every_seconds_) return FromUnix(base + *every_seconds_);
  auto n = NextSpec(base, zone);
  if (!n) return std::nullopt;
  return FromUnix(*n);
}

MostRecent MostRecentScheduleTime(const Schedule& s, const Zone& zone, Time created, std::optional<Time> last_schedule,
                                  std::optional<int64_t> starting_deadline_seconds, Time now) {
  MostRecent r;
  r.earliest = last_schedule ? *last_schedule : created;
  if (starting_deadline_seconds) {
    // Nothing before this point will be started.
    Time deadline = now - std::chrono::seconds(*starting_deadline_seconds);
    if (deadline > r.earliest) r.earliest = deadline;
  }
  auto t1 = s.Next(r.earliest, zone);
  if (t1 && now < *t1) return r;
  auto t2 = t1 ? s.Next(*t1, zone) : std::nullopt;
  if (t1 && t2 && now < *t2) {
    r.most_recent = t1;
    return r;
  }
  // An unsatisfiable schedule ("59 23 31 2 *"): robfig returns the zero time, and the two activations are
  // less than a second apart.
  if (!t1 || !t2 || *t2 - *t1 < std::chrono::milliseconds(500)) {
    r.status = InvalidArgumentError("time difference between two schedules is less than 1 second");
    return r;
  }
  const int64_t between = std::chrono::round<std::chrono::seconds>(*t2 - *t1).count();
  const int64_t elapsed = std::chrono::duration_cast<std::chrono::seconds>(now - *t1).count();
  const int64_t missed = elapsed / between + 1;
  // A rough count of missed activations (Kubernetes' approximation), then robfig walks the last stretch so
  // the most recent one is exact even for irregular schedules ("30 6-16/4 * * 1-5").
  Time potential = *t1 + std::chrono::seconds((missed - 2) * between);
  std::optional<Time> most_recent;
  for (auto t = s.Next(potential, zone); t && *t <= now; t = s.Next(*t, zone)) most_recent = t;
  // More than 100 missed starts means a broken clock or a controller down for a long time: Kubernetes warns
  // (TooManyMissedTimes) and starts only the most recent one.
  if (missed > kTooManyMissed) r.missed = Missed::kMany;
  else if (missed > 0) r.missed = Missed::kFew;
  r.most_recent = most_recent;
  return r;
}

std::optional<std::chrono::milliseconds> RequeueDelay(const Schedule& s, const Zone& zone, Time created,
                                                      std::optional<Time> last_schedule, Time now) {
  MostRecent r = MostRecentScheduleTime(s, zone, created, last_schedule, std::nullopt, now);
  Time from = now;
  if (r.status.ok()) {
    if (r.most_recent) from = *r.most_recent;
    else if (r.missed == Missed::kNone) from = r.earliest;
  }
  auto next = s.Next(from, zone);
  if (!next) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(*next + std::chrono::milliseconds(100) - now);
}

}  // namespace tephra::core::cron
