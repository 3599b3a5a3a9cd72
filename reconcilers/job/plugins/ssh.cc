// ssh plugin: Secret `<job>-ssh` holding an RSA key pair, authorized_keys and an ssh config listing every pod,
// mounted into every container at the key path (default /root/.ssh). The key is generated once, when the
// Secret does not exist; an existing Secret is never regenerated.
#include "factories.h"

namespace tephra::reconcilers::job::internal {
namespace {

constexpr const char* kDefaultPath = "/root/.ssh";
constexpr const char* kRelative = ".ssh";
const char* const kKeys[] = {"id_rsa", "id_rsa.pub", "authorized_keys", "config"};

class SshPlugin final : public JobPlugin {
 public:
  explicit SshPlugin(Flags f)
      : path_(f["ssh-key-file-path"]),
        private_key_(f["ssh-private-key"]),
        public_key_(f["ssh-public-key"]),
        port_(FlagInt(f, "ssh-port", 22)) {}

  std::string_view Name() const override { return "ssh"; }

  core::Status OnPodCreate(const PluginContext& ctx, const api::TaskSpec&, int, api::Pod* pod) override {
    const std::string name = SecretName(*ctx.job);
    api::Volume v;
    v.name = name;
    v.secret.emplace();
    v.secret->secret_name = name;
    // 0600 where ssh insists on private permissions; a custom path may be shared with non-root users.
    v.secret->default_mode = path_ == kDefaultPath ? 0600 : 0644;
    for (const char* k : kKeys) {
      api::KeyToPath item;
      item.key = k;
      item.path = std::string(kRelative) + "/" + k;
      v.secret->items.push_back(std::move(item));
    }
    pod->spec.volumes.push_back(std::move(v));
    api::VolumeMount m;
    m.name = name;
    m.mount_path = path_;
    m.sub_path = kRelative;
    for (auto& c : pod->spec.containers) c.volume_mounts.push_back(m);
    for (auto& c : pod->spec.init_containers) c.volume_mounts.push_back(m);
    return core::Status::OK();
  }

  core::Status Desired(const PluginContext& ctx, PluginObjects* out) override {
    const api::Job& job = *ctx.job;
    const std::string name = SecretName(job);
    if (ctx.observed) {
      auto it = ctx.observed->secrets.find(name);
      if (it != ctx.observed->secrets.end()) {
        out->secrets[name] = it->second;  // keep the existing key
        return core::Status::OK();
      }
    }
    std::string priv = private_key_, pub = public_key_;
    if (priv.empty() || pub.empty()) {
      if (!ctx.key_generator) return core::FailedPreconditionError("ssh plugin: no key generator configured");
      auto kp = ctx.key_generator->GenerateRsa(2048);
      if (!kp.ok()) return kp.status().Annotate("ssh plugin: generating RSA key");
      priv = kp->private_pem;
      pub = kp->public_openssh;
    }
    api::Secret s;
    s.metadata.name = name;
    s.metadata.namespace_ = job.metadata.namespace_;
    s.metadata.owner_references.push_back(JobOwnerRef(job));
    s.data["id_rsa"] = api::Base64Encode(priv);
    s.data["id_rsa.pub"] = api::Base64Encode(pub);
    s.data["authorized_keys"] = api::Base64Encode(pub);
    s.data["config"] = api::Base64Encode(Config(job));
    out->secrets[name] = std::move(s);
    return core::Status::OK();
  }

  PluginObjectNames Owned(const api::Job& job) const override {
    PluginObjectNames n;
    n.secrets = {SecretName(job)};
    return n;
  }

  // The ssh client config: no host key checks (pods are recreated with new host keys), one Host block per pod.
  std::string Config(const api::Job& job) const {
    std::string c = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n";
    for (const auto& t : job.spec.tasks) {
      for (const std::string& addr : TaskAddresses(job, t)) {
        std::string host = addr.substr(0, addr.find('.'));
        c += "Host " + host + "\n";
        c += "  HostName " + addr + "\n";
        c += "  Port " + std::to_string(port_) + "\n";
      }
    }
    return c;
  }

 private:
  static std::string SecretName(const api::Job& job) { return job.metadata.name + "-ssh"; }
  std::string path_, private_key_, public_key_;
  int port_;
};

}  // namespace

JobPluginPtr NewSshPlugin(const std::vector<std::string>& args, std::vector<std::string>* log) {
  Flags f = ParsePluginFlags("ssh", args,
                             {{"ssh-key-file-path", kDefaultPath},
                              {"ssh-private-key", ""},
                              {"ssh-public-key", ""},
                              {"ssh-port", "22"}},
                             {}, {"ssh-port"}, log);
  return std::make_unique<SshPlugin>(std::move(f));
}

}  // namespace tephra::reconcilers::job::internal
