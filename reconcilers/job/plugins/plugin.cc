#include "plugin.h"

#include <algorithm>
#include <cctype>

#include "factories.h"
#include "tephra/api/batch.h"

namespace tephra::reconcilers::job {

void ParseGoFlags(const std::vector<std::string>& args, const std::vector<std::string>& known,
                  const std::vector<std::string>& bool_flags, std::map<std::string, std::string>* values,
                  std::vector<std::string>* unknown) {
  auto is_known = [&](const std::string& n) { return std::find(known.begin(), known.end(), n) != known.end(); };
  auto is_bool = [&](const std::string& n) {
    return std::find(bool_flags.begin(), bool_flags.end(), n) != bool_flags.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // Go's flag package accepts one or two leading dashes.
    size_t dashes = 0;
    while (dashes < a.size() && dashes < 2 && a[dashes] == '-') ++dashes;
    if (dashes == 0 || dashes == a.size()) {
      unknown->push_back(a);
      continue;
    }
    std::string body = a.substr(dashes);
    std::string name, value;
    bool has_value = false;
    if (auto eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    } else {
      name = body;
    }
    if (!is_known(name)) {
      unknown->push_back(a);
      continue;
    }
    if (!has_value) {
      if (is_bool(name)) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        unknown->push_back(a);  // a value flag without a value
        continue;
      }
    }
    (*values)[name] = value;
  }
}

std::string PodName(std::string_view job, std::string_view task, int index) {
  return std::string(job) + "-" + std::string(task) + "-" + std::to_string(index);
}

std::string PodAddress(const api::Job& job, const api::TaskSpec& task, int index) {
  std::string host = task.template_.spec.hostname;
  std::string sub = task.template_.spec.subdomain;
  if (host.empty()) host = PodName(job.metadata.name, task.name, index);
  if (sub.empty()) sub = job.metadata.name;
  return host + "." + sub;
}

std::vector<std::string> TaskAddresses(const api::Job& job, const api::TaskSpec& task) {
  std::vector<std::string> out;
  for (int i = 0; i < task.replicas; ++i) {
    out.push_back(PodAddress(job, task, i));
    // Every replica would get the same explicit hostname: one entry is enough (and what Volcano writes).
    if (!task.template_.spec.hostname.empty()) break;
  }
  return out;
}

int IndexFromPodName(std::string_view pod_name) {
  auto dash = pod_name.rfind('-');
  if (dash == std::string_view::npos || dash + 1 >= pod_name.size()) return -1;
  int v = 0;
  for (char c : pod_name.substr(dash + 1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    v = v * 10 + (c - '0');
    if (v > 1'000'000) return -1;
  }
  return v;
}

api::OwnerReference JobOwnerRef(const api::Job& job) {
  api::OwnerReference o;
  o.api_version = api::Job::Resource().ApiVersion();
  o.kind = std::string(api::Job::Resource().kind);
  o.name = job.metadata.name;
  o.uid = job.metadata.uid;
  o.controller = true;
  o.block_owner_deletion = true;
  return o;
}

void AddEnvAll(api::Pod* pod, const api::EnvVar& env, bool init) {
  for (auto& c : pod->spec.containers) c.env.push_back(env);
  if (init)
    for (auto& c : pod->spec.init_containers) c.env.push_back(env);
}

namespace internal {

Flags ParsePluginFlags(std::string_view plugin, const std::vector<std::string>& args, const Flags& defaults,
                       const std::vector<std::string>& bool_flags, std::vector<std::string>* log) {
  Flags values = defaults;
  std::vector<std::string> known, unknown;
  for (const auto& [k, v] : defaults) known.push_back(k);
  ParseGoFlags(args, known, bool_flags, &values, &unknown);
  if (log)
    for (const auto& u : unknown) log->push_back("plugin " + std::string(plugin) + ": unknown flag " + u + " ignored");
  return values;
}

bool FlagBool(const Flags& f, const std::string& name) {
  auto it = f.find(name);
  if (it == f.end()) return false;
  std::string v = it->second;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  // Go's strconv.ParseBool accepts 1, t, T, TRUE, true, True.
  return v == "1" || v == "t" || v == "true";
}

int FlagInt(const Flags& f, const std::string& name, int fallback) {
  auto it = f.find(name);
  if (it == f.end() || it->second.empty()) return fallback;
  try {
    size_t pos = 0;
    int v = std::stoi(it->second, &pos);
    return pos == it->second.size() ? v : fallback;
  } catch (...) {  // std::stoi throws on garbage; a bad flag falls back to the default.
    return fallback;
  }
}

}  // namespace internal

core::StatusOr<JobPluginPtr> NewJobPlugin(std::string_view name, const std::vector<std::string>& args,
                                          std::vector<std::string>* log) {
  if (name == "env") return internal::NewEnvPlugin(args, log);
  if (name == "svc") return internal::NewSvcPlugin(args, log);
  if (name == "ssh") return internal::NewSshPlugin(args, log);
  if (name == "pytorch") return internal::NewPytorchPlugin(args, log);
  if (name == "mpi") return internal::NewMpiPlugin(args, log);
  if (name == "tensorflow") return internal::NewTensorflowPlugin(args, log);
  if (name == "hcclrank") return internal::NewHcclRankPlugin(args, log);
  if (name == "ray") return internal::NewRayPlugin(args, log);
  return core::NotFoundError("unknown job plugin \"" + std::string(name) + "\"");
}

}  // namespace tephra::reconcilers::job
