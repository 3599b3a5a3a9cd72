// The vcjob controller's pure plan: Plan(Observed) -> Actions, no I/O, executed by a thin executor.
//
// Observed is everything the reconciler read from its caches for one job; Actions is a typed list of what
// the executor (reconciler.cc) must do. Plan performs no I/O and reads no clock (`now` is an input), so the
// same Observed always yields the same Actions, and re-planning after the actions took effect yields none
// (tests/unit/reconcilers/job/ check both). docs/job-controller.md explains the state machine and how
// Volcano's edge-triggered pod events are derived from level state without ever applying a restart twice.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tephra/api/batch.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/defaults.h"
#include "tephra/core/status.h"
#include "tephra/api/scheduling.h"
#include "tephra/core/clock.h"
#include "tephra/kube/keygen.h"
#include "plugins/plugin.h"

namespace tephra::reconcilers::job {

// Tephra's own annotation on the PodGroup: the job status.version it was created for. A PodGroup from an
// older version belongs to a run that a full kill ended and is deleted (Volcano deletes it in KillJob).
inline constexpr std::string_view kPodGroupJobVersionAnnotation = "tephra.io/job-version";

// An explicit request that is not visible in object state: a Command (AbortJob, ResumeJob, ...) or the
// executor's TerminateJob after too many failed attempts. Derived pod/task events are computed by Plan.
struct Request {
  std::string action;  // api::kAction*
  std::string event = std::string(api::kEventCommandIssued);
  std::string reason;
  std::string message;
};

struct Observed {
  api::Job job;
  // Pods whose controller owner is this job (by UID).
  std::vector<api::Pod> pods;
  // The job's PodGroup (`<job>-<uid>`, or legacy `<job>`), if cached.
  std::optional<api::PodGroup> pod_group;
  // Plugin-managed objects that exist, by name (only the names plugins use need to be present).
  PluginObjects plugin_objects;
  // Names of PVCs that exist in the job's namespace (at least those the job references).
  std::set<std::string> pvcs;
  // Queue of the job, if known. extendClusters non-empty -> the job is annotated for forwarding.
  std::optional<api::Queue> queue;
  // The queue informer has no queue of that name: syncing fails (Volcano's syncJob stops at the lister's
  // NotFound), so the job is terminated once --max-requeue-num retries failed.
  bool queue_missing = false;
  // PriorityClass values by name (for minResources ordering); missing = 0.
  std::map<std::string, int32_t> priority_classes;
  // Pod UIDs the executor already marked out-of-sync or deleted but the cache has not caught up with yet.
  std::set<std::string> handled_pod_uids;
  std::optional<Request> request;
  core::Clock::WallTime now;
  kube::KeyGenerator* key_generator = nullptr;  // for the ssh plugin; not owned
  // What the mutating webhook would have filled in (the first --scheduler-name is the default schedulerName).
  api::JobDefaultsConfig defaults;
};

struct EventRecord {
  std::string type;  // "Normal" | "Warning"
  std::string reason;
  std::string message;
};

struct Actions {
  // Job metadata/spec update (volumeClaimName write-back, job-forwarding annotation, admission defaults).
  // Full object to PUT.
  std::optional<api::Job> update_job;
  // Set when update_job is the write-back of the admission defaults (docs/job-controller.md, "Admission
  // defaults applied by the controller"): the fields filled, as "spec.queue=default". Such a plan holds
  // nothing else but the `Defaulted` Event; everything else is planned from the job as written.
  std::vector<std::string> defaulted;
  // New full status (PUT /status with the observed resourceVersion); only when it differs.
  std::optional<api::JobStatus> update_status;
  std::vector<api::PersistentVolumeClaim> create_pvcs;
  // Pods to delete: each is first patched with volcano.sh/controller-out-of-sync=true (unless it already
  // carries it), then deleted.
  std::vector<std::string> delete_pods;
  // Pods whose event was acted on but that someone else is already deleting (an eviction): only marked
  // out-of-sync, so they never trigger an action again, even after a controller restart.
  std::vector<std::string> mark_pods;
  std::vector<api::Pod> create_pods;
  std::optional<api::PodGroup> create_pod_group;
  std::optional<api::PodGroup> update_pod_group;  // full object (PodGroup has no status subresource)
  std::optional<std::string> delete_pod_group;
  // The uid of the PodGroup the plan saw: the delete carries it as a precondition, so a plan made on a
  // cache that still shows the killed run's PodGroup never deletes its successor of the same name.
  std::string delete_pod_group_uid;
  PluginObjects create_plugin_objects;
  std::vector<api::ConfigMap> update_config_maps;
  PluginObjectNames delete_plugin_objects;
  // Delete the job itself (TTL after finish), with Foreground propagation.
  bool delete_job = false;
  std::vector<EventRecord> events;
  // Re-run Plan after this long even if nothing changes (policy timeouts, TTL).
  std::optional<std::chrono::milliseconds> requeue_after;
  std::vector<std::string> log;
  // The action the state machine executed ("SyncJob", "RestartJob", ...) and the event behind it; for
  // logs, events and tests.
  std::string action;
  std::string event;
  // Set when SyncJob could not do its work (the job's queue does not exist, a plugin is unknown or refuses
  // the job, a pod cannot be built). The executor still writes what else was planned, then returns this
  // error, so the work queue retries with backoff and, after --max-requeue-num failures, terminates the job:
  // Volcano's handleJobError.
  core::Status sync_error;

