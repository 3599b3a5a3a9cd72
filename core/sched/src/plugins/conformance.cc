// The "conformance" plugin.
#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

// Never evicts system-critical pods: kube-system, or priorityClassName system-cluster-critical /
// system-node-critical.
class ConformancePlugin final : public Plugin {
 public:
  std::string Name() const override { return "conformance"; }
  uint32_t Hooks() const override { return kHookPreemptable | kHookReclaimable; }
  std::optional<std::vector<const TaskInfo*>> Preemptable(const Session&, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    return Filter(c);
  }
  std::optional<std::vector<const TaskInfo*>> Reclaimable(const Session&, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    return Filter(c);
  }

 private:
  static std::vector<const TaskInfo*> Filter(const std::vector<const TaskInfo*>& c) {
    std::vector<const TaskInfo*> out;
    for (const TaskInfo* t : c) {
      if (t->ns == "kube-system" || t->priority_class_name == "system-cluster-critical" ||
          t->priority_class_name == "system-node-critical")
        continue;
      out.push_back(t);
    }
    return out;
  }
};

}  // namespace

Made NewConformance(const PluginOption& o) { return Make<ConformancePlugin>(o); }

}  // namespace tephra::sched::plugins
