#include "plugin.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>

#include "factories.h"
#include "tephra/api/batch.h"

namespace tephra::reconcilers::job {

std::optional<int64_t> ParseGoInt(std::string_view s) {
  // strconv.ParseInt(s, 0, 64): optional sign, then 0x/0o/0b or a leading 0 (octal) prefix; underscores only
  // between digits or after a prefix (base 0 allows them there).
  if (s.empty()) return std::nullopt;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  bool prefixed = false;
  bool leading_zero = false;  // "017": the 0 is both the octal prefix and a digit
  if (s.size() >= 2 && s[0] == '0') {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[1])));
    if (c == 'x') base = 16;
    else if (c == 'o') base = 8;
    else if (c == 'b') base = 2;
    if (base != 10) {
      s.remove_prefix(2);
    } else {
      base = 8;  // "017" is octal, as in Go
      s.remove_prefix(1);
      leading_zero = true;
    }
    prefixed = true;
  }
  uint64_t v = 0;
  bool last_underscore = !prefixed;  // a leading '_' is only allowed right after a prefix
  bool any_digit = leading_zero;
  for (char ch : s) {
    if (ch == '_') {
      if (last_underscore) return std::nullopt;
      last_underscore = true;
      continue;
    }
    int d;
    if (ch >= '0' && ch <= '9') d = ch - '0';
    else if (ch >= 'a' && ch <= 'z') d = ch - 'a' + 10;
    else if (ch >= 'A' && ch <= 'Z') d = ch - 'A' + 10;
    else return std::nullopt;
    if (d >= base) return std::nullopt;
    last_underscore = false;
    any_digit = true;
    if (v > (uint64_t{1} << 63) / static_cast<uint64_t>(base)) return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    if (v > (uint64_t{1} << 63)) return std::nullopt;
  }
  if (!any_digit || (last_underscore && !s.empty())) return std::nullopt;  // "0x", "1_"
  if (!neg && v == (uint64_t{1} << 63)) return std::nullopt;
  return neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

std::optional<bool> ParseGoBool(std::string_view s) {
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") return true;
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False") return false;
  return std::nullopt;
}

std::string ParseGoFlags(const std::vector<std::string>& args, const GoFlagTypes& types,
                         std::map<std::string, std::string>* values) {
  auto has = [](const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // flag.FlagSet.parseOne: a word that is not "-x..." ends the flags, and so does a bare "--" (consumed).
    if (a.size() < 2 || a[0] != '-') return "";
    size_t dashes = a[1] == '-' ? 2 : 1;
    if (dashes == 2 && a.size() == 2) return "";
    std::string body = a.substr(dashes);
    if (body.empty() || body[0] == '-' || body[0] == '=') return "bad flag syntax: " + a;
    std::string name = body, value;
    bool has_value = false;
    if (auto eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    if (!has(types.known, name)) return "flag provided but not defined: -" + name;
    if (has(types.bools, name)) {
      // A bool flag never takes the next word: "-flag false" sets true and then stops at "false".
      if (!has_value) value = "true";
      auto b = ParseGoBool(value);
      if (!b) return "invalid boolean value \"" + value + "\" for -" + name;
      (*values)[name] = *b ? "true" : "false";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return "flag needs an argument: -" + name;
      value = args[++i];  // taken whatever it looks like, as Go does
    }
    if (has(types.ints, name) && !ParseGoInt(value)) return "invalid value \"" + value + "\" for flag -" + name;
    (*values)[name] = value;
  }
  return "";
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
                       const std::vector<std::string>& bool_flags, const std::vector<std::string>& int_flags,
                       std::vector<std::string>* log) {
  Flags values = defaults;
  GoFlagTypes types;
  for (const auto& [k, v] : defaults) types.known.push_back(k);
  types.bools = bool_flags;
  types.ints = int_flags;
  std::string err = ParseGoFlags(args, types, &values);
  // Volcano logs the parse error and goes on with what was parsed before it.
  if (log && !err.empty())
    log->push_back("plugin " + std::string(plugin) + ": " + err + "; the arguments from there on are ignored");
  return values;
}

bool FlagBool(const Flags& f, const std::string& name) {
  auto it = f.find(name);
  return it != f.end() && ParseGoBool(it->second).value_or(false);
}

int FlagInt(const Flags& f, const std::string& name, int fallback) {
  auto it = f.find(name);
  if (it == f.end()) return fallback;
  auto v = ParseGoInt(it->second);
  if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) return fallback;
  return static_cast<int>(*v);
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
