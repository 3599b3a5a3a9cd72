// Connecting to the cluster, and API errors rewritten so they say what failed and what to do.
#include <sys/stat.h>

#include <cstdlib>

#include "tephra/ctl/context.h"
#include "tephra/ctl/ctl.h"
#include "tephra/kube/config.h"
#include "tephra/kube/transport.h"

namespace tephra::ctl {

std::string KindWord(const api::ResourceInfo& r) {
  std::string k(r.kind);
  for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return k;
}

core::Status Context::Explain(const core::Status& s, std::string_view verb, const api::ResourceInfo& r,
                              const std::string& ns, const std::string& name) const {
  if (s.ok()) return s;
  const std::string where = server.empty() ? "the API server" : "the API server at " + server;
  std::string resource(r.plural);
  if (!r.group.empty()) resource += "." + std::string(r.group);
  std::string scope = r.namespaced && !ns.empty() ? " in namespace \"" + ns + "\"" : "";
  switch (s.code()) {
    case core::StatusCode::kNotFound: {
      std::string what = KindWord(r) + " ";
      what += r.namespaced && !ns.empty() ? ns + "/" + name : name;
      if (name.empty()) return core::NotFoundError(s.message() + " (is the " + resource + " CRD installed?)");
      return core::NotFoundError(what + " not found");
    }
    case core::StatusCode::kPermissionDenied:
      return core::PermissionDeniedError(
          "forbidden: the API server refused to " + std::string(verb) + " " + resource +
          (name.empty() ? "" : " \"" + name + "\"") + scope + ". Missing RBAC permission: verb \"" +
          std::string(verb) + "\" on resource \"" + std::string(r.plural) + "\" in API group \"" +
          std::string(r.group) + "\"" + scope +
          "; ask a cluster admin to bind a Role/ClusterRole granting it to your user (server said: " + s.message() +
          ")");
    case core::StatusCode::kUnauthenticated:
      return core::UnauthenticatedError(where + " rejected the credentials (401 Unauthorized): " + s.message() +
                                        "; check the user (token or client certificate) in your kubeconfig");
    case core::StatusCode::kUnavailable:
      return core::UnavailableError("cannot reach " + where + ": " + s.message() +
                                    "; check that the cluster is up and that --master/--kubeconfig point to it");
    default:
      return s;
  }
}

core::StatusOr<Connection> ConnectToCluster(const ConnectionFlags& flags) {
  auto cfg = kube::LoadConfig(flags.kubeconfig, flags.master);
  if (!cfg.ok()) {
    if (!flags.kubeconfig.empty()) return cfg.status();  // the file given is broken: its error says how
    const char* env = std::getenv("KUBECONFIG");
    bool env_set = env != nullptr && *env != '\0';
    if (env_set) {  // $KUBECONFIG names a file that exists but is broken
      std::string list = env;
      size_t start = 0;
      while (start <= list.size()) {
        size_t end = list.find(':', start);
        if (end == std::string::npos) end = list.size();
        struct stat st {};
        std::string p = list.substr(start, end - start);
        if (!p.empty() && ::stat(p.c_str(), &st) == 0) return cfg.status();
        start = end + 1;
      }
    }
    return core::FailedPreconditionError(
        "no kubeconfig found. Looked at: --kubeconfig/-k (not given); $KUBECONFIG (" +
        (env_set ? "\"" + std::string(env) + "\": no such file" : std::string("not set")) +
        "); in-cluster service account (" + kube::InClusterConfig().status().message() +
        "). Pass -k PATH, set KUBECONFIG, or run inside a pod; -s URL alone reaches an unauthenticated server");
  }
  // A person is waiting: fail in seconds rather than after a controller's ten retries.
  cfg->max_tries = 3;
  cfg->retry_max = std::chrono::seconds(1);
  cfg->user_agent = "tephra-ctl";
  auto client = kube::NewClient(*cfg);
  if (!client.ok()) return client.status();
  return Connection{std::move(client).value(), cfg->server};
}

}  // namespace tephra::ctl
