// Effective training time per job (docs/faults.md, "Effective training time"): the share of a job's wall time,
// since its gang first ran whole, during which it ran whole. Faults, restarts and replacements that leave it
// short of its gang count against it; waiting in the queue before the first full run does not.
//
// The account lives on the PodGroup, so a restarted controller continues it: tephra.io/training-since (first
// time whole), tephra.io/training-lost-seconds (time short of the gang, closed periods) and
// tephra.io/training-short-since (the open short period, if any), and tephra.io/training-until once the job
// ended (its pods all finished, one of them Succeeded). They change only when the gang goes short or whole
// again, or the job ends. The start is written late: a job that has only ever run whole has ratio 1 whatever
// its start, so the controller keeps the start in memory and writes it once the gang has run whole for
// kTrainingPersistAfter (a restart after that keeps the account), or with the first shortage, whichever comes
// first. A job that ends whole sooner (a CI step, a short evaluation) is never written at all: on the
// everyday path of small jobs this was one PodGroup write per job, and a 409 for the scheduler's status
// write that raced it. The gauge tephra_job_effective_training_ratio{namespace,job,podgroup} is refreshed on every
// change of the group's pods and every 30 s, and removed with the PodGroup.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "tephra/api/core_v1.h"
#include "tephra/api/scheduling.h"
#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/metrics.h"

namespace tephra::reconcilers::fault {

inline constexpr const char* kTrainingSinceAnnotation = "tephra.io/training-since";
inline constexpr const char* kTrainingLostAnnotation = "tephra.io/training-lost-seconds";
inline constexpr const char* kTrainingShortSinceAnnotation = "tephra.io/training-short-since";
inline constexpr const char* kTrainingUntilAnnotation = "tephra.io/training-until";

struct TrainingAccount {
  std::optional<core::Clock::WallTime> since;        // first time whole; nullopt: never yet
  double lost_seconds = 0;                            // closed short periods
  std::optional<core::Clock::WallTime> short_since;  // the open short period
  std::optional<core::Clock::WallTime> until;        // the job ended here; the account is closed
};
TrainingAccount ReadTrainingAccount(const api::ObjectMeta& m);

// What the group's pods show now: whole (running >= minMember), or finished (every pod done, one of them
// Succeeded: the job ended, the account stops).
struct GangState {
  bool whole = false;
  bool finished = false;
};

inline constexpr std::chrono::seconds kTrainingPersistAfter{30};

struct TrainingStep {
  api::json annotations = api::json::object();  // merge-patch values; empty when nothing changes
  std::optional<double> ratio;                   // nullopt before the first full run
  // The account's start while it is not on the PodGroup yet: the caller keeps it and passes it back.
  std::optional<core::Clock::WallTime> unwritten_since;
};
// `seen_whole`: the start the caller kept from an earlier step's unwritten_since (nullopt after a restart: the
// account then starts at the next full run, at most kTrainingPersistAfter late).
TrainingStep PlanTraining(const TrainingAccount& account, GangState gang, core::Clock::WallTime now,
                          std::optional<core::Clock::WallTime> seen_whole = std::nullopt);

struct TrainingTimeOptions {
  kube::ClientPtr client;                              // required
  kube::Informer<api::PodGroup>* pod_groups = nullptr;  // required
  kube::Informer<api::Pod>* pods = nullptr;             // required; with FaultReconciler::AddIndexers
  kube::metrics::Registry* registry = nullptr;          // nullptr = Registry::Default()
  const core::Clock* clock = nullptr;                   // nullptr = real clock
};

// Keyed by "<ns>/<PodGroup>".
class TrainingTimeReconciler final : public kube::Reconciler {
 public:
  explicit TrainingTimeReconciler(TrainingTimeOptions opts);
  kube::ReconcileResult Reconcile(const std::string& key) override;
  void RegisterHandlers(kube::Controller& c);

 private:
  TrainingTimeOptions opts_;
  const core::Clock& clock_;
  kube::metrics::GaugeFamily* ratio_ = nullptr;
  // Starts not yet written (TrainingStep::unwritten_since), by PodGroup key, with the uid of the PodGroup they
  // belong to (a job restart replaces its PodGroup under the same name: the new one starts its own account);
  // one entry per live PodGroup at most, dropped once written, finished or deleted.
  struct Unwritten {
    std::string uid;
    core::Clock::WallTime since;
  };
  core::Mutex mu_;
  std::map<std::string, Unwritten> unwritten_ TEPHRA_GUARDED_BY(mu_);
};

}  // namespace tephra::reconcilers::fault
