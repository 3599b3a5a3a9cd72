// Cron schedules as Volcano's CronJob controller and webhook evaluate them: robfig/cron/v3's ParseStandard
// grammar (five fields minute hour day-of-month month day-of-week, names jan..dec and sun..sat, "*", "?",
// ranges, lists, steps; the descriptors @yearly @annually @monthly @weekly @daily @midnight @hourly and
// "@every <Go duration>"; an optional "TZ=<zone> " or "CRON_TZ=<zone> " prefix), robfig's Next() (including
// its day-of-month/day-of-week OR rule and its daylight-saving behaviour: a wall time skipped by a
// spring-forward transition does not fire that day; one repeated by a fall-back fires twice), and the
// Kubernetes CronJob v2 arithmetic built on it (most recent missed time, "too many missed", requeue delay).
//
// Pure: no clock, no file. Time zones come in through `Zone` (offset from UTC at an instant); the adapter in
// tz/ (tephra_tz, the only cctz user) loads IANA zones, so this header stays usable from every layer.
// One grammar: the webhook validates with Schedule::Parse and the controller runs what Parse returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tephra/core/status.h"

namespace tephra::core::cron {

using Time = std::chrono::system_clock::time_point;

// A time zone: the UTC offset in seconds (east positive) in effect at an instant.
class Zone {
 public:
  virtual ~Zone() = default;
  virtual int32_t OffsetAt(int64_t unix_seconds) const = 0;
  virtual const std::string& Name() const = 0;
};

// UTC. Also the zone of a schedule without timeZone: Go's time.Local is UTC in Volcano's container image,
// and a controller's result must not depend on the host it happens to run on.
const Zone& Utc();
// A zone with one fixed offset (tests, and the "+hh:mm" part of timestamps).
std::shared_ptr<const Zone> FixedZone(std::string name, int32_t offset_seconds);

// Wall-clock fields of an instant in a zone (Go's t.In(loc).Date()/Clock()/Weekday(); weekday 0 = Sunday).
struct Civil {
  int64_t year;
  int month, day, hour, minute, second, weekday;
};
Civil ToCivil(int64_t unix_seconds, const Zone& zone);
// Go's time.Date(y, mo, d, h, mi, s, 0, zone): out-of-range fields normalize (month 13 = January of the next
// year, day 0 = the last day of the previous month), a skipped wall time resolves with the offset before
// the transition and a repeated one with the first offset, exactly as Go does.
int64_t FromCivil(int64_t year, int64_t month, int64_t day, int64_t hour, int64_t minute, int64_t second,
                  const Zone& zone);
// Go's t.In(zone).Format(time.RFC3339): "2026-03-08T03:30:00-04:00", or "...Z" at offset 0.
std::string FormatRfc3339In(int64_t unix_seconds, const Zone& zone);

class Schedule {
 public:
  // robfig ParseStandard. kInvalidArgument with robfig's message ("expected exactly 5 fields, found 4: [...]",
  // "end of range (60) above maximum (59): 60", "unrecognized descriptor: @often", ...).
  static StatusOr<Schedule> Parse(std::string_view spec);

  // The first activation strictly after `t` (sub-second parts of `t` are dropped first, as robfig does),
  // evaluated in `zone` (or, for "@every", `t` plus the delay). nullopt when none comes within five years
  // (e.g. "0 0 30 2 *"), where robfig returns the zero time.
  std::optional<Time> Next(Time t, const Zone& zone) const;

  // The zone named by a "TZ=" / "CRON_TZ=" prefix; "" without one.
  const std::string& prefix_zone() const { return prefix_zone_; }

 private:
  Schedule() = default;
  std::optional<int64_t> NextSpec(int64_t t, const Zone& zone) const;
  bool DayMatches(const Civil& c) const;

  uint64_t minute_ = 0, hour_ = 0, dom_ = 0, month_ = 0, dow_ = 0;
  std::optional<int64_t> every_seconds_;  // "@every": the delay, whole seconds, at least 1
  std::string prefix_zone_;
};

// How many start times were missed since the earliest time considered (Kubernetes' missedSchedulesType).
enum class Missed { kNone, kFew, kMany };

// More than this many missed start times is "too many" (Kubernetes' and Volcano's constant).
inline constexpr int64_t kTooManyMissed = 100;

struct MostRecent {
  Time earliest;                   // lastScheduleTime, else creationTimestamp, raised to now - deadline
  std::optional<Time> most_recent;  // the latest activation <= now, if any since `earliest`
  Missed missed = Missed::kNone;
  Status status;                   // an unsatisfiable schedule ("less than 1 second" between two activations)
};

// Kubernetes' mostRecentScheduleTime: from `last_schedule` (or `created` when unset) and, when
// `starting_deadline_seconds` is given, no earlier than now - deadline.
MostRecent MostRecentScheduleTime(const Schedule& s, const Zone& zone, Time created, std::optional<Time> last_schedule,
                                  std::optional<int64_t> starting_deadline_seconds, Time now);

// Kubernetes' nextScheduleTimeDuration: when to look again (the next activation after the most recent one,
// plus 100 ms against clock skew), relative to `now`. nullopt when the schedule never fires again.
std::optional<std::chrono::milliseconds> RequeueDelay(const Schedule& s, const Zone& zone, Time created,
                                                      std::optional<Time> last_schedule, Time now);

}  // namespace tephra::core::cron
