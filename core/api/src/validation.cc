#include "tephra/api/validation.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include "tephra/api/defaults.h"
#include "tephra/api/duration.h"
#include "tephra/api/labels.h"
#include "tephra/api/resources.h"
#include "tephra/pattern/pattern.h"

namespace tephra::api {
namespace {

std::string Idx(std::string_view base, size_t i) { return std::string(base) + "[" + std::to_string(i) + "]"; }

bool IsAlnumLower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsAlnumLower(c) || (c >= 'A' && c <= 'Z'); }

// Events and actions a LifecyclePolicy may name (docs/volcano-behaviour.md, "Admission validation"). PodRunning,
// OutOfSync and CommandIssued are internal and rejected.
const std::set<std::string, std::less<>>& PolicyEvents() {
  static const std::set<std::string, std::less<>> k = {
      std::string(kEventAny),     std::string(kEventPodFailed),     std::string(kEventPodEvicted),
      std::string(kEventPodPending), std::string(kEventUnknown),    std::string(kEventTaskCompleted),
      std::string(kEventTaskFailed), std::string(kEventJobUpdated)};
  return k;
}
const std::set<std::string, std::less<>>& PolicyActions() {
  static const std::set<std::string, std::less<>> k = {
      std::string(kActionAbortJob),        std::string(kActionRestartJob),   std::string(kActionRestartTask),
      std::string(kActionRestartPod),      std::string(kActionRestartPartition), std::string(kActionTerminateJob),
      std::string(kActionCompleteJob),     std::string(kActionResumeJob)};
  return k;
}

// Mirrors Volcano's policy checks: the first problem in a list stops the scan (as Volcano's `break`s do).
void ValidatePolicies(const std::vector<LifecyclePolicy>& policies, const std::string& path, FieldErrors* errs) {
  std::set<std::string> seen_events;
  std::set<int32_t> seen_codes;
  for (size_t i = 0; i < policies.size(); ++i) {
    const LifecyclePolicy& p = policies[i];
    const std::string pp = Idx(path, i);
    const bool has_event = !p.event.empty() || !p.events.empty();
    if (has_event && p.exit_code) {
      errs->push_back({pp, "must not specify event and exitCode simultaneously"});
      return;
    }
    if (!has_event && !p.exit_code) {
      errs->push_back({pp, "either event and exitCode should be specified"});
      return;
    }
    if (!PolicyActions().count(p.action)) {
      errs->push_back({pp + ".action", "invalid policy action: \"" + p.action + "\""});
      return;
    }
    if (has_event) {
      std::vector<std::string> events = p.events;
      if (!p.event.empty()) events.push_back(p.event);
      for (const auto& e : events) {
        if (!PolicyEvents().count(e)) {
          errs->push_back({pp + ".event", "invalid policy event: \"" + e + "\""});
          return;
        }
        if (!seen_events.insert(e).second) {
          errs->push_back({pp + ".event", "duplicate event " + e + " across different policy"});
          return;
        }
      }
    } else {
      if (*p.exit_code == 0) {
        errs->push_back({pp + ".exitCode", "0 is not a valid error code"});
        return;
      }
      if (!seen_codes.insert(*p.exit_code).second) {
        errs->push_back({pp + ".exitCode", "duplicate exitCode " + std::to_string(*p.exit_code)});
        return;
      }
    }
  }
  if (seen_events.count(std::string(kEventAny)) && seen_events.size() > 1)
    errs->push_back({path, "if there's * here, no other policy should be here"});
}

void ValidateTopology(const std::optional<NetworkTopologySpec>& nt, const std::string& path, FieldErrors* errs) {
  if (!nt) return;
  if (nt->highest_tier_allowed && !nt->highest_tier_name.empty())
    errs->push_back({path, "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously"});
  if (!nt->mode.empty() && nt->mode != kNetworkTopologyHard && nt->mode != kNetworkTopologySoft)
    errs->push_back({path + ".mode", "unsupported mode \"" + nt->mode + "\", must be hard or soft"});
  if (nt->highest_tier_allowed && *nt->highest_tier_allowed < 0)
    errs->push_back({path + ".highestTierAllowed", "must be greater than or equal to 0"});
}

// Kubernetes' qualified-name errors, worded as Kubernetes words them.
std::string QualifiedNameError(std::string_view s) {
  std::string_view name = s;
  auto slash = s.find('/');
  if (slash != std::string_view::npos) {
    std::string_view prefix = s.substr(0, slash);
    name = s.substr(slash + 1);
    if (prefix.empty() || !IsDns1123Subdomain(prefix)) return "prefix part must be a lowercase RFC 1123 subdomain";
  }
  if (name.empty()) return "name part must be non-empty";
  if (name.size() > 63) return "name part must be no more than 63 characters";
  bool ok = IsAlnum(name.front()) && IsAlnum(name.back());
  for (char c : name)
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') ok = false;
  if (!ok)
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
           "alphanumeric character";
  return "";
}

void ValidateQuantitiesNonNegative(const ResourceList& rl, const std::string& path, FieldErrors* errs) {
  for (const auto& [name, q] : rl)
    if (q.Sign() < 0) errs->push_back({path + "[" + name + "]", "must be greater than or equal to 0"});
}

void AppendSelectorErrors(const std::vector<core::SelectorError>& in, FieldErrors* errs) {
  for (const auto& e : in) errs->push_back({e.path, e.message});
}

void ValidatePodAffinityTerm(const PodAffinityTerm& t, const std::string& path, std::vector<core::SelectorError>* out) {
  if (t.label_selector) core::ValidateLabelSelector(*t.label_selector, path + ".labelSelector", out);
  if (t.namespace_selector) core::ValidateLabelSelector(*t.namespace_selector, path + ".namespaceSelector", out);
}

void ValidatePodAffinity(const PodAffinity& a, const std::string& path, std::vector<core::SelectorError>* out) {
  const auto& req = a.required_during_scheduling_ignored_during_execution;
  for (size_t i = 0; i < req.size(); ++i)
    ValidatePodAffinityTerm(req[i], Idx(path + ".requiredDuringSchedulingIgnoredDuringExecution", i), out);
  const auto& pref = a.preferred_during_scheduling_ignored_during_execution;
  for (size_t i = 0; i < pref.size(); ++i)
    ValidatePodAffinityTerm(pref[i].pod_affinity_term,
                            Idx(path + ".preferredDuringSchedulingIgnoredDuringExecution", i) + ".podAffinityTerm", out);
}

}  // namespace

