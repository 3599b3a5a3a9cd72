#include "tephra/nodesim/pod_plan.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>

namespace tephra::nodesim {
namespace {

using core::InvalidArgumentError;
using core::StatusOr;

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// Reads obj[key] as a string if it is one; anything else counts as absent.
std::string Str(const json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

const json& Sub(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::vector<ContainerView> Containers(const json& list) {
  std::vector<ContainerView> out;
  if (!list.is_array()) return out;
  for (const json& c : list) out.push_back({Str(c, "name"), Str(c, "image")});
  return out;
}

// A stable fake container ID: the same pod and container always get the same one, across restarts.
std::string ContainerId(const PodView& pod, const std::string& container) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016zx", std::hash<std::string>{}(pod.uid + "/" + container));
  return std::string("containerd://") + buf;
}

json Condition(const char* type, bool status, const std::string& when, const char* reason = nullptr) {
  json c = {{"type", type}, {"status", status ? "True" : "False"}, {"lastProbeTime", nullptr},
            {"lastTransitionTime", when}};
  if (reason) c["reason"] = reason;
  return c;
}

json ScheduledCondition(const PodView& pod, const std::string& now) {
  if (pod.scheduled_condition.is_object()) return pod.scheduled_condition;
  return Condition("PodScheduled", true, now);
}

StatusOr<int> ParseExitCode(const std::string& v) {
  int code = 0;
  int used = 0;
  if (std::sscanf(v.c_str(), "%d%n", &code, &used) != 1 || used != static_cast<int>(v.size()) || code < 0 ||
      code > 255) {
    return InvalidArgumentError(Quote(v) + " is not an integer in 0..255");
  }
  return code;
}

std::chrono::system_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

std::string FormatMicroTime(WallTime t) {
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(t);
  if (secs > t) secs -= std::chrono::seconds(1);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  std::string base = core::FormatRfc3339(secs);  // "...:55Z"
  char frac[32];
  std::snprintf(frac, sizeof frac, ".%06lldZ", static_cast<long long>(micros));
  return base.substr(0, base.size() - 1) + frac;
}

StatusOr<PodView> DecodePodView(const json& pod) {
  if (!pod.is_object()) return InvalidArgumentError("pod: expected an object");
  const json& meta = Sub(pod, "metadata");
  const json& spec = Sub(pod, "spec");
  const json& status = Sub(pod, "status");
  PodView v;
  v.namespace_ = Str(meta, "namespace");
  v.name = Str(meta, "name");
  if (v.name.empty()) return InvalidArgumentError("pod: metadata.name is missing");
  v.uid = Str(meta, "uid");
  v.deletion_timestamp = Str(meta, "deletionTimestamp");
  const json& grace = Sub(meta, "deletionGracePeriodSeconds");
  if (grace.is_number_integer()) v.deletion_grace_seconds = grace.get<int64_t>();
  const json& ann = Sub(meta, "annotations");
  if (ann.is_object()) {
    for (auto it = ann.begin(); it != ann.end(); ++it) {
      if (it.key().rfind("tephra.io/sim-", 0) == 0 && it->is_string()) v.annotations[it.key()] = it->get<std::string>();
      if (it.key() == kJobRetryCountAnnotation && it->is_string()) v.job_retry_count = it->get<std::string>();
    }
  }
  v.node_name = Str(spec, "nodeName");
  v.containers = Containers(Sub(spec, "containers"));
  v.init_containers = Containers(Sub(spec, "initContainers"));
  v.phase = Str(status, "phase");
  v.start_time = Str(status, "startTime");
  v.pod_ip = Str(status, "podIP");
  v.host_ip = Str(status, "hostIP");
  const json& conds = Sub(status, "conditions");
  if (conds.is_array()) {
    for (const json& c : conds) {
      if (Str(c, "type") == "PodScheduled") v.scheduled_condition = c;
    }
  }
  return v;
}

SimAnnotations ParseSimAnnotations(const PodView& pod) {
  SimAnnotations out;
  int pod_default = 0;
  if (auto it = pod.annotations.find(kExitCodeAnnotation); it != pod.annotations.end()) {
    auto code = ParseExitCode(it->second);
    if (code.ok()) {
      pod_default = *code;
    } else {
      out.problems.push_back(std::string(kExitCodeAnnotation) + ": " + code.status().message() + "; using 0");
    }
  }
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const ContainerView& c : *list) out.exit_codes[c.name] = pod_default;
  }
  const std::string prefix = kExitCodeAnnotationPrefix;
  for (const auto& [key, value] : pod.annotations) {
    if (key.rfind(prefix, 0) != 0) continue;
    std::string container = key.substr(prefix.size());
    auto it = out.exit_codes.find(container);
    if (it == out.exit_codes.end()) {
      out.problems.push_back(key + ": the pod has no container " + Quote(container));
      continue;
    }
    auto code = ParseExitCode(value);
    if (code.ok()) {
      it->second = *code;
    } else {
      out.problems.push_back(key + ": " + code.status().message() + "; using " + std::to_string(pod_default));
    }
  }
  if (auto it = pod.annotations.find(kFailAttemptsAnnotation); it != pod.annotations.end()) {
    int n = -1, used = 0;
    if (std::sscanf(it->second.c_str(), "%d%n", &n, &used) != 1 || used != static_cast<int>(it->second.size()) || n < 0) {
      out.problems.push_back(std::string(kFailAttemptsAnnotation) + ": " + Quote(it->second) +
                             " is not a whole number >= 0; every attempt uses the exit codes");
    } else {
      int attempt = 0;  // a pod without the annotation is the first attempt
      if (!pod.job_retry_count.empty() && std::sscanf(pod.job_retry_count.c_str(), "%d", &attempt) != 1) attempt = 0;
      if (attempt >= n)
        for (auto& [container, code] : out.exit_codes) code = 0;
    }
  }
  if (auto it = pod.annotations.find(kRunSecondsAnnotation); it != pod.annotations.end()) {
    double s = 0;
    int used = 0;
    if (std::sscanf(it->second.c_str(), "%lf%n", &s, &used) == 1 && used == static_cast<int>(it->second.size()) &&
        std::isfinite(s) && s >= 0 && s < 1e9) {
      out.run_seconds = s;
    } else {
      out.problems.push_back(std::string(kRunSecondsAnnotation) + ": " + Quote(it->second) +
                             " is not a number of seconds >= 0; running until deleted");
    }
  }
  return out;
}

namespace {

// The status write of a pod whose containers all ended: each with its exit code (and `message`, when not
// empty), the pod Failed when one of them failed, else Succeeded.
template <typename CodeOf>
PodPlan FinishedPlan(const PodView& pod, const std::string& now, CodeOf code_of, const std::string& message) {
  bool failed = false;
  json cs = json::array();
  const std::string started = pod.start_time.empty() ? now : pod.start_time;
  for (const ContainerView& c : pod.containers) {
    const int code = code_of(c);
    failed = failed || code != 0;
    json terminated = {{"exitCode", code},
                       {"reason", code == 0 ? "Completed" : "Error"},
                       {"startedAt", started},
                       {"finishedAt", now},
                       {"containerID", ContainerId(pod, c.name)}};
    if (!message.empty()) terminated["message"] = message;
    cs.push_back({{"name", c.name},
                  {"image", c.image},
                  {"imageID", c.image},
                  {"containerID", ContainerId(pod, c.name)},
                  {"ready", false},
                  {"started", false},
                  {"restartCount", 0},
                  {"state", {{"terminated", std::move(terminated)}}}});
  }
  const char* phase = failed ? "Failed" : "Succeeded";
  json status = {{"phase", phase},
                 {"conditions", json::array({Condition("Initialized", true, now, "PodCompleted"),
                                             Condition("Ready", false, now, "PodCompleted"),
                                             Condition("ContainersReady", false, now, "PodCompleted"),
                                             ScheduledCondition(pod, now)})},
                 {"containerStatuses", std::move(cs)}};
  PodPlan plan;
  plan.action = PodPlan::Action::kWriteStatus;
  plan.new_phase = phase;
  plan.status_patch = {{"metadata", {{"uid", pod.uid}}}, {"status", std::move(status)}};
  return plan;
}

}  // namespace

PodPlan PlanPod(const PodView& pod, const PodPlanContext& ctx) {
  PodPlan plan;
  SimAnnotations sim = ParseSimAnnotations(pod);
  plan.problems = sim.problems;
  const std::string now = core::FormatRfc3339(ctx.now);

  if (!pod.deletion_timestamp.empty()) {
    WallTime deadline{};
    WallTime due = ctx.now;
    if (!pod.Finished() && core::ParseRfc3339(pod.deletion_timestamp, &deadline)) {
      // The server sets deletionTimestamp = request time + grace period.
      int64_t grace = pod.deletion_grace_seconds.value_or(0);
      WallTime requested = deadline - std::chrono::seconds(grace);
      due = requested + std::chrono::seconds(std::min<int64_t>(grace, ctx.max_grace_seconds));
    }
    if (due <= ctx.now) {
      plan.action = PodPlan::Action::kDelete;
    } else {
      plan.next = due;
    }
    return plan;
  }
  if (pod.Finished()) return plan;

  if (pod.phase != "Running") {
    std::string start = pod.start_time.empty() ? now : pod.start_time;
    std::string ip = pod.pod_ip.empty() ? ctx.pod_ip : pod.pod_ip;
    json status = {{"phase", "Running"},
                   {"hostIP", ctx.host_ip},
                   {"podIP", ip},
                   {"podIPs", json::array({{{"ip", ip}}})},
                   {"startTime", start},
                   {"conditions", json::array({Condition("Initialized", true, now), Condition("Ready", true, now),
                                               Condition("ContainersReady", true, now),
                                               ScheduledCondition(pod, now)})}};
    json cs = json::array();
    for (const ContainerView& c : pod.containers) {
      cs.push_back({{"name", c.name},
                    {"image", c.image},
                    {"imageID", c.image},
                    {"containerID", ContainerId(pod, c.name)},
                    {"ready", true},
                    {"started", true},
                    {"restartCount", 0},
                    {"state", {{"running", {{"startedAt", now}}}}}});
    }
    status["containerStatuses"] = cs;
    if (!pod.init_containers.empty()) {
      json ics = json::array();
      for (const ContainerView& c : pod.init_containers) {
        ics.push_back({{"name", c.name},
                       {"image", c.image},
                       {"imageID", c.image},
                       {"containerID", ContainerId(pod, c.name)},
                       {"ready", true},
                       {"restartCount", 0},
                       {"state",
                        {{"terminated",
                          {{"exitCode", 0}, {"reason", "Completed"}, {"startedAt", start}, {"finishedAt", now}}}}}});
      }
      status["initContainerStatuses"] = ics;
    }
    plan.action = PodPlan::Action::kWriteStatus;
    plan.new_phase = "Running";
    plan.status_patch = {{"metadata", {{"uid", pod.uid}}}, {"status", std::move(status)}};
    if (sim.run_seconds) {
      WallTime start_time = ctx.now;
      core::ParseRfc3339(start, &start_time);
      plan.next = start_time + Seconds(*sim.run_seconds);
      if (*plan.next < ctx.now) plan.next = ctx.now;
    }
    return plan;
  }

  // Running.
  if (!sim.run_seconds) return plan;
  WallTime start_time{};
  // A Running pod without a readable startTime cannot be timed; finishing it is the safe way forward.
  if (core::ParseRfc3339(pod.start_time, &start_time)) {
    WallTime end = start_time + Seconds(*sim.run_seconds);
    if (end > ctx.now) {
      plan.next = end;
      return plan;
    }
  }
  PodPlan finished = FinishedPlan(pod, now, [&](const ContainerView& c) { return sim.exit_codes[c.name]; }, "");
  finished.problems = std::move(plan.problems);
  return finished;
}

PodPlan DeviceFailurePlan(const PodView& pod, const std::string& error, WallTime now) {
  return FinishedPlan(pod, core::FormatRfc3339(now), [](const ContainerView&) { return 1; }, error);
}

}  // namespace tephra::nodesim
