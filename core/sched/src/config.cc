#include "tephra/sched/config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "tephra/core/duration.h"
#include "tephra/sched/action.h"
#include "tephra/sched/framework.h"

namespace tephra::sched {

using core::Status;
using core::StatusCode;

namespace {
// Volcano's action and plugin names (docs/volcano-behaviour.md, "Scheduler configuration", "Plugins").
const std::set<std::string>& VolcanoActions() {
  static const std::set<std::string> s = {"enqueue", "allocate", "backfill", "preempt", "reclaim",
                                          "shuffle", "gangpreempt", "gangreclaim"};
  return s;
}
const std::set<std::string>& VolcanoPlugins() {
  static const std::set<std::string> s = {
      "gang", "priority", "conformance", "drf", "proportion", "capacity", "overcommit", "predicates",
      "nodeorder", "binpack", "task-topology", "network-topology-aware", "sla", "tdm", "numa-aware",
      "deviceshare", "nodegroup", "pdb", "cdp", "rescheduling", "resource-strategy-fit", "resourcequota",
      "usage", "extender"};
  return s;
}
}  // namespace

SchedulerConf SchedulerConf::Default() {
  SchedulerConf c;
  c.actions = {"enqueue", "allocate", "backfill"};
  Tier t1;
  t1.plugins.push_back(PluginOption::Named("priority"));
  PluginOption gang = PluginOption::Named("gang");
  gang.enable_preemptable = false;
  t1.plugins.push_back(gang);
  t1.plugins.push_back(PluginOption::Named("conformance"));
  Tier t2;
  t2.plugins.push_back(PluginOption::Named("overcommit"));
  PluginOption drf = PluginOption::Named("drf");
  drf.enable_preemptable = false;
  t2.plugins.push_back(drf);
  t2.plugins.push_back(PluginOption::Named("predicates"));
  t2.plugins.push_back(PluginOption::Named("proportion"));
  t2.plugins.push_back(PluginOption::Named("nodeorder"));
  PluginOption binpack = PluginOption::Named("binpack");
  binpack.arguments = {{"binpack.weight", "10"}, {"binpack.cpu", "5"}};
  t2.plugins.push_back(binpack);
  c.tiers = {t1, t2};
  c.configurations.push_back({"allocate", {{"predicateErrorCacheEnable", "true"}}});
  return c;
}

std::vector<std::string> SchedulerConf::ParseActions(const std::string& csv) {
  std::vector<std::string> out;
  std::string cur;
  // Volcano splits on ',' and trims each name; an empty name (a trailing or doubled comma) is kept, and
  // Validate rejects it as Volcano does ("failed to find Action").
  auto flush = [&] {
    auto b = cur.find_first_not_of(" \t\n");
    auto e = cur.find_last_not_of(" \t\n");
    out.push_back(b == std::string::npos ? std::string() : cur.substr(b, e - b + 1));
    cur.clear();
  };
  for (char ch : csv) {
    if (ch == ',') flush();
    else cur += ch;
  }
  flush();
  return out;
}

const ActionConfiguration* SchedulerConf::FindConfiguration(const std::string& action) const {
  for (const auto& c : configurations)
    if (c.name == action) return &c;
  return nullptr;
}

Status SchedulerConf::Validate(const PluginRegistry& registry, std::vector<std::string>* warnings) const {
  return Validate(registry, ActionRegistry::Builtin(), warnings);
}

Status SchedulerConf::Validate(const PluginRegistry& registry, const ActionRegistry& action_registry,
                               std::vector<std::string>* warnings) const {
  if (actions.empty()) return Status(StatusCode::kInvalidArgument, "scheduler conf: no actions");
  for (const auto& a : actions) {
    if (a.empty())
      return Status(StatusCode::kInvalidArgument,
                    "scheduler conf: actions: an empty action name (a trailing or doubled comma?)");
    if (action_registry.Has(a)) continue;
    if (!VolcanoActions().count(a)) return Status(StatusCode::kInvalidArgument, "scheduler conf: unknown action \"" + a + "\"");
    if (warnings) warnings->push_back("action \"" + a + "\" is not implemented; skipped");
  }
  std::set<std::string> seen;
  bool has_proportion = false, drf_hierarchy = false;
  for (const auto& tier : tiers) {
    for (const auto& p : tier.plugins) {
      // Volcano skips a plugin it has no builder for at session open (logging it), and a plugin listed in two
      // tiers answers in both: neither makes the configuration invalid.
      if (!registry.Has(p.name) && warnings) {
        warnings->push_back(VolcanoPlugins().count(p.name)
                                ? "plugin \"" + p.name + "\" is not implemented; skipped"
                                : "unknown plugin \"" + p.name + "\"; skipped (as Volcano skips it)");
      }
      if (!seen.insert(p.name).second && warnings)
        warnings->push_back("plugin \"" + p.name + "\" is listed more than once; each entry answers in its own tier");
      if (p.name == "proportion") has_proportion = true;
      if (p.name == "drf" && p.enable_hierarchy.value_or(false)) drf_hierarchy = true;
    }
  }
  if (has_proportion && drf_hierarchy)
    return Status(StatusCode::kInvalidArgument,
                  "scheduler conf: proportion cannot be used together with drf enableHierarchy");
  for (const auto& c : configurations)
    if (!action_registry.Has(c.name) && !VolcanoActions().count(c.name))
      return Status(StatusCode::kInvalidArgument, "scheduler conf: configuration for unknown action \"" + c.name + "\"");
  // Arguments: building an instance is how a plugin or action parses them (cheap: no state is touched).
  for (const auto& tier : tiers)
    for (const auto& p : tier.plugins) {
      if (!registry.Has(p.name)) continue;
      auto made = registry.Create(p);
      if (!made.ok()) return Status(made.status().code(), "scheduler conf: " + made.status().message());
    }
  for (const auto& a : actions) {
    if (!action_registry.Has(a)) continue;
    const ActionConfiguration* c = FindConfiguration(a);
    auto made = action_registry.Create(c ? *c : ActionConfiguration{a, {}});
    if (!made.ok()) return Status(made.status().code(), "scheduler conf: " + made.status().message());
  }
  return Status::OK();
}

bool ArgBool(const std::map<std::string, std::string>& args, const std::string& key, bool fallback) {
  auto it = args.find(key);
  if (it == args.end()) return fallback;
  std::string v = it->second;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  return fallback;
}

double ArgDouble(const std::map<std::string, std::string>& args, const std::string& key, double fallback) {
  auto it = args.find(key);
  if (it == args.end() || it->second.empty()) return fallback;
  char* end = nullptr;
  double d = std::strtod(it->second.c_str(), &end);
  return (end && *end == '\0') ? d : fallback;
}

void ArgParser::Fail(const std::string& key, const std::string& value, const char* what) {
  if (!status_.ok()) return;  // the first error is the one to fix first
  status_ = Status(StatusCode::kInvalidArgument,
                   owner_ + ": argument \"" + key + "\": \"" + value + "\" is not " + what);
}

double ArgParser::Double(const std::string& key, double fallback) {
  auto it = args_.find(key);
  if (it == args_.end() || it->second.empty()) return fallback;
  char* end = nullptr;
  double d = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end != '\0' || !std::isfinite(d)) {
    Fail(key, it->second, "a number");
    return fallback;
  }
  return d;
}

int64_t ArgParser::Int(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  auto it = args_.find(key);
  if (it == args_.end() || it->second.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    std::string what = "a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    Fail(key, it->second, what.c_str());
    return fallback;
  }
  return v;
}

std::chrono::nanoseconds ArgParser::PositiveDuration(const std::string& key, std::chrono::nanoseconds fallback) {
  auto it = args_.find(key);
  if (it == args_.end() || it->second.empty()) return fallback;
  auto d = core::ParseGoDuration(it->second);
  if (!d.ok() || d->count() <= 0) {
    Fail(key, it->second, "a positive duration (Go syntax: 1h2m3s, 90s, 500ms)");
    return fallback;
  }
  return *d;
}

bool ArgParser::Bool(const std::string& key, bool fallback) {
  auto it = args_.find(key);
  if (it == args_.end() || it->second.empty()) return fallback;
  std::string v = it->second;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  Fail(key, it->second, "a boolean (true or false)");
  return fallback;
}

}  // namespace tephra::sched
