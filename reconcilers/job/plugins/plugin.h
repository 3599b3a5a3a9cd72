// Job plugins (docs/volcano-behaviour.md, "Job plugins"): env, svc, ssh, pytorch, mpi, tensorflow, ray, hcclrank.
//
// Volcano's plugins are imperative hooks (OnPodCreate / OnJobAdd / OnJobDelete / OnJobUpdate) that call the
// API server themselves. Tephra's plan is level-triggered and pure, so a plugin here only *describes*:
//   - OnPodCreate mutates the pod about to be created (env, volumes, ports, hostname...);
//   - Desired() returns the objects the plugin wants to exist for the job (ConfigMap, Service, NetworkPolicy,
//     Secret); the plan diffs them against what the informers observed and emits create/update actions;
//   - Owned() names the objects OnJobDelete would remove, so a kill can delete exactly those.
// None of them performs I/O; the ssh plugin asks an injected KeyGenerator for a key only when its Secret is
// missing (so re-planning an existing job never regenerates keys).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/batch.h"
#include "tephra/api/core_v1.h"
#include "tephra/core/status.h"
#include "tephra/kube/keygen.h"

namespace tephra::reconcilers::job {

// Objects a plugin manages, keyed by name.
struct PluginObjects {
  std::map<std::string, api::ConfigMap> config_maps;
  std::map<std::string, api::Service> services;
  std::map<std::string, api::NetworkPolicy> network_policies;
  std::map<std::string, api::Secret> secrets;

  bool empty() const {
    return config_maps.empty() && services.empty() && network_policies.empty() && secrets.empty();
  }
};

// Names of plugin-managed objects by kind (what a kill deletes).
struct PluginObjectNames {
  std::vector<std::string> config_maps, services, network_policies, secrets;
};

struct PluginContext {
  const api::Job* job = nullptr;
  // What the informers currently hold for this job (used by ssh to keep an existing key).
  const PluginObjects* observed = nullptr;
  kube::KeyGenerator* key_generator = nullptr;
  // Lines for the log ("plugin svc: unknown flag --foo ignored"); the plan returns them.
  std::vector<std::string>* log = nullptr;
};

class JobPlugin {
 public:
  virtual ~JobPlugin() = default;
  virtual std::string_view Name() const = 0;
  // Mutates a pod built from `task` at `index` before it is created.
  virtual core::Status OnPodCreate(const PluginContext& ctx, const api::TaskSpec& task, int index, api::Pod* pod) {
    return core::Status::OK();
  }
  // Adds the objects this plugin wants to exist into *out.
  virtual core::Status Desired(const PluginContext& ctx, PluginObjects* out) { return core::Status::OK(); }
  // The objects OnJobDelete removes.
  virtual PluginObjectNames Owned(const api::Job& job) const { return {}; }
};

using JobPluginPtr = std::unique_ptr<JobPlugin>;

// Builds a plugin from its name and Go-flag style arguments. Unknown names -> kNotFound (admission rejects
// them, so this only happens for jobs created while the webhook was off). Unknown flags are ignored with a
// line in *log.
core::StatusOr<JobPluginPtr> NewJobPlugin(std::string_view name, const std::vector<std::string>& args,
                                          std::vector<std::string>* log);

// --- helpers shared by the plugins (and tested directly) ---

// The flags a plugin defines, by type (Go's flag.StringVar / BoolVar / IntVar); `known` lists them all.
struct GoFlagTypes {
  std::vector<std::string> known;
  std::vector<std::string> bools;
  std::vector<std::string> ints;
};

// Parses plugin arguments as Go's flag.FlagSet.Parse does (Volcano's plugins use it, with ContinueOnError):
// "-k=v", "--k=v", "-k v", bare "-k" for bools. Parsing stops, keeping what it set so far, at the first word
// that is not a flag, after "--", and at the first error: an undefined flag, a value missing, a bool or int
// (strconv.ParseInt base 0) that does not parse. Returns the error, or "" when it stopped without one.
std::string ParseGoFlags(const std::vector<std::string>& args, const GoFlagTypes& types,
                         std::map<std::string, std::string>* values);
// strconv.ParseInt(s, 0, 64) and strconv.ParseBool.
std::optional<int64_t> ParseGoInt(std::string_view s);
std::optional<bool> ParseGoBool(std::string_view s);

// "<job>-<task>-<index>": the deterministic pod name.
std::string PodName(std::string_view job, std::string_view task, int index);
// The DNS addresses of a task's pods: "<hostname>.<subdomain>" per replica, where hostname is the template's
// hostname or the pod name and subdomain the template's subdomain or the job name. A template with an
// explicit hostname yields a single entry.
std::vector<std::string> TaskAddresses(const api::Job& job, const api::TaskSpec& task);
// The address of pod `index` of `task`.
std::string PodAddress(const api::Job& job, const api::TaskSpec& task, int index);
// The index from the last "-" segment of a pod name (Volcano's GetPodIndexUnderTask fallback); -1 if none.
int IndexFromPodName(std::string_view pod_name);
// Controller owner reference to the job.
api::OwnerReference JobOwnerRef(const api::Job& job);
// Appends env to every container (and init container when `init` is true), keeping existing entries.
void AddEnvAll(api::Pod* pod, const api::EnvVar& env, bool init);

}  // namespace tephra::reconcilers::job
