// The "preempt" action: a starving gang evicts lower-priority tasks of other jobs in its own queue
// (victims.cc has the search shared with reclaim; docs/scheduler.md, "preempt").
#include "actions.h"

namespace tephra::sched::actions {

namespace {

class Preempt final : public Action {
 public:
  explicit Preempt(VictimSearchOptions o) : options_(o) {}
  std::string_view Name() const override { return "preempt"; }
  void Execute(Session& ssn) override { RunVictimSearch(ssn, options_); }

 private:
  VictimSearchOptions options_;
};

}  // namespace

Made NewPreempt(const ActionConfiguration& c) {
  TEPHRA_ASSIGN_OR_RETURN(VictimSearchOptions o, ParseVictimSearchOptions(c, /*reclaim=*/false));
  return std::unique_ptr<Action>(std::make_unique<Preempt>(o));
}

}  // namespace tephra::sched::actions
