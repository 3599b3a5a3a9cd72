// The "priority" plugin.
#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

class PriorityPlugin final : public Plugin {
 public:
  std::string Name() const override { return "priority"; }
  uint32_t Hooks() const override { return kHookJobOrder | kHookTaskOrder | kHookPreemptable; }
  int JobOrder(const Session&, const JobInfo& a, const JobInfo& b) const override {
    return a.priority == b.priority ? 0 : (a.priority > b.priority ? -1 : 1);
  }
  // Only strictly lower priority: jobs compare by their PodGroup priority, tasks of the same job by pod
  // priority (Volcano priority.go).
  std::optional<std::vector<const TaskInfo*>> Preemptable(const Session& ssn, const TaskInfo& preemptor,
                                                          const std::vector<const TaskInfo*>& c) const override {
    const JobInfo* pj = ssn.state().FindJob(preemptor.job);
    std::vector<const TaskInfo*> out;
    for (const TaskInfo* t : c) {
      if (t->job == preemptor.job) {
        if (t->priority < preemptor.priority) out.push_back(t);
        continue;
      }
      const JobInfo* vj = ssn.state().FindJob(t->job);
      int32_t vp = vj ? vj->priority : t->priority;
      if (pj && vp < pj->priority) out.push_back(t);
    }
    return out;
  }
  int TaskOrder(const Session&, const TaskInfo& a, const TaskInfo& b) const override {
    return a.priority == b.priority ? 0 : (a.priority > b.priority ? -1 : 1);
  }
};

}  // namespace

Made NewPriority(const PluginOption& o) { return Make<PriorityPlugin>(o); }

}  // namespace tephra::sched::plugins
