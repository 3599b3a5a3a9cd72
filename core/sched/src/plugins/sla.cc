// The "sla" plugin: Volcano's service-level waiting time (docs/reservations.md, "Delayed scheduling").
//
// A job may wait at most its waiting time: the plugin argument `sla-waiting-time` for every job, or the
// PodGroup annotation volcano.sh/sla-waiting-time (then sla-waiting-time) for one. Jobs are ordered by the
// moment their wait runs out, jobs with a waiting time ahead of those without; once a job's wait has run out,
// enqueue admits it and allocate pipelines it, holding what it could place for the rest of the cycle instead of
// giving it to the jobs behind. With reservations on (CoreOptions::reservation_depth) the job at the head of
// the order also gets a reservation, which is what makes that hold outlast the cycle.
#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

class SlaPlugin final : public Plugin {
 public:
  explicit SlaPlugin(ArgParser& args)
      : global_(args.PositiveDuration("sla-waiting-time", std::chrono::nanoseconds{0})) {}
  std::string Name() const override { return "sla"; }
  uint32_t Hooks() const override { return kHookJobOrder | kHookJobEnqueueable | kHookJobPipelined; }

  int JobOrder(const Session&, const JobInfo& a, const JobInfo& b) const override {
    const auto wa = WaitingTime(a), wb = WaitingTime(b);
    if (wa.count() <= 0) return wb.count() <= 0 ? 0 : 1;
    if (wb.count() <= 0) return -1;
    const WallTime da = a.creation_time + std::chrono::duration_cast<WallTime::duration>(wa);
    const WallTime db = b.creation_time + std::chrono::duration_cast<WallTime::duration>(wb);
    return da < db ? -1 : (db < da ? 1 : 0);
  }
  Vote JobEnqueueable(const Session& ssn, const JobInfo& j) const override { return Due(ssn, j); }
  Vote JobPipelined(const Session& ssn, const JobInfo& j) const override { return Due(ssn, j); }

 private:
  // The job's own waiting time wins over the plugin's.
  std::chrono::nanoseconds WaitingTime(const JobInfo& j) const {
    if (j.sla_waiting_time.count() > 0) return j.sla_waiting_time;
    return global_;
  }
  Vote Due(const Session& ssn, const JobInfo& j) const {
    const auto w = WaitingTime(j);
    if (w.count() <= 0) return Vote::kAbstain;
    return ssn.now() - j.creation_time < w ? Vote::kAbstain : Vote::kPermit;
  }

  std::chrono::nanoseconds global_;
};

}  // namespace

Made NewSla(const PluginOption& o) { return Make<SlaPlugin>(o); }

}  // namespace tephra::sched::plugins
