// The only yaml-cpp user of the scheduler process: Volcano scheduler configuration parsing.
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "tephra/scheduler/conf.h"
#include "tephra/sched/framework.h"

namespace tephra::scheduler {

using core::Status;
using core::StatusCode;
using core::StatusOr;

namespace {

Status Bad(const std::string& where, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, where + ": " + what);
}

std::string LineOf(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return "";
  return " (line " + std::to_string(m.line + 1) + ")";
}

// Volcano's YAML booleans are Go bools: true/false in any case; yaml-cpp also accepts yes/no/on/off,
// which sigs.k8s.io/yaml (YAML 1.1) does too.
Status ReadBool(const YAML::Node& n, const std::string& where, std::optional<bool>* out) {
  if (!n.IsScalar()) return Bad(where, "not a boolean" + LineOf(n));
  bool v = false;
  if (!YAML::convert<bool>::decode(n, v)) return Bad(where, "not a boolean: \"" + n.Scalar() + "\"" + LineOf(n));
  *out = v;
  return Status::OK();
}

// Volcano decodes the file with gopkg.in/yaml.v2 into structs, which ignores keys it has no field for; a
// configuration written for Volcano (or a newer Volcano) therefore carries keys Tephra does not know. They
// are accepted with a warning naming them, so a typo is visible in the log without taking the scheduler down.
void Unknown(std::vector<std::string>* warnings, const std::string& where, const YAML::Node& key) {
  if (warnings) warnings->push_back(where + ": unknown key, ignored (as Volcano does)" + LineOf(key));
}

Status ReadArguments(const YAML::Node& n, const std::string& where, std::map<std::string, std::string>* out) {
  if (n.IsNull()) return Status::OK();
  if (!n.IsMap()) return Bad(where, "must be a map of argument name to value" + LineOf(n));
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    if (kv.second.IsNull()) {
      (*out)[key] = "";
    } else if (kv.second.IsScalar()) {
      // Scalars are kept as written: plugins parse "10", "0.8", "true" themselves (like Volcano's Arguments).
      (*out)[key] = kv.second.Scalar();
    } else {
      // Nested arguments (resource-strategy-fit's `resources:`, usage's `thresholds:`) are Volcano's
      // map[string]interface{}; kept as flow YAML, which a plugin that takes them parses itself.
      YAML::Emitter e;
      e.SetMapFormat(YAML::Flow);
      e.SetSeqFormat(YAML::Flow);
      e << kv.second;
      (*out)[key] = e.c_str();
    }
  }
  return Status::OK();
}

using Switch = std::optional<bool> sched::PluginOption::*;
const std::map<std::string, Switch>& Switches() {
  // YAML key -> field. Spellings follow Volcano exactly (enable* vs enabled* is real, see
  // docs/volcano-behaviour.md, "Scheduler configuration").
  static const std::map<std::string, Switch> m = {
      {"enableJobOrder", &sched::PluginOption::enable_job_order},
      {"enableJobReady", &sched::PluginOption::enable_job_ready},
      {"enableJobPipelined", &sched::PluginOption::enable_job_pipelined},
      {"enableTaskOrder", &sched::PluginOption::enable_task_order},
      {"enablePreemptable", &sched::PluginOption::enable_preemptable},
      {"enableReclaimable", &sched::PluginOption::enable_reclaimable},
      {"enablePreemptive", &sched::PluginOption::enable_preemptive},
      {"enableQueueOrder", &sched::PluginOption::enable_queue_order},
      {"enablePredicate", &sched::PluginOption::enable_predicate},
      {"enableBestNode", &sched::PluginOption::enable_best_node},
      {"enableNodeOrder", &sched::PluginOption::enable_node_order},
      {"enableTargetJob", &sched::PluginOption::enable_target_job},
      {"enableReservedNodes", &sched::PluginOption::enable_reserved_nodes},
      {"enableJobEnqueued", &sched::PluginOption::enable_job_enqueued},
      {"enabledVictim", &sched::PluginOption::enabled_victim},
      {"enableJobStarving", &sched::PluginOption::enable_job_starving},
      {"enabledOverused", &sched::PluginOption::enabled_overused},
      {"enabledAllocatable", &sched::PluginOption::enabled_allocatable},
      {"enabledHyperNodeOrder", &sched::PluginOption::enabled_hyper_node_order},
      {"enabledSubJobReady", &sched::PluginOption::enabled_sub_job_ready},
      {"enabledSubJobPipelined", &sched::PluginOption::enabled_sub_job_pipelined},
      {"enabledSubJobOrder", &sched::PluginOption::enabled_sub_job_order},
      {"enabledHyperNodeGradient", &sched::PluginOption::enabled_hyper_node_gradient},
      {"enableHierarchy", &sched::PluginOption::enable_hierarchy},
  };
  return m;
}

// Switches Volcano's configuration struct has but no Tephra plugin reads (Volcano's own plugins ignore
// them too): accepted silently.
bool KnownUnusedSwitch(const std::string& key) { return key == "enabledClusterOrder"; }