FieldErrors ValidatePodSchedulingSelectors(const PodSpec& spec, const std::string& path) {
  std::vector<core::SelectorError> out;
  if (spec.affinity) {
    const Affinity& a = *spec.affinity;
    const std::string ap = path + ".affinity";
    if (a.node_affinity) {
      const std::string np = ap + ".nodeAffinity";
      if (const auto& req = a.node_affinity->required_during_scheduling_ignored_during_execution) {
        const auto& terms = req->node_selector_terms;
        for (size_t i = 0; i < terms.size(); ++i)
          core::ValidateNodeSelectorTerm(
              terms[i], Idx(np + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", i), &out);
      }
      const auto& pref = a.node_affinity->preferred_during_scheduling_ignored_during_execution;
      for (size_t i = 0; i < pref.size(); ++i)
        core::ValidateNodeSelectorTerm(pref[i].preference,
                                       Idx(np + ".preferredDuringSchedulingIgnoredDuringExecution", i) + ".preference", &out);
    }
    if (a.pod_affinity) ValidatePodAffinity(*a.pod_affinity, ap + ".podAffinity", &out);
    if (a.pod_anti_affinity) ValidatePodAffinity(*a.pod_anti_affinity, ap + ".podAntiAffinity", &out);
  }
  for (size_t i = 0; i < spec.topology_spread_constraints.size(); ++i)
    if (const auto& sel = spec.topology_spread_constraints[i].label_selector)
      core::ValidateLabelSelector(*sel, Idx(path + ".topologySpreadConstraints", i) + ".labelSelector", &out);
  FieldErrors errs;
  AppendSelectorErrors(out, &errs);
  return errs;
}

namespace {

// A reduced Kubernetes PodTemplate validation: the checks that catch real manifest mistakes.
void ValidatePodTemplate(const PodTemplateSpec& tmpl, const std::string& path, FieldErrors* errs) {
  const PodSpec& spec = tmpl.spec;
  for (auto& e : ValidatePodSchedulingSelectors(spec, path + ".spec")) errs->push_back(std::move(e));
  if (spec.containers.empty()) errs->push_back({path + ".spec.containers", "Required value"});
  std::set<std::string> names;
  auto check_containers = [&](const std::vector<Container>& cs, const std::string& base) {
    for (size_t i = 0; i < cs.size(); ++i) {
      const Container& c = cs[i];
      std::string cp = Idx(base, i);
      if (c.name.empty()) errs->push_back({cp + ".name", "Required value"});
      else if (!IsDns1123Label(c.name))
        errs->push_back({cp + ".name", "Invalid value: \"" + c.name + "\": a lowercase RFC 1123 label must consist of "
                                       "lower case alphanumeric characters or '-'"});
      else if (!names.insert(c.name).second)
        errs->push_back({cp + ".name", "Duplicate value: \"" + c.name + "\""});
      if (c.image.empty()) errs->push_back({cp + ".image", "Required value"});
      ValidateQuantitiesNonNegative(c.resources.requests, cp + ".resources.requests", errs);
      ValidateQuantitiesNonNegative(c.resources.limits, cp + ".resources.limits", errs);
      for (const auto& [rname, req] : c.resources.requests) {
        auto lim = c.resources.limits.find(rname);
        if (lim != c.resources.limits.end() && req > lim->second)
          errs->push_back({cp + ".resources.requests[" + rname + "]",
                           "Invalid value: \"" + req.ToString() + "\": must be less than or equal to " + rname +
                               " limit of " + lim->second.ToString()});
      }
    }
  };
  check_containers(spec.init_containers, path + ".spec.initContainers");
  check_containers(spec.containers, path + ".spec.containers");
  if (!spec.restart_policy.empty() && spec.restart_policy != kRestartPolicyAlways &&
      spec.restart_policy != kRestartPolicyOnFailure && spec.restart_policy != kRestartPolicyNever)
    errs->push_back({path + ".spec.restartPolicy", "Unsupported value: \"" + spec.restart_policy + "\""});
}

// Whether every CPU request (or limit, when there is no request) is a whole number of cores; the NUMA
// topology policies pin exclusive CPUs, which only works for integral requests.
bool HasIntegerCpu(const PodSpec& spec) {
  for (const auto& c : spec.containers) {
    const ResourceList& rl = c.resources.requests.count("cpu") ? c.resources.requests : c.resources.limits;
    auto it = rl.find("cpu");
    if (it == rl.end()) return false;
    if (it->second.MilliValue() % 1000 != 0) return false;
  }
  return true;
}

// Detects a cycle in a graph given as node -> dependencies; returns true when acyclic.
// Kahn's algorithm: iterative, so a dependency chain as long as an object allows cannot exhaust the stack of
// the webhook thread that checks it.
bool IsDag(const std::map<std::string, std::vector<std::string>>& deps) {
  std::map<std::string, int> indegree;  // edges point from a node to what it depends on
  for (const auto& [n, ds] : deps) {
    indegree.emplace(n, 0);
    for (const auto& d : ds) ++indegree[d];
  }
  std::vector<std::string> ready;
  for (const auto& [n, k] : indegree)
    if (k == 0) ready.push_back(n);
  size_t seen = 0;
  while (!ready.empty()) {
    const std::string n = std::move(ready.back());
    ready.pop_back();
    ++seen;
    auto it = deps.find(n);
    if (it == deps.end()) continue;
    for (const auto& d : it->second)
      if (--indegree[d] == 0) ready.push_back(d);
  }
  return seen == indegree.size();
}

std::string ArgValue(const std::vector<std::string>& args, std::string_view flag, std::string_view def) {
  std::string prefix = "--" + std::string(flag) + "=";
  for (const auto& a : args)
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  return std::string(def);
}

void ValidatePartition(const TaskSpec& t, const std::string& tp, FieldErrors* errs) {
  if (!t.partition_policy) return;
  const PartitionPolicySpec& pp = *t.partition_policy;
  const std::string p = tp + ".partitionPolicy";
  if (pp.total_partitions <= 0) errs->push_back({p + ".totalPartitions", "must be greater than 0"});
  if (pp.partition_size <= 0) errs->push_back({p + ".partitionSize", "must be greater than 0"});
  if (pp.min_partitions < 0) errs->push_back({p + ".minPartitions", "must be greater than or equal to 0"});
  if (pp.total_partitions > 0 && pp.partition_size > 0 &&
      static_cast<int64_t>(pp.total_partitions) * pp.partition_size != t.replicas)
    errs->push_back({tp + ".replicas", "replicas must equal totalPartitions * partitionSize"});
  if (pp.min_partitions > 0 && t.min_available &&
      static_cast<int64_t>(pp.min_partitions) * pp.partition_size != *t.min_available)
    errs->push_back({tp + ".minAvailable", "minAvailable must equal minPartitions * partitionSize"});
  if (pp.min_partitions > pp.total_partitions)
    errs->push_back({p + ".minPartitions", "must not be greater than totalPartitions"});
  ValidateTopology(pp.network_topology, p + ".networkTopology", errs);
}

void ValidateVolumes(const std::vector<VolumeSpec>& volumes, FieldErrors* errs) {
  std::set<std::string> mounts;
  for (size_t i = 0; i < volumes.size(); ++i) {
    const VolumeSpec& v = volumes[i];
    std::string vp = Idx("spec.volumes", i);
    if (v.mount_path.empty()) {
      errs->push_back({vp + ".mountPath", "mountPath is required"});
      continue;
    }
    if (v.mount_path.find(':') != std::string::npos)
      errs->push_back({vp + ".mountPath", "mountPath must not contain ':'"});
    if (!mounts.insert(v.mount_path).second) errs->push_back({vp + ".mountPath", "duplicated mountPath: " + v.mount_path});
    if (!v.volume_claim && v.volume_claim_name.empty())
      errs->push_back({vp, "either VolumeClaim or VolumeClaimName must be specified"});
    if (!v.volume_claim_name.empty()) {
      if (v.volume_claim)
        errs->push_back({vp, "conflict: If you want to use an existing PVC, just specify VolumeClaimName. If you want "
                             "to create a new PVC, you do not need to specify VolumeClaimName"});
      if (!IsDns1123Subdomain(v.volume_claim_name))
        errs->push_back({vp + ".volumeClaimName", "invalid VolumeClaimName " + v.volume_claim_name});
    }
  }
}

}  // namespace

bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!IsAlnumLower(s.front()) || !IsAlnumLower(s.back())) return false;
  for (char c : s)
    if (!IsAlnumLower(c) && c != '-') return false;
  return true;
}

bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    // Subdomain labels may be longer than 63 as a whole name is checked against 253 only.
    if (label.empty() || !IsAlnumLower(label.front()) || !IsAlnumLower(label.back())) return false;
    for (char c : label)
      if (!IsAlnumLower(c) && c != '-') return false;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

bool IsQualifiedName(std::string_view s) { return QualifiedNameError(s).empty(); }

std::string JoinFieldErrors(const FieldErrors& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += "; ";
    if (!e.path.empty()) out += e.path + ": ";
    out += e.message;
  }
  return out;
}

namespace {

// spec.runningEstimate is a metav1.Duration: Volcano's webhook fails to decode a job whose value is not a Go
// duration, so such a job never exists. Tephra says which field and why (the scheduler plans with it,
// docs/reservations.md).
void ValidateRunningEstimate(const JobSpec& spec, FieldErrors* errs) {
  if (spec.running_estimate.empty()) return;
  auto d = ParseGoDuration(spec.running_estimate);
  if (!d.ok()) {
    errs->push_back({"spec.runningEstimate", "\"" + spec.running_estimate +
                                                 "\" is not a duration (Go syntax, e.g. 90m, 2h30m, 45s)"});
  } else if (d->count() < 0) {
    errs->push_back({"spec.runningEstimate", "must not be negative"});
  }
}

}  // namespace

