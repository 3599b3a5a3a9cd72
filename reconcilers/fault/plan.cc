#include "fault/plan.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "tephra/api/devices.h"
#include "tephra/api/labels.h"
#include "tephra/api/resources.h"

namespace tephra::reconcilers::fault {

namespace {

constexpr const char* kUnreachableTaint = "node.kubernetes.io/unreachable";
constexpr const char* kNotReadyTaint = "node.kubernetes.io/not-ready";

std::string Annotation(const api::ObjectMeta& m, std::string_view key) {
  auto it = m.annotations.find(std::string(key));
  return it == m.annotations.end() ? "" : it->second;
}

bool Has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// The fingerprint entry of a signal: device faults name their cards (or the resource), so a second card
// going bad is a new fault, recorded again.
std::vector<std::string> Keys(const Signal& s) {
  if (s.name != "DeviceUnhealthy") return {s.name};
  if (s.cards.empty()) return {s.name + ":" + s.resource};
  std::vector<std::string> out;
  for (const auto& c : s.cards) out.push_back(s.name + ":" + c);
  return out;
}

std::set<std::string> SplitSet(const std::string& list) {
  auto v = api::SplitCardList(list);
  return {v.begin(), v.end()};
}

// The cards a pod holds, as its device plugin's annotations name them.
std::set<std::string> CardsOf(const api::Pod& p) {
  std::set<std::string> out;
  for (const char* key : {"huawei.com/AscendReal", "huawei.com/Ascend910"}) {
    auto v = api::SplitCardList(Annotation(p.metadata, key));
    if (!v.empty()) {
      out.insert(v.begin(), v.end());
      break;
    }
  }
  for (const auto& container : api::DecodeVgpuIds(Annotation(p.metadata, api::kVgpuIdsAnnotation)))
    for (const auto& a : container) out.insert(a.uuid);
  return out;
}

int64_t Requested(const api::Pod& p, const std::string& resource) {
  const api::ResourceList r = api::PodRequests(p.spec);
  auto it = r.find(resource);
  return it == r.end() ? 0 : it->second.Value();
}

bool Finished(const api::Pod& p) { return p.status.phase == "Succeeded" || p.status.phase == "Failed"; }

// The latest time one of the pod's containers finished; nullopt when none says.
std::optional<core::Clock::WallTime> FinishedAt(const api::Pod& p) {
  std::optional<core::Clock::WallTime> out;
  for (const auto& cs : p.status.container_statuses) {
    core::Clock::WallTime t;
    if (cs.state.terminated && core::ParseRfc3339(cs.state.terminated->finished_at, &t) && (!out || t > *out)) out = t;
  }
  return out;
}

// When the node's fault began as far as the API shows: the earliest signal start, else when Tephra first
// acted on it, else now.
core::Clock::WallTime FaultStart(const std::vector<Signal>& signals, const api::Node& node, core::Clock::WallTime now) {
  core::Clock::WallTime start = now, t;
  for (const auto& s : signals)
    if (core::ParseRfc3339(s.since, &t) && t < start) start = t;
  if (core::ParseRfc3339(Annotation(node.metadata, kSinceAnnotation), &t) && t < start) start = t;
  return start;
}

const api::ObjectMeta* JobMetaOf(const Observed& o, const api::Pod& p) {
  const std::string job = Annotation(p.metadata, api::kJobNameKey);
  if (job.empty()) return nullptr;
  auto it = o.jobs.find(p.metadata.namespace_ + "/" + job);
  return it == o.jobs.end() ? nullptr : &it->second;
}

PodDelete MakeDelete(const api::Pod& p, std::optional<int64_t> grace, const std::string& signal) {
  PodDelete d{.ns = p.metadata.namespace_, .name = p.metadata.name, .uid = p.metadata.uid, .grace_seconds = grace,
              .signal = signal};
  if (std::string job = Annotation(p.metadata, api::kJobNameKey); !job.empty()) {
    d.job_kind = "Job";
    d.job_name = job;
    for (const auto& r : p.metadata.owner_references)
      if (r.kind == "Job" && r.controller.value_or(false)) d.job_uid = r.uid;
  } else {
    d.job_kind = "PodGroup";
    d.job_name = Annotation(p.metadata, api::kPodGroupAnnotation);
  }
  return d;
}

EventRecord JobEvent(const PodDelete& d, std::string reason, std::string message) {
  return {.on = EventRecord::On::kJob, .job_kind = d.job_kind, .job_ns = d.ns, .job_name = d.job_name,
          .job_uid = d.job_uid, .type = "Warning", .reason = std::move(reason), .message = std::move(message)};
}

const char* ModeName(JobFaultPolicy::Mode m) {
  switch (m) {
    case JobFaultPolicy::Mode::kGrace: return "grace";
    case JobFaultPolicy::Mode::kForce: return "force";
    case JobFaultPolicy::Mode::kOff: return "off";
    case JobFaultPolicy::Mode::kDefault: break;
  }
  return "";
}

// Plans again no later than `d` from now. The earliest wins: a NotReady still in its grace must be looked at
// when the grace ends, even on a node that also waits for its avoidance window (a dead node sends no update
// that would bring it back sooner).
void RequeueWithin(Actions* a, std::chrono::milliseconds d) {
  if (!a->requeue_after || *a->requeue_after > d) a->requeue_after = d;
}

// A failed pod on a faulted node counts as the fault's victim when it finished this long before the fault's
// first sign or later: the pod may see its card go before the API does.
constexpr std::chrono::seconds kFailedBeforeFault{60};

}  // namespace

JobFaultPolicy PolicyOf(const api::Pod& p, const api::ObjectMeta* job) {
  auto get = [&](bool label, const char* key) -> std::string {
    const auto& own = label ? p.metadata.labels : p.metadata.annotations;
    if (auto it = own.find(key); it != own.end()) return it->second;
    if (job) {
      const auto& theirs = label ? job->labels : job->annotations;
      if (auto it = theirs.find(key); it != theirs.end()) return it->second;
    }
    return "";
  };
  JobFaultPolicy out;
  const std::string mode = get(true, kFaultSchedulingLabel);
  if (mode == "grace") out.mode = JobFaultPolicy::Mode::kGrace;
  else if (mode == "force") out.mode = JobFaultPolicy::Mode::kForce;
  else if (mode == "off") out.mode = JobFaultPolicy::Mode::kOff;
  out.whole_job = (out.mode == JobFaultPolicy::Mode::kGrace || out.mode == JobFaultPolicy::Mode::kForce) &&
                  get(true, kPodReschedulingLabel) != "on";
  const std::string grace = get(false, kFaultGraceAnnotation);
  int64_t g = -1;
  auto [ptr, ec] = std::from_chars(grace.data(), grace.data() + grace.size(), g);
  if (!grace.empty() && ec == std::errc() && ptr == grace.data() + grace.size() && g >= 0) out.grace_seconds = g;
  return out;
}

std::string GroupKey(const api::Pod& p) {
  const std::string g = Annotation(p.metadata, api::kPodGroupAnnotation);
  return g.empty() ? "" : p.metadata.namespace_ + "/" + g;
}

bool IsBatchPod(const api::Pod& p) {
  return !Annotation(p.metadata, api::kPodGroupAnnotation).empty() && !Finished(p);
}

std::vector<Signal> Detect(const api::Node& node, const FaultConfig& cfg, core::Clock::WallTime now,
                           std::optional<std::chrono::milliseconds>* recheck_after) {
  std::vector<Signal> out;
  auto add = [&out](Signal s) {
    for (const auto& o : out)
      if (o.name == s.name && o.cards == s.cards && o.resource == s.resource) return;
    out.push_back(std::move(s));
  };
  for (const auto& c : node.status.conditions) {
    if (c.type == "Ready" && c.status != "True") {
      core::Clock::WallTime since;
      const bool known = core::ParseRfc3339(c.last_transition_time, &since);
      const auto elapsed = known ? now - since : std::chrono::system_clock::duration::max();
      if (elapsed >= cfg.not_ready_grace) {
        add({.name = "NotReady",
             .since = c.last_transition_time,
             .message = "Ready is " + c.status + (c.reason.empty() ? "" : " (" + c.reason + ")"),
             .node_down = true});
      } else if (recheck_after) {
        *recheck_after = std::chrono::duration_cast<std::chrono::milliseconds>(cfg.not_ready_grace - elapsed) +
                         std::chrono::milliseconds(50);
      }
    } else if (c.status == "True" && Has(cfg.conditions, c.type)) {
      add({.name = c.type,
           .since = c.last_transition_time,
           .message = "condition " + c.type + "=True" + (c.reason.empty() ? "" : " (" + c.reason + ")") +
                      (c.message.empty() ? "" : ": " + c.message)});
    }
  }
  for (const auto& t : node.spec.taints) {
    if ((t.key == kUnreachableTaint || t.key == kNotReadyTaint) && t.effect == "NoExecute") {
      // The node controller's eviction taint, its own verdict: no grace on top of its node-monitor-grace-period.
      // The NoSchedule variants only mirror the Ready condition (and a new node carries not-ready:NoSchedule
      // until its first Ready report), so they are not a fault of their own.
      add({.name = "NotReady", .since = t.time_added, .message = "taint " + t.key + ":" + t.effect, .node_down = true});
    } else if (Has(cfg.taints, t.key)) {
      add({.name = "taint:" + t.key, .since = t.time_added, .message = "taint " + t.key + "=" + t.value + ":" + t.effect});
    }
  }
  // Two "NotReady" entries (condition and taint) would be one fault; keep the first.
  if (!cfg.device_faults) return out;

  std::set<std::string> ascend = SplitSet(Annotation(node.metadata, api::kAscendUnhealthyKey));
  for (const auto& c : api::SplitCardList(Annotation(node.metadata, api::kAscendNetworkUnhealthyKey))) ascend.insert(c);
  if (!ascend.empty())
    add({.name = "DeviceUnhealthy",
         .message = "the Ascend device plugin lists " + api::JoinCardList({ascend.begin(), ascend.end()}) + " unhealthy",
         .resource = std::string(api::kAscend910Resource),
         .cards = {ascend.begin(), ascend.end()}});
  std::set<std::string> gpus;
  const auto reg = api::ParseVgpuRegister(Annotation(node.metadata, api::kVgpuRegisterAnnotation));
  for (const auto& g : reg)
    if (!g.healthy) gpus.insert(g.uuid);
  for (const auto& id : api::SplitCardList(Annotation(node.metadata, api::kGpuUnhealthyIdsAnnotation))) {
    int i = -1;
    auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), i);
    if (ec == std::errc() && p == id.data() + id.size() && i >= 0 && static_cast<size_t>(i) < reg.size())
      gpus.insert(reg[static_cast<size_t>(i)].uuid);
  }
  if (!gpus.empty())
    add({.name = "DeviceUnhealthy",
         .message = "the vGPU device plugin reports " + api::JoinCardList({gpus.begin(), gpus.end()}) + " unhealthy",
         .resource = std::string(api::kVgpuNumberResource),
         .cards = {gpus.begin(), gpus.end()}});
  // A device plugin that marks a card unhealthy lowers allocatable, not capacity; without a card list, the
  // drop is all the API shows.
  for (const std::string& res : {std::string(api::kNvidiaGpuResource), std::string(api::kAscend910Resource)}) {
    if (res == api::kAscend910Resource && !ascend.empty()) continue;
    auto cap = node.status.capacity.find(res);
    auto alloc = node.status.allocatable.find(res);
    if (cap == node.status.capacity.end() || alloc == node.status.allocatable.end()) continue;
    if (alloc->second.Value() >= cap->second.Value()) continue;
    add({.name = "DeviceUnhealthy",
         .message = res + " allocatable " + std::to_string(alloc->second.Value()) + " of capacity " +
                    std::to_string(cap->second.Value()),
         .resource = res});
  }
  return out;
}

