#include "tephra/sched/statement.h"

#include "tephra/sched/cluster_state.h"
#include "tephra/sched/result.h"

namespace tephra::sched {

using core::Status;
using core::StatusCode;

void Statement::NoteJobVersion(const TaskInfo& t, Entry& e) {
  if (t.job.empty()) return;
  // Statements hold one job's tasks (allocate) or a few jobs' (victims): a short scan, newest first.
  for (auto it = jobs_seen_.rbegin(); it != jobs_seen_.rend(); ++it)
    if (**it == t.job) return;
  const JobInfo* j = state_->FindJob(t.job);
  if (!j) return;
  e.restores_job_version = true;
  e.prev_job_version = j->version;
  jobs_seen_.push_back(&t.job);
}

Statement::~Statement() { Discard(); }

Status Statement::Allocate(const std::string& uid, const std::string& node, const std::vector<int>* cards) {
  TaskInfo* t = state_->MutableTask({}, uid);
  if (!t || t->status != TaskStatus::kPending) return Status(StatusCode::kFailedPrecondition, "task not pending: " + uid);
  const NodeInfo* n = state_->FindNode(node);
  if (!n) return Status(StatusCode::kFailedPrecondition, "unknown node " + node);
  Entry e{Op::kAllocate, uid, node, t->status, t->node, {}, {}, false, 0};
  if (!t->claims.empty()) {
    std::vector<ClusterState::VolumeChoice> choices;
    if (!state_->ChooseVolumes(*t, *n, &choices))
      return Status(StatusCode::kFailedPrecondition, "no volume for the claims of " + uid + " on " + node);
    for (const auto& c : choices) {
      if (c.volume.empty()) continue;
      const std::string key = t->ns + "/" + c.claim;
      const std::string* already = state_->AssumedVolume(key);
      if (already && *already == c.volume) continue;  // set aside by an earlier placement of the same claim
      state_->AssumeVolume({}, c.volume, key);
      e.assumed_volumes.push_back(c.volume);
    }
  }
  if (!t->devices.empty() && !n->devices.cards.empty() && t->cards.empty()) {
    core::StatusOr<std::vector<int>> chosen =
        cards ? core::StatusOr<std::vector<int>>(*cards) : ChooseCards(n->devices, t->devices, state_->share_policy());
    if (!chosen.ok()) {
      for (const auto& v : e.assumed_volumes) state_->ForgetVolume({}, v);
      return Status(StatusCode::kFailedPrecondition, "cards for " + uid + " on " + node + ": " + chosen.status().message());
    }
    for (int p : *chosen)
      if (p >= 0 && static_cast<size_t>(p) < n->devices.cards.size()) t->cards.push_back(n->devices.cards[static_cast<size_t>(p)].id);
    e.chose_cards = true;
  }
  NoteJobVersion(*t, e);
  entries_.push_back(std::move(e));
  state_->Transition({}, *t, TaskStatus::kAllocated, node);
  return Status::OK();
}

Status Statement::Pipeline(const std::string& uid, const std::string& node) {
  TaskInfo* t = state_->MutableTask({}, uid);
  if (!t || t->status != TaskStatus::kPending) return Status(StatusCode::kFailedPrecondition, "task not pending: " + uid);
  if (!state_->FindNode(node)) return Status(StatusCode::kFailedPrecondition, "unknown node " + node);
  Entry e{Op::kPipeline, uid, node, t->status, t->node, {}, {}, false, 0};
  NoteJobVersion(*t, e);
  entries_.push_back(std::move(e));
  state_->Transition({}, *t, TaskStatus::kPipelined, node);
  return Status::OK();
}

Status Statement::Evict(const std::string& uid, const std::string& reason, const std::string& preemptor) {
  TaskInfo* t = state_->MutableTask({}, uid);
  if (!t || !OccupiesNode(t->status) || t->status == TaskStatus::kReleasing)
    return Status(StatusCode::kFailedPrecondition, "task not evictable: " + uid);
  Entry e{Op::kEvict, uid, t->node, t->status, t->node, reason, preemptor, false, 0};
  NoteJobVersion(*t, e);
  entries_.push_back(std::move(e));
  state_->Transition({}, *t, TaskStatus::kReleasing, t->node);
  return Status::OK();
}

void Statement::Commit(CycleResult* out, std::vector<Entry>* pipelined) {
  for (auto& e : entries_) {
    TaskInfo* t = state_->MutableTask({}, e.task_uid);
    if (!t) continue;
    switch (e.op) {
      case Op::kAllocate:
        if (t->status != TaskStatus::kAllocated) break;
        state_->Transition({}, *t, TaskStatus::kBinding, t->node);
        out->binds.push_back({t->uid, t->ns, t->name, t->node, t->job, {}, {}, t->devices, t->cards, {}});
        if (t->devices.shared > 0)
          if (const NodeInfo* n = state_->FindNode(t->node))
            for (const auto& id : t->cards)
              if (int p = n->devices.FindCard(id); p >= 0)
                out->binds.back().card_memory.push_back(t->devices.MemoryOn(n->devices.cards[static_cast<size_t>(p)]));
        for (const auto& claim : t->claims) {
          const std::string key = t->ns + "/" + claim;
          const ClaimInfo* c = state_->FindClaim(key);
          if (!c || !state_->FirstConsumerClass(*c)) continue;
          // A volume set aside: the binder writes the claim into it. Otherwise the class provisions one.
          if (const std::string* v = state_->AssumedVolume(key))
            out->binds.back().bind_volumes.push_back({claim, c->uid, *v});
          else
            out->binds.back().select_node_claims.push_back(claim);
        }
        state_->NoteVictimCandidate({});  // a newly placed task is a possible victim for a starving job
        break;
      case Op::kPipeline:
        if (pipelined) pipelined->push_back(e);
        break;
      case Op::kEvict:
        // The task stays kReleasing (it holds its node until the pod is gone); ClusterState keeps that
        // assumption against stale informer updates until the delete shows or EvictFailed() is called.
        t->evicting = true;
        out->evictions.push_back({t->uid, t->ns, t->name, t->node, e.reason, t->job, e.preemptor});
        break;
    }
  }
  entries_.clear();
  jobs_seen_.clear();
}

void Statement::Discard() { DiscardFrom(0); }

void Statement::DiscardFrom(size_t mark) {
  while (entries_.size() > mark) {
    const Entry& e = entries_.back();
    for (const auto& v : e.assumed_volumes) state_->ForgetVolume({}, v);
    TaskInfo* t = state_->MutableTask({}, e.task_uid);
    if (t) {  // removed meanwhile: nothing to undo
      state_->Transition({}, *t, e.prev_status, e.prev_node);
      if (e.chose_cards) t->cards.clear();
      if (e.restores_job_version) {
        state_->RestoreJobVersion({}, t->job, e.prev_job_version);
        // The job has no entry left before this one: a later entry for it must note its version again.
        std::erase_if(jobs_seen_, [&](const std::string* k) { return *k == t->job; });
      }
    }
    entries_.pop_back();
  }
  if (mark == 0) jobs_seen_.clear();
}

void Statement::Revert(const std::vector<Entry>& entries) {
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    // A pipelined gang's allocations are undone at session close: their volumes are free again.
    for (const auto& v : it->assumed_volumes) state_->ForgetVolume({}, v);
    TaskInfo* t = state_->MutableTask({}, it->task_uid);
    if (!t || (t->status != TaskStatus::kPipelined && t->status != TaskStatus::kAllocated)) continue;
    state_->Transition({}, *t, it->prev_status, it->prev_node);
    if (it->chose_cards) t->cards.clear();
  }
}

}  // namespace tephra::sched
