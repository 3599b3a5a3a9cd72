// env plugin: VK_TASK_INDEX / VC_TASK_INDEX = the pod's index in its task, in every container and init container.
#include "factories.h"

namespace tephra::reconcilers::job::internal {
namespace {

class EnvPlugin final : public JobPlugin {
 public:
  std::string_view Name() const override { return "env"; }
  core::Status OnPodCreate(const PluginContext&, const api::TaskSpec&, int, api::Pod* pod) override {
    // Volcano reads the index from the pod name's last segment, not from the caller.
    std::string index = std::to_string(IndexFromPodName(pod->metadata.name));
    for (const char* name : {"VK_TASK_INDEX", "VC_TASK_INDEX"}) {
      api::EnvVar e;
      e.name = name;
      e.value = index;
      AddEnvAll(pod, e, /*init=*/true);
    }
    return core::Status::OK();
  }
};

}  // namespace

JobPluginPtr NewEnvPlugin(const std::vector<std::string>& args, std::vector<std::string>* log) {
  ParsePluginFlags("env", args, {}, {}, {}, log);
  return std::make_unique<EnvPlugin>();
}

}  // namespace tephra::reconcilers::job::internal