FieldErrors ValidateJobCreate(const Job& job, const ClusterLookup& lookup) {
  FieldErrors errs;
  const JobSpec& spec = job.spec;
  if (spec.tasks.empty()) {
    errs.push_back({"spec.tasks", "No task specified in job spec"});
    return errs;
  }
  if (spec.tasks.size() > kMaxJobTasks) {
    errs.push_back({"spec.tasks", "a job may have at most " + std::to_string(kMaxJobTasks) + " tasks, this one has " +
                                      std::to_string(spec.tasks.size())});
    return errs;
  }
  if (auto it = spec.plugins.find("mpi"); it != spec.plugins.end()) {
    std::string master = ArgValue(it->second, "master", "master");
    if (!spec.FindTask(master)) errs.push_back({"spec.plugins[mpi]", "The specified mpi master task was not found"});
  }
  if (auto q = QualifiedNameError(job.metadata.name); !q.empty())
    errs.push_back({"metadata.name", "create job with name " + job.metadata.name + " validate failed " + q});
  if (spec.min_available < 0) errs.push_back({"spec.minAvailable", "job 'minAvailable' must be >= 0"});
  ValidateRunningEstimate(spec, &errs);
  if (spec.max_retry < 0) errs.push_back({"spec.maxRetry", "'maxRetry' cannot be less than zero"});
  if (spec.ttl_seconds_after_finished && *spec.ttl_seconds_after_finished < 0)
    errs.push_back({"spec.ttlSecondsAfterFinished", "'ttlSecondsAfterFinished' cannot be less than zero"});
  if (spec.min_success && *spec.min_success < 1)
    errs.push_back({"spec.minSuccess", "'minSuccess' must be >= 1"});
  ValidateTopology(spec.network_topology, "spec.networkTopology", &errs);

  std::set<std::string> task_names;
  int64_t total_replicas = 0;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const TaskSpec& t = spec.tasks[i];
    const std::string tp = Idx("spec.tasks", i);
    if (t.replicas < 0) errs.push_back({tp + ".replicas", "'replicas' < 0 in task: " + t.name});
    if (t.min_available && *t.min_available > t.replicas)
      errs.push_back({tp + ".minAvailable",
                      "'minAvailable' is greater than 'replicas' in task: " + t.name + ", job: " + job.metadata.name});
    if (t.min_available && *t.min_available < 0)
      errs.push_back({tp + ".minAvailable", "'minAvailable' must be >= 0 in task: " + t.name});
    total_replicas += t.replicas;
    if (!IsDns1123Label(t.name))
      errs.push_back({tp + ".name", "task name \"" + t.name + "\" must be a lowercase RFC 1123 label"});
    if (!task_names.insert(t.name).second) errs.push_back({tp + ".name", "duplicated task name " + t.name});
    ValidatePolicies(t.policies, tp + ".policies", &errs);
    std::string pod_name = job.metadata.name + "-" + t.name + "-" + std::to_string(i);
    if (auto q = QualifiedNameError(pod_name); !q.empty())
      errs.push_back({tp + ".name", "create pod with name " + pod_name + " validate failed " + q});
    ValidatePodTemplate(t.template_, tp + ".template", &errs);
    // Volcano does not restrict the topologyPolicy value itself (unknown values pass), only the CPU shape.
    if (!t.topology_policy.empty() && t.topology_policy != kTopologyPolicyNone && !HasIntegerCpu(t.template_.spec))
      errs.push_back({tp + ".template.spec.containers",
                      "the cpu request isn't an integer in task: " + t.name + " job: " + job.metadata.name});
    if (t.max_retry < -1) errs.push_back({tp + ".maxRetry", "'maxRetry' must be >= -1 in task: " + t.name});
    ValidatePartition(t, tp, &errs);
  }
  if (total_replicas > kMaxJobReplicas)
    errs.push_back({"spec.tasks[*].replicas", "a job may have at most " + std::to_string(kMaxJobReplicas) +
                                                  " pods in all its tasks, this one has " +
                                                  std::to_string(total_replicas)});
  if (total_replicas < spec.min_available)
    errs.push_back({"spec.minAvailable", "job 'minAvailable' should not be greater than total replicas in tasks"});
  if (spec.min_success && total_replicas < *spec.min_success)
    errs.push_back({"spec.minSuccess", "job 'minSuccess' should not be greater than total replicas in tasks"});
  ValidatePolicies(spec.policies, "spec.policies", &errs);
  for (const auto& [name, _] : spec.plugins) {
    const auto& known = KnownJobPlugins();
    if (std::find(known.begin(), known.end(), name) == known.end())
      errs.push_back({"spec.plugins[" + name + "]", "unable to find job plugin: " + name});
  }
  ValidateVolumes(spec.volumes, &errs);

  // Queue: exists, open, not root, a leaf.
  std::optional<Queue> q = lookup.GetQueue(spec.queue);
  if (!q) {
    errs.push_back({"spec.queue", "unable to find job queue: " + spec.queue});
  } else {
    if (q->status.state != kQueueStateOpen)
      errs.push_back({"spec.queue", "can only submit job to queue with state `Open`, queue `" + spec.queue +
                                        "` status is `" + q->status.state + "`"});
    if (spec.queue == kRootQueue) {
      errs.push_back({"spec.queue", "can not submit job to root queue"});
    } else {
      int children = 0;
      for (const auto& other : lookup.ListQueues())
        if (other.spec.parent == spec.queue) ++children;
      if (children > 0)
        errs.push_back({"spec.queue", "can only submit job to leaf queue, queue `" + spec.queue + "` has " +
                                          std::to_string(children) + " child queues"});
    }
  }

  // Task dependencies.
  std::map<std::string, std::vector<std::string>> deps;
  bool has_deps = false;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const TaskSpec& t = spec.tasks[i];
    deps[t.name];
    if (!t.depends_on) continue;
    has_deps = true;
    for (size_t k = 0; k < t.depends_on->name.size(); ++k) {
      const std::string& d = t.depends_on->name[k];
      if (!spec.FindTask(d))
        errs.push_back({Idx(Idx("spec.tasks", i) + ".dependsOn.name", k), "task " + d + " does not exist in job"});
      else
        deps[t.name].push_back(d);
    }
  }
  if (has_deps && !IsDag(deps))
    errs.push_back({"spec.tasks", "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)"});
  return errs;
}

