// CronJob controller (docs/controllers.md, "CronJob"): a pure plan, Volcano's cronjob-controller (itself
// Kubernetes' CronJob controller v2) step for step:
//   1. finished jobs (Completed, Failed, Terminated) leave status.active (SawCompletedJob); the newest
//      Completed job's status.state.lastTransitionTime is status.lastSuccessfulTime; beyond
//      successfulJobsHistoryLimit Completed / failedJobsHistoryLimit Failed jobs, the oldest are deleted.
//   2. an unfinished job controlled by the CronJob but missing from status.active is reported
//      (OrphanedJob, after the executor re-read the CronJob from the API server); an active entry whose job is
//      gone or has another UID is dropped (StaleReference).
//   3. suspend: nothing is started.
//   4. schedule (core/cron.h) in spec.timeZone (UTC without one); the most recent start time not yet run,
//      no earlier than now - startingDeadlineSeconds; more than 100 missed starts: TooManyMissedTimes, and
//      only the most recent one starts.
//   5. concurrencyPolicy: Forbid skips the start while a job is active (ForbidConcurrent; the start time
//      stays unmet, so it runs once the active job finishes, if still within the deadline); Replace deletes
//      the active jobs first (ReplaceConcurrent); Allow starts alongside.
//   6. the job "<cronjob>-<scheduled time in Unix minutes>" (deterministic: a retry or a restarted
//      controller can never start one time twice), with the jobTemplate's labels, annotations and spec, the
//      annotation volcano.sh/cronjob-scheduled-timestamp, and a controller reference to the CronJob; it
//      joins status.active and sets status.lastScheduleTime.
//   7. look again at the next start time (+100 ms).
// Level-triggered: the plan reads only Observed, so running it again on the same world plans the same
// writes, and a job that already exists under the planned name is adopted instead of created again.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/batch.h"
#include "tephra/core/cron.h"
#include "tephra/core/status.h"

namespace tephra::reconcilers::cronjob {

using ZoneLoader = std::function<core::StatusOr<std::shared_ptr<const core::cron::Zone>>(std::string_view)>;

struct Observed {
  api::CronJob cron;
  std::vector<api::Job> owned;  // jobs whose controller reference is this CronJob (its UID)
  // Jobs of the namespace named by status.active entries but not in `owned` (any owner), by name.
  std::map<std::string, api::Job> others;
  core::cron::Time now;
  ZoneLoader load_zone;  // required: tz::Load in the executor, a fake in tests
  // The CronJob was just read from the API server (not the cache): an orphan seen now is real.
  bool fresh = false;
};

struct Event {
  bool warning = false;
  std::string reason, message;
};

struct Actions {
  std::vector<Event> events;            // recorded before the writes below
  std::vector<std::string> delete_jobs;  // history clean-up and Replace, oldest first
  std::optional<api::Job> create;        // the job of `scheduled`
  std::optional<core::cron::Time> scheduled;
  api::CronJobStatus status;             // the status to write when `status_changed`
  bool status_changed = false;
  std::optional<std::chrono::milliseconds> requeue_after;
  bool needs_fresh_read = false;  // an orphan in the cached CronJob: re-read it from the API server, plan again
  core::Status error;             // the reconcile failed (after the writes above)
  bool terminal = false;          // ... and only a spec change can fix it (bad schedule or time zone)
};

// "<cronjob>-<Unix minutes of the scheduled time>" (Volcano's getJobName).
std::string JobName(const std::string& cronjob, core::cron::Time scheduled);
// Phase Completed, Failed or Terminated.
bool IsFinished(const api::Job& job);
// The job for `scheduled` (Volcano's getJobFromTemplate); `annotation_zone` is spec.timeZone's zone.
api::Job BuildJob(const api::CronJob& cron, core::cron::Time scheduled, const core::cron::Zone& annotation_zone);
// status.active entry for a job (Volcano's getRef).
api::ObjectReference RefTo(const api::Job& job);

// What a job that already exists under the planned name means (a create that met AlreadyExists, or one
// found in the cache): ours and unfinished -> it joins status.active and lastScheduleTime is set; ours and
// finished -> nothing (that start already ran); someone else's -> ForeignJob. Returns whether `status`
// changed; appends events.
bool AdoptExisting(const api::CronJob& cron, const api::Job& existing, core::cron::Time scheduled,
                   api::CronJobStatus* status, std::vector<Event>* events);
// After a successful create: SuccessfulCreate, status.active, lastScheduleTime.
void RecordCreated(const api::CronJob& cron, const api::Job& created, core::cron::Time scheduled,
                   api::CronJobStatus* status, std::vector<Event>* events);

Actions Plan(const Observed& obs);

}  // namespace tephra::reconcilers::cronjob
