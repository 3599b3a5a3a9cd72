// The "enqueue" action: Pending PodGroups move to Inqueue when every JobEnqueueable vote allows it
// (proportion: queue capability; overcommit: cluster idle x factor). Queues in QueueOrder, jobs in
// JobOrder. The job controller creates pods only once the PodGroup is Inqueue, so jobs without tasks are
// considered too.
#include <algorithm>
#include <map>
#include <vector>

#include "actions.h"

namespace tephra::sched::actions {

namespace {

class Enqueue final : public Action {
 public:
  std::string_view Name() const override { return "enqueue"; }
  void Execute(Session& ssn) override {
    ClusterState& st = ssn.mutable_state();
    std::map<std::string, std::vector<const JobInfo*>> by_queue;
    st.ForEachJob([&](const JobInfo& j) {
      if (j.phase != PodGroupPhase::kPending) return;
      if (!QueueAdmits(ssn, j)) return;
      by_queue[j.queue].push_back(&j);
    });
    if (by_queue.empty()) return;
    std::vector<const QueueInfo*> queues;
    for (const auto& [name, jobs] : by_queue) queues.push_back(st.FindQueue(name));
    std::stable_sort(queues.begin(), queues.end(),
                     [&](const QueueInfo* a, const QueueInfo* b) { return ssn.QueueLess(*a, *b); });
    for (const QueueInfo* q : queues) {
      auto& jobs = by_queue[q->name];
      std::stable_sort(jobs.begin(), jobs.end(), [&](const JobInfo* a, const JobInfo* b) { return ssn.JobLess(*a, *b); });
      for (const JobInfo* j : jobs) {
        if (!ssn.JobEnqueueable(*j)) {
          Refusal why = ssn.ExplainEnqueue(*j);
          ssn.RecordFitErrors(j->key, -1, why.reason + "\n" + why.message);
          continue;
        }
        st.AdmitJob(j->key);
        ssn.JobEnqueued(*j);
      }
    }
  }
};

}  // namespace

Made NewEnqueue(const ActionConfiguration&) { return std::unique_ptr<Action>(std::make_unique<Enqueue>()); }

}  // namespace tephra::sched::actions
