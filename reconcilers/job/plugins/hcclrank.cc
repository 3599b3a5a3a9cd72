// hcclrank plugin (Ascend HCCL): annotation hccl/rankIndex unless already set: the first container's RANK env
// if present, else master -> index, worker -> master.replicas + index.
#include "factories.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::job::internal {
namespace {

class HcclRankPlugin final : public JobPlugin {
 public:
  explicit HcclRankPlugin(Flags f) : master_(f["master"]), worker_(f["worker"]) {}
  std::string_view Name() const override { return "hcclrank"; }

  core::Status OnPodCreate(const PluginContext& ctx, const api::TaskSpec& task, int index, api::Pod* pod) override {
    const std::string key(api::kHcclRankIndexAnnotation);
    if (pod->metadata.annotations.count(key)) return core::Status::OK();
    for (const auto& c : pod->spec.containers)
      for (const auto& e : c.env)
        if (e.name == "RANK" && !e.value.empty()) {
          pod->metadata.annotations[key] = e.value;
          return core::Status::OK();
        }
    if (task.name == master_) {
      pod->metadata.annotations[key] = std::to_string(index);
    } else if (task.name == worker_) {
      const api::TaskSpec* m = ctx.job->spec.FindTask(master_);
      pod->metadata.annotations[key] = std::to_string((m ? m->replicas : 0) + index);
    }
    return core::Status::OK();
  }

 private:
  std::string master_, worker_;
};

}  // namespace

JobPluginPtr NewHcclRankPlugin(const std::vector<std::string>& args, std::vector<std::string>* log) {
  Flags f = ParsePluginFlags("hcclrank", args, {{"master", "master"}, {"worker", "worker"}}, {}, {}, log);
  return std::make_unique<HcclRankPlugin>(std::move(f));
}

}  // namespace tephra::reconcilers::job::internal