bool IsDefaultingUpdate(const Job& old_job, const Job& new_job) {
  Job defaulted = old_job;
  JobDefaultsConfig config;
  config.scheduler_names = {new_job.spec.scheduler_name};
  MutateJob(&defaulted, config);
  const json want = ToJson(defaulted.spec);
  return want != ToJson(old_job.spec) && want == ToJson(new_job.spec);
}

FieldErrors ValidateJobUpdate(const Job& old_job, const Job& new_job) {
  FieldErrors errs;
  const JobSpec& o = old_job.spec;
  const JobSpec& n = new_job.spec;
  // The job controller writes the admission defaults onto a job stored without them (the mutating webhook
  // was absent or down; docs/job-controller.md, "Admission defaults applied by the controller"). Such an
  // update only fills what was empty, so it is accepted as a whole: refusing it would stall the job for good
  // once a webhook is back, and whatever else is wrong was already in the stored object. The scheduler name
  // is the one the update carries (the controller's first --scheduler-name, which this webhook cannot know).
  if (IsDefaultingUpdate(old_job, new_job)) return errs;
  if (n.min_available < 0) errs.push_back({"spec.minAvailable", "job 'minAvailable' must be >= 0"});
  ValidateRunningEstimate(n, &errs);
  if (n.max_retry < 0) errs.push_back({"spec.maxRetry", "'maxRetry' cannot be less than zero"});
  if (n.ttl_seconds_after_finished && *n.ttl_seconds_after_finished < 0)
    errs.push_back({"spec.ttlSecondsAfterFinished", "'ttlSecondsAfterFinished' cannot be less than zero"});
  if (o.tasks.size() != n.tasks.size()) {
    errs.push_back({"spec.tasks", "job updates may not add or remove tasks"});
    return errs;
  }
  if (o.queue != n.queue) errs.push_back({"spec.queue", "queue is immutable"});
  ValidateTopology(n.network_topology, "spec.networkTopology", &errs);
  int64_t total_replicas = 0;
  for (size_t i = 0; i < n.tasks.size(); ++i) {
    const TaskSpec& t = n.tasks[i];
    const std::string tp = Idx("spec.tasks", i);
    if (t.replicas < 0) errs.push_back({tp + ".replicas", "'replicas' must be >= 0 in task: " + t.name});
    if (t.min_available) {
      if (*t.min_available < 0)
        errs.push_back({tp + ".minAvailable", "'minAvailable' must be >= 0 in task: " + t.name});
      else if (*t.min_available > t.replicas)
        errs.push_back({tp + ".minAvailable", "'minAvailable' must be <= 'replicas' in task: " + t.name});
    }
    if (!IsDns1123Label(t.name))
      errs.push_back({tp + ".name", "task name \"" + t.name + "\" must be a lowercase RFC 1123 label"});
    ValidatePartition(t, tp, &errs);
    total_replicas += t.replicas;
  }
  if (total_replicas > kMaxJobReplicas)
    errs.push_back({"spec.tasks[*].replicas", "a job may have at most " + std::to_string(kMaxJobReplicas) +
                                                  " pods in all its tasks, this one would have " +
                                                  std::to_string(total_replicas)});
  if (n.min_available > total_replicas)
    errs.push_back({"spec.minAvailable", "job 'minAvailable' must not be greater than total replicas"});

  // Everything else is immutable: blank the mutable fields on copies and compare the rest.
  JobSpec a = o, b = n;
  a.min_available = b.min_available = 0;
  a.priority_class_name.clear();
  b.priority_class_name.clear();
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    a.tasks[i].replicas = b.tasks[i].replicas = 0;
    a.tasks[i].min_available.reset();
    b.tasks[i].min_available.reset();
  }
  // The controller writes generated PVC names back into volumes with a volumeClaim.
  for (auto* s : {&a, &b})
    for (auto& v : s->volumes)
      if (v.volume_claim) v.volume_claim_name.clear();
  if (ToJson(a) != ToJson(b))
    errs.push_back({"spec", "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec`"});
  return errs;
}

namespace {

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.emplace_back(s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  return out;
}

// Per-resource a <= b for resources present in both lists; names the first offender.
std::string FirstGreater(const ResourceList& a, const ResourceList& b) {
  for (const auto& [name, q] : a) {
    auto it = b.find(name);
    if (it != b.end() && q > it->second) return name;
  }
  return "";
}

std::string ParentOf(const Queue& q) {
  if (q.metadata.name == kRootQueue) return "";
  return q.spec.parent.empty() ? std::string(kRootQueue) : q.spec.parent;
}

}  // namespace