std::string Fingerprint(const std::vector<Signal>& signals) {
  std::set<std::string> keys;
  for (const auto& s : signals)
    for (auto& k : Keys(s)) keys.insert(std::move(k));
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ",") + k;
  return out;
}

namespace {

// Pods the kubelet refused at admission for devices: deleted so their jobs replace them (they never ran,
// and a job without a PodFailed policy would wait for them), and the node avoided for a while.
void AddAdmissionFailures(const Observed& o, const FaultConfig& cfg, Actions* a) {
  std::string message;
  for (const auto& p : o.pods) {
    if (p.status.phase != "Failed" || p.status.reason != kUnexpectedAdmissionError || GroupKey(p).empty() ||
        !p.metadata.deletion_timestamp.empty())
      continue;
    if (PolicyOf(p, JobMetaOf(o, p)).mode == JobFaultPolicy::Mode::kOff) continue;
    PodDelete d = MakeDelete(p, 0, kUnexpectedAdmissionError);
    const std::string why = kUnexpectedAdmissionError + std::string(p.status.message.empty() ? "" : ": " + p.status.message);
    a->events.push_back(JobEvent(d, "PodFaultRestart",
                                 "pod " + p.metadata.name + " was refused by the kubelet of node " + o.node.metadata.name +
                                     " (" + why + "); it is deleted so that its job replaces it on another node"));
    message += (message.empty() ? "" : "; ") + ("pod " + p.metadata.namespace_ + "/" + p.metadata.name + ": " + why);
    a->deletes.push_back(std::move(d));
  }
  if (message.empty()) return;
  a->detected.push_back({.name = kUnexpectedAdmissionError, .message = message});
  std::string node_message = std::string(kUnexpectedAdmissionError) + ": " + message;
  // A fault on the node keeps Tephra's scheduler off it already; otherwise the avoidance window does.
  const bool faulted =
      a->fault_annotation ? a->fault_annotation->has_value() : o.node.metadata.annotations.count(kFaultAnnotation) > 0;
  if (!faulted && cfg.avoid_after_clear.count() > 0) {
    a->avoid_annotation = core::FormatRfc3339(o.now + cfg.avoid_after_clear);
    RequeueWithin(a, cfg.avoid_after_clear);
    node_message += "; Tephra's scheduler avoids the node until " + **a->avoid_annotation;
  }
  a->events.push_back({.type = "Warning", .reason = "FaultDetected", .message = node_message});
}

Actions PlanSignals(const Observed& o, const FaultConfig& cfg) {
  Actions a;
  std::optional<std::chrono::milliseconds> recheck;
  const std::vector<Signal> signals = Detect(o.node, cfg, o.now, &recheck);
  a.requeue_after = recheck;
  const std::string fp = Fingerprint(signals);
  const auto& ann = o.node.metadata.annotations;
  const auto cur = ann.find(kFaultAnnotation);
  const auto held = ann.find(kHeldAnnotation);
  const bool cordoned_by_us = Annotation(o.node.metadata, kCordonedAnnotation) == "true";

  if (signals.empty()) {
    if (ann.count(kSinceAnnotation)) a.since_annotation = std::optional<std::string>();
    if (cur != ann.end()) {
      a.fault_annotation = std::optional<std::string>();
      std::string message = "no fault signal any more (was: " + cur->second + ")";
      if (cfg.avoid_after_clear.count() > 0) {
        a.avoid_annotation = core::FormatRfc3339(o.now + cfg.avoid_after_clear);
        RequeueWithin(&a, cfg.avoid_after_clear);
        message += "; Tephra's scheduler avoids the node until " + **a.avoid_annotation;
      }
      a.events.push_back({.type = "Normal", .reason = "FaultCleared", .message = message});
    } else if (auto until = ann.find(kAvoidUntilAnnotation); until != ann.end()) {
      core::Clock::WallTime t;
      if (!core::ParseRfc3339(until->second, &t) || t <= o.now) a.avoid_annotation = std::optional<std::string>();
      else RequeueWithin(&a, std::chrono::duration_cast<std::chrono::milliseconds>(t - o.now) + std::chrono::milliseconds(50));
    }
    if (held != ann.end()) a.held_annotation = std::optional<std::string>();
    if (cordoned_by_us) a.cordon = false;
    return a;
  }

  // The node budget: a node already acted on keeps being handled; a new one waits while the limit is full.
  const int limit = std::max(1, static_cast<int>(std::floor(cfg.max_node_fraction * o.nodes_total + 1e-9)));
  if (cur == ann.end() && o.nodes_acted + 1 > limit) {
    if (held == ann.end() || held->second != fp) {
      a.held_annotation = fp;
      a.events.push_back(
          {.type = "Warning",
           .reason = "FaultActionsHeld",
           .message = "fault " + fp + " seen, but " + std::to_string(o.nodes_acted) + " of " +
                      std::to_string(o.nodes_total) + " nodes had faults acted on in the last " +
                      std::to_string(cfg.budget_window.count()) + " s (limit " + std::to_string(limit) +
                      ", --fault-max-node-fraction): nothing is deleted or cordoned here until that drops"});
    }
    RequeueWithin(&a, std::chrono::seconds(10));
    return a;
  }
  if (held != ann.end()) a.held_annotation = std::optional<std::string>();

  if (ann.count(kAvoidUntilAnnotation)) a.avoid_annotation = std::optional<std::string>();
  if (cur == ann.end()) a.since_annotation = core::FormatRfc3339(o.now);
  if (cur == ann.end() || cur->second != fp) {
    a.fault_annotation = fp;
    std::set<std::string> before = SplitSet(cur == ann.end() ? "" : cur->second);
    std::string message;
    for (const auto& s : signals) {
      const auto keys = Keys(s);
      const bool is_new = std::any_of(keys.begin(), keys.end(), [&](const std::string& k) { return !before.count(k); });
      if (!is_new) continue;
      a.detected.push_back(s);
      message += (message.empty() ? "" : "; ") + s.name + ": " + s.message;
    }
    if (!message.empty()) a.events.push_back({.type = "Warning", .reason = "FaultDetected", .message = message});
  }
  if (cfg.cordon && !o.node.spec.unschedulable) a.cordon = true;

  // Which signal strands each batch pod.
  const Signal* node_wide = nullptr;
  for (const auto& s : signals) {
    if (s.name == "DeviceUnhealthy") continue;
    if (!node_wide || (s.node_down && !node_wide->node_down)) node_wide = &s;
  }
  std::map<std::string, int64_t> demand;  // per resource: what the node's pods ask
  for (const auto& p : o.pods)
    if (!Finished(p))
      for (const auto& s : signals)
        if (s.name == "DeviceUnhealthy" && s.cards.empty()) demand[s.resource] += Requested(p, s.resource);
  // Pods that failed around the fault are its victims too; pods refused at admission are handled apart.
  const core::Clock::WallTime start = FaultStart(signals, o.node, o.now);
  struct WholeJob {
    JobFaultPolicy policy;
    std::string signal;
    PodDelete first;  // the pod that set it off, for the job's Event
  };
  std::map<std::string, WholeJob> whole_jobs;  // by group key
  const bool newly_recorded = a.fault_annotation.has_value();
  for (const auto& p : o.pods) {
    const bool live = IsBatchPod(p);
    const bool failed = !live && p.status.phase == "Failed" && !GroupKey(p).empty() &&
                        p.metadata.deletion_timestamp.empty() && p.status.reason != kUnexpectedAdmissionError;
    if (!live && !failed) continue;
    if (failed) {
      auto t = FinishedAt(p);
      if (!t || *t < start - kFailedBeforeFault) continue;
    }
    const Signal* why = node_wide;
    if (!why) {
      const std::set<std::string> held_cards = CardsOf(p);
      for (const auto& s : signals) {
        if (s.name != "DeviceUnhealthy") continue;
        if (!s.cards.empty()) {
          if (std::any_of(s.cards.begin(), s.cards.end(), [&](const std::string& c) { return held_cards.count(c) > 0; })) {
            why = &s;
            break;
          }
          continue;
        }
        auto alloc = o.node.status.allocatable.find(s.resource);
        const int64_t healthy = alloc == o.node.status.allocatable.end() ? 0 : alloc->second.Value();
        // A pod that asked for the resource and failed since: it most likely held the bad card.
        if (Requested(p, s.resource) > 0 && (failed || demand[s.resource] > healthy)) {
          why = &s;
          break;
        }
      }
    }
    if (!why) continue;
    const JobFaultPolicy policy = PolicyOf(p, JobMetaOf(o, p));
    if (policy.mode == JobFaultPolicy::Mode::kOff) {
      if (newly_recorded && live)
        a.events.push_back(JobEvent(MakeDelete(p, std::nullopt, why->name), "PodFaultIgnored",
                                    "pod " + p.metadata.name + " is on node " + o.node.metadata.name + " with " +
                                        why->name + " (" + why->message + "); left alone: fault-scheduling=off"));
      continue;
    }
    const bool terminating = !p.metadata.deletion_timestamp.empty();
    // On a live node a graceful delete is the kubelet's to finish; a dead node never will.
    if (terminating && !why->node_down) continue;
    const bool forced = failed || why->node_down || policy.mode == JobFaultPolicy::Mode::kForce;
    PodDelete d = MakeDelete(p, forced ? std::optional<int64_t>(0) : policy.grace_seconds, why->name);
    if (!terminating) {
      a.events.push_back(JobEvent(d, "PodFaultRestart",
                                  "pod " + p.metadata.name + (failed ? " failed" : "") + " on node " +
                                      o.node.metadata.name + (failed ? " during a fault and" : "") +
                                      " is deleted to be replaced elsewhere: " + why->name + " (" + why->message + ")"));
      if (policy.whole_job) whole_jobs.try_emplace(GroupKey(p), WholeJob{policy, why->name, d});
    }
    a.deletes.push_back(std::move(d));
  }
  // Ascend's job-level rescheduling: the rest of the job goes too, wherever it runs.
  for (const auto& [group, w] : whole_jobs) {
    std::set<std::string> taken;
    for (const auto& d : a.deletes) taken.insert(d.uid);
    int more = 0;
    if (auto it = o.groups.find(group); it != o.groups.end())
      for (const auto& q : it->second) {
        if (!IsBatchPod(q) || !q.metadata.deletion_timestamp.empty() || taken.count(q.metadata.uid)) continue;
        a.deletes.push_back(MakeDelete(
            q, w.policy.mode == JobFaultPolicy::Mode::kForce ? std::optional<int64_t>(0) : w.policy.grace_seconds,
            w.signal));
        ++more;
      }
    a.events.push_back(JobEvent(w.first, "JobFaultRestart",
                                "the whole job is rescheduled after a " + w.signal + " fault on node " +
                                    o.node.metadata.name + " (fault-scheduling=" + ModeName(w.policy.mode) +
                                    ", pod-rescheduling is not on): " + std::to_string(more) +
                                    " more pods deleted on other nodes"));
  }
  return a;
}

}  // namespace

Actions Plan(const Observed& o, const FaultConfig& cfg) {
  Actions a = PlanSignals(o, cfg);
  AddAdmissionFailures(o, cfg, &a);
  return a;
}

bool CountsAgainstBudget(const api::Node& node, const FaultConfig& cfg, core::Clock::WallTime now) {
  const auto& ann = node.metadata.annotations;
  if (!ann.count(kFaultAnnotation)) return false;
  auto since = ann.find(kSinceAnnotation);
  core::Clock::WallTime t;
  if (since == ann.end() || !core::ParseRfc3339(since->second, &t)) return true;
  return now - t < cfg.budget_window;
}

}  // namespace tephra::reconcilers::fault
