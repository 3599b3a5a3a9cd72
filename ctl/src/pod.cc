// `pod list` (vcctl's pkg/cli/pod): pods of vcjobs with kubectl's Ready/Status/Restarts logic.
#include <algorithm>
#include <map>

#include "internal.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/labels.h"

namespace tephra::ctl::internal {
namespace {

struct PodRow {
  std::string ns, name, ready, status, restarts, age, node, ip;
};

bool Later(const std::string& a, const std::string& b) {  // RFC 3339 strings in UTC compare as text
  return a > b;
}

// kubectl's printPod (as vendored by vcctl), on the pod's JSON.
PodRow Describe(const json& pod, const core::Clock& clock) {
  PodRow r;
  r.ns = Str(pod, "/metadata/namespace");
  r.name = Str(pod, "/metadata/name");
  r.node = Str(pod, "/spec/nodeName");
  r.ip = Str(pod, "/status/podIP");
  const json& spec_containers = At(pod, "/spec/containers");
  int total = spec_containers.is_array() ? static_cast<int>(spec_containers.size()) : 0;
  int ready = 0, restarts = 0, sidecar_restarts = 0;
  std::string last_restart, last_sidecar_restart;
  std::string reason = Str(pod, "/status/phase");
  if (!Str(pod, "/status/reason").empty()) reason = Str(pod, "/status/reason");
  const json& conds = At(pod, "/status/conditions");
  auto conditions = conds.is_array() ? conds : json::array();
  for (const auto& c : conditions)
    if (Str(c, "/type") == "PodScheduled" && Str(c, "/reason") == "SchedulingGated") reason = "SchedulingGated";

  // Restartable init containers (sidecars) count as containers.
  std::map<std::string, bool> sidecar;
  const json& inits = At(pod, "/spec/initContainers");
  for (const auto& c : inits.is_array() ? inits : json::array()) {
    bool s = Str(c, "/restartPolicy") == "Always";
    sidecar[Str(c, "/name")] = s;
    if (s) ++total;
  }
  const int init_count = inits.is_array() ? static_cast<int>(inits.size()) : 0;
  bool initializing = false;
  const json& init_statuses = At(pod, "/status/initContainerStatuses");
  int i = 0;
  for (const auto& c : init_statuses.is_array() ? init_statuses : json::array()) {
    int rc = static_cast<int>(Int(c, "/restartCount"));
    restarts += rc;
    std::string finished = Str(c, "/lastState/terminated/finishedAt");
    if (!finished.empty() && Later(finished, last_restart)) last_restart = finished;
    const bool is_sidecar = sidecar[Str(c, "/name")];
    if (is_sidecar) {
      sidecar_restarts += rc;
      if (!finished.empty() && Later(finished, last_sidecar_restart)) last_sidecar_restart = finished;
    }
    const json& term = At(c, "/state/terminated");
    const json& started = At(c, "/started");
    if (term.is_object() && Int(term, "/exitCode") == 0) {
      ++i;
      continue;
    }
    if (is_sidecar && started.is_boolean() && started.get<bool>()) {
      if (At(c, "/ready").is_boolean() && At(c, "/ready").get<bool>()) ++ready;
      ++i;
      continue;
    }
    if (term.is_object()) {
      if (Str(term, "/reason").empty())
        reason = Int(term, "/signal") != 0 ? "Init:Signal:" + std::to_string(Int(term, "/signal"))
                                           : "Init:ExitCode:" + std::to_string(Int(term, "/exitCode"));
      else
        reason = "Init:" + Str(term, "/reason");
    } else if (!Str(c, "/state/waiting/reason").empty() && Str(c, "/state/waiting/reason") != "PodInitializing") {
      reason = "Init:" + Str(c, "/state/waiting/reason");
    } else {
      reason = "Init:" + std::to_string(i) + "/" + std::to_string(init_count);
    }
    initializing = true;
    break;
  }
  bool initialized = false;
  for (const auto& c : conditions)
    if (Str(c, "/type") == "Initialized") {
      initialized = Str(c, "/status") == "True";
      break;
    }
  if (!initializing || initialized) {
    restarts = sidecar_restarts;
    last_restart = last_sidecar_restart;
    bool has_running = false;
    const json& statuses = At(pod, "/status/containerStatuses");
    if (statuses.is_array()) {
      for (auto it = statuses.rbegin(); it != statuses.rend(); ++it) {
        const json& c = *it;
        restarts += static_cast<int>(Int(c, "/restartCount"));
        std::string finished = Str(c, "/lastState/terminated/finishedAt");
        if (!finished.empty() && Later(finished, last_restart)) last_restart = finished;
        const json& term = At(c, "/state/terminated");
        if (!Str(c, "/state/waiting/reason").empty()) {
          reason = Str(c, "/state/waiting/reason");
        } else if (term.is_object() && !Str(term, "/reason").empty()) {
          reason = Str(term, "/reason");
        } else if (term.is_object()) {
          reason = Int(term, "/signal") != 0 ? "Signal:" + std::to_string(Int(term, "/signal"))
                                             : "ExitCode:" + std::to_string(Int(term, "/exitCode"));
        } else if (At(c, "/ready").is_boolean() && At(c, "/ready").get<bool>() && At(c, "/state/running").is_object()) {
          has_running = true;
          ++ready;
        }
      }
    }
    if (reason == "Completed" && has_running) {
      bool pod_ready = false;
      for (const auto& c : conditions)
        if (Str(c, "/type") == "Ready" && Str(c, "/status") == "True") pod_ready = true;
      reason = pod_ready ? "Running" : "NotReady";
    }
  }
  const std::string phase = Str(pod, "/status/phase");
  if (!Str(pod, "/metadata/deletionTimestamp").empty()) {
    if (Str(pod, "/status/reason") == "NodeLost") reason = "Unknown";
    else if (phase != "Succeeded" && phase != "Failed") reason = "Terminating";
  }
  r.ready = std::to_string(ready) + "/" + std::to_string(total);
  r.status = reason;
  r.restarts = std::to_string(restarts);
  if (restarts != 0 && !last_restart.empty()) r.restarts += " (" + Age(last_restart, clock) + " ago)";
  r.age = Age(Str(pod, "/metadata/creationTimestamp"), clock);
  return r;
}

void PrintPods(std::ostream& out, const std::vector<PodRow>& rows, bool show_ns, bool wide) {
  struct Col {
    const char* header;
    std::string PodRow::*field;
  };
  std::vector<Col> cols;
  if (show_ns) cols.push_back({"Namespace", &PodRow::ns});
  cols.insert(cols.end(), {{"Name", &PodRow::name},
                           {"Ready", &PodRow::ready},
                           {"Status", &PodRow::status},
                           {"Restart", &PodRow::restarts},
                           {"Age", &PodRow::age}});
  if (wide) cols.insert(cols.end(), {{"Node", &PodRow::node}, {"IP", &PodRow::ip}});
  // vcctl: a column is its header plus 2, or its longest value plus 8, whichever is wider.
  std::vector<int> widths;
  for (const auto& c : cols) {
    size_t w = std::string_view(c.header).size() + 2;
    for (const auto& r : rows) w = std::max(w, (r.*c.field).size() + 8);
    widths.push_back(static_cast<int>(w));
  }
  std::string line;
  for (size_t i = 0; i < cols.size(); ++i) line += Sprintf("%-*s", widths[i], cols[i].header);
  out << line << "\n";
  for (const auto& r : rows) {
    line.clear();
    for (size_t i = 0; i < cols.size(); ++i) line += Sprintf("%-*s", widths[i], (r.*cols[i].field).c_str());
    out << line << "\n";
  }
}

struct Flags {
  std::string queue, job, ns = "default", output;
  bool all_namespaces = false;
};

void RegisterList(CLI::App* group, Runner& runner) {
  auto f = std::make_shared<Flags>();
  auto* app = group->add_subcommand("list", "list pod information created by vcjob");
  runner.AddConnectionFlags(app);
  app->add_option("-q,--queue", f->queue, "list pod with specified queue name");
  app->add_option("-j,--job", f->job, "list pod with specified job name");
  app->add_option("-n,--namespace", f->ns, "the namespace of pod")->capture_default_str();
  app->add_flag("--all-namespaces", f->all_namespaces, "list pods in all namespaces");
  AddOutputFlag(app, &f->output);
  runner.OnRun(app, [f, app](Context& ctx) {
    const std::string ns = f->all_namespaces ? "" : f->ns;
    const auto& pr = api::Pod::Resource();
    const std::string job_key(api::kJobNameKey), queue_key(api::kQueueNameKey);
    std::vector<json> pods;
    if (!f->job.empty()) {
      auto got = ListObjects(ctx, pr, ns, job_key + "=" + f->job);
      if (!got.ok()) return Fail(ctx, app, got.status());
      pods = std::move(*got);
      if (!f->queue.empty()) {
        for (const auto& p : pods) {
          std::string q = MapValue(At(p, "/metadata/labels"), queue_key);
          if (!q.empty() && q != f->queue)
            return Fail(ctx, app, core::InvalidArgumentError("the input vcjob " + f->job + " does not match the queue " + f->queue));
        }
      }
    } else if (!f->queue.empty()) {
      // vcjob pods by label, plain pods by the scheduling annotation (each pod once).
      auto got = ListObjects(ctx, pr, ns);
      if (!got.ok()) return Fail(ctx, app, got.status());
      for (auto& p : *got)
        if (MapValue(At(p, "/metadata/labels"), queue_key) == f->queue ||
            MapValue(At(p, "/metadata/annotations"), api::kSchedulingQueueNameAnnotation) == f->queue)
          pods.push_back(std::move(p));
    } else {
      auto got = ListObjects(ctx, pr, ns, job_key);
      if (!got.ok()) return Fail(ctx, app, got.status());
      pods = std::move(*got);
    }
    std::sort(pods.begin(), pods.end(), [](const json& a, const json& b) {
      auto ka = std::make_pair(Str(a, "/metadata/namespace"), Str(a, "/metadata/name"));
      auto kb = std::make_pair(Str(b, "/metadata/namespace"), Str(b, "/metadata/name"));
      return ka < kb;
    });
    Format fmt = ParseFormat(f->output).value_or(Format::kTable);
    if (fmt == Format::kJson || fmt == Format::kYaml) {
      PrintList(ctx.out, pods, pr, fmt);
      return int{kExitOk};
    }
    if (pods.empty()) {
      ctx.out << "No resources found\n";
      return int{kExitOk};
    }
    std::vector<PodRow> rows;
    for (const auto& p : pods) rows.push_back(Describe(p, ctx.clock));
    PrintPods(ctx.out, rows, f->all_namespaces, fmt == Format::kWide);
    return int{kExitOk};
  });
}

}  // namespace

void RegisterPod(CLI::App& root, Runner& runner) {
  auto* group = root.add_subcommand("pod", "vcctl command line operation pod");
  group->require_subcommand(1);
  RegisterList(group, runner);
}

}  // namespace tephra::ctl::internal