FieldErrors ValidateQueue(AdmissionOp op, const Queue* old_queue, const Queue& queue, const ClusterLookup& lookup,
                          const QueueValidationConfig& config) {
  FieldErrors errs;
  const std::string& name = queue.metadata.name;
  std::vector<Queue> all = lookup.ListQueues();
  std::map<std::string, const Queue*> by_name;
  for (const auto& q : all) by_name[q.metadata.name] = &q;
  auto has_children = [&](const std::string& n) {
    for (const auto& q : all)
      if (q.metadata.name != n && ParentOf(q) == n) return true;
    return false;
  };

  if (op == AdmissionOp::kDelete) {
    if (name == kDefaultQueue || name == kRootQueue) {
      errs.push_back({"metadata.name", "`" + name + "` queue can not be deleted"});
      return errs;
    }
    std::vector<std::string> children;
    for (const auto& q : all)
      if (q.metadata.name != name && ParentOf(q) == name) children.push_back(q.metadata.name);
    if (!children.empty()) {
      std::string list;
      for (const auto& c : children) list += (list.empty() ? "" : ", ") + c;
      errs.push_back({"metadata.name", "queue " + name + " can not be deleted because it has " +
                                           std::to_string(children.size()) + " child queues: " + list});
    }
    if (config.enable_allocated_pods_check && lookup.QueueHasAllocatedPods(name))
      errs.push_back({"metadata.name", "queue " + name + " has allocated pods, can not be deleted"});
    return errs;
  }

  const QueueSpec& spec = queue.spec;
  if (spec.weight <= 0 || spec.weight > 65535)
    errs.push_back({"spec.weight", "queue weight must be in the range [1, 65535]"});
  if (spec.priority < 0) errs.push_back({"spec.priority", "must be greater than or equal to 0"});
  if (!queue.status.state.empty() && queue.status.state != kQueueStateOpen && queue.status.state != kQueueStateClosed)
    errs.push_back({"status.state", "queue state must be in [Open Closed]"});
  else if (name == kRootQueue && queue.status.state == kQueueStateClosed)
    errs.push_back({"status.state", "the root queue cannot be closed: every queue is under it"});
  ValidateQuantitiesNonNegative(spec.capability, "spec.capability", &errs);
  ValidateQuantitiesNonNegative(spec.deserved, "spec.deserved", &errs);
  ValidateQuantitiesNonNegative(spec.guarantee.resource, "spec.guarantee.resource", &errs);
  for (const auto& [r, g] : spec.guarantee.resource) {
    auto d = spec.deserved.find(r);
    if (d == spec.deserved.end()) {
      if (!spec.deserved.empty() || !spec.capability.empty())
        errs.push_back({"spec.deserved[" + r + "]", "deserved[" + r + "] must be >= guarantee[" + r + "]=" +
                                                     g.ToString() + " (deserved is not set)"});
    } else if (g > d->second) {
      errs.push_back({"spec.deserved[" + r + "]", "deserved[" + r + "]=" + d->second.ToString() + " must be >= guarantee[" +
                                                   r + "]=" + g.ToString()});
    }
  }
  if (auto r = FirstGreater(spec.deserved, spec.capability); !r.empty())
    errs.push_back({"spec.deserved[" + r + "]", "deserved[" + r + "]=" + spec.deserved.at(r).ToString() +
                                                 " must be <= capability[" + r + "]=" + spec.capability.at(r).ToString()});
  if (auto r = FirstGreater(spec.guarantee.resource, spec.capability); !r.empty())
    errs.push_back({"spec.guarantee.resource[" + r + "]", "guarantee should not be greater than capability"});

  // Hierarchy annotations.
  auto h = queue.metadata.annotations.find(std::string(kHierarchyAnnotation));
  auto w = queue.metadata.annotations.find(std::string(kHierarchyWeightsAnnotation));
  if (h != queue.metadata.annotations.end() || w != queue.metadata.annotations.end()) {
    std::string hs = h == queue.metadata.annotations.end() ? "" : h->second;
    std::string ws = w == queue.metadata.annotations.end() ? "" : w->second;
    auto hp = Split(hs, '/');
    auto wp = Split(ws, '/');
    std::string ap = "metadata.annotations[" + std::string(kHierarchyAnnotation) + "]";
    if (hp.size() != wp.size()) {
      errs.push_back({ap, hs + " must have the same length with " + ws});
    } else {
      for (const auto& x : wp) {
        char* end = nullptr;
        double v = std::strtod(x.c_str(), &end);
        if (x.empty() || end != x.c_str() + x.size() || !(v > 0))
          errs.push_back({"metadata.annotations[" + std::string(kHierarchyWeightsAnnotation) + "]",
                          x + " in the " + ws + " must be larger than 0"});
      }
      for (const auto& other : all) {
        if (other.metadata.name == name) continue;
        auto oh = other.metadata.annotations.find(std::string(kHierarchyAnnotation));
        if (oh == other.metadata.annotations.end()) continue;
        if (oh->second.rfind(hs + "/", 0) == 0)
          errs.push_back({ap, hs + " is not allowed to be in the sub path of " + oh->second + " of queue " +
                                  other.metadata.name});
      }
    }
  }

  const bool is_root = name == kRootQueue;
  if (op == AdmissionOp::kUpdate && old_queue && is_root && config.enable_root_queue_protection) {
    if (ToJson(old_queue->spec.capability) != ToJson(spec.capability) ||
        ToJson(old_queue->spec.deserved) != ToJson(spec.deserved) ||
        ToJson(old_queue->spec.guarantee) != ToJson(spec.guarantee))
      errs.push_back({"spec", "root queue's capability, deserved and guarantee can not be changed"});
  }
  if (is_root) return errs;

  const std::string parent = ParentOf(queue);
  const bool parent_changed = op == AdmissionOp::kCreate || !old_queue || ParentOf(*old_queue) != parent;
  if (parent_changed) {
    if (parent == name) {
      errs.push_back({"spec.parent", "queue " + name + " cannot use itself as parent"});
      return errs;
    }
    if (parent != kRootQueue && !by_name.count(parent)) {
      errs.push_back({"spec.parent", "parent queue " + parent + " does not exist"});
      return errs;
    }
    int depth = 1;
    std::set<std::string> seen = {name};
    for (std::string p = parent; p != kRootQueue && !p.empty(); ++depth) {
      if (!seen.insert(p).second) {
        errs.push_back({"spec.parent", "queue hierarchy has a cycle through " + p});
        return errs;
      }
      auto it = by_name.find(p);
      if (it == by_name.end()) break;
      p = ParentOf(*it->second);
    }
    if (depth > config.max_queue_depth)
      errs.push_back({"spec.parent", "queue depth " + std::to_string(depth) + " exceeds the maximum " +
                                         std::to_string(config.max_queue_depth)});
    if (parent != kRootQueue && !has_children(parent) && lookup.QueueHasAllocatedPods(parent))
      errs.push_back({"spec.parent", "parent queue " + parent + " has allocated pods and can not have child queues"});
  }

  const bool resources_changed = parent_changed || ToJson(old_queue->spec.capability) != ToJson(spec.capability) ||
                                 ToJson(old_queue->spec.deserved) != ToJson(spec.deserved) ||
                                 ToJson(old_queue->spec.guarantee) != ToJson(spec.guarantee);
  if (!resources_changed) return errs;

  // capability <= nearest ancestor that declares the resource.
  for (const auto& [r, cap] : spec.capability) {
    for (std::string p = parent; !p.empty();) {
      auto it = by_name.find(p);
      if (it == by_name.end()) break;
      auto c = it->second->spec.capability.find(r);
      if (c != it->second->spec.capability.end()) {
        if (cap > c->second)
          errs.push_back({"spec.capability[" + r + "]", "capability should not be greater than the capability of "
                                                        "ancestor queue " + p});
        break;
      }
      p = ParentOf(*it->second);
    }
  }
  // Σ siblings' deserved / guarantee (this queue included) <= parent's.
  if (auto pit = by_name.find(parent); pit != by_name.end()) {
    const Queue& pq = *pit->second;
    ResourceList deserved = spec.deserved, guarantee = spec.guarantee.resource;
    for (const auto& q : all)
      if (q.metadata.name != name && ParentOf(q) == parent) {
        AddResources(&deserved, q.spec.deserved);
        AddResources(&guarantee, q.spec.guarantee.resource);
      }
    if (auto r = FirstGreater(deserved, pq.spec.deserved); !r.empty())
      errs.push_back({"spec.deserved[" + r + "]", "the sum of deserved of child queues should not be greater than "
                                                  "the deserved of parent queue " + parent});
    if (auto r = FirstGreater(guarantee, pq.spec.guarantee.resource); !r.empty())
      errs.push_back({"spec.guarantee.resource[" + r + "]", "the sum of guarantee of child queues should not be "
                                                            "greater than the guarantee of parent queue " + parent});
  }
  // This queue's capability >= every capability in its subtree.
  std::function<void(const std::string&, int)> walk = [&](const std::string& n, int guard) {
    if (guard > 64) return;
    for (const auto& q : all)
      if (q.metadata.name != n && ParentOf(q) == n) {
        if (auto r = FirstGreater(q.spec.capability, spec.capability); !r.empty())
          errs.push_back({"spec.capability[" + r + "]", "capability should not be less than the capability of "
                                                        "descendant queue " + q.metadata.name});
        walk(q.metadata.name, guard + 1);
      }
  };
  walk(name, 0);
  return errs;
}

