// The "backfill" action: best-effort pending tasks (nothing requested but a pod slot) of admitted jobs go
// to the best-scored node (the session's NodeScore: nodeorder, binpack, ...) among those that pass the
// predicates and have a free pod slot, as Volcano's backfill does. Ties go to the first node in the state's
// node order, so a cycle's choice is deterministic (Volcano picks among ties at random).
#include <algorithm>
#include <vector>

#include "actions.h"

namespace tephra::sched::actions {

namespace {

class Backfill final : public Action {
 public:
  std::string_view Name() const override { return "backfill"; }
  void Execute(Session& ssn) override {
    ClusterState& st = ssn.mutable_state();
    const bool enqueue_on = ssn.ActionConfigured("enqueue");
    std::vector<const JobInfo*> jobs;
    st.ForEachJob([&](const JobInfo& j) {
      if (j.pending_best_effort <= 0) return;
      if (enqueue_on && j.phase == PodGroupPhase::kPending) return;
      jobs.push_back(&j);
    });
    for (const JobInfo* j : jobs) {
      if (!ssn.JobValid(*j).pass) continue;
      std::vector<const TaskInfo*> tasks;
      st.ForEachTaskOfJob(j->key, [&](const TaskInfo& t) {
        if (t.status == TaskStatus::kPending && t.best_effort && !t.scheduling_gated) tasks.push_back(&t);
      });
      std::sort(tasks.begin(), tasks.end(), [&](const TaskInfo* a, const TaskInfo* b) { return ssn.TaskLess(*a, *b); });
      for (const TaskInfo* t : tasks) {
        const NodeInfo* best = nullptr;
        double best_score = 0;
        for (int slot : st.CandidateNodes()) {
          const NodeInfo& n = st.NodeAt(slot);
          if (!t->request.FitsIn(n.Idle())) continue;
          if (!ssn.StaticFit(*t, n).ok() || !ssn.DynamicFit(*t, n).ok()) continue;
          const double score = ssn.NodeScore(*t, n);
          if (best == nullptr || score > best_score) {
            best = &n;
            best_score = score;
          }
        }
        if (best == nullptr) continue;
        Statement stmt(&st);
        if (stmt.Allocate(t->uid, best->name).ok()) {
          stmt.Commit(&ssn.result(), &ssn.pipelined());
          ++ssn.result().metrics.placements;
        }
      }
    }
  }
};

}  // namespace

Made NewBackfill(const ActionConfiguration&) { return std::unique_ptr<Action>(std::make_unique<Backfill>()); }

}  // namespace tephra::sched::actions
