#include "cronjob/plan.h"

#include <algorithm>
#include <set>

#include "tephra/api/codec.h"
#include "tephra/core/clock.h"

namespace tephra::reconcilers::cronjob {
namespace {

using core::cron::Time;

std::optional<Time> ParseTime(const std::string& s) {
  core::Clock::WallTime t;
  if (s.empty() || !core::ParseRfc3339(s, &t)) return std::nullopt;
  return t;
}

bool InActiveByUid(const api::CronJobStatus& st, const std::string& uid) {
  if (uid.empty()) return false;
  return std::any_of(st.active.begin(), st.active.end(), [&](const api::ObjectReference& r) { return r.uid == uid; });
}

bool InActiveByName(const api::CronJobStatus& st, const std::string& ns, const std::string& name) {
  return std::any_of(st.active.begin(), st.active.end(),
                     [&](const api::ObjectReference& r) { return r.name == name && r.namespace_ == ns; });
}

void RemoveFromActive(api::CronJobStatus* st, const std::string& uid) {
  if (uid.empty()) return;
  std::erase_if(st->active, [&](const api::ObjectReference& r) { return r.uid == uid; });
}

bool ControlledBy(const api::Job& job, const api::CronJob& cron) {
  const api::OwnerReference* ref = job.metadata.ControllerRef();
  return ref && ref->uid == cron.metadata.uid;
}

// Oldest first by creationTimestamp (unset last), then by name (Volcano's byJobCreationTimestamp).
bool OlderThan(const api::Job* a, const api::Job* b) {
  auto ta = ParseTime(a->metadata.creation_timestamp), tb = ParseTime(b->metadata.creation_timestamp);
  if (!ta && tb) return false;
  if (ta && !tb) return true;
  if (ta == tb) return a->metadata.name < b->metadata.name;
  return *ta < *tb;
}

std::string Key(const api::CronJob& c) { return c.metadata.namespace_ + "/" + c.metadata.name; }

}  // namespace

std::string JobName(const std::string& cronjob, Time scheduled) {
  const int64_t minutes = std::chrono::floor<std::chrono::minutes>(scheduled.time_since_epoch()).count();
  return cronjob + "-" + std::to_string(minutes);
}

bool IsFinished(const api::Job& job) {
  const std::string& p = job.status.state.phase;
  return p == api::kJobPhaseCompleted || p == api::kJobPhaseFailed || p == api::kJobPhaseTerminated;
}

api::Job BuildJob(const api::CronJob& cron, Time scheduled, const core::cron::Zone& annotation_zone) {
  api::Job job;
  job.metadata.name = JobName(cron.metadata.name, scheduled);
  job.metadata.namespace_ = cron.metadata.namespace_;
  job.metadata.labels = cron.spec.job_template.metadata.labels;
  job.metadata.annotations = cron.spec.job_template.metadata.annotations;
  const int64_t secs = std::chrono::floor<std::chrono::seconds>(scheduled.time_since_epoch()).count();
  job.metadata.annotations[std::string(api::kCronJobScheduledTimestampAnnotation)] =
      core::cron::FormatRfc3339In(secs, annotation_zone);
  api::OwnerReference ref;
  ref.api_version = api::CronJob::Resource().ApiVersion();
  ref.kind = std::string(api::CronJob::Resource().kind);
  ref.name = cron.metadata.name;
  ref.uid = cron.metadata.uid;
  ref.controller = true;
  ref.block_owner_deletion = true;
  job.metadata.owner_references.push_back(ref);
  job.spec = cron.spec.job_template.spec;
  return job;
}

api::ObjectReference RefTo(const api::Job& job) {
  api::ObjectReference r;
  r.kind = std::string(api::Job::Resource().kind);
  r.namespace_ = job.metadata.namespace_;
  r.name = job.metadata.name;
  r.uid = job.metadata.uid;
  r.api_version = api::Job::Resource().ApiVersion();
  r.resource_version = job.metadata.resource_version;
  return r;
}

bool AdoptExisting(const api::CronJob& cron, const api::Job& existing, Time scheduled, api::CronJobStatus* status,
                   std::vector<Event>* events) {
  if (!ControlledBy(existing, cron)) {
    const api::OwnerReference* ref = existing.metadata.ControllerRef();
    events->push_back({true, "ForeignJob",
                       "Job " + existing.metadata.name + " exists but is not owned by this CronJob (current owner: " +
                           (ref ? ref->name : std::string("none")) + ")"});
    return false;
  }
  if (IsFinished(existing) || InActiveByUid(*status, existing.metadata.uid)) return false;
  status->active.push_back(RefTo(existing));
  status->last_schedule_time = core::FormatRfc3339(scheduled);
  return true;
}

void RecordCreated(const api::CronJob& cron, const api::Job& created, Time scheduled, api::CronJobStatus* status,
                   std::vector<Event>* events) {
  events->push_back({false, "SuccessfulCreate", "Created job " + created.metadata.name + " for CronJob " + Key(cron)});
  if (!InActiveByUid(*status, created.metadata.uid)) status->active.push_back(RefTo(created));
  status->last_schedule_time = core::FormatRfc3339(scheduled);
}

Actions Plan(const Observed& obs) {
  Actions a;
  const api::CronJob& cj = obs.cron;
  api::CronJobStatus& st = a.status;
  st = cj.status;
  auto finish = [&]() -> Actions {
    a.status_changed = api::ToJson(st) != api::ToJson(cj.status);
    return std::move(a);
  };
  if (!cj.metadata.deletion_timestamp.empty()) return finish();

  // 1. Finished jobs: out of status.active, lastSuccessfulTime, history limits.
  std::vector<const api::Job*> succeeded, failed;
  std::optional<Time> last_success = ParseTime(st.last_successful_time);
  for (const api::Job& j : obs.owned) {
    if (!IsFinished(j)) continue;
    if (InActiveByUid(st, j.metadata.uid)) {
      RemoveFromActive(&st, j.metadata.uid);
      a.events.push_back({false, "SawCompletedJob", "Saw completed job: " + j.metadata.name + " in active, remove"});
    }
    if (j.status.state.phase == api::kJobPhaseCompleted) {
      if (auto t = ParseTime(j.status.state.last_transition_time); t && (!last_success || *t > *last_success)) {
        last_success = t;
        st.last_successful_time = j.status.state.last_transition_time;
      }
      succeeded.push_back(&j);
    } else if (j.status.state.phase == api::kJobPhaseFailed) {
      failed.push_back(&j);  // Terminated counts against neither limit (as in Volcano)
    }
  }
  auto prune = [&](std::vector<const api::Job*> jobs, std::optional<int32_t> limit) {
    if (!limit || static_cast<int64_t>(jobs.size()) <= *limit) return;
    std::sort(jobs.begin(), jobs.end(), OlderThan);
    const size_t n = jobs.size() - static_cast<size_t>(std::max<int32_t>(*limit, 0));
    for (size_t i = 0; i < n; ++i) {
      RemoveFromActive(&st, jobs[i]->metadata.uid);
      // Already being deleted: a second delete would only repeat the event.
      if (jobs[i]->metadata.deletion_timestamp.empty()) a.delete_jobs.push_back(jobs[i]->metadata.name);
    }
  };
  prune(succeeded, cj.spec.successful_jobs_history_limit);
  prune(failed, cj.spec.failed_jobs_history_limit);

  // 2. Orphans and stale references.
  std::set<std::string> owned_uids;
  for (const api::Job& j : obs.owned) {
    owned_uids.insert(j.metadata.uid);
    if (IsFinished(j) || InActiveByUid(st, j.metadata.uid)) continue;
    // The cached CronJob may predate our own status write that listed this job: only the API server's copy
    // can tell an orphan (Volcano re-reads the CronJob the same way).
    if (!obs.fresh) {
      a.needs_fresh_read = true;
      return finish();
    }
    a.events.push_back({true, "OrphanedJob", "Detected orphaned job forgotten or not managed by controller: " +
                                                 j.metadata.name + " (UID: " + j.metadata.uid + ")"});
  }
  for (const api::ObjectReference& ref : std::vector<api::ObjectReference>(st.active)) {
    if (owned_uids.count(ref.uid)) continue;
    auto it = obs.others.find(ref.name);
    if (it == obs.others.end()) {
      a.events.push_back({true, "StaleReference", "Active job \"" + ref.name + "\" no longer exists (UID: " + ref.uid + ")"});
      RemoveFromActive(&st, ref.uid);
    } else if (it->second.metadata.uid != ref.uid) {
      a.events.push_back({true, "StaleReference", "Active job reference \"" + ref.name +
                                                      "\" points to a different UID (expected: " + ref.uid +
                                                      ", actual: " + it->second.metadata.uid + ")"});
      RemoveFromActive(&st, ref.uid);
    }
  }

  // 3. Suspended: nothing starts (and nothing to wait for: un-suspending is a spec change).
  if (cj.spec.suspend.value_or(false)) return finish();

  // 4. Time zone, schedule, the start time due.
  auto spec_zone = obs.load_zone(cj.spec.time_zone.value_or(""));
  if (!spec_zone.ok()) {
    a.events.push_back({true, "InvalidTimeZone", "Invalid time zone \"" + cj.spec.time_zone.value_or("") +
                                                     "\": " + spec_zone.status().message()});
    a.error = spec_zone.status();
    a.terminal = true;
    return finish();
  }
  const bool tz_in_schedule = cj.spec.schedule.find("TZ") != std::string::npos;
  if (tz_in_schedule)
    a.events.push_back({true, "UnsupportedSchedule", "CRON_TZ or TZ in the schedule \"" + cj.spec.schedule +
                                                         "\" is not officially supported. If set, the TimeZone "
                                                         "field will be ignored during execution."});
  auto sched = core::cron::Schedule::Parse(cj.spec.schedule);
  std::shared_ptr<const core::cron::Zone> zone = *spec_zone;
  if (sched.ok() && tz_in_schedule && !sched->prefix_zone().empty()) {
    auto z = obs.load_zone(sched->prefix_zone());
    if (!z.ok()) sched = core::InvalidArgumentError("provided bad location " + sched->prefix_zone() + ": " + z.status().message());
    else zone = *z;
  }
  if (!sched.ok()) {
    a.events.push_back({true, "UnParseableCronJobSchedule", "unparseable schedule for cronjob: " + cj.spec.schedule});
    a.error = sched.status();
    a.terminal = true;
    return finish();
  }
  Time created = ParseTime(cj.metadata.creation_timestamp).value_or(obs.now);
  auto requeue = [&](std::optional<Time> last) {
    a.requeue_after = core::cron::RequeueDelay(*sched, *zone, created, last, obs.now);
    if (a.requeue_after && *a.requeue_after < std::chrono::milliseconds(0)) a.requeue_after = std::chrono::milliseconds(0);
  };
  const std::optional<Time> last = ParseTime(st.last_schedule_time);
  core::cron::MostRecent mr =
      core::cron::MostRecentScheduleTime(*sched, *zone, created, last, cj.spec.starting_deadline_seconds, obs.now);
  if (!mr.most_recent || *mr.most_recent > obs.now) {
    if (!mr.status.ok()) {
      a.events.push_back({true, "InvalidSchedule", "Error getting schedule time: " + mr.status.message()});
      a.error = mr.status;
      a.terminal = true;
      return finish();
    }
    requeue(last);
    return finish();
  }
  const Time scheduled = *mr.most_recent;
  if (mr.missed == core::cron::Missed::kMany)
    a.events.push_back({true, "TooManyMissedTimes",
                        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"});
  const std::string name = JobName(cj.metadata.name, scheduled);
  if (InActiveByName(st, cj.metadata.namespace_, name) || last == scheduled) {
    requeue(last);
    return finish();
  }

  // 5. Concurrency policy.
  if (cj.spec.concurrency_policy == api::kConcurrencyForbid && !st.active.empty()) {
    a.events.push_back({true, "ForbidConcurrent", "Skipping job creation because another job is already running"});
    requeue(last);
    return finish();
  }
  if (cj.spec.concurrency_policy == api::kConcurrencyReplace && !st.active.empty()) {
    a.events.push_back({true, "ReplaceConcurrent", "Replacing active job for CronJob"});
    for (const api::ObjectReference& ref : st.active)
      if (std::find(a.delete_jobs.begin(), a.delete_jobs.end(), ref.name) == a.delete_jobs.end())
        a.delete_jobs.push_back(ref.name);
    st.active.clear();
  }

  // 6. The job: adopted when the cache already has it (an earlier pass created it but its status write was
  // lost), else created by the executor.
  auto existing = std::find_if(obs.owned.begin(), obs.owned.end(),
                               [&](const api::Job& j) { return j.metadata.name == name; });
  a.scheduled = scheduled;
  if (existing != obs.owned.end()) {
    AdoptExisting(cj, *existing, scheduled, &st, &a.events);
  } else {
    auto annotation_zone = obs.load_zone(cj.spec.time_zone.value_or(""));
    a.create = BuildJob(cj, scheduled, **annotation_zone);
  }
  // 7. The next look: computed as if this start was recorded (Volcano computes it after the status change).
  requeue(scheduled);
  return finish();
}

}  // namespace tephra::reconcilers::cronjob