Status ReadPlugin(const YAML::Node& n, const std::string& where, sched::PluginOption* p,
                  std::vector<std::string>* warnings) {
  if (!n.IsMap()) return Bad(where, "a plugin must be a map with a name" + LineOf(n));
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    const std::string w = where + "." + key;
    if (key == "name") {
      if (!kv.second.IsScalar()) return Bad(w, "must be a string" + LineOf(kv.second));
      p->name = kv.second.Scalar();
    } else if (key == "arguments") {
      TEPHRA_RETURN_IF_ERROR(ReadArguments(kv.second, w, &p->arguments));
    } else if (auto it = Switches().find(key); it != Switches().end()) {
      TEPHRA_RETURN_IF_ERROR(ReadBool(kv.second, w, &(p->*(it->second))));
    } else if (KnownUnusedSwitch(key)) {
      std::optional<bool> ignored;
      TEPHRA_RETURN_IF_ERROR(ReadBool(kv.second, w, &ignored));  // still a bool to Volcano's decoder
    } else {
      Unknown(warnings, w, kv.first);
    }
  }
  if (p->name.empty()) return Bad(where + ".name", "missing");
  return Status::OK();
}

StatusOr<sched::SchedulerConf> Parse(const YAML::Node& root, const std::string& src, std::vector<std::string>* warnings) {
  sched::SchedulerConf conf;
  if (root.IsNull()) return Bad(src, "empty configuration");
  if (!root.IsMap()) return Bad(src, "top level must be a map (actions, tiers, configurations)");
  bool have_actions = false;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const std::string w = src + ": " + key;
    if (key == "actions") {
      if (!kv.second.IsScalar()) return Bad(w, "must be a comma-separated string" + LineOf(kv.second));
      conf.actions = sched::SchedulerConf::ParseActions(kv.second.Scalar());
      have_actions = true;
    } else if (key == "tiers") {
      if (kv.second.IsNull()) continue;
      if (!kv.second.IsSequence()) return Bad(w, "must be a list of tiers" + LineOf(kv.second));
      for (size_t i = 0; i < kv.second.size(); ++i) {
        const YAML::Node& t = kv.second[i];
        const std::string tw = w + "[" + std::to_string(i) + "]";
        if (!t.IsMap()) return Bad(tw, "a tier must be a map with `plugins`" + LineOf(t));
        sched::Tier tier;
        for (const auto& tkv : t) {
          const std::string tkey = tkv.first.as<std::string>();
          if (tkey != "plugins") {
            Unknown(warnings, tw + "." + tkey, tkv.first);
            continue;
          }
          if (tkv.second.IsNull()) continue;
          if (!tkv.second.IsSequence()) return Bad(tw + ".plugins", "must be a list" + LineOf(tkv.second));
          for (size_t j = 0; j < tkv.second.size(); ++j) {
            sched::PluginOption p;
            TEPHRA_RETURN_IF_ERROR(ReadPlugin(tkv.second[j], tw + ".plugins[" + std::to_string(j) + "]", &p, warnings));
            tier.plugins.push_back(std::move(p));
          }
        }
        conf.tiers.push_back(std::move(tier));
      }
    } else if (key == "configurations") {
      if (kv.second.IsNull()) continue;
      if (!kv.second.IsSequence()) return Bad(w, "must be a list" + LineOf(kv.second));
      for (size_t i = 0; i < kv.second.size(); ++i) {
        const YAML::Node& c = kv.second[i];
        const std::string cw = w + "[" + std::to_string(i) + "]";
        if (!c.IsMap()) return Bad(cw, "must be a map with name and arguments" + LineOf(c));
        sched::ActionConfiguration ac;
        for (const auto& ckv : c) {
          const std::string ckey = ckv.first.as<std::string>();
          if (ckey == "name") ac.name = ckv.second.as<std::string>();
          else if (ckey == "arguments") TEPHRA_RETURN_IF_ERROR(ReadArguments(ckv.second, cw + ".arguments", &ac.arguments));
          else Unknown(warnings, cw + "." + ckey, ckv.first);
        }
        if (ac.name.empty()) return Bad(cw + ".name", "missing");
        conf.configurations.push_back(std::move(ac));
      }
    } else if (key == "metrics") {
      // Volcano's optional metrics-source block (for the usage plugin); accepted and ignored.
    } else {
      Unknown(warnings, w, kv.first);
    }
  }
  if (!have_actions || conf.actions.empty()) return Bad(src + ": actions", "missing or empty");
  return conf;
}

}  // namespace

StatusOr<sched::SchedulerConf> ParseSchedulerConf(const std::string& yaml_text, const std::string& source,
                                                  std::vector<std::string>* warnings) {
  try {
    YAML::Node root = YAML::Load(yaml_text);
    return Parse(root, source, warnings);
  } catch (const YAML::Exception& e) {
    // e.what() already carries "yaml-cpp: error at line L, column C: ..."
    return Bad(source, std::string("invalid YAML: ") + e.what());
  }
}

StatusOr<sched::SchedulerConf> LoadSchedulerConf(const std::string& yaml_text, const std::string& source,
                                                 std::vector<std::string>* warnings) {
  TEPHRA_ASSIGN_OR_RETURN(sched::SchedulerConf conf, ParseSchedulerConf(yaml_text, source, warnings));
  Status s = conf.Validate(sched::PluginRegistry::Builtin(), warnings);
  if (!s.ok()) return Status(s.code(), source + ": " + s.message());
  return conf;
}

StatusOr<sched::SchedulerConf> LoadSchedulerConfFile(const std::string& path, std::vector<std::string>* warnings) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, "scheduler conf " + path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return LoadSchedulerConf(ss.str(), path, warnings);
}

bool FileChangePoller::Changed() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return false;
  const int64_t mt = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  const uint64_t ino = static_cast<uint64_t>(st.st_ino);
  if (mt == mtime_ns_ && static_cast<int64_t>(st.st_size) == size_ && ino == inode_) return false;
  mtime_ns_ = mt;
  size_ = static_cast<int64_t>(st.st_size);
  inode_ = ino;
  return true;
}

}  // namespace tephra::scheduler
