// The "reclaim" action: a starving gang of a queue below its deserved share takes tasks back from other,
// reclaimable queues above theirs (victims.cc has the search shared with preempt; docs/scheduler.md, "reclaim").
#include "actions.h"

namespace tephra::sched::actions {

namespace {

class Reclaim final : public Action {
 public:
  explicit Reclaim(VictimSearchOptions o) : options_(o) {}
  std::string_view Name() const override { return "reclaim"; }
  void Execute(Session& ssn) override { RunVictimSearch(ssn, options_); }

 private:
  VictimSearchOptions options_;
};

}  // namespace

Made NewReclaim(const ActionConfiguration& c) {
  TEPHRA_ASSIGN_OR_RETURN(VictimSearchOptions o, ParseVictimSearchOptions(c, /*reclaim=*/true));
  return std::unique_ptr<Action>(std::make_unique<Reclaim>(o));
}

}  // namespace tephra::sched::actions
