// The "gang" plugin.
#include <map>
#include <string_view>
#include <unordered_map>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

class GangPlugin final : public Plugin {
 public:
  std::string Name() const override { return "gang"; }
  uint32_t Hooks() const override {
    return kHookJobValid | kHookJobReady | kHookJobPipelined | kHookJobOrder | kHookPreemptable | kHookReclaimable;
  }

  // A victim job keeps minMember ready tasks: only its surplus is offered, and a job at or below its minimum
  // offers nothing (Volcano's gang preemptableFn; a whole job is never offered, so with this hook on a
  // default gang, minAvailable = replicas, is never a victim).
  // A job with sub-group policies also keeps, per policy, minSubGroups whole sub-groups: a task may go from a
  // sub-group that is already broken, or from a whole one only while enough others stay whole. Volcano's
  // preempt and reclaim check minAvailable only, and can leave, say, a tensor-parallel group one pod short
  // while the job counts as running (docs/scheduler.md, "Sub-groups").
  std::optional<std::vector<const TaskInfo*>> Preemptable(const Session& ssn, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    return Victims(ssn, c);
  }
  std::optional<std::vector<const TaskInfo*>> Reclaimable(const Session& ssn, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    return Victims(ssn, c);
  }
  static std::vector<const TaskInfo*> Victims(const Session& ssn, const std::vector<const TaskInfo*>& c) {
    // One hash per candidate and one job lookup per job (candidate lists reach tens of thousands).
    struct PerJob {
      const JobInfo* job = nullptr;
      int left = 0;  // ready tasks the job would keep
      // Sub-groups (jobs with policies only, built on first use): ready tasks each would keep, and per
      // policy how many would stay whole.
      std::map<std::pair<int, std::string>, int> group_left;
      std::vector<int> whole;
    };
    std::unordered_map<std::string_view, PerJob> jobs;
    jobs.reserve(c.size() / 8 + 1);
    for (const TaskInfo* t : c) {
      auto [it, fresh] = jobs.try_emplace(t->job);
      if (fresh && !t->job.empty()) {
        it->second.job = ssn.state().FindJob(t->job);
        if (it->second.job) it->second.left = it->second.job->ReadyCount();
      }
    }
    std::vector<const TaskInfo*> out;
    out.reserve(c.size());
    for (const TaskInfo* t : c) {
      PerJob& p = jobs.find(t->job)->second;
      const JobInfo* j = p.job;
      if (!j || j->min_member <= 0) {
        out.push_back(t);
        continue;
      }
      if (p.left > j->min_member && KeepsSubGroups(ssn, p, *t)) {
        --p.left;
        out.push_back(t);
      }
    }
    return out;
  }
  // Whether `t` can go without leaving its job fewer whole sub-groups of its policy than minSubGroups;
  // if so, its going is recorded.
  template <typename PerJob>
  static bool KeepsSubGroups(const Session& ssn, PerJob& p, const TaskInfo& t) {
    const JobInfo& j = *p.job;
    if (j.sub_group_policies.empty()) return true;
    if (p.whole.empty()) {
      p.whole.assign(j.sub_group_policies.size(), 0);
      for (const auto& g : ssn.state().SubGroupsOf(j)) {
        if (g.policy < 0) continue;
        p.group_left[{g.policy, g.id}] = g.ready;
        p.whole[static_cast<size_t>(g.policy)] += g.ready >= j.sub_group_policies[static_cast<size_t>(g.policy)].size;
      }
    }
    std::string id;
    const int policy = j.SubGroupOf(t, &id);
    if (policy < 0) return true;
    const SubGroupPolicy& sp = j.sub_group_policies[static_cast<size_t>(policy)];
    int& left = p.group_left[{policy, id}];
    int& whole = p.whole[static_cast<size_t>(policy)];
    const bool breaks = left == sp.size;  // whole now, one short after
    if (breaks && sp.min_groups > 0 && whole <= sp.min_groups) return false;
    --left;
    whole -= breaks;
    return true;
  }

