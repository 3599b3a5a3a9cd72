// pytorch plugin: torch.distributed rendezvous env (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK) on master and
// worker pods, the `pytorchjob-port` container port, and optionally a wait-for-master init container.
#include <algorithm>

#include "factories.h"

namespace tephra::reconcilers::job::internal {
namespace {

class PytorchPlugin final : public JobPlugin {
 public:
  explicit PytorchPlugin(Flags f)
      : master_(f["master"]),
        worker_(f["worker"]),
        port_(FlagInt(f, "port", 23456)),
        wait_master_(FlagBool(f, "wait-master-enabled")),
        wait_timeout_(FlagInt(f, "wait-master-timeout", 300)),
        wait_image_(f["wait-master-image"]) {}

  std::string_view Name() const override { return "pytorch"; }

  core::Status OnPodCreate(const PluginContext& ctx, const api::TaskSpec& task, int index, api::Pod* pod) override {
    const api::Job& job = *ctx.job;
    const api::TaskSpec* master = job.spec.FindTask(master_);
    if (!master) return core::Status::OK();  // no master task: nothing to rendezvous with
    const api::TaskSpec* worker = job.spec.FindTask(worker_);
    bool is_master = task.name == master_;
    if (!is_master && task.name != worker_) return core::Status::OK();

    const std::string master_addr = PodAddress(job, *master, 0);
    int world = master->replicas + (worker ? worker->replicas : 0);
    int rank = is_master ? 0 : index + 1;  // the master is rank 0, workers follow
    std::vector<std::pair<std::string, std::string>> env = {{"MASTER_ADDR", master_addr},
                                                            {"MASTER_PORT", std::to_string(port_)},
                                                            {"WORLD_SIZE", std::to_string(world)},
                                                            {"RANK", std::to_string(rank)}};
    for (auto& c : pod->spec.containers) {
      for (const auto& [k, v] : env) {
        api::EnvVar e;
        e.name = k;
        e.value = v;
        c.env.push_back(std::move(e));
      }
      bool has_port = std::any_of(c.ports.begin(), c.ports.end(),
                                  [&](const api::ContainerPort& p) { return p.container_port == port_; });
      if (!has_port) {
        api::ContainerPort p;
        p.name = "pytorchjob-port";
        p.container_port = port_;
        c.ports.push_back(std::move(p));
      }
    }
    if (wait_master_ && !is_master) {
      api::Container init;
      init.name = "wait-for-master";
      init.image = wait_image_;
      // Poll the master's port every 2 s; give up (and fail the pod) after the timeout.
      std::string host = master_addr;
      init.command = {"sh", "-c",
                      "timeout " + std::to_string(wait_timeout_) + " sh -c 'until nc -z " + host + " " +
                          std::to_string(port_) + "; do echo waiting for master " + host +
                          "; sleep 2; done'"};
      pod->spec.init_containers.insert(pod->spec.init_containers.begin(), std::move(init));
    }
    return core::Status::OK();
  }

 private:
  std::string master_, worker_;
  int port_;
  bool wait_master_;
  int wait_timeout_;
  std::string wait_image_;
};

}  // namespace

JobPluginPtr NewPytorchPlugin(const std::vector<std::string>& args, std::vector<std::string>* log) {
  Flags f = ParsePluginFlags("pytorch", args,
                             {{"master", "master"},
                              {"worker", "worker"},
                              {"port", "23456"},
                              {"wait-master-enabled", "false"},
                              {"wait-master-timeout", "300"},
                              {"wait-master-image", "busybox:1.36.1"}},
                             {"wait-master-enabled"}, {"port", "wait-master-timeout"}, log);
  return std::make_unique<PytorchPlugin>(std::move(f));
}

}  // namespace tephra::reconcilers::job::internal
