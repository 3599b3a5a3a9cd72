// Statement: a journal of tentative placements inside one cycle (Volcano framework/statement.go).
// Operations mutate the live ClusterState immediately (so later predicates see them) and are recorded as
// typed entries; Discard() undoes them in reverse order; Commit() turns Allocate into an assumed bind
// (kBinding + a BindDecision) and Evict into an EvictDecision. Pipeline entries are handed to the
// session, which undoes them when the cycle ends (a pipelined placement is a promise for this cycle only).
#pragma once

#include <string>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/sched/types.h"

namespace tephra::sched {

class ClusterState;
struct CycleResult;

class Statement {
 public:
  enum class Op : uint8_t { kAllocate, kPipeline, kEvict };
  struct Entry {
    Op op;
    std::string task_uid;
    std::string node;
    TaskStatus prev_status;
    std::string prev_node;
    std::string reason;  // evict reason
    std::string preemptor;  // evict: job key the eviction makes room for
  };

  explicit Statement(ClusterState* state) : state_(state) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();  // an uncommitted statement is discarded

  // Pending task -> kAllocated on `node`. FailedPrecondition if the task is not pending or the node unknown.
  core::Status Allocate(const std::string& task_uid, const std::string& node);
  // Pending task -> kPipelined on `node` (counts against the node's future idle).
  core::Status Pipeline(const std::string& task_uid, const std::string& node);
  // Occupying task -> kReleasing.
  core::Status Evict(const std::string& task_uid, const std::string& reason, const std::string& preemptor = {});

  // Allocated -> kBinding with a BindDecision appended; Evict -> EvictDecision; Pipeline entries are
  // returned through *pipelined for the session to undo at cycle end. Idempotent; empties the journal.
  void Commit(CycleResult* out, std::vector<Entry>* pipelined);
  // Hands the journal to the caller without applying or undoing it (used for pipelined gangs whose
  // placements are held until the session closes). The statement is empty afterwards.
  std::vector<Entry> Release() {
    std::vector<Entry> out = std::move(entries_);
    entries_.clear();
    return out;
  }
  // Undoes every entry in reverse order. Idempotent (a second call does nothing).
  void Discard();

  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  ClusterState* state_;
  std::vector<Entry> entries_;
};

}  // namespace tephra::sched