FieldErrors ValidatePodGroup(const PodGroup& pg, const ClusterLookup& lookup) {
  FieldErrors errs;
  const std::string queue = pg.spec.queue.empty() ? std::string(kDefaultQueue) : pg.spec.queue;
  std::optional<Queue> q = lookup.GetQueue(queue);
  if (!q) errs.push_back({"spec.queue", "failed to get queue " + queue});
  else if (q->status.state != kQueueStateOpen)
    errs.push_back({"spec.queue", "can only submit PodGroup to queue with state `Open`, queue `" + queue +
                                      "` status is `" + q->status.state + "`"});
  if (pg.spec.min_member < 0) errs.push_back({"spec.minMember", "must be greater than or equal to 0"});
  ValidateTopology(pg.spec.network_topology, "spec.networkTopology", &errs);
  for (size_t i = 0; i < pg.spec.sub_group_policy.size(); ++i)
    ValidateTopology(pg.spec.sub_group_policy[i].network_topology, Idx("spec.subGroupPolicy", i) + ".networkTopology",
                     &errs);
  return errs;
}

FieldErrors ValidateJobFlow(const JobFlow& flow) {
  FieldErrors errs;
  if (flow.spec.flows.size() > kMaxFlows) {
    errs.push_back({"spec.flows", "a jobflow may have at most " + std::to_string(kMaxFlows) + " flows, this one has " +
                                      std::to_string(flow.spec.flows.size())});
    return errs;
  }
  std::map<std::string, std::vector<std::string>> deps;
  for (size_t i = 0; i < flow.spec.flows.size(); ++i) {
    const Flow& f = flow.spec.flows[i];
    if (f.name.empty()) errs.push_back({Idx("spec.flows", i) + ".name", "flow name is required"});
    // A flow names the JobTemplate it runs, so anything else could never run.
    else if (!IsDns1123Subdomain(f.name))
      errs.push_back({Idx("spec.flows", i) + ".name",
                      "flow name must be a JobTemplate name (a lowercase RFC 1123 subdomain of at most 253 "
                      "characters)"});
    else if (deps.count(f.name)) errs.push_back({Idx("spec.flows", i) + ".name", "duplicated flow name " + f.name});
    deps[f.name];
  }
  for (size_t i = 0; i < flow.spec.flows.size(); ++i) {
    const Flow& f = flow.spec.flows[i];
    if (!f.depends_on) continue;
    for (size_t k = 0; k < f.depends_on->targets.size(); ++k) {
      const std::string& t = f.depends_on->targets[k];
      // An undefined target is a dangling edge; Volcano reports it with the same DAG message.
      if (!deps.count(t)) errs.push_back({Idx(Idx("spec.flows", i) + ".dependsOn.targets", k), "jobflow Flow is not DAG"});
      else deps[f.name].push_back(t);
    }
  }
  if (!IsDag(deps)) errs.push_back({"spec.flows", "jobflow Flow is not DAG"});
  return errs;
}

