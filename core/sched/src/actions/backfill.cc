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
    std::vector<int> slots;
    std::vector<double> scores;
    for (const JobInfo* j : jobs) {
      if (!ssn.JobValid(*j).pass) continue;
      std::vector<const TaskInfo*> tasks;
      st.ForEachTaskOfJob(j->key, [&](const TaskInfo& t) {
        if (t.status == TaskStatus::kPending && t.best_effort && !t.scheduling_gated) tasks.push_back(&t);
      });
      std::sort(tasks.begin(), tasks.end(), [&](const TaskInfo* a, const TaskInfo* b) { return ssn.TaskLess(*a, *b); });
      for (const TaskInfo* t : tasks) {
        slots.clear();
        scores.clear();
        for (int slot : st.CandidateNodes()) {
          const NodeInfo& n = st.NodeAt(slot);
          if (!t->request.FitsIn(n.Idle())) continue;
          if (!ssn.StaticFit(*t, n).ok() || !ssn.DynamicFit(*t, n).ok()) continue;
          slots.push_back(slot);
          scores.push_back(ssn.NodeScore(*t, n));
        }
        if (slots.empty()) continue;
        if (ssn.BatchScored(*t)) ssn.BatchNodeScore(*t, slots, scores);
        size_t bi = 0;
        for (size_t i = 1; i < slots.size(); ++i)
          if (scores[i] > scores[bi]) bi = i;
        const NodeInfo* best = &st.NodeAt(slots[bi]);
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
