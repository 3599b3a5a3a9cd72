// Statement: a journal of tentative placements inside one cycle (Volcano framework/statement.go).
// Operations mutate the live ClusterState immediately (so later predicates see them) and are recorded as
// typed entries; Discard() undoes them in reverse order; Commit() turns Allocate into an assumed bind
// (kBinding + a BindDecision) and Evict into an EvictDecision. Pipeline entries are handed to the
// session, which undoes them when the cycle ends (a pipelined placement is a promise for this cycle only).
//
// Statement is the only code that moves tasks during a cycle: it holds the ClusterState::JournalKey that
// Transition requires. A discarded statement leaves the state as it found it, job versions included (an
// attempt that was undone is not news to the memos keyed on versions).
#pragma once

#include <cstdint>
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
    // Set on the statement's first entry for the task's job: that job's version before the statement,
    // which Discard restores. Later entries of the same job carry nothing (no lookup per placement).
    bool restores_job_version = false;
    uint64_t prev_job_version = 0;
    // Allocate: pre-created volumes this placement set aside for the task's claims (released on undo).
    std::vector<std::string> assumed_volumes = {};
    // Allocate: the statement chose the task's cards (cleared again on undo).
    bool chose_cards = false;
  };

  explicit Statement(ClusterState* state) : state_(state) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();  // an uncommitted statement is discarded

  // Pending task -> kAllocated on `node`. FailedPrecondition if the task is not pending, the node unknown, a
  // WaitForFirstConsumer claim of the task has no volume there (ClusterState::ChooseVolumes), or the task asks
  // for cards the node's modelled devices cannot give (devices.h ChooseCards); the volumes and cards chosen
  // are held for the task until the statement is undone or the binds come back.
  // `cards`: positions in the node's cards chosen by a plugin (Session::ChooseCards); nullptr = ChooseCards.
  core::Status Allocate(const std::string& task_uid, const std::string& node, const std::vector<int>* cards = nullptr);
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
    jobs_seen_.clear();
    return out;
  }
  // Undoes every entry in reverse order and restores the touched jobs' versions. Idempotent (a second
  // call does nothing).
  void Discard();
  // Undoes the entries from position `mark` (an earlier entries().size()) on, newest first: one part of an
  // attempt, such as a sub-group that did not become ready, while the rest stays. DiscardFrom(0) is Discard().
  void DiscardFrom(size_t mark);
  // Undoes entries handed out earlier by Commit (pipelined placements) or Release, newest first, skipping
  // tasks that are no longer placed by them. Job versions are not restored: those placements were real for
  // the rest of the cycle (the status writer and the memos saw them). The session's end-of-cycle undo.
  void Revert(const std::vector<Entry>& entries);

  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  // Fills the version fields of an entry about to be appended for task `t`.
  void NoteJobVersion(const TaskInfo& t, Entry& e);

  ClusterState* state_;
  std::vector<Entry> entries_;
  std::vector<const std::string*> jobs_seen_;  // jobs with a version-restoring entry (keys owned by tasks)
};

}  // namespace tephra::sched
