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
    // With reservations on (docs/reservations.md) the gangs at the front of the order are admitted even when
    // the cluster has no room for them now: a gang the controller has made no pods for cannot get a
    // reservation, and without one the jobs behind it would keep the capacity it waits for (Volcano's sla
    // plugin forces the enqueue for the same reason). Bounded: no more gangs admitted this way and still
    // waiting than the reservation depth.
    int room = st.options().reservation_depth;
    if (room > 0) {
      st.ForEachJob([&](const JobInfo& j) {
        if (j.sched.admitted_for_reservation && j.phase == PodGroupPhase::kInqueue && j.ReadyCount() < j.min_member)
          --room;
      });
    }
    const Resource total = st.TotalAllocatable();
    std::vector<const QueueInfo*> queues;
    for (const auto& [name, jobs] : by_queue) queues.push_back(st.FindQueue(name));
    std::stable_sort(queues.begin(), queues.end(),
                     [&](const QueueInfo* a, const QueueInfo* b) { return ssn.QueueLess(*a, *b); });
    for (const QueueInfo* q : queues) {
      auto& jobs = by_queue[q->name];
      std::stable_sort(jobs.begin(), jobs.end(), [&](const JobInfo* a, const JobInfo* b) { return ssn.JobLess(*a, *b); });
      for (const JobInfo* j : jobs) {
        if (j->min_resources && j->min_resources->Get(kUnoffered) > 0) {
          // No room can ever be enough: say which resource, not by how much the cluster is short of "it".
          ssn.RecordFitErrors(j->key, -1,
                              "OverClusterCapacity\nthe job's minimum (minResources) requests " + UnofferedText(j->unoffered));
          continue;
        }
        if (!ssn.JobEnqueueable(*j)) {
          Refusal why = ssn.ExplainEnqueue(*j);
          // Only a refusal for the cluster's room now; never one for the queue's capability.
          if (room > 0 && why.reason == "OverClusterCapacity" && (!j->min_resources || j->min_resources->FitsIn(total))) {
            --room;
            j->sched.admitted_for_reservation = true;
            st.AdmitJob(j->key);
            ssn.JobEnqueued(*j);
            continue;
          }
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