  // Nothing to write. Events, log lines, requeue and action do not count: events describe state (a job
  // waiting for its PodGroup re-records PodGroupPending; the recorder aggregates them), they are not state.
  bool Empty() const;
};

Actions Plan(const Observed& obs);

// --- pieces of the plan, exposed for tests ---

// The fields `defaulted` has and `stored` lacks or has with another value, as "path=value" with JSON names
// and indices ("spec.tasks[0].name=default0"; strings bare, other values as JSON), in path order.
std::vector<std::string> DefaultedFields(const api::Job& stored, const api::Job& defaulted);

// A lifecycle event derived from object state (docs/volcano-behaviour.md, "Lifecycle events", in
// level-triggered form).
struct DerivedEvent {
  std::string event;
  std::string task;      // empty for job-level events (Unknown)
  std::string pod;       // pod name for pod events
  std::string partition; // volcano.sh/partition-id of the pod, if any
  std::optional<int32_t> exit_code;
  core::Clock::WallTime since;  // when the condition started (for policy timeouts)
};

// Result of policy resolution (docs/volcano-behaviour.md, "Policy resolution").
struct Resolution {
  std::string action = std::string(api::kActionSyncJob);
  std::optional<std::chrono::nanoseconds> timeout;
};

// First matching task policy (if the event names a task), then job policy; SyncJob when none matches.
Resolution ResolvePolicy(const api::Job& job, const DerivedEvent& ev);

// The pod for task `task` at `index`, fully materialized (docs/volcano-behaviour.md, "Pods of a vcjob") and
// passed through the plugins.
core::StatusOr<api::Pod> BuildPod(const api::Job& job, const api::TaskSpec& task, int index,
                                  const std::vector<JobPluginPtr>& plugins, const PluginContext& ctx);
// The PodGroup for the job (docs/volcano-behaviour.md, "PodGroup of a vcjob (minResources)").
api::PodGroup BuildPodGroup(const api::Job& job, const std::map<std::string, int32_t>& priority_classes);
// Deterministic name suffix of 12 [0-9a-z] characters derived from `seed` (replaces Volcano's random one,
// so that re-planning a job before the write-back lands produces the same PVC and volume names).
std::string StableSuffix(const std::string& seed);

// The pod's index within its task (annotation/label volcano.sh/task-index, else the name's last segment).
int PodIndex(const api::Pod& pod);
// The pod's task (volcano.sh/task-spec annotation, else label).
std::string PodTask(const api::Pod& pod);
// The pod's job-version annotation (0 if missing or garbled).
int32_t PodVersion(const api::Pod& pod);

}  // namespace tephra::reconcilers::job
