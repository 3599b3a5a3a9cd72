// CronJob: the schedule model (core/cron.h, with IANA zones from tz/), the pure plan, and the executor
// against the fake API server. Expected activation times marked "robfig" were produced by robfig/cron's
// Next() (the library Volcano's controller uses) with Go's time package, so a difference from Volcano in the
// walk (DST, day-of-month/day-of-week rule, unsatisfiable schedules) fails here.
#include <gtest/gtest.h>

#include "cronjob/plan.h"
#include "cronjob/reconciler.h"
#include "testing/fake_client.h"
#include "tephra/core/clock.h"
#include "tephra/core/cron.h"
#include "tephra/tz/tz.h"

namespace tephra::reconcilers::cronjob {
namespace {

using core::cron::Schedule;
using core::cron::Time;
using kube::testing::FakeClient;
using std::chrono::milliseconds;
using std::chrono::seconds;

Time T(const std::string& s) {
  core::Clock::WallTime t;
  EXPECT_TRUE(core::ParseRfc3339(s, &t)) << s;
  return t;
}

std::shared_ptr<const core::cron::Zone> Zone(const std::string& name) {
  auto z = tz::Load(name);
  EXPECT_TRUE(z.ok()) << z.status();
  return *z;
}

// The first `n` activations after `from`, each as RFC 3339 in `zone`.
std::vector<std::string> NextN(const std::string& spec, const std::string& zone, const std::string& from, int n) {
  auto s = Schedule::Parse(spec);
  EXPECT_TRUE(s.ok()) << s.status();
  auto z = Zone(zone);
  std::vector<std::string> out;
  Time t = T(from);
  for (int i = 0; i < n; ++i) {
    auto next = s->Next(t, *z);
    if (!next) {
      out.push_back("none");
      break;
    }
    t = *next;
    out.push_back(core::cron::FormatRfc3339In(std::chrono::floor<seconds>(t.time_since_epoch()).count(), *z));
  }
  return out;
}

using V = std::vector<std::string>;

// ---------------------------------------------------------------------------------------------- schedule

TEST(CronScheduleParse, GrammarAndMessages) {
  for (const char* ok : {"*/5 * * * *", "0 0 * * *", "0 9-17 * * MON-FRI", "15,45 */2 1 JAN,jul 0", "5/10 * * * *",
                         "? * * * *", "@hourly", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                         "@every 1h30m", "@every 500ms", "  0 0 1-31/2 * sun  ", "TZ=Europe/Berlin 0 6 * * *"})
    EXPECT_TRUE(Schedule::Parse(ok).ok()) << ok;
  struct Case {
    std::string spec, want;
  } bad[] = {{"", "empty spec string"},
             {"* * * *", "expected exactly 5 fields, found 4: [* * * *]"},
             {"0 * * * * *", "expected exactly 5 fields, found 6"},
             {"60 * * * *", "end of range (60) above maximum (59): 60"},
             {"* * 0 * *", "beginning of range (0) below minimum (1): 0"},
             {"5-1 * * * *", "beyond end of range"},
             {"*/0 * * * *", "step of range should be a positive number"},
             {"1/2/3 * * * *", "too many slashes"},
             {"a * * * *", "failed to parse int from a"},
             {"-1 * * * *", "failed to parse int from "},
             {"* * * * 7", "end of range (7) above maximum (6)"},
             {"@fortnightly", "unrecognized descriptor: @fortnightly"},
             {"@every 1x", "failed to parse duration @every 1x"}};
  for (const auto& c : bad) {
    auto s = Schedule::Parse(c.spec);
    ASSERT_FALSE(s.ok()) << c.spec;
    EXPECT_NE(s.status().message().find(c.want), std::string::npos) << c.spec << ": " << s.status().message();
  }
  EXPECT_EQ(Schedule::Parse("CRON_TZ=Asia/Tokyo @daily")->prefix_zone(), "Asia/Tokyo");
}

TEST(CronScheduleNext, DescriptorsInUtc) {
  const std::string from = "2026-11-25T00:00:00Z";  // a Wednesday
  EXPECT_EQ(NextN("@yearly", "UTC", from, 1), V{"2027-01-01T00:00:00Z"});
  EXPECT_EQ(NextN("@annually", "UTC", from, 1), V{"2027-01-01T00:00:00Z"});
  EXPECT_EQ(NextN("@monthly", "UTC", from, 1), V{"2026-12-01T00:00:00Z"});
  EXPECT_EQ(NextN("@weekly", "UTC", from, 2), (V{"2026-11-29T00:00:00Z", "2026-12-06T00:00:00Z"}));
  EXPECT_EQ(NextN("@daily", "UTC", from, 1), V{"2026-11-26T00:00:00Z"});
  EXPECT_EQ(NextN("@midnight", "UTC", from, 1), V{"2026-11-26T00:00:00Z"});
  EXPECT_EQ(NextN("@hourly", "UTC", from, 2), (V{"2026-11-25T01:00:00Z", "2026-11-25T02:00:00Z"}));
  EXPECT_EQ(NextN("@every 90s", "UTC", "2026-11-25T00:00:00.700Z", 2), (V{"2026-11-25T00:01:30Z", "2026-11-25T00:03:00Z"}));
  // Strictly after: an activation time itself is not returned again.
  EXPECT_EQ(NextN("*/5 * * * *", "UTC", "2026-11-25T10:05:00Z", 1), V{"2026-11-25T10:10:00Z"});
}

TEST(CronScheduleNext, MatchesRobfigInUtc) {
  // robfig
  EXPECT_EQ(NextN("*/15 9-17 * * MON-FRI", "UTC", "2026-11-27T16:50:00Z", 3),
            (V{"2026-11-27T17:00:00Z", "2026-11-27T17:15:00Z", "2026-11-27T17:30:00Z"}));
  // Both day fields restricted: either may match (Friday, or the 1st/15th). robfig
  EXPECT_EQ(NextN("0 0 1,15 * 5", "UTC", "2026-11-25T00:00:00Z", 4),
            (V{"2026-11-27T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-04T00:00:00Z", "2026-12-11T00:00:00Z"}));
  EXPECT_EQ(NextN("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", 1), V{"2028-02-29T00:00:00Z"});  // robfig
  // Never within five years: robfig returns the zero time.
  EXPECT_EQ(NextN("0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z", 1), V{"none"});
}

TEST(CronScheduleNext, DaylightSavingMatchesRobfig) {
  // Spring forward (2024-03-10, 02:00 EST -> 03:00 EDT): 02:30 does not exist that day and is skipped. robfig
  EXPECT_EQ(NextN("30 2 * * *", "America/New_York", "2024-03-09T12:00:00-05:00", 3),
            (V{"2024-03-11T02:30:00-04:00", "2024-03-12T02:30:00-04:00", "2024-03-13T02:30:00-04:00"}));
  EXPECT_EQ(NextN("0 * * * *", "America/New_York", "2024-03-10T00:30:00-05:00", 3),
            (V{"2024-03-10T01:00:00-05:00", "2024-03-10T03:00:00-04:00", "2024-03-10T04:00:00-04:00"}));
  // After the change, 09:00 is 13:00Z, not 14:00Z. robfig
  EXPECT_EQ(NextN("0 9 * * *", "America/New_York", "2024-03-09T12:00:00-05:00", 2),
            (V{"2024-03-10T09:00:00-04:00", "2024-03-11T09:00:00-04:00"}));
  EXPECT_EQ(*Schedule::Parse("0 9 * * *")->Next(T("2024-03-09T17:00:00Z"), *Zone("America/New_York")),
            T("2024-03-10T13:00:00Z"));
  // Fall back (2024-11-03, 02:00 EDT -> 01:00 EST): 01:30 happens twice and fires twice. robfig
  EXPECT_EQ(NextN("30 1 * * *", "America/New_York", "2024-11-02T12:00:00-04:00", 3),
            (V{"2024-11-03T01:30:00-04:00", "2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"}));
  EXPECT_EQ(NextN("0 * * * *", "America/New_York", "2024-11-03T00:30:00-04:00", 4),
            (V{"2024-11-03T01:00:00-04:00", "2024-11-03T01:00:00-05:00", "2024-11-03T02:00:00-05:00",
               "2024-11-03T03:00:00-05:00"}));
  // A zone whose midnight was skipped (Sao Paulo, 2018-11-04 00:00 -> 01:00). robfig (v3)
  EXPECT_EQ(NextN("0 0 * * *", "America/Sao_Paulo", "2018-11-03T12:00:00-03:00", 2),
            (V{"2018-11-05T00:00:00-02:00", "2018-11-06T00:00:00-02:00"}));
  // Half-hour offsets. robfig
  EXPECT_EQ(NextN("0 0 * * *", "Asia/Kolkata", "2026-11-25T00:00:00Z", 2),
            (V{"2026-11-26T00:00:00+05:30", "2026-11-27T00:00:00+05:30"}));
}

TEST(CronScheduleNext, TimeZonesLoadLikeGo) {
  EXPECT_TRUE(tz::Load("").ok());
  EXPECT_TRUE(tz::Load("UTC").ok());
  EXPECT_TRUE(tz::Load("Europe/Berlin").ok());
  EXPECT_TRUE(core::IsNotFound(tz::Load("Mars/Olympus").status()));
  EXPECT_FALSE(tz::Load("../../etc/passwd").ok());
  EXPECT_FALSE(tz::Load("/usr/share/zoneinfo/UTC").ok());
  EXPECT_FALSE(tz::Load("Fixed/UTC+01:00").ok());
}

TEST(CronMostRecent, MissedTimesDeadlineAndTooMany) {
  auto s = *Schedule::Parse("*/1 * * * *");
  const auto& utc = core::cron::Utc();
  Time created = T("2026-11-25T10:00:10Z");
  // Three starts missed (10:01, 10:02, 10:03): the most recent is 10:03.
  auto r = core::cron::MostRecentScheduleTime(s, utc, created, std::nullopt, std::nullopt, T("2026-11-25T10:03:30Z"));
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.most_recent, T("2026-11-25T10:03:00Z"));
  EXPECT_EQ(r.missed, core::cron::Missed::kFew);
  // Only one due: reported without a missed count.
  r = core::cron::MostRecentScheduleTime(s, utc, created, std::nullopt, std::nullopt, T("2026-11-25T10:01:30Z"));
  EXPECT_EQ(r.most_recent, T("2026-11-25T10:01:00Z"));
  EXPECT_EQ(r.missed, core::cron::Missed::kNone);
  // startingDeadlineSeconds 20: 10:03 is 30 s late, so nothing may start.
  r = core::cron::MostRecentScheduleTime(s, utc, created, std::nullopt, 20, T("2026-11-25T10:03:30Z"));
  EXPECT_FALSE(r.most_recent);
  // 101 and more missed starts: "many" (and still the most recent one).
  r = core::cron::MostRecentScheduleTime(s, utc, created, std::nullopt, std::nullopt, T("2026-11-25T11:41:05Z"));
  EXPECT_EQ(r.missed, core::cron::Missed::kMany);
  EXPECT_EQ(r.most_recent, T("2026-11-25T11:41:00Z"));
  r = core::cron::MostRecentScheduleTime(s, utc, created, std::nullopt, std::nullopt, T("2026-11-25T11:40:05Z"));
  EXPECT_EQ(r.missed, core::cron::Missed::kFew);  // exactly 100
  // Unsatisfiable: an error, as in Kubernetes.
  auto never = *Schedule::Parse("0 0 30 2 *");
  r = core::cron::MostRecentScheduleTime(never, utc, created, std::nullopt, std::nullopt, T("2026-11-25T11:00:00Z"));
  EXPECT_FALSE(r.status.ok());
  EXPECT_FALSE(core::cron::RequeueDelay(never, utc, created, std::nullopt, T("2026-11-25T11:00:00Z")));
  // Requeue: the next start after the last one, plus 100 ms.
  EXPECT_EQ(core::cron::RequeueDelay(s, utc, created, T("2026-11-25T10:03:00Z"), T("2026-11-25T10:03:30Z")),
            milliseconds(30'100));
}

TEST(CronFormat, Rfc3339InZone) {
  const int64_t t = std::chrono::floor<seconds>(T("2024-03-10T13:00:00Z").time_since_epoch()).count();
  EXPECT_EQ(core::cron::FormatRfc3339In(t, *Zone("America/New_York")), "2024-03-10T09:00:00-04:00");
  EXPECT_EQ(core::cron::FormatRfc3339In(t, core::cron::Utc()), "2024-03-10T13:00:00Z");
  EXPECT_EQ(core::cron::FormatRfc3339In(t, *Zone("Asia/Kolkata")), "2024-03-10T18:30:00+05:30");
}

// ------------------------------------------------------------------------------------------------- plan

api::CronJob Cron(const std::string& schedule = "*/5 * * * *") {
  api::CronJob c;
  c.metadata.name = "cj";
  c.metadata.namespace_ = "ns";
  c.metadata.uid = "cj-uid";
  c.metadata.creation_timestamp = "2026-11-25T10:00:00Z";
  c.spec.schedule = schedule;
  c.spec.job_template.metadata.labels = {{"app", "report"}};
  c.spec.job_template.metadata.annotations = {{"note", "nightly"}};
  c.spec.job_template.spec.min_available = 1;
  c.spec.job_template.spec.queue = "q";
  return c;
}

api::Job OwnedJob(const std::string& name, const std::string& phase, const std::string& created = "",
                  const std::string& finished = "") {
  api::Job j;
  j.metadata.name = name;
  j.metadata.namespace_ = "ns";
  j.metadata.uid = name + "-uid";
  j.metadata.creation_timestamp = created;
  api::OwnerReference r;
  r.kind = "CronJob";
  r.api_version = "batch.volcano.sh/v1alpha1";
  r.name = "cj";
  r.uid = "cj-uid";
  r.controller = true;
  j.metadata.owner_references.push_back(r);
  j.status.state.phase = phase;
  j.status.state.last_transition_time = finished;
  return j;
}

Observed Obs(api::CronJob c, const std::string& now) {
  Observed o;
  o.cron = std::move(c);
  o.now = T(now);
  o.load_zone = [](std::string_view n) { return tz::Load(n); };
  o.fresh = true;
  return o;
}

bool HasEvent(const Actions& a, const std::string& reason) {
  return std::any_of(a.events.begin(), a.events.end(), [&](const Event& e) { return e.reason == reason; });
}

TEST(CronJobPlan, CreatesTheDueJobWithADeterministicName) {
  Actions a = Plan(Obs(Cron(), "2026-11-25T10:07:30Z"));
  ASSERT_TRUE(a.create);
  EXPECT_EQ(a.create->metadata.name, "cj-29926685");  // 10:05 UTC in Unix minutes
  EXPECT_EQ(JobName("cj", T("2026-11-25T10:05:59Z")), "cj-29926685");
  EXPECT_EQ(a.create->metadata.namespace_, "ns");
  EXPECT_EQ(a.create->metadata.labels.at("app"), "report");
  EXPECT_EQ(a.create->metadata.annotations.at("note"), "nightly");
  EXPECT_EQ(a.create->metadata.annotations.at("volcano.sh/cronjob-scheduled-timestamp"), "2026-11-25T10:05:00Z");
  ASSERT_EQ(a.create->metadata.owner_references.size(), 1u);
  const auto& ref = a.create->metadata.owner_references[0];
  EXPECT_EQ(ref.kind, "CronJob");
  EXPECT_EQ(ref.api_version, "batch.volcano.sh/v1alpha1");
  EXPECT_EQ(ref.uid, "cj-uid");
  EXPECT_EQ(ref.controller, true);
  EXPECT_EQ(ref.block_owner_deletion, true);
  EXPECT_EQ(a.create->spec.queue, "q");
  EXPECT_EQ(a.requeue_after, milliseconds(150'100));  // 10:10:00.1
  EXPECT_TRUE(a.error.ok());
}

TEST(CronJobPlan, NothingDueWaitsForTheNextStart) {
  Actions a = Plan(Obs(Cron(), "2026-11-25T10:03:00Z"));
  EXPECT_FALSE(a.create);
  EXPECT_FALSE(a.status_changed);
  EXPECT_EQ(a.requeue_after, milliseconds(120'100));
}

TEST(CronJobPlan, IdempotentAcrossRerunsAndLostStatusWrites) {
  Observed o = Obs(Cron(), "2026-11-25T10:07:30Z");
  Actions first = Plan(o);
  Actions again = Plan(o);
  ASSERT_TRUE(first.create && again.create);
  EXPECT_EQ(api::ToJson(*first.create), api::ToJson(*again.create));
  // The job exists but the status write was lost (crash, 409): it is adopted, not created again.
  o.owned.push_back(OwnedJob("cj-29926685", "Running"));
  o.fresh = true;
  Actions adopt = Plan(o);
  EXPECT_FALSE(adopt.create);
  ASSERT_EQ(adopt.status.active.size(), 1u);
  EXPECT_EQ(adopt.status.active[0].name, "cj-29926685");
  EXPECT_EQ(adopt.status.active[0].uid, "cj-29926685-uid");
  EXPECT_EQ(adopt.status.active[0].kind, "Job");
  EXPECT_EQ(adopt.status.last_schedule_time, "2026-11-25T10:05:00Z");
  EXPECT_TRUE(adopt.status_changed);
  // Once recorded, the same world plans no write at all.
  o.cron.status = adopt.status;
  Actions done = Plan(o);
  EXPECT_FALSE(done.create);
  EXPECT_FALSE(done.status_changed);
  EXPECT_TRUE(done.delete_jobs.empty());
  EXPECT_EQ(done.requeue_after, milliseconds(150'100));
}

TEST(CronJobPlan, OrphanNeedsAFreshReadFirst) {
  Observed o = Obs(Cron(), "2026-11-25T10:07:30Z");
  o.fresh = false;
  o.owned.push_back(OwnedJob("cj-29926680", "Running"));
  Actions a = Plan(o);
  EXPECT_TRUE(a.needs_fresh_read);
  EXPECT_FALSE(a.create);
  o.fresh = true;
  a = Plan(o);
  EXPECT_TRUE(HasEvent(a, "OrphanedJob"));
  EXPECT_TRUE(a.create);  // Allow: the orphan does not stop the due start
}

api::CronJob WithActive(api::CronJob c, const api::Job& j, const std::string& last) {
  c.status.active.push_back(RefTo(j));
  c.status.last_schedule_time = last;
  return c;
}

TEST(CronJobPlan, ConcurrencyPolicies) {
  api::Job running = OwnedJob("cj-29926680", "Running");
  auto obs = [&](const std::string& policy) {
    api::CronJob c = WithActive(Cron(), running, "2026-11-25T10:00:00Z");
    c.spec.concurrency_policy = policy;
    Observed o = Obs(c, "2026-11-25T10:05:10Z");
    o.owned.push_back(running);
    return o;
  };
  // Allow ("" is the default): starts alongside.
  for (const char* p : {"", "Allow"}) {
    Actions a = Plan(obs(p));
    ASSERT_TRUE(a.create) << p;
    EXPECT_TRUE(a.delete_jobs.empty());
  }
  // Forbid: skipped while a job runs; the start time stays unmet (no status change).
  Actions f = Plan(obs("Forbid"));
  EXPECT_FALSE(f.create);
  EXPECT_TRUE(HasEvent(f, "ForbidConcurrent"));
  EXPECT_FALSE(f.status_changed);
  EXPECT_EQ(f.requeue_after, milliseconds(290'100));
  // ... and runs once it finished, still within the deadline.
  Observed later = obs("Forbid");
  later.owned[0].status.state.phase = "Completed";
  later.now = T("2026-11-25T10:06:00Z");
  Actions f2 = Plan(later);
  ASSERT_TRUE(f2.create);
  EXPECT_EQ(f2.create->metadata.name, "cj-29926685");
  EXPECT_TRUE(HasEvent(f2, "SawCompletedJob"));
  // Replace: the running job is deleted, the new one created.
  Actions r = Plan(obs("Replace"));
  ASSERT_TRUE(r.create);
  EXPECT_EQ(r.delete_jobs, std::vector<std::string>{"cj-29926680"});
  EXPECT_TRUE(HasEvent(r, "ReplaceConcurrent"));
  EXPECT_TRUE(r.status.active.empty());  // the created job joins it in the executor
}

TEST(CronJobPlan, StartingDeadline) {
  api::CronJob c = Cron();
  c.status.last_schedule_time = "2026-11-25T10:00:00Z";
  c.spec.starting_deadline_seconds = 60;
  // 10:05 was missed by 150 s > 60 s: not started; the next look is at 10:10.
  Actions a = Plan(Obs(c, "2026-11-25T10:07:30Z"));
  EXPECT_FALSE(a.create);
  EXPECT_EQ(a.requeue_after, milliseconds(150'100));
  // 30 s late is within the deadline.
  a = Plan(Obs(c, "2026-11-25T10:05:30Z"));
  ASSERT_TRUE(a.create);
  EXPECT_EQ(a.create->metadata.name, "cj-29926685");
}

TEST(CronJobPlan, TooManyMissedStartsWarnsAndStartsTheLatest) {
  api::CronJob c = Cron("* * * * *");
  c.metadata.creation_timestamp = "2026-11-24T10:00:00Z";
  Actions a = Plan(Obs(c, "2026-11-25T10:07:30Z"));
  EXPECT_TRUE(HasEvent(a, "TooManyMissedTimes"));
  ASSERT_TRUE(a.create);
  EXPECT_EQ(a.create->metadata.name, "cj-29926687");  // 10:07
  // With a deadline, the count stays small: no warning.
  c.spec.starting_deadline_seconds = 200;
  a = Plan(Obs(c, "2026-11-25T10:07:30Z"));
  EXPECT_FALSE(HasEvent(a, "TooManyMissedTimes"));
  ASSERT_TRUE(a.create);
  EXPECT_EQ(a.create->metadata.name, "cj-29926687");
}

TEST(CronJobPlan, HistoryLimitsAndLastSuccessfulTime) {
  api::CronJob c = Cron();
  c.spec.successful_jobs_history_limit = 2;
  c.spec.failed_jobs_history_limit = 1;
  c.status.last_schedule_time = "2026-11-25T10:05:00Z";
  Observed o = Obs(c, "2026-11-25T10:06:00Z");
  o.owned = {OwnedJob("s1", "Completed", "2026-11-25T09:00:00Z", "2026-11-25T09:01:00Z"),
             OwnedJob("s3", "Completed", "2026-11-25T09:10:00Z", "2026-11-25T09:12:00Z"),
             OwnedJob("s2", "Completed", "2026-11-25T09:05:00Z", "2026-11-25T09:06:00Z"),
             OwnedJob("s4", "Completed", "2026-11-25T09:15:00Z", "2026-11-25T09:16:00Z"),
             OwnedJob("f1", "Failed", "2026-11-25T09:00:00Z"),
             OwnedJob("f2", "Failed", "2026-11-25T09:20:00Z"),
             OwnedJob("t1", "Terminated", "2026-11-25T08:00:00Z"),
             OwnedJob("r1", "Running", "2026-11-25T10:05:00Z")};
  o.cron.status.active = {RefTo(o.owned[3]), RefTo(o.owned[7])};
  Actions a = Plan(o);
  EXPECT_EQ(a.delete_jobs, (std::vector<std::string>{"s1", "s2", "f1"}));  // oldest first; Terminated is kept
  EXPECT_EQ(a.status.last_successful_time, "2026-11-25T09:16:00Z");
  ASSERT_EQ(a.status.active.size(), 1u);
  EXPECT_EQ(a.status.active[0].name, "r1");
  EXPECT_TRUE(HasEvent(a, "SawCompletedJob"));
  EXPECT_TRUE(a.status_changed);
  // A job already being deleted is not deleted again.
  o.owned[0].metadata.deletion_timestamp = "2026-11-25T10:05:59Z";
  a = Plan(o);
  EXPECT_EQ(a.delete_jobs, (std::vector<std::string>{"s2", "f1"}));
}

TEST(CronJobPlan, SuspendStartsNothingButStillTracksJobs) {
  api::Job done = OwnedJob("cj-29926680", "Completed", "2026-11-25T10:00:01Z", "2026-11-25T10:01:00Z");
  api::CronJob c = WithActive(Cron(), done, "2026-11-25T10:00:00Z");
  c.spec.suspend = true;
  Observed o = Obs(c, "2026-11-25T10:07:30Z");
  o.owned.push_back(done);
  Actions a = Plan(o);
  EXPECT_FALSE(a.create);
  EXPECT_FALSE(a.requeue_after);
  EXPECT_TRUE(a.status.active.empty());
  EXPECT_EQ(a.status.last_successful_time, "2026-11-25T10:01:00Z");
}

TEST(CronJobPlan, TimeZoneScheduleAndAnnotation) {
  api::CronJob c = Cron("0 9 * * *");
  c.metadata.creation_timestamp = "2024-03-10T00:00:00Z";
  c.spec.time_zone = "America/New_York";
  // 2024-03-10 09:00 EDT = 13:00Z (the day DST started).
  Actions a = Plan(Obs(c, "2024-03-10T13:00:30Z"));
  ASSERT_TRUE(a.create);
  EXPECT_EQ(a.create->metadata.name, JobName("cj", T("2024-03-10T13:00:00Z")));
  EXPECT_EQ(a.create->metadata.annotations.at("volcano.sh/cronjob-scheduled-timestamp"), "2024-03-10T09:00:00-04:00");
  // Before it: nothing (at 09:00 EST = 14:00Z it would have been an hour late).
  a = Plan(Obs(c, "2024-03-10T12:59:00Z"));
  EXPECT_FALSE(a.create);
  EXPECT_EQ(a.requeue_after, milliseconds(60'100));
}

TEST(CronJobPlan, BadTimeZoneOrScheduleIsTerminal) {
  api::CronJob c = Cron();
  c.spec.time_zone = "Mars/Olympus";
  Actions a = Plan(Obs(c, "2026-11-25T10:07:30Z"));
  EXPECT_TRUE(HasEvent(a, "InvalidTimeZone"));
  EXPECT_TRUE(a.terminal);
  EXPECT_FALSE(a.create);
  a = Plan(Obs(Cron("61 * * * *"), "2026-11-25T10:07:30Z"));
  EXPECT_TRUE(HasEvent(a, "UnParseableCronJobSchedule"));
  EXPECT_TRUE(a.terminal);
  a = Plan(Obs(Cron("0 0 30 2 *"), "2026-11-25T10:07:30Z"));
  EXPECT_TRUE(HasEvent(a, "InvalidSchedule"));
  EXPECT_FALSE(a.create);
}

TEST(CronJobPlan, StaleActiveReferencesAreDropped) {
  api::CronJob c = Cron();
  c.status.last_schedule_time = "2026-11-25T10:05:00Z";
  api::Job gone = OwnedJob("gone", "Running");
  api::Job replaced = OwnedJob("replaced", "Running");
  c.status.active = {RefTo(gone), RefTo(replaced)};
  Observed o = Obs(c, "2026-11-25T10:06:00Z");
  api::Job other = replaced;
  other.metadata.uid = "another-uid";
  other.metadata.owner_references.clear();
  o.others["replaced"] = other;
  Actions a = Plan(o);
  EXPECT_TRUE(a.status.active.empty());
  EXPECT_EQ(std::count_if(a.events.begin(), a.events.end(), [](const Event& e) { return e.reason == "StaleReference"; }), 2);
}

// --------------------------------------------------------------------------------------------- executor

class CronJobReconcilerTest : public ::testing::Test {
 protected:
  CronJobReconcilerTest()
      : clock_(T("2026-11-25T10:00:00Z")), client_(std::make_shared<FakeClient>(&clock_)), cjs_(client_), jobs_(client_) {
    CronJobReconciler::AddIndexers(jobs_);
    CronJobReconcilerOptions o;
    o.client = client_;
    o.cronjobs = &cjs_;
    o.jobs = &jobs_;
    o.clock = &clock_;
    rec_ = std::make_unique<CronJobReconciler>(o);
  }
  void Refresh() {
    cjs_.Replace(std::move(client_->List(api::CronJob::Resource(), "", {}).value().items));
    jobs_.Replace(std::move(client_->List(api::Job::Resource(), "", {}).value().items));
  }
  std::vector<std::string> JobNames() {
    std::vector<std::string> out;
    auto list = client_->List(api::Job::Resource(), "ns", {});
    for (const auto& j : list.value().items) out.push_back(j["metadata"]["name"].get<std::string>());
    return out;
  }
  kube::ReconcileResult Run() {
    Refresh();
    return rec_->Reconcile("ns/cj");
  }
  api::CronJob Get() { return kube::GetAs<api::CronJob>(*client_, "ns", "cj").value(); }

  core::FakeClock clock_;
  std::shared_ptr<FakeClient> client_;
  kube::Informer<api::CronJob> cjs_;
  kube::Informer<api::Job> jobs_;
  std::unique_ptr<CronJobReconciler> rec_;
};

TEST_F(CronJobReconcilerTest, CreatesRecordsRequeuesAndNeverDuplicates) {
  api::CronJob c = Cron();
  c.metadata.uid.clear();
  c.metadata.creation_timestamp.clear();
  client_->Seed(api::CronJob::Resource(), api::ToJson(c));
  auto r = Run();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_TRUE(JobNames().empty());
  ASSERT_TRUE(r.requeue_after);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(*r.requeue_after), milliseconds(300'100));
  clock_.Advance(seconds(301));
  r = Run();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(JobNames(), std::vector<std::string>{"cj-29926685"});
  api::CronJob got = Get();
  ASSERT_EQ(got.status.active.size(), 1u);
  EXPECT_EQ(got.status.active[0].name, "cj-29926685");
  EXPECT_FALSE(got.status.active[0].uid.empty());
  EXPECT_EQ(got.status.last_schedule_time, "2026-11-25T10:05:00Z");
  // Stale caches (the create and the status write not yet seen): AlreadyExists, then a 409 on the status;
  // retriable, and still one job.
  r = rec_->Reconcile("ns/cj");
  EXPECT_FALSE(r.terminal);
  EXPECT_EQ(JobNames(), std::vector<std::string>{"cj-29926685"});
  // Fresh caches: nothing to do.
  r = Run();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(JobNames(), std::vector<std::string>{"cj-29926685"});
}

TEST_F(CronJobReconcilerTest, LostStatusWriteIsRepairedFromTheExistingJob) {
  api::CronJob c = Cron();
  c.metadata.uid.clear();
  c.metadata.creation_timestamp.clear();
  client_->Seed(api::CronJob::Resource(), api::ToJson(c));
  clock_.Advance(seconds(301));
  client_->SetFailureInjector([](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "update" && a.subresource == "status") return core::UnavailableError("injected");
    return std::nullopt;
  });
  EXPECT_FALSE(Run().status.ok());
  EXPECT_EQ(JobNames(), std::vector<std::string>{"cj-29926685"});
  EXPECT_TRUE(Get().status.active.empty());
  client_->SetFailureInjector(nullptr);
  // A restarted controller (fresh caches, the job already there): adopted, not created again.
  auto r = Run();
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(JobNames(), std::vector<std::string>{"cj-29926685"});
  ASSERT_EQ(Get().status.active.size(), 1u);
  EXPECT_EQ(Get().status.last_schedule_time, "2026-11-25T10:05:00Z");
}

}  // namespace
}  // namespace tephra::reconcilers::cronjob