  ValidateResult JobValid(const Session& ssn, const JobInfo& j) const override {
    int valid = j.ReadyCount() + j.Count(TaskStatus::kPipelined) + j.Count(TaskStatus::kPending);
    if (valid < j.min_member) {
      return {false, "NotEnoughTasks",
              "Not enough valid tasks for gang-scheduling, valid: " + std::to_string(valid) +
                  ", min: " + std::to_string(j.min_member)};
    }
    // Per-task minimums only bind when minMember covers them (Volcano's CheckTaskValid: minMember >=
    // sum(minTaskMember)), as in JobReady. Without this, a job whose launcher `dependsOn` its workers
    // (minAvailable = workers only) could never start: the launcher's pod does not exist yet.
    if (!j.sub_group_policies.empty()) {
      // Volcano's CheckSubJobValid: each policy needs at least minSubGroups sub-groups that can still run.
      auto groups = ssn.state().SubGroupsOf(j);
      for (size_t p = 0; p < j.sub_group_policies.size(); ++p) {
        const auto& policy = j.sub_group_policies[p];
        int have = 0;
        for (const auto& g : groups) have += g.policy == static_cast<int>(p) && g.valid > 0;
        if (have < policy.min_groups) {
          return {false, "NotEnoughTasks",
                  "Not enough valid subGroups of policy " + policy.name + " for gang-scheduling, valid: " +
                      std::to_string(have) + ", min: " + std::to_string(policy.min_groups)};
        }
      }
    }
    int64_t sum = 0;
    for (const auto& [role, min] : j.min_task_member) sum += min;
    if (j.min_member < sum) return {};
    for (const auto& [role, min] : j.min_task_member) {
      auto it = j.role_valid.find(role);
      int have = it == j.role_valid.end() ? 0 : it->second;
      if (have < min) {
        return {false, "NotEnoughPodsOfTask",
                "Not enough valid pods of task " + role + ", valid: " + std::to_string(have) +
                    ", min: " + std::to_string(min)};
      }
    }
    return {};
  }

  // Volcano's CheckSubJobReady / CheckSubJobPipelined: every policy with minSubGroups has that many sub-groups
  // with subGroupSize tasks ready (or, for pipelined, ready or pipelined).
  static bool SubGroupsMet(const Session& ssn, const JobInfo& j, bool count_pipelined) {
    if (j.sub_group_policies.empty()) return true;
    auto groups = ssn.state().SubGroupsOf(j);
    for (size_t p = 0; p < j.sub_group_policies.size(); ++p) {
      const auto& policy = j.sub_group_policies[p];
      if (policy.min_groups <= 0) continue;
      int met = 0;
      for (const auto& g : groups)
        met += g.policy == static_cast<int>(p) && g.ready + (count_pipelined ? g.pipelined : 0) >= policy.size;
      if (met < policy.min_groups) return false;
    }
    return true;
  }

  bool JobReady(const Session& ssn, const JobInfo& j) const override {
    // Pending best-effort tasks count: backfill places them without needing resources.
    if (j.ReadyCount() + j.pending_best_effort < j.min_member) return false;
    if (!SubGroupsMet(ssn, j, false)) return false;
    // Per-task minimums only bind when minMember covers them (Volcano: minMember >= sum(minTaskMember)).
    int64_t sum = 0;
    for (const auto& [role, min] : j.min_task_member) sum += min;
    if (j.min_member < sum) return true;
    for (const auto& [role, min] : j.min_task_member) {
      auto it = j.role_ready.find(role);
      if ((it == j.role_ready.end() ? 0 : it->second) < min) return false;
    }
    return true;
  }

  Vote JobPipelined(const Session& ssn, const JobInfo& j) const override {
    return j.ReadyCount() + j.Count(TaskStatus::kPipelined) >= j.min_member && SubGroupsMet(ssn, j, true)
               ? Vote::kPermit
               : Vote::kReject;
  }

  int JobOrder(const Session&, const JobInfo& a, const JobInfo& b) const override {
    bool ra = a.ReadyCount() >= a.min_member, rb = b.ReadyCount() >= b.min_member;
    if (ra == rb) return 0;
    return ra ? 1 : -1;  // jobs that are not ready yet go first
  }
};

}  // namespace

Made NewGang(const PluginOption& o) { return Make<GangPlugin>(o); }

}  // namespace tephra::sched::plugins