FieldErrors ValidateHyperNode(const HyperNode& hn) {
  FieldErrors errs;
  if (hn.spec.members.empty()) errs.push_back({"spec.members", "member must have at least one member"});
  if (hn.spec.tier < 0) errs.push_back({"spec.tier", "must be greater than or equal to 0"});
  for (size_t i = 0; i < hn.spec.members.size(); ++i) {
    const MemberSpec& m = hn.spec.members[i];
    const std::string mp = Idx("spec.members", i);
    if (m.type != kMemberTypeNode && m.type != kMemberTypeHyperNode)
      errs.push_back({mp + ".type", "member type must be Node or HyperNode"});
    const MemberSelector& s = m.selector;
    int kinds = (s.exact_match ? 1 : 0) + (s.regex_match ? 1 : 0) + (s.label_match ? 1 : 0);
    if (kinds != 1) {
      errs.push_back({mp + ".selector", "exactly one of exactMatch, regexMatch and labelMatch must be specified"});
      continue;
    }
    if (s.exact_match && s.exact_match->name.empty())
      errs.push_back({mp + ".selector.exactMatch.name", "member exactMatch name is required"});
    if (s.label_match) {
      std::vector<core::SelectorError> sel;
      core::ValidateLabelSelector(*s.label_match, mp + ".selector.labelMatch", &sel);
      AppendSelectorErrors(sel, &errs);
    }
    if (s.regex_match) {
      if (s.regex_match->pattern.empty()) {
        errs.push_back({mp + ".selector.regexMatch.pattern", "member regexMatch pattern is required"});
      } else {
        // Volcano compiles the pattern with Go's regexp; RE2 accepts and refuses the same patterns, in linear
        // time and bounded memory whatever the input ("a{1000000000}", deep nesting).
        auto compiled = pattern::Pattern::Compile(s.regex_match->pattern);
        if (!compiled.ok()) {
          errs.push_back({mp + ".selector.regexMatch.pattern", "member regexMatch pattern is invalid: " +
                                                                   s.regex_match->pattern + " (" +
                                                                   compiled.status().message() + ")"});
        }
      }
    }
    if (s.label_match && m.type != kMemberTypeNode)
      errs.push_back({mp + ".selector.labelMatch", "labelMatch can only be used with member type Node"});
  }
  return errs;
}

FieldErrors ValidatePodJdb(const Pod& pod) {
  FieldErrors errs;
  const auto& ann = pod.metadata.annotations;
  auto mn = ann.find(std::string(kJdbMinAvailableKey));
  auto mx = ann.find(std::string(kJdbMaxUnavailableKey));
  if (mn != ann.end() && mx != ann.end()) {
    errs.push_back({"metadata.annotations", "not allow configure multiple annotations <[" +
                                                std::string(kJdbMinAvailableKey) + " " +
                                                std::string(kJdbMaxUnavailableKey) + "]> at same time"});
    return errs;
  }
  auto check = [&](const std::string& key, const std::string& v) {
    const std::string path = "metadata.annotations[" + key + "]";
    auto all_digits = [](std::string_view s) {
      return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!v.empty() && v.back() == '%') {
      std::string_view num(v.data(), v.size() - 1);
      int n = all_digits(num) && num.size() <= 3 ? std::stoi(std::string(num)) : -1;
      if (n < 1 || n > 99)
        errs.push_back({path, "invalid value <" + v + "> for " + key +
                                  ", it must be a valid percentage which between 1% ~ 99%"});
      return;
    }
    bool positive = all_digits(v) && v.find_first_not_of('0') != std::string::npos && v.size() <= 9;
    if (!positive) errs.push_back({path, "invalid value <" + v + "> for " + key + ", it must be a positive integer"});
  };
  if (mn != ann.end()) check(mn->first, mn->second);
  if (mx != ann.end()) check(mx->first, mx->second);
  return errs;
}

}  // namespace tephra::api
