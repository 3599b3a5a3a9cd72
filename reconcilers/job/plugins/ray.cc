// ray plugin: the head task's container runs `ray start --head` with the GCS, dashboard and client ports
// exposed by name; worker containers join the head's address; a Service `<job>-head-svc` selects the head.
#include <algorithm>

#include "factories.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::job::internal {
namespace {

class RayPlugin final : public JobPlugin {
 public:
  explicit RayPlugin(Flags f)
      : head_(f["head"]), head_container_(f["headContainer"]), worker_(f["worker"]),
        worker_container_(f["workerContainer"]), port_(FlagInt(f, "port", 6379)),
        dashboard_port_(FlagInt(f, "dashboardPort", 8265)), client_port_(FlagInt(f, "clientPort", 10001)) {}

  std::string_view Name() const override { return "ray"; }

  core::Status OnPodCreate(const PluginContext& ctx, const api::TaskSpec& task, int, api::Pod* pod) override {
    const api::TaskSpec* head = ctx.job->spec.FindTask(head_);
    if (!head) return core::InvalidArgumentError("ray plugin: job has no head task \"" + head_ + "\"");
    if (task.name == head_) {
      for (auto& c : pod->spec.containers) {
        if (c.name != head_container_) continue;
        c.command = {"sh", "-c",
                     "ray start --head --block --dashboard-host=0.0.0.0 --port=" + std::to_string(port_) +
                         " --dashboard-port=" + std::to_string(dashboard_port_) +
                         " --ray-client-server-port=" + std::to_string(client_port_)};
        for (const auto& [name, port] : {std::pair<const char*, int>{"gcs", port_},
                                         {"dashboard", dashboard_port_}, {"client-server", client_port_}}) {
          const int want = port;  // clang before 16 cannot capture a structured binding
          bool has = std::any_of(c.ports.begin(), c.ports.end(),
                                 [&](const api::ContainerPort& p) { return p.container_port == want; });
          if (has) continue;
          api::ContainerPort p;
          p.name = name;
          p.container_port = port;
          c.ports.push_back(std::move(p));
        }
      }
    } else if (task.name == worker_) {
      const std::string head_addr = PodAddress(*ctx.job, *head, 0);
      for (auto& c : pod->spec.containers) {
        if (c.name != worker_container_) continue;
        c.command = {"sh", "-c", "ray start --block --address=" + head_addr + ":" + std::to_string(port_)};
      }
    }
    return core::Status::OK();
  }

  core::Status Desired(const PluginContext& ctx, PluginObjects* out) override {
    const api::Job& job = *ctx.job;
    if (!job.spec.FindTask(head_)) return core::InvalidArgumentError("ray plugin: job has no head task \"" + head_ + "\"");
    api::Service svc;
    svc.metadata.name = job.metadata.name + "-head-svc";
    svc.metadata.namespace_ = job.metadata.namespace_;
    svc.metadata.owner_references.push_back(JobOwnerRef(job));
    svc.spec.selector = {{std::string(api::kJobNameKey), job.metadata.name},
                         {std::string(api::kJobNamespaceKey), job.metadata.namespace_},
                         {std::string(api::kTaskSpecKey), head_}};
    for (const auto& [name, port] : {std::pair<const char*, int>{"gcs", port_},
                                     {"dashboard", dashboard_port_}, {"client-server", client_port_}}) {
      api::ServicePort p;
      p.name = name;
      p.port = port;
      p.target_port = name;  // named container ports, so a changed port flag follows the container
      svc.spec.ports.push_back(std::move(p));
    }
    out->services[svc.metadata.name] = std::move(svc);
    return core::Status::OK();
  }

  PluginObjectNames Owned(const api::Job& job) const override {
    PluginObjectNames n;
    n.services = {job.metadata.name + "-head-svc"};
    return n;
  }

 private:
  std::string head_, head_container_, worker_, worker_container_;
  int port_, dashboard_port_, client_port_;
};

}  // namespace

JobPluginPtr NewRayPlugin(const std::vector<std::string>& args, std::vector<std::string>* log) {
  Flags f = ParsePluginFlags("ray", args,
                             {{"head", "head"},
                              {"headContainer", "head"},
                              {"worker", "worker"},
                              {"workerContainer", "worker"},
                              {"port", "6379"},
                              {"dashboardPort", "8265"},
                              {"clientPort", "10001"}},
                             {}, {"port", "dashboardPort", "clientPort"}, log);
  return std::make_unique<RayPlugin>(std::move(f));
}

}  // namespace tephra::reconcilers::job::internal
