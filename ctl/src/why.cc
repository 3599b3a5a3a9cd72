// `job why` / `queue why` (why.h). Reads the job, its PodGroup and its queue; explains the scheduler's
// conditions (docs/why-pending.md) in words and says what would let the job start.
#include "tephra/ctl/why.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "internal.h"
#include "tephra/api/batch.h"
#include "tephra/api/scheduling.h"
#include "tephra/ctl/ctl.h"
#include "tephra/ctl/output.h"

namespace tephra::ctl {

using api::json;
using internal::At;
using internal::Int;
using internal::Str;

namespace {

const json* FindCondition(const json& obj, const char* type) {
  const json& conds = At(obj, "/status/conditions");
  if (!conds.is_array()) return nullptr;
  for (const auto& c : conds)
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}

// "cpu 8, memory 16Gi" from a ResourceList object, as written (the user's own units).
std::string Resources(const json& list) {
  std::string out;
  if (!list.is_object()) return out;
  for (const auto& [k, v] : list.items()) {
    if (!out.empty()) out += ", ";
    out += k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

// What the user can do about each gate. The scheduler's message already says what is short; this says what
// changes it.
std::string HintFor(const std::string& reason, const std::string& message, const std::string& queue) {
  // The scheduler's text for a request of a resource no node offers (docs/security.md): no amount of waiting
  // helps, whatever the reason code that carries it.
  if (message.find("which no node offers") != std::string::npos)
    return "No node offers a resource the job asks for (named above): it waits until a node's device plugin "
           "offers it. Check the resource name in the job's requests, or add such nodes.";
  if (reason == "QueueNotFound")
    return "Create the queue (vcctl queue create -n " + queue + ") or submit the job to an existing queue.";
  if (reason == "QueueClosed")
    return "The queue starts no jobs while it is closed. Its owner can open it: vcctl queue operate -n " + queue +
           " -a open";
  if (reason == "OverCapability")
    return "The queue's capability caps it. The job is admitted when the queue's running jobs finish, or sooner "
           "if the capability is raised or the job asks for less (minAvailable, requests).";
  if (reason == "OverClusterCapacity")
    return "The cluster is full with running and admitted jobs. The job is admitted when they finish or nodes "
           "are added.";
  if (reason == "OverDeserved")
    return "The queue already uses its fair share of the cluster. Its jobs start when other queues need less; a "
           "higher weight or a guarantee on the queue gives it more.";
  if (reason == "NotEnoughTasks" || reason == "NotEnoughPodsOfTask")
    return "The job has fewer pods than its minimum. Check its tasks' replicas and pod creation errors "
           "(kubectl describe vcjob).";
  if (reason == "NotEnoughResources")
    return "The whole gang starts at once, as soon as it fits: when running jobs free what is short, or nodes are "
           "added. Asking for fewer pods (minAvailable) or smaller pods lets it start sooner.";
  if (reason == "BindFailed") return "The API server refused a bind; the scheduler rolled the gang back and retries.";
  if (reason == "GangTimeout")
    return "Part of the gang could not be placed in time; the scheduler released it and tries again.";
  return "";
}

}  // namespace

std::optional<QueuePosition> ParsePosition(const std::string& full) {
  // The position is the text before the start estimate, if there is one.
  const std::string message = full.substr(0, full.find("; "));
  QueuePosition p;
  int n = 0;
  if (std::sscanf(message.c_str(), "position %d-%d in queue%n", &p.first, &p.last, &n) == 2 && n > 0) {
    p.text = message;
    return p;
  }
  if (std::sscanf(message.c_str(), "position %d in queue%n", &p.first, &n) == 1 && n > 0) {
    p.last = p.first;
    p.text = message;
    return p;
  }
  return std::nullopt;
}

std::optional<StartEstimateText> ParseStartEstimate(const std::string& message) {
  const size_t semi = message.find("; ");
  if (semi == std::string::npos) return std::nullopt;
  const std::string rest = message.substr(semi + 2);
  StartEstimateText e;
  auto starts = [&](std::string_view prefix) { return rest.rfind(prefix, 0) == 0; };
  if (starts("estimated start ")) {
    e.kind = "reservation";
    const std::string tail = rest.substr(16);
    e.at = tail.substr(0, tail.find(' '));
    (void)std::sscanf(tail.c_str() + e.at.size(), " (reserved on %d", &e.nodes);
  } else if (starts("planned start ")) {
    e.kind = "planned";
    const std::string tail = rest.substr(14);
    e.at = tail.substr(0, tail.find(' '));
  } else if (starts("no start estimate: ")) {
    e.kind = "unknown";
    e.why = rest.substr(19);
  } else {
    return std::nullopt;
  }
  return e;
}

std::string RenderStartEstimate(const StartEstimateText& e, const core::Clock& clock) {
  if (e.kind == "unknown") return "unknown: " + e.why;
  core::Clock::WallTime at;
  std::string when;
  if (core::ParseRfc3339(e.at, &at)) when = at <= clock.WallNow() ? "due now" : "in " + HumanDuration(at - clock.WallNow());
  if (e.kind == "planned")
    return e.at + " (" + (when.empty() ? "" : when + ", ") +
           "planned behind the jobs ahead of it; not reserved, so it may move)";
  return e.at + " (" + (when.empty() ? "" : when + ", ") + "reserved on " + std::to_string(e.nodes) +
         " node(s); later only if running jobs overrun their runningEstimate)";
}

JobDiagnosis DiagnoseJob(const json& job, const json& pg, const json& queue) {
  JobDiagnosis d;
  d.ns = Str(job, "/metadata/namespace");
  d.name = Str(job, "/metadata/name");
  d.phase = Str(job, "/status/state/phase");
  if (d.phase.empty()) d.phase = "Pending";
  d.queue = Str(job, "/spec/queue");
  if (d.queue.empty()) d.queue = "default";
  if (queue.is_object()) {
    d.queue_state = Str(queue, "/status/state");
    if (d.queue_state.empty()) d.queue_state = "Open";
    d.queue_weight = static_cast<int>(Int(queue, "/spec/weight"));
    d.queue_allocated = Resources(At(queue, "/status/allocated"));
  }
  const bool job_waiting = d.phase == "Pending" || d.phase == "Restarting";
  if (!pg.is_object()) {
    d.waiting = job_waiting;
    if (d.waiting)
      d.hint = "The job has no PodGroup yet: the job controller creates it (is `tephra controller` running?).";
    return d;
  }
  d.pod_group = Str(pg, "/metadata/name");
  d.pod_group_phase = Str(pg, "/status/phase");
  d.min_member = static_cast<int>(Int(pg, "/spec/minMember"));
  d.running = static_cast<int>(Int(pg, "/status/running"));
  const json* queued = FindCondition(pg, "Queued");
  const json* unsched = FindCondition(pg, "Unschedulable");
  const json* sched = FindCondition(pg, "Scheduled");
  d.waiting = (d.pod_group_phase == "Pending" || d.pod_group_phase == "Inqueue" || d.pod_group_phase.empty()) &&
              (queued == nullptr || queued->value("status", "") == "True");
  if (!d.waiting) {
    if (job_waiting)
      d.hint = "Its gang is placed (PodGroup " + d.pod_group_phase +
               "); the pods are being bound and started by their nodes.";
    return d;
  }
  if (queued) {
    d.position = ParsePosition(queued->value("message", ""));
    d.estimate = ParseStartEstimate(queued->value("message", ""));
  }
  // A Scheduled condition newer than the Unschedulable one means the last attempt succeeded: the old reason
  // no longer holds (RFC 3339 UTC strings compare in time order).
  bool stale = unsched && sched && sched->value("lastTransitionTime", "") > unsched->value("lastTransitionTime", "");
  if (unsched && !stale) {
    d.reason = unsched->value("reason", "");
    d.message = unsched->value("message", "");
    d.since = unsched->value("lastTransitionTime", "");
    d.hint = HintFor(d.reason, d.message, d.queue);
  } else if (d.pod_group_phase == "Inqueue" && sched) {
    d.hint = "The scheduler admitted the gang and is placing it.";
  } else {
    d.hint = "The scheduler has not reported on it yet. Is `tephra scheduler` running, and does the job use its "
             "schedulerName (volcano)?";
  }
  return d;
}

std::string RenderJobDiagnosis(const JobDiagnosis& d, const core::Clock& clock) {
  std::ostringstream o;
  o << "Job " << d.ns << "/" << d.name << " is " << d.phase;
  if (!d.waiting) {
    o << ": it is not waiting in a queue.\n";
    if (!d.hint.empty()) o << "  " << d.hint << "\n";
    return o.str();
  }
  o << ".\n";
  auto row = [&](const char* label, const std::string& value) { o << "  " << label << value << "\n"; };
  if (!d.pod_group.empty()) {
    row("PodGroup:  ", d.pod_group + " (phase " + (d.pod_group_phase.empty() ? "?" : d.pod_group_phase) +
                           ", minMember " + std::to_string(d.min_member) + ", " + std::to_string(d.running) +
                           " running)");
  }
  if (d.queue_state.empty()) {
    row("Queue:     ", d.queue + " (does not exist)");
  } else {
    row("Queue:     ", d.queue + " (" + d.queue_state + ", weight " + std::to_string(d.queue_weight) +
                           "; allocated " + (d.queue_allocated.empty() ? "nothing" : d.queue_allocated) + ")");
  }
  if (d.position) {
    std::string where = d.position->first == d.position->last
                            ? std::to_string(d.position->first)
                            : std::to_string(d.position->first) + "-" + std::to_string(d.position->last);
    row("Position:  ", where + (d.position->first == 1 ? " (front of the line)" : "") + " in queue " + d.queue);
  }
  if (d.estimate) row("Starts:    ", RenderStartEstimate(*d.estimate, clock));
  if (!d.reason.empty()) {
    std::string since = d.since.empty() ? "" : ", for " + Age(d.since, clock);
    row("Why:       ", d.reason + since);
    row("           ", d.message);
  }
  if (!d.hint.empty()) row("What next: ", d.hint);
  return o.str();
}

json JobDiagnosisJson(const JobDiagnosis& d) {
  json j = {{"namespace", d.ns}, {"name", d.name}, {"phase", d.phase}, {"waiting", d.waiting}, {"queue", d.queue}};
  if (!d.pod_group.empty())
    j["podGroup"] = {{"name", d.pod_group}, {"phase", d.pod_group_phase}, {"minMember", d.min_member},
                     {"running", d.running}};
  if (!d.queue_state.empty())
    j["queueStatus"] = {{"state", d.queue_state}, {"weight", d.queue_weight}, {"allocated", d.queue_allocated}};
  if (d.position) j["position"] = {{"first", d.position->first}, {"last", d.position->last}, {"text", d.position->text}};
  if (d.estimate) {
    j["startEstimate"] = {{"kind", d.estimate->kind}};
    if (!d.estimate->at.empty()) j["startEstimate"]["time"] = d.estimate->at;
    if (d.estimate->nodes > 0) j["startEstimate"]["reservedNodes"] = d.estimate->nodes;
    if (!d.estimate->why.empty()) j["startEstimate"]["why"] = d.estimate->why;
  }
  if (!d.reason.empty()) j["reason"] = d.reason;
  if (!d.message.empty()) j["message"] = d.message;
  if (!d.since.empty()) j["since"] = d.since;
  if (!d.hint.empty()) j["hint"] = d.hint;
  return j;
}

// ---------------------------------------------------------------------------------------------- queue why

namespace {

struct Waiting {
  int first = 1 << 30;  // unknown positions last
  std::string key, phase, reason, message;
};

std::vector<Waiting> WaitingJobs(const std::string& queue, const std::vector<json>& pgs,
                                 std::map<std::string, int>* phases) {
  std::vector<Waiting> out;
  for (const auto& pg : pgs) {
    std::string q = Str(pg, "/spec/queue");
    if ((q.empty() ? "default" : q) != queue) continue;
    std::string phase = Str(pg, "/status/phase");
    if (phase.empty()) phase = "Pending";
    ++(*phases)[phase];
    if (phase != "Pending" && phase != "Inqueue") continue;
    const json* queued = FindCondition(pg, "Queued");
    if (queued && queued->value("status", "") != "True") continue;
    Waiting w;
    w.key = Str(pg, "/metadata/namespace") + "/" + Str(pg, "/metadata/name");
    w.phase = phase;
    if (queued)
      if (auto p = ParsePosition(queued->value("message", ""))) w.first = p->first;
    if (const json* u = FindCondition(pg, "Unschedulable")) {
      w.reason = u->value("reason", "");
      w.message = u->value("message", "");
    }
    out.push_back(std::move(w));
  }
  std::sort(out.begin(), out.end(), [](const Waiting& a, const Waiting& b) {
    return a.first != b.first ? a.first < b.first : a.key < b.key;
  });
  return out;
}

}  // namespace

std::string RenderQueueWhy(const json& queue, const std::vector<json>& pgs, const core::Clock&) {
  std::ostringstream o;
  const std::string name = Str(queue, "/metadata/name");
  std::string state = Str(queue, "/status/state");
  if (state.empty()) state = "Open";
  o << "Queue " << name << " is " << state << ", weight " << Int(queue, "/spec/weight") << ".\n";
  if (state != "Open")
    o << "  It starts no new jobs until it is opened: vcctl queue operate -n " << name << " -a open\n";
  std::string alloc = Resources(At(queue, "/status/allocated"));
  std::string cap = Resources(At(queue, "/spec/capability"));
  std::string guarantee = Resources(At(queue, "/spec/guarantee/resource"));
  std::string deserved = Resources(At(queue, "/spec/deserved"));
  o << "  Allocated:  " << (alloc.empty() ? "nothing" : alloc) << "\n";
  o << "  Capability: " << (cap.empty() ? "none (the whole cluster)" : cap) << "\n";
  if (!guarantee.empty()) o << "  Guarantee:  " << guarantee << "\n";
  if (!deserved.empty()) o << "  Deserved:   " << deserved << "\n";
  std::map<std::string, int> phases;
  auto waiting = WaitingJobs(name, pgs, &phases);
  o << "  PodGroups:  " << phases["Running"] << " running, " << phases["Inqueue"] << " inqueue, " << phases["Pending"]
    << " pending, " << phases["Unknown"] << " unknown, " << phases["Completed"] << " completed\n";
  if (waiting.empty()) {
    o << "  No job is waiting in this queue.\n";
    return o.str();
  }
  // The most common reason first: usually one gate holds the whole line back.
  std::map<std::string, int> reasons;
  for (const auto& w : waiting) ++reasons[w.reason.empty() ? "(not reported yet)" : w.reason];
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [r, n] : reasons) by_count.push_back({-n, r});
  std::sort(by_count.begin(), by_count.end());
  o << "  Waiting:    " << waiting.size() << " job(s):";
  for (size_t i = 0; i < by_count.size(); ++i) o << (i ? ", " : " ") << -by_count[i].first << " " << by_count[i].second;
  o << "\n\n";
  constexpr size_t kShown = 20;
  o << Sprintf("  %-9s %-40s %-8s %-20s %s\n", "POSITION", "JOB", "PHASE", "REASON", "MESSAGE");
  for (size_t i = 0; i < waiting.size() && i < kShown; ++i) {
    const auto& w = waiting[i];
    std::string pos = w.first == (1 << 30) ? "-" : std::to_string(w.first);
    std::string msg = w.message.size() > 100 ? w.message.substr(0, 97) + "..." : w.message;
    o << Sprintf("  %-9s %-40s %-8s %-20s %s\n", pos.c_str(), w.key.c_str(), w.phase.c_str(),
                 (w.reason.empty() ? "-" : w.reason).c_str(), msg.c_str());
  }
  if (waiting.size() > kShown) o << "  ... and " << waiting.size() - kShown << " more (-o json lists all)\n";
  return o.str();
}

json QueueWhyJson(const json& queue, const std::vector<json>& pgs) {
  const std::string name = Str(queue, "/metadata/name");
  std::map<std::string, int> phases;
  auto waiting = WaitingJobs(name, pgs, &phases);
  json jobs = json::array();
  for (const auto& w : waiting) {
    json e = {{"podGroup", w.key}, {"phase", w.phase}};
    if (w.first != (1 << 30)) e["position"] = w.first;
    if (!w.reason.empty()) e["reason"] = w.reason;
    if (!w.message.empty()) e["message"] = w.message;
    jobs.push_back(std::move(e));
  }
  std::string state = Str(queue, "/status/state");
  return {{"name", name},
          {"state", state.empty() ? "Open" : state},
          {"weight", Int(queue, "/spec/weight")},
          {"allocated", At(queue, "/status/allocated").is_object() ? At(queue, "/status/allocated") : json::object()},
          {"podGroups", phases},
          {"waiting", jobs}};
}

// ------------------------------------------------------------------------------------------------ commands

int JobWhy(Context& ctx, const std::string& ns, const std::string& name, const std::string& output) {
  const auto& jr = api::Job::Resource();
  auto job = ctx.client.Get(jr, ns, name);
  if (!job.ok()) {
    ctx.err << "Failed to why job: " << ctx.Explain(job.status(), "get", jr, ns, name).message() << "\n";
    return core::IsNotFound(job.status()) ? kExitNotFound : kExitError;
  }
  // The job controller names the PodGroup "<job>-<job uid>"; jobs created before that naming use the job's name.
  const auto& pr = api::PodGroup::Resource();
  json pg;
  for (const std::string& pg_name : {name + "-" + Str(*job, "/metadata/uid"), name}) {
    auto got = ctx.client.Get(pr, ns, pg_name);
    if (got.ok()) {
      pg = std::move(*got);
      break;
    }
    if (!core::IsNotFound(got.status())) {
      ctx.err << "Failed to why job: " << ctx.Explain(got.status(), "get", pr, ns, pg_name).message() << "\n";
      return kExitError;
    }
  }
  std::string queue_name = Str(*job, "/spec/queue");
  if (queue_name.empty()) queue_name = "default";
  const auto& qr = api::Queue::Resource();
  json queue;
  auto q = ctx.client.Get(qr, "", queue_name);
  if (q.ok()) {
    queue = std::move(*q);
  } else if (!core::IsNotFound(q.status())) {
    ctx.err << "Failed to why job: " << ctx.Explain(q.status(), "get", qr, "", queue_name).message() << "\n";
    return kExitError;
  }
  JobDiagnosis d = DiagnoseJob(*job, pg, queue);
  if (output == "json") ctx.out << JobDiagnosisJson(d).dump(2) << "\n";
  else ctx.out << RenderJobDiagnosis(d, ctx.clock);
  return kExitOk;
}

int QueueWhy(Context& ctx, const std::string& queue, const std::string& output) {
  const auto& qr = api::Queue::Resource();
  auto q = ctx.client.Get(qr, "", queue);
  if (!q.ok()) {
    ctx.err << "Failed to why queue: " << ctx.Explain(q.status(), "get", qr, "", queue).message() << "\n";
    return core::IsNotFound(q.status()) ? kExitNotFound : kExitError;
  }
  auto pgs = internal::ListObjects(ctx, api::PodGroup::Resource(), "");
  if (!pgs.ok()) {
    ctx.err << "Failed to why queue: " << pgs.status().message() << "\n";
    return kExitError;
  }
  if (output == "json") ctx.out << QueueWhyJson(*q, *pgs).dump(2) << "\n";
  else ctx.out << RenderQueueWhy(*q, *pgs, ctx.clock);
  return kExitOk;
}

}  // namespace tephra::ctl
