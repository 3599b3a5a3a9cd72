// svc plugin: a headless Service `<job>`, a ConfigMap `<job>-svc` with every task's host list mounted at
// /etc/volcano, VC_<TASK>_HOSTS / VC_<TASK>_NUM env from that ConfigMap, and a NetworkPolicy `<job>` that
// admits ingress only from the job's own pods.
#include <algorithm>
#include <cctype>

#include "factories.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::job::internal {
namespace {

constexpr const char* kMountPath = "/etc/volcano";

std::string TaskKey(const std::string& task) {
  std::string t = task;
  std::replace(t.begin(), t.end(), '-', '_');
  return t;
}
std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

std::map<std::string, std::string> JobSelector(const api::Job& job) {
  return {{std::string(api::kJobNameKey), job.metadata.name},
          {std::string(api::kJobNamespaceKey), job.metadata.namespace_}};
}

class SvcPlugin final : public JobPlugin {
 public:
  explicit SvcPlugin(Flags f)
      : publish_not_ready_(FlagBool(f, "publish-not-ready-addresses")),
        disable_network_policy_(FlagBool(f, "disable-network-policy")),
        inject_hosts_env_(FlagBool(f, "inject-hosts-env")) {}

  std::string_view Name() const override { return "svc"; }

  core::Status OnPodCreate(const PluginContext& ctx, const api::TaskSpec&, int, api::Pod* pod) override {
    const api::Job& job = *ctx.job;
    if (pod->spec.hostname.empty()) pod->spec.hostname = pod->metadata.name;
    if (pod->spec.subdomain.empty()) pod->spec.subdomain = job.metadata.name;
    const std::string cm = job.metadata.name + "-svc";
    if (inject_hosts_env_) {
      for (const auto& t : job.spec.tasks) {
        std::string key = Upper(TaskKey(t.name));
        for (const std::string& name : {"VC_" + key + "_HOSTS", "VC_" + key + "_NUM"}) {
          api::EnvVar e;
          e.name = name;
          e.value_from = {{"configMapKeyRef", {{"name", cm}, {"key", name}}}};
          AddEnvAll(pod, e, /*init=*/true);
        }
      }
    }
    bool has_volume = std::any_of(pod->spec.volumes.begin(), pod->spec.volumes.end(),
                                  [&](const api::Volume& v) { return v.name == cm; });
    if (!has_volume) {
      api::Volume v;
      v.name = cm;
      v.config_map.emplace();
      v.config_map->name = cm;
      pod->spec.volumes.push_back(std::move(v));
    }
    api::VolumeMount m;
    m.name = cm;
    m.mount_path = kMountPath;
    for (auto& c : pod->spec.containers) c.volume_mounts.push_back(m);
    for (auto& c : pod->spec.init_containers) c.volume_mounts.push_back(m);
    return core::Status::OK();
  }

  core::Status Desired(const PluginContext& ctx, PluginObjects* out) override {
    const api::Job& job = *ctx.job;
    api::ConfigMap cm;
    cm.metadata.name = job.metadata.name + "-svc";
    cm.metadata.namespace_ = job.metadata.namespace_;
    cm.metadata.owner_references.push_back(JobOwnerRef(job));
    for (const auto& t : job.spec.tasks) {
      std::vector<std::string> hosts = TaskAddresses(job, t);
      std::string key = TaskKey(t.name);
      std::string nl, comma;
      for (size_t i = 0; i < hosts.size(); ++i) {
        nl += (i ? "\n" : "") + hosts[i];
        comma += (i ? "," : "") + hosts[i];
      }
      cm.data[key + ".host"] = nl;
      cm.data["VC_" + Upper(key) + "_HOSTS"] = comma;
      cm.data["VC_" + Upper(key) + "_NUM"] = std::to_string(hosts.size());
    }
    out->config_maps[cm.metadata.name] = std::move(cm);

    api::Service svc;
    svc.metadata.name = job.metadata.name;
    svc.metadata.namespace_ = job.metadata.namespace_;
    svc.metadata.owner_references.push_back(JobOwnerRef(job));
    svc.spec.cluster_ip = "None";
    svc.spec.selector = JobSelector(job);
    svc.spec.publish_not_ready_addresses = publish_not_ready_;
    out->services[svc.metadata.name] = std::move(svc);

    if (!disable_network_policy_) {
      api::NetworkPolicy np;
      np.metadata.name = job.metadata.name;
      np.metadata.namespace_ = job.metadata.namespace_;
      np.metadata.owner_references.push_back(JobOwnerRef(job));
      np.spec.pod_selector.match_labels = JobSelector(job);
      api::NetworkPolicyIngressRule rule;
      api::NetworkPolicyPeer peer;
      peer.pod_selector.emplace();
      peer.pod_selector->match_labels = JobSelector(job);
      rule.from.push_back(std::move(peer));
      np.spec.ingress.push_back(std::move(rule));
      np.spec.policy_types = {"Ingress"};
      out->network_policies[np.metadata.name] = std::move(np);
    }
    return core::Status::OK();
  }

  PluginObjectNames Owned(const api::Job& job) const override {
    PluginObjectNames n;
    n.config_maps = {job.metadata.name + "-svc"};
    n.services = {job.metadata.name};
    n.network_policies = {job.metadata.name};
    return n;
  }

 private:
  bool publish_not_ready_;
  bool disable_network_policy_;
  bool inject_hosts_env_;
};

}  // namespace

JobPluginPtr NewSvcPlugin(const std::vector<std::string>& args, std::vector<std::string>* log) {
  Flags f = ParsePluginFlags("svc", args,
                             {{"publish-not-ready-addresses", "false"},
                              {"disable-network-policy", "false"},
                              {"inject-hosts-env", "true"}},
                             {"publish-not-ready-addresses", "disable-network-policy", "inject-hosts-env"}, {}, log);
  return std::make_unique<SvcPlugin>(std::move(f));
}

}  // namespace tephra::reconcilers::job::internal
