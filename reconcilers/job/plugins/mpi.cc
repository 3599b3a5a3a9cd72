// mpi plugin: the master's pods get MPI_HOST (worker addresses joined by ","), every container the
// `mpijob-port` container port.
#include <algorithm>

#include "factories.h"

namespace tephra::reconcilers::job::internal {
namespace {

class MpiPlugin final : public JobPlugin {
 public:
  explicit MpiPlugin(Flags f) : master_(f["master"]), worker_(f["worker"]), port_(FlagInt(f, "port", 22)) {}

  std::string_view Name() const override { return "mpi"; }

  core::Status OnPodCreate(const PluginContext& ctx, const api::TaskSpec& task, int, api::Pod* pod) override {
    const api::Job& job = *ctx.job;
    if (task.name == master_) {
      std::string hosts;
      if (const api::TaskSpec* worker = job.spec.FindTask(worker_)) {
        for (const auto& a : TaskAddresses(job, *worker)) hosts += (hosts.empty() ? "" : ",") + a;
      }
      api::EnvVar e;
      e.name = "MPI_HOST";
      e.value = hosts;
      AddEnvAll(pod, e, /*init=*/true);
    }
    for (auto& c : pod->spec.containers) {
      bool has_port = std::any_of(c.ports.begin(), c.ports.end(),
                                  [&](const api::ContainerPort& p) { return p.container_port == port_; });
      if (!has_port) {
        api::ContainerPort p;
        p.name = "mpijob-port";
        p.container_port = port_;
        c.ports.push_back(std::move(p));
      }
    }
    return core::Status::OK();
  }

 private:
  std::string master_, worker_;
  int port_;
};

}  // namespace

JobPluginPtr NewMpiPlugin(const std::vector<std::string>& args, std::vector<std::string>* log) {
  Flags f = ParsePluginFlags("mpi", args, {{"master", "master"}, {"worker", "worker"}, {"port", "22"}}, {}, {"port"}, log);
  return std::make_unique<MpiPlugin>(std::move(f));
}

}  // namespace tephra::reconcilers::job::internal
