// The "drf" plugin.
#include <cmath>
#include <map>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

class DrfPlugin final : public Plugin {
 public:
  std::string Name() const override { return "drf"; }
  uint32_t Hooks() const override { return kHookJobOrder | kHookPreemptable; }
  core::Status OnSessionOpen(Session& ssn) override {
    total_ = ssn.total_allocatable();
    return core::Status::OK();
  }
  int JobOrder(const Session&, const JobInfo& a, const JobInfo& b) const override {
    return Cmp(DominantShare(a.allocated, total_), DominantShare(b.allocated, total_));
  }
  // A victim may go while its job's dominant share, after losing it, stays at or above the preemptor
  // job's share after gaining the preemptor (Volcano drf.go, shareDelta 1e-6).
  std::optional<std::vector<const TaskInfo*>> Preemptable(const Session& ssn, const TaskInfo& preemptor,
                                                          const std::vector<const TaskInfo*>& c) const override {
    const JobInfo* pj = ssn.state().FindJob(preemptor.job);
    double ls = DominantShare((pj ? pj->allocated : Resource()) + preemptor.request, total_);
    std::map<std::string, Resource> alloc;
    std::vector<const TaskInfo*> out;
    for (const TaskInfo* t : c) {
      auto it = alloc.find(t->job);
      if (it == alloc.end()) {
        const JobInfo* vj = ssn.state().FindJob(t->job);
        it = alloc.emplace(t->job, vj ? vj->allocated : t->request).first;
      }
      it->second -= t->request;
      double rs = DominantShare(it->second, total_);
      if (ls < rs || std::fabs(ls - rs) <= 1e-6) out.push_back(t);
    }
    return out;
  }

 private:
  Resource total_;
};

}  // namespace

Made NewDrf(const PluginOption& o) { return Make<DrfPlugin>(o); }

}  // namespace tephra::sched::plugins
