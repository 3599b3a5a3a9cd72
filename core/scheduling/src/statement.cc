#include "tephra/sched/statement.h"

#include "tephra/sched/cluster_state.h"
#include "tephra/sched/result.h"

namespace tephra::sched {

using core::Status;
using core::StatusCode;

Statement::~Statement() { Discard(); }

Status Statement::Allocate(const std::string& uid, const std::string& node) {
  TaskInfo* t = state_->MutableTask(uid);
  if (!t || t->status != TaskStatus::kPending) return Status(StatusCode::kFailedPrecondition, "task not pending: " + uid);
  if (!state_->FindNode(node)) return Status(StatusCode::kFailedPrecondition, "unknown node " + node);
  entries_.push_back({Op::kAllocate, uid, node, t->status, t->node, {}, {}});
  state_->Transition(*t, TaskStatus::kAllocated, node);
  return Status::OK();
}

Status Statement::Pipeline(const std::string& uid, const std::string& node) {
  TaskInfo* t = state_->MutableTask(uid);
  if (!t || t->status != TaskStatus::kPending) return Status(StatusCode::kFailedPrecondition, "task not pending: " + uid);
  if (!state_->FindNode(node)) return Status(StatusCode::kFailedPrecondition, "unknown node " + node);
  entries_.push_back({Op::kPipeline, uid, node, t->status, t->node, {}, {}});
  state_->Transition(*t, TaskStatus::kPipelined, node);
  return Status::OK();
}

Status Statement::Evict(const std::string& uid, const std::string& reason, const std::string& preemptor) {
  TaskInfo* t = state_->MutableTask(uid);
  if (!t || !OccupiesNode(t->status) || t->status == TaskStatus::kReleasing)
    return Status(StatusCode::kFailedPrecondition, "task not evictable: " + uid);
  entries_.push_back({Op::kEvict, uid, t->node, t->status, t->node, reason, preemptor});
  state_->Transition(*t, TaskStatus::kReleasing, t->node);
  return Status::OK();
}

void Statement::Commit(CycleResult* out, std::vector<Entry>* pipelined) {
  for (auto& e : entries_) {
    TaskInfo* t = state_->MutableTask(e.task_uid);
    if (!t) continue;
    switch (e.op) {
      case Op::kAllocate:
        if (t->status != TaskStatus::kAllocated) break;
        state_->Transition(*t, TaskStatus::kBinding, t->node);
        out->binds.push_back({t->uid, t->ns, t->name, t->node, t->job});
        state_->BumpVictims();  // a newly placed task is a possible victim for a starving job
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
}

void Statement::Discard() {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    TaskInfo* t = state_->MutableTask(it->task_uid);
    if (!t) continue;  // removed meanwhile: nothing to undo
    state_->Transition(*t, it->prev_status, it->prev_node);
  }
  entries_.clear();
}

}  // namespace tephra::sched
