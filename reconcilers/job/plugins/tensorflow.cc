// tensorflow plugin: TF_CONFIG = {"cluster":{"ps":[..],"worker":[..],"chief":[..],"evaluator":[..]},
// "task":{"type":"<role>","index":<i>}} in every container. Key order and compact form follow Go's
// encoding/json of Volcano's structs, so the string is byte-identical.
#include "factories.h"

namespace tephra::reconcilers::job::internal {
namespace {

std::string JsonString(const std::string& s) { return api::json(s).dump(); }

class TensorflowPlugin final : public JobPlugin {
 public:
  explicit TensorflowPlugin(Flags f)
      : ps_(f["ps"]), worker_(f["worker"]), chief_(f["chief"]), evaluator_(f["evaluator"]),
        port_(FlagInt(f, "port", 2222)) {}

  std::string_view Name() const override { return "tensorflow"; }

  core::Status OnPodCreate(const PluginContext& ctx, const api::TaskSpec& task, int index, api::Pod* pod) override {
    const api::Job& job = *ctx.job;
    // A single pod needs no cluster spec.
    if (job.spec.tasks.size() == 1 && job.spec.tasks[0].replicas == 1) return core::Status::OK();
    std::string cluster;
    for (const auto& [role, task_name] : {std::pair<const char*, const std::string*>{"ps", &ps_},
                                          {"worker", &worker_}, {"chief", &chief_}, {"evaluator", &evaluator_}}) {
      const api::TaskSpec* t = job.spec.FindTask(*task_name);
      if (!t || t->replicas == 0) continue;  // omitempty
      std::string list;
      for (const auto& a : TaskAddresses(job, *t))
        list += (list.empty() ? "" : ",") + JsonString(a + ":" + std::to_string(port_));
      cluster += (cluster.empty() ? "" : ",") + JsonString(role) + ":[" + list + "]";
    }
    std::string type = task.name;  // unknown tasks keep their own name as the type
    if (task.name == ps_) type = "ps";
    else if (task.name == worker_) type = "worker";
    else if (task.name == chief_) type = "chief";
    else if (task.name == evaluator_) type = "evaluator";
    api::EnvVar e;
    e.name = "TF_CONFIG";
    e.value = "{\"cluster\":{" + cluster + "},\"task\":{\"type\":" + JsonString(type) +
              ",\"index\":" + std::to_string(index) + "}}";
    AddEnvAll(pod, e, /*init=*/false);
    return core::Status::OK();
  }

 private:
  std::string ps_, worker_, chief_, evaluator_;
  int port_;
};

}  // namespace

JobPluginPtr NewTensorflowPlugin(const std::vector<std::string>& args, std::vector<std::string>* log) {
  Flags f = ParsePluginFlags(
      "tensorflow", args,
      {{"ps", "ps"}, {"worker", "worker"}, {"chief", "chief"}, {"evaluator", "evaluator"}, {"port", "2222"}}, {},
      {"port"}, log);
  return std::make_unique<TensorflowPlugin>(std::move(f));
}

}  // namespace tephra::reconcilers::job::internal
