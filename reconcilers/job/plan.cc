#include "plan.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>

#include "state_machine.h"
#include "tephra/api/duration.h"
#include "tephra/api/labels.h"
#include "tephra/api/resources.h"

namespace tephra::reconcilers::job {
namespace {

using WallTime = core::Clock::WallTime;
using std::chrono::milliseconds;

std::string Str(std::string_view s) { return std::string(s); }

WallTime ParseTime(const std::string& s, WallTime fallback) {
  WallTime t;
  if (!s.empty() && core::ParseRfc3339(s, &t)) return t;
  return fallback;
}

const std::string* Annotation(const api::Pod& p, std::string_view key) {
  auto it = p.metadata.annotations.find(Str(key));
  return it == p.metadata.annotations.end() ? nullptr : &it->second;
}

int ParseIntOr(const std::string* s, int fallback) {
  if (!s || s->empty()) return fallback;
  int v = 0;
  for (char c : *s) {
    if (c < '0' || c > '9') return fallback;
    v = v * 10 + (c - '0');
    if (v > 100'000'000) return fallback;
  }
  return v;
}

// Volcano's IsOutOfSyncPod tests that the annotation exists, whatever its value (even "").
bool MarkedOutOfSync(const api::Pod& p) { return Annotation(p, api::kPodOutOfSyncKey) != nullptr; }

std::string TaskName(const api::TaskSpec& t) { return t.name.empty() ? "default" : t.name; }

// Rank of an action when several derived events want different ones in the same pass: the one that ends or
// resets the most wins; the others are moot afterwards (their pods are killed or the phase changes).
int ActionRank(std::string_view a) {
  static const std::string_view order[] = {api::kActionTerminateJob, api::kActionAbortJob,
                                           api::kActionCompleteJob,  api::kActionRestartJob,
                                           api::kActionRestartTask,  api::kActionRestartPartition,
                                           api::kActionRestartPod,   api::kActionResumeJob};
  for (size_t i = 0; i < std::size(order); ++i)
    if (order[i] == a) return static_cast<int>(i);
  return 100;  // SyncJob / unknown
}

milliseconds Ceil(std::chrono::nanoseconds d) {
  auto ms = std::chrono::duration_cast<milliseconds>(d);
  if (ms < d) ms += milliseconds(1);
  return std::max(ms, milliseconds(1));
}

void MinRequeue(Actions* a, std::chrono::nanoseconds d) {
  milliseconds ms = Ceil(d);
  if (!a->requeue_after || ms < *a->requeue_after) a->requeue_after = ms;
}

// status.state.reason while a volumeClaimName the job references does not exist (pods are held).
constexpr const char* kPvcMissingReason = "PVCNotFound";

// Adds a condition for `phase`, dropping an older entry with the same status (as Volcano does).
void SetPhase(api::JobStatus* st, const std::string& phase, const std::string& now, const std::string& reason = "",
              const std::string& message = "") {
  if (st->state.phase == phase) return;
  st->state.phase = phase;
  st->state.reason = reason;
  st->state.message = message;
  st->state.last_transition_time = now;
  st->conditions.erase(std::remove_if(st->conditions.begin(), st->conditions.end(),
                                      [&](const api::JobCondition& c) { return c.status == phase; }),
                       st->conditions.end());
  api::JobCondition c;
  c.type = phase;
  c.status = phase;
  c.last_transition_time = now;
  st->conditions.push_back(std::move(c));
}

// The plugins of a job, in name order (spec.plugins is a map; Volcano's order is unspecified).
std::vector<JobPluginPtr> MakePlugins(const api::Job& job, Actions* out, std::vector<std::string>* names) {
  std::vector<JobPluginPtr> plugins;
  for (const auto& [name, args] : job.spec.plugins) {
    auto p = NewJobPlugin(name, args, &out->log);
    if (!p.ok()) {
      out->events.push_back({Str(api::kEventTypeWarning), "PluginError", p.status().message()});
      continue;
    }
    plugins.push_back(std::move(p).value());
    if (names) names->push_back(name);
  }
  return plugins;
}

struct PodRef {
  const api::Pod* pod;
  int index;
};

}  // namespace

int PodIndex(const api::Pod& pod) {
  int v = ParseIntOr(Annotation(pod, api::kTaskIndexKey), -1);
  if (v >= 0) return v;
  auto it = pod.metadata.labels.find(Str(api::kTaskIndexKey));
  if (it != pod.metadata.labels.end()) v = ParseIntOr(&it->second, -1);
  return v >= 0 ? v : IndexFromPodName(pod.metadata.name);
}

std::string PodTask(const api::Pod& pod) {
  if (const std::string* v = Annotation(pod, api::kTaskSpecKey)) return *v;
  auto it = pod.metadata.labels.find(Str(api::kTaskSpecKey));
  return it == pod.metadata.labels.end() ? "" : it->second;
}

int32_t PodVersion(const api::Pod& pod) { return ParseIntOr(Annotation(pod, api::kJobVersionKey), 0); }

std::string StableSuffix(const std::string& seed) {
  // FNV-1a 64, then base 36. Not cryptographic: only has to be stable and spread.
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : seed) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string out;
  for (int i = 0; i < 12; ++i) {
    out += kDigits[h % 36];
    h /= 36;
    if (h == 0) h = 0x9e3779b97f4a7c15ULL ^ (i * 0x100000001b3ULL);  // keep 12 characters for short hashes
  }
  return out;
}

namespace {

void DiffFields(const api::json& before, const api::json& after, const std::string& path,
                std::vector<std::string>* out) {
  if (before == after) return;
  if (after.is_object()) {
    // A missing or null object is walked as an empty one, so a new map names its keys ("spec.plugins.svc").
    static const api::json kEmpty = api::json::object();
    const api::json& b = before.is_object() ? before : kEmpty;
    for (auto it = after.begin(); it != after.end(); ++it) {
      auto bit = b.find(it.key());
      DiffFields(bit == b.end() ? api::json() : *bit, it.value(), path + "." + it.key(), out);
    }
    return;
  }
  if (after.is_array() && before.is_array() && after.size() == before.size() && !after.empty()) {
    for (size_t i = 0; i < after.size(); ++i)
      DiffFields(before[i], after[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  out->push_back(path + "=" + (after.is_string() ? after.get<std::string>() : after.dump()));
}

}  // namespace

std::vector<std::string> DefaultedFields(const api::Job& stored, const api::Job& defaulted) {
  std::vector<std::string> out;
  const api::json b = api::ToJson(stored), a = api::ToJson(defaulted);
  for (const char* part : {"metadata", "spec"}) {
    auto bit = b.find(part), ait = a.find(part);
    DiffFields(bit == b.end() ? api::json() : *bit, ait == a.end() ? api::json() : *ait, part, &out);
  }
  return out;
}

bool Actions::Empty() const {
  return !update_job && !update_status && create_pvcs.empty() && delete_pods.empty() && mark_pods.empty() &&
         create_pods.empty() && !create_pod_group && !update_pod_group && !delete_pod_group && create_plugin_objects.empty() &&
         update_config_maps.empty() && delete_plugin_objects.config_maps.empty() &&
         delete_plugin_objects.services.empty() && delete_plugin_objects.network_policies.empty() &&
         delete_plugin_objects.secrets.empty() && !delete_job;
}

Resolution ResolvePolicy(const api::Job& job, const DerivedEvent& ev) {
  auto match = [&](const std::vector<api::LifecyclePolicy>& policies) -> std::optional<Resolution> {
    for (const auto& p : policies) {
      // PodPending only triggers policies with a timeout: a pod is Pending for a while by nature.
      if (ev.event == api::kEventPodPending && p.timeout.empty()) continue;
      std::vector<std::string> events = p.events;
      if (!p.event.empty()) events.push_back(p.event);
      bool hit = std::any_of(events.begin(), events.end(),
                             [&](const std::string& e) { return e == ev.event || e == api::kEventAny; });
      if (!hit && p.exit_code && ev.exit_code && *p.exit_code == *ev.exit_code) hit = true;
      if (!hit) continue;
      Resolution r;
      r.action = p.action;
      if (!p.timeout.empty()) {
        auto d = api::ParseGoDuration(p.timeout);
        if (d.ok()) r.timeout = *d;
      }
      return r;
    }
    return std::nullopt;
  };
  if (!ev.task.empty()) {
    if (const api::TaskSpec* t = job.spec.FindTask(ev.task)) {
      if (auto r = match(t->policies)) return *r;
    }
  }
  if (auto r = match(job.spec.policies)) return *r;
  return Resolution{};
}

core::StatusOr<api::Pod> BuildPod(const api::Job& job, const api::TaskSpec& task, int index,
                                  const std::vector<JobPluginPtr>& plugins, const PluginContext& ctx) {
  const std::string task_name = TaskName(task);
  api::Pod pod;
  pod.metadata.labels = task.template_.metadata.labels;
  pod.metadata.annotations = task.template_.metadata.annotations;
  pod.metadata.name = PodName(job.metadata.name, task_name, index);
  pod.metadata.namespace_ = job.metadata.namespace_;
  pod.metadata.owner_references = {JobOwnerRef(job)};
  pod.spec = task.template_.spec;
  if (pod.spec.scheduler_name.empty()) pod.spec.scheduler_name = job.spec.scheduler_name;
  if (pod.spec.priority_class_name.empty()) pod.spec.priority_class_name = job.spec.priority_class_name;

  // Job volumes: one pod volume per VolumeSpec, mounted in every (non-init) container. A claim named twice
  // is mounted once, at the first entry's path, as Volcano does (its webhook does not refuse it).
  std::set<std::string> claims;
  for (size_t i = 0; i < job.spec.volumes.size(); ++i) {
    const auto& vs = job.spec.volumes[i];
    std::string claim = vs.volume_claim_name;
    if (claim.empty()) continue;  // generated claim not written back yet; the plan holds pods until it is
    if (!claims.insert(claim).second) continue;
    api::Volume v;
    v.name = job.metadata.name + "-" + StableSuffix(job.metadata.uid + "/volume/" + std::to_string(i));
    v.persistent_volume_claim.emplace();
    v.persistent_volume_claim->claim_name = claim;
    pod.spec.volumes.push_back(v);
    api::VolumeMount m;
    m.name = v.name;
    m.mount_path = vs.mount_path;
    for (auto& c : pod.spec.containers) c.volume_mounts.push_back(m);
  }

  auto& L = pod.metadata.labels;
  auto& A = pod.metadata.annotations;
  const std::string idx = std::to_string(index);
  L[Str(api::kTaskIndexKey)] = A[Str(api::kTaskIndexKey)] = idx;
  L[Str(api::kTaskSpecKey)] = A[Str(api::kTaskSpecKey)] = task_name;
  L[Str(api::kJobNameKey)] = A[Str(api::kJobNameKey)] = job.metadata.name;
  L[Str(api::kJobNamespaceKey)] = job.metadata.namespace_;
  L[Str(api::kQueueNameKey)] = A[Str(api::kQueueNameKey)] = job.spec.queue;
  A[Str(api::kPodGroupAnnotation)] = job.metadata.name + "-" + job.metadata.uid;
  A[Str(api::kJobVersionKey)] = std::to_string(job.status.version);
  A[Str(api::kJobRetryCountKey)] = std::to_string(job.status.retry_count);
  A[Str(api::kTemplateUidKey)] = job.metadata.name + "-" + task_name;
  if (!task.topology_policy.empty()) A[Str(api::kNumaTopologyPolicyKey)] = task.topology_policy;
  if (task.partition_policy && task.partition_policy->partition_size > 0)
    L[Str(api::kPartitionIdKey)] = std::to_string(index / task.partition_policy->partition_size);
  for (std::string_view key : {api::kPreemptableKey, api::kCooldownTimeKey}) {
    if (auto it = job.metadata.annotations.find(Str(key)); it != job.metadata.annotations.end()) A[Str(key)] = it->second;
    if (auto it = job.metadata.labels.find(Str(key)); it != job.metadata.labels.end()) L[Str(key)] = it->second;
  }
  if (auto it = job.metadata.annotations.find(Str(api::kRevocableZoneKey)); it != job.metadata.annotations.end())
    A[Str(api::kRevocableZoneKey)] = it->second;
  if (auto it = job.metadata.annotations.find(Str(api::kJdbMinAvailableKey)); it != job.metadata.annotations.end())
    A[Str(api::kJdbMinAvailableKey)] = it->second;
  else if (auto it2 = job.metadata.annotations.find(Str(api::kJdbMaxUnavailableKey));
           it2 != job.metadata.annotations.end())
    A[Str(api::kJdbMaxUnavailableKey)] = it2->second;
  if (auto it = job.metadata.annotations.find(Str(api::kJobForwardingKey));
      it != job.metadata.annotations.end() && it->second == "true")
    L[Str(api::kJobForwardingKey)] = A[Str(api::kJobForwardingKey)] = "true";

  for (const auto& p : plugins) {
    core::Status s = p->OnPodCreate(ctx, task, index, &pod);
    if (!s.ok()) return std::move(s).Annotate("plugin " + std::string(p->Name()));
  }
  return pod;
}

api::PodGroup BuildPodGroup(const api::Job& job, const std::map<std::string, int32_t>& priority_classes) {
  api::PodGroup pg;
  pg.metadata.name = job.metadata.name + "-" + job.metadata.uid;
  pg.metadata.namespace_ = job.metadata.namespace_;
  pg.metadata.labels = job.metadata.labels;
  pg.metadata.annotations = job.metadata.annotations;
  pg.metadata.annotations[Str(kPodGroupJobVersionAnnotation)] = std::to_string(job.status.version);
  // The scheduler sees PodGroups, not vcjobs: it reads the expected run time from here (docs/reservations.md).
  if (!job.spec.running_estimate.empty())
    pg.metadata.annotations[Str(api::kRunningEstimateAnnotation)] = job.spec.running_estimate;
  pg.metadata.owner_references = {JobOwnerRef(job)};
  pg.spec.min_member = job.spec.min_available;
  for (const auto& t : job.spec.tasks) pg.spec.min_task_member[TaskName(t)] = api::TaskMinAvailable(t);
  pg.spec.queue = job.spec.queue;
  pg.spec.priority_class_name = job.spec.priority_class_name;
  pg.spec.min_resources = api::MinResourcesForJob(job, [&](std::string_view name) -> std::optional<int32_t> {
    auto it = priority_classes.find(std::string(name));
    if (it == priority_classes.end()) return std::nullopt;
    return it->second;
  });
  pg.spec.network_topology = job.spec.network_topology;
  for (const auto& t : job.spec.tasks) {
    if (!t.partition_policy) continue;
    api::SubGroupPolicySpec sg;
    sg.name = TaskName(t);
    sg.sub_group_size = t.partition_policy->partition_size;
    sg.min_sub_groups = t.partition_policy->min_partitions;
    sg.network_topology = t.partition_policy->network_topology;
    sg.label_selector.emplace();
    sg.label_selector->match_labels[Str(api::kTaskSpecKey)] = TaskName(t);
    sg.match_label_keys = {Str(api::kPartitionIdKey)};
    pg.spec.sub_group_policy.push_back(std::move(sg));
  }
  return pg;
}

namespace {

// Everything Plan computes about the observed pods, once.
struct PodView {
  // task name -> index -> pod (the live one if several share a name, which cannot happen in one namespace)
  std::map<std::string, std::map<int, const api::Pod*>> by_task;
  std::vector<const api::Pod*> all;
};

class Planner {
 public:
  explicit Planner(const Observed& obs) : obs_(obs), job_(obs.job), st_(obs.job.status) {
    now_str_ = core::FormatRfc3339(obs.now);
    for (const auto& p : obs.pods) {
      view_.all.push_back(&p);
      view_.by_task[PodTask(p)][PodIndex(p)] = &p;
    }
  }

  Actions Run();

 private:
  bool Handled(const api::Pod& p) const {
    return !p.metadata.deletion_timestamp.empty() || MarkedOutOfSync(p) ||
           obs_.handled_pod_uids.count(p.metadata.uid) > 0;
  }
  bool IsVictim(const api::Pod& p) const { return Handled(p) || victims_.count(p.metadata.name) > 0; }
  void AddVictim(const api::Pod& p) {
    if (!p.metadata.deletion_timestamp.empty() || obs_.handled_pod_uids.count(p.metadata.uid)) return;
    if (victims_.insert(p.metadata.name).second) out_.delete_pods.push_back(p.metadata.name);
  }
  bool PodGroupStale() const {
    if (!obs_.pod_group) return false;
    const auto& a = obs_.pod_group->metadata.annotations;
    auto it = a.find(Str(kPodGroupJobVersionAnnotation));
    if (it == a.end()) return false;  // created by Volcano or an older Tephra: adopt it
    return ParseIntOr(&it->second, 0) < st_.version;
  }
  bool ApplyDefaults();
  bool CacheBehind() const;
  std::vector<DerivedEvent> DeriveEvents() const;
  void Kill(KillKind kind, const std::vector<const DerivedEvent*>& targets, const std::string& action);
  void KillPluginObjectsAndPodGroup();
  std::optional<std::string> OverRunningEstimate();
  void Sync(bool initiate);
  void CountPods();
  void ApplyCheck(const Transition& t);
  void Ttl();

  const Observed& obs_;
  const api::Job& job_;
  api::JobStatus st_;  // the new status being computed
  std::string now_str_;
  PodView view_;
  Actions out_;
  std::set<std::string> victims_;
  bool retain_finished_ = false;
  WallTime last_failure_{};  // when the latest Failed pod of the job ended (CountPods)
};

// A job whose pods have all ended, with too few successes, is Failed only this long after its last pod
// failed: a pod that dies with its card (a CUDA error) often ends before the API shows the fault, and the
// fault controller, once it sees the fault, deletes the pod so the job replaces it (docs/faults.md, "Pods
// that failed with the fault"). Without the wait, a single-pod job would be over before that.
constexpr std::chrono::seconds kFaultSettle{10};

bool Planner::ApplyDefaults() {
  // A job that already has a phase was started by a controller that did not default (an older Tephra):
  // its pods exist under the spec as stored, and filling in a task name now would orphan them
  // (`<job>-default-0` would no longer belong to any task). Such jobs keep running as they started.
  if (!job_.status.state.phase.empty()) return false;
  api::Job defaulted = job_;
  api::MutateJob(&defaulted, obs_.defaults);
  std::vector<std::string> filled = DefaultedFields(job_, defaulted);
  if (filled.empty()) return false;
  std::string message = "applied defaults the admission webhook would have set: ";
  for (size_t i = 0; i < filled.size(); ++i) message += (i ? ", " : "") + filled[i];
  out_.update_job = std::move(defaulted);
  out_.defaulted = std::move(filled);
  out_.events.push_back({Str(api::kEventTypeNormal), "Defaulted", message});
  out_.log.push_back(std::move(message));
  out_.action = Str(api::kActionSyncJob);
  out_.event = Str(api::kEventOutOfSync);
  return true;
}

bool Planner::CacheBehind() const {
  // Our own writes carry the version/retry we wrote; seeing them on a pod or PodGroup while the cached job
  // still has a smaller number means the job cache lags. Acting on it could repeat a restart.
  for (const auto* p : view_.all) {
    if (PodVersion(*p) > job_.status.version) return true;
    if (ParseIntOr(Annotation(*p, api::kJobRetryCountKey), 0) > job_.status.retry_count) return true;
  }
  if (obs_.pod_group) {
    const auto& a = obs_.pod_group->metadata.annotations;
    auto it = a.find(Str(kPodGroupJobVersionAnnotation));
    if (it != a.end() && ParseIntOr(&it->second, 0) > job_.status.version) return true;
  }
  return false;
}

std::vector<DerivedEvent> Planner::DeriveEvents() const {
  std::vector<DerivedEvent> evs;
  const WallTime now = obs_.now;
  // Pod- and task-level events come only from pods of the current run (job-version == status.version) that
  // the controller has not already acted on: a pod it marked, deleted, or that belongs to a killed run can
  // never trigger a policy again. That is what makes a restart impossible to apply twice.
  for (const auto& t : job_.spec.tasks) {
    const std::string task = TaskName(t);
    auto tit = view_.by_task.find(task);
    int succeeded_current = 0;
    int32_t restarts = 0;
    WallTime last_finish{}, last_restart{};
    if (tit != view_.by_task.end()) {
      for (const auto& [index, p] : tit->second) {
        if (PodVersion(*p) != job_.status.version) continue;
        if (MarkedOutOfSync(*p) || obs_.handled_pod_uids.count(p->metadata.uid)) continue;
        DerivedEvent ev;
        ev.task = task;
        ev.pod = p->metadata.name;
        if (auto it = p->metadata.labels.find(Str(api::kPartitionIdKey)); it != p->metadata.labels.end())
          ev.partition = it->second;
        WallTime created = ParseTime(p->metadata.creation_timestamp, now);
        if (!p->metadata.deletion_timestamp.empty()) {
          // Someone else is deleting a pod of the current run (eviction, node drain, kubectl delete).
          ev.event = Str(api::kEventPodEvicted);
          WallTime del = ParseTime(p->metadata.deletion_timestamp, now);
          ev.since = del - std::chrono::seconds(p->metadata.deletion_grace_period_seconds.value_or(0));
          evs.push_back(std::move(ev));
          continue;
        }
        const std::string& phase = p->status.phase;
        if (phase == api::kPodFailed) {
          ev.event = Str(api::kEventPodFailed);
          ev.since = created;
          if (!p->status.container_statuses.empty()) {
            const auto& term = p->status.container_statuses[0].state.terminated;
            if (term) {
              ev.exit_code = term->exit_code;
              ev.since = ParseTime(term->finished_at, created);
            }
          }
          evs.push_back(std::move(ev));
        } else if (phase == api::kPodPending || phase.empty()) {
          ev.event = Str(api::kEventPodPending);
          ev.since = created;
          evs.push_back(std::move(ev));
        } else if (phase == api::kPodSucceeded && index < t.replicas) {
          ++succeeded_current;
          for (const auto& cs : p->status.container_statuses)
            if (cs.state.terminated) last_finish = std::max(last_finish, ParseTime(cs.state.terminated->finished_at, created));
        }
        if (phase == api::kPodRunning || phase == api::kPodPending) {
          for (const auto* list : {&p->status.container_statuses, &p->status.init_container_statuses})
            for (const auto& cs : *list) {
              restarts += cs.restart_count;
              if (cs.last_state.terminated)
                last_restart = std::max(last_restart, ParseTime(cs.last_state.terminated->finished_at, now));
            }
        }
      }
    }
    if (t.replicas > 0 && succeeded_current == t.replicas) {
      DerivedEvent ev;
      ev.event = Str(api::kEventTaskCompleted);
      ev.task = task;
      ev.since = last_finish == WallTime{} ? now : last_finish;
      evs.push_back(std::move(ev));
    }
    int32_t max_retry = t.max_retry == 0 ? 3 : t.max_retry;  // 0 -> 3, -1 -> off
    if (max_retry > 0 && restarts >= max_retry) {
      DerivedEvent ev;
      ev.event = Str(api::kEventTaskFailed);
      ev.task = task;
      ev.since = last_restart == WallTime{} ? now : last_restart;
      evs.push_back(std::move(ev));
    }
  }
  if (obs_.pod_group && !PodGroupStale() && obs_.pod_group->status.phase == api::kPodGroupUnknown) {
    DerivedEvent ev;
    ev.event = Str(api::kEventUnknown);
    WallTime since{};
    for (const auto& c : obs_.pod_group->status.conditions)
      since = std::max(since, ParseTime(c.last_transition_time, WallTime{}));
    ev.since = since == WallTime{} ? now : since;
    evs.push_back(std::move(ev));
  }
  return evs;
}

void Planner::KillPluginObjectsAndPodGroup() {
  if (obs_.pod_group) {
    out_.delete_pod_group = obs_.pod_group->metadata.name;
    out_.delete_pod_group_uid = obs_.pod_group->metadata.uid;
  }
  Actions scratch;
  for (const auto& p : MakePlugins(job_, &scratch, nullptr)) {
    PluginObjectNames n = p->Owned(job_);
    const auto& o = obs_.plugin_objects;
    for (const auto& x : n.config_maps)
      if (o.config_maps.count(x)) out_.delete_plugin_objects.config_maps.push_back(x);
    for (const auto& x : n.services)
      if (o.services.count(x)) out_.delete_plugin_objects.services.push_back(x);
    for (const auto& x : n.network_policies)
      if (o.network_policies.count(x)) out_.delete_plugin_objects.network_policies.push_back(x);
    for (const auto& x : n.secrets)
      if (o.secrets.count(x)) out_.delete_plugin_objects.secrets.push_back(x);
  }
  for (auto it = st_.controlled_resources.begin(); it != st_.controlled_resources.end();)
    it = it->first.rfind("plugin-", 0) == 0 ? st_.controlled_resources.erase(it) : std::next(it);
}

void Planner::Kill(KillKind kind, const std::vector<const DerivedEvent*>& targets, const std::string& action) {
  if (kind == KillKind::kTarget) {
    for (const DerivedEvent* ev : targets) {
      for (const auto* p : view_.all) {
        if (PodTask(*p) != ev->task && action != api::kActionRestartPod) continue;
        bool hit = false;
        if (action == api::kActionRestartPod) hit = p->metadata.name == ev->pod;
        else if (action == api::kActionRestartTask) hit = true;
        else if (action == api::kActionRestartPartition) {
          auto it = p->metadata.labels.find(Str(api::kPartitionIdKey));
          hit = !ev->partition.empty() && it != p->metadata.labels.end() && it->second == ev->partition;
        }
        if (hit) AddVictim(*p);
      }
    }
    return;
  }
  // Full kill.
  for (const auto* p : view_.all) {
    const std::string& phase = p->status.phase;
    bool finished = phase == api::kPodSucceeded || phase == api::kPodFailed;
    if (finished && (kind == KillKind::kJobSoft || retain_finished_)) continue;
    AddVictim(*p);
  }
  KillPluginObjectsAndPodGroup();
}

void Planner::Sync(bool initiate) {
  // Volcano's syncJob reads the queue first and stops on any error; so does an unknown plugin name. Nothing
  // is created for such a job; the error makes the work queue retry, then terminate the job.
  if (obs_.queue_missing) {
    std::string msg = "queue \"" + job_.spec.queue + "\" does not exist; the job is terminated if it still does "
                      "not after --max-requeue-num retries";
    out_.events.push_back({Str(api::kEventTypeWarning), "QueueNotFound", msg});
    out_.sync_error = core::NotFoundError(std::move(msg));
    return;
  }
  std::vector<std::string> plugin_names;
  std::vector<JobPluginPtr> plugins = MakePlugins(job_, &out_, &plugin_names);
  for (const auto& [name, args] : job_.spec.plugins) {
    if (std::find(plugin_names.begin(), plugin_names.end(), name) != plugin_names.end()) continue;
    out_.sync_error = core::NotFoundError("failed to get plugin " + name +
                                          ": the job is terminated after --max-requeue-num retries");
    return;
  }
  PluginContext ctx;
  ctx.job = &job_;
  ctx.observed = &obs_.plugin_objects;
  ctx.key_generator = obs_.key_generator;
  ctx.log = &out_.log;

  // 1. Queue forwarding (multi-cluster queues).
  api::Job job_update = job_;
  bool job_changed = false;
  if (obs_.queue && !obs_.queue->spec.extend_clusters.empty()) {
    auto& a = job_update.metadata.annotations[Str(api::kJobForwardingKey)];
    if (a != "true") {
      a = "true";
      job_changed = true;
    }
  }

  // 2. Plugin objects: create what is missing, refresh ConfigMaps whose data changed (OnJobUpdate).
  bool plugins_ok = true;
  for (size_t i = 0; i < plugins.size(); ++i) {
    PluginObjects want;
    core::Status s = plugins[i]->Desired(ctx, &want);
    if (!s.ok()) {
      plugins_ok = false;
      out_.events.push_back({Str(api::kEventTypeWarning), "PluginError", s.message()});
      if (out_.sync_error.ok()) out_.sync_error = s;
      continue;
    }
    const auto& have = obs_.plugin_objects;
    for (auto& [n, cm] : want.config_maps) {
      auto it = have.config_maps.find(n);
      if (it == have.config_maps.end()) {
        out_.create_plugin_objects.config_maps[n] = cm;
      } else if (it->second.data != cm.data) {
        api::ConfigMap upd = it->second;
        upd.data = cm.data;
        out_.update_config_maps.push_back(std::move(upd));
      }
    }
    for (auto& [n, o] : want.services)
      if (!have.services.count(n)) out_.create_plugin_objects.services[n] = o;
    for (auto& [n, o] : want.network_policies)
      if (!have.network_policies.count(n)) out_.create_plugin_objects.network_policies[n] = o;
    for (auto& [n, o] : want.secrets)
      if (!have.secrets.count(n)) out_.create_plugin_objects.secrets[n] = o;
    st_.controlled_resources["plugin-" + plugin_names[i]] = plugin_names[i];
  }

  // 3. Volumes: create generated PVCs (deterministic names) and write their names back into the spec.
  bool volumes_ready = true;
  bool pvc_missing = false;
  for (size_t i = 0; i < job_.spec.volumes.size(); ++i) {
    const auto& vs = job_.spec.volumes[i];
    std::string claim = vs.volume_claim_name;
    if (claim.empty() && vs.volume_claim) {
      claim = job_.metadata.name + "-pvc-" + StableSuffix(job_.metadata.uid + "/pvc/" + std::to_string(i));
      job_update.spec.volumes[i].volume_claim_name = claim;
      job_changed = true;
      volumes_ready = false;  // pods wait until the name is in the spec they are built from
    }
    if (claim.empty()) continue;
    st_.controlled_resources["volume-pvc-" + claim] = claim;
    if (obs_.pvcs.count(claim)) continue;
    if (vs.volume_claim) {
      api::PersistentVolumeClaim pvc;
      pvc.metadata.name = claim;
      pvc.metadata.namespace_ = job_.metadata.namespace_;
      pvc.metadata.owner_references = {JobOwnerRef(job_)};
      pvc.spec = *vs.volume_claim;
      out_.create_pvcs.push_back(std::move(pvc));
    } else {
      std::string msg = "pvc " + claim + " referenced by the job does not exist";
      // The Event says it once per reconcile that meets it; the state says it for as long as it holds, so
      // `kubectl get vcjob -o yaml` shows why no pod exists (cleared below once the claim appears).
      if (st_.state.reason != kPvcMissingReason || st_.state.message != msg)
        out_.events.push_back({Str(api::kEventTypeWarning), "PVCError", msg});
      st_.state.reason = kPvcMissingReason;
      st_.state.message = msg;
      pvc_missing = true;
      // The controller does not watch PVCs, so nothing else may wake this job when the claim appears: look
      // again in 5 s (level-triggered; the requeue is cheap and stops once the claim exists).
      MinRequeue(&out_, std::chrono::seconds(5));
    }
    volumes_ready = false;
  }
  if (!pvc_missing && st_.state.reason == kPvcMissingReason) {
    st_.state.reason.clear();
    st_.state.message.clear();
  }
  if (job_changed) out_.update_job = std::move(job_update);

  // 4. PodGroup: create, replace a stale one (from a killed run), or reconcile its spec.
  api::PodGroup want_pg = BuildPodGroup(job_, obs_.priority_classes);
  bool pg_usable = false;
  if (!obs_.pod_group) {
    out_.create_pod_group = want_pg;
  } else if (PodGroupStale()) {
    out_.delete_pod_group = obs_.pod_group->metadata.name;  // recreated on the next pass
    out_.delete_pod_group_uid = obs_.pod_group->metadata.uid;
  } else {
    const api::PodGroup& have = *obs_.pod_group;
    api::PodGroup upd = have;
    upd.spec.min_member = want_pg.spec.min_member;
    upd.spec.min_task_member = want_pg.spec.min_task_member;
    upd.spec.min_resources = want_pg.spec.min_resources;
    upd.spec.priority_class_name = want_pg.spec.priority_class_name;
    upd.spec.network_topology = want_pg.spec.network_topology;
    upd.spec.sub_group_policy = want_pg.spec.sub_group_policy;
    // runningEstimate may be changed on a live job (a user correcting a guess): the reservation follows it.
    const std::string estimate_key = Str(api::kRunningEstimateAnnotation);
    auto want_est = want_pg.metadata.annotations.find(estimate_key);
    if (want_est != want_pg.metadata.annotations.end()) upd.metadata.annotations[estimate_key] = want_est->second;
    else upd.metadata.annotations.erase(estimate_key);
    if (api::ToJson(upd.spec) != api::ToJson(have.spec) || upd.metadata.annotations != have.metadata.annotations)
      out_.update_pod_group = std::move(upd);
    const std::string& ph = have.status.phase;
    pg_usable = !ph.empty() && ph != api::kPodGroupPending;
    if (!pg_usable) {
      // Tell the user why nothing starts: the newest True condition, unless it says Scheduled.
      const api::PodGroupCondition* newest = nullptr;
      for (const auto& c : have.status.conditions)
        if (c.status == api::kConditionTrue &&
            (!newest || ParseTime(c.last_transition_time, {}) >= ParseTime(newest->last_transition_time, {})))
          newest = &c;
      if (newest && newest->type != api::kPodGroupConditionScheduled)
        out_.events.push_back({Str(api::kEventTypeWarning), "PodGroupPending",
                               "PodGroup " + job_.metadata.namespace_ + ":" + job_.metadata.name +
                                   " unschedule,reason: " + newest->message});
    }
  }
  (void)initiate;

  // 5. Pods: the gate (no pods until the scheduler admitted the PodGroup), dependsOn, scale-down.
  const bool gate = pg_usable && volumes_ready && plugins_ok;
  auto task_ready = [&](const std::string& dep) {
    const api::TaskSpec* t = job_.spec.FindTask(dep);
    if (!t) return false;
    int ready = 0;
    auto it = view_.by_task.find(dep);
    if (it != view_.by_task.end())
      for (const auto& [i, p] : it->second) {
        if (Handled(*p)) continue;
        if (p->status.phase == api::kPodSucceeded) ++ready;
        else if (p->status.phase == api::kPodRunning && !p->status.container_statuses.empty() &&
                 std::all_of(p->status.container_statuses.begin(), p->status.container_statuses.end(),
                             [](const api::ContainerStatus& c) { return c.ready; }))
          ++ready;
      }
    return ready >= api::TaskMinAvailable(*t);
  };
  for (const auto& t : job_.spec.tasks) {
    const std::string task = TaskName(t);
    auto tit = view_.by_task.find(task);
    if (gate && tit != view_.by_task.end())
      for (const auto& [i, p] : tit->second)
        if (i >= t.replicas || i < 0) AddVictim(*p);  // scale-down
    if (!gate) continue;
    if (t.depends_on && !t.depends_on->name.empty()) {
      const auto& deps = t.depends_on->name;
      bool any = t.depends_on->iteration == api::kIterationAny && deps.size() > 1;
      bool ok = any ? std::any_of(deps.begin(), deps.end(), task_ready)
                    : std::all_of(deps.begin(), deps.end(), task_ready);
      if (!ok) continue;
    }
    for (int i = 0; i < t.replicas; ++i) {
      if (tit != view_.by_task.end() && tit->second.count(i)) continue;
      auto pod = BuildPod(job_, t, i, plugins, ctx);
      if (!pod.ok()) {
        out_.events.push_back({Str(api::kEventTypeWarning), "PluginError", pod.status().message()});
        if (out_.sync_error.ok()) out_.sync_error = pod.status();
        continue;
      }
      out_.create_pods.push_back(std::move(pod).value());
    }
  }
}

void Planner::CountPods() {
  st_.pending = st_.running = st_.succeeded = st_.failed = st_.terminating = st_.unknown = 0;
  last_failure_ = WallTime{};
  st_.task_status_count.clear();
  for (const auto& t : job_.spec.tasks) {
    const std::string task = TaskName(t);
    auto tit = view_.by_task.find(task);
    if (tit == view_.by_task.end()) continue;
    for (const auto& [i, p] : tit->second) {
      if (IsVictim(*p)) {
        ++st_.terminating;
        continue;
      }
      const std::string& ph = p->status.phase;
      if (ph == api::kPodPending || ph.empty()) ++st_.pending;
      else if (ph == api::kPodRunning) ++st_.running;
      else if (ph == api::kPodSucceeded) ++st_.succeeded;
      else if (ph == api::kPodFailed) {
        ++st_.failed;
        WallTime ended = ParseTime(p->metadata.creation_timestamp, WallTime{});
        for (const auto& cs : p->status.container_statuses)
          if (cs.state.terminated) ended = std::max(ended, ParseTime(cs.state.terminated->finished_at, ended));
        last_failure_ = std::max(last_failure_, ended);
      } else ++st_.unknown;
      ++st_.task_status_count[task].phase[ph.empty() ? Str(api::kPodPending) : ph];
    }
  }
  st_.min_available = job_.spec.min_available;
}

void Planner::ApplyCheck(const Transition& t) {
  const int32_t total = job_.spec.TotalReplicas();
  switch (t.check) {
    case Check::kNone:
      break;
    case Check::kPendingToRunning:
      if (job_.spec.min_available <= st_.running + st_.succeeded + st_.failed)
        SetPhase(&st_, Str(api::kJobPhaseRunning), now_str_);
      break;
    case Check::kRunningEval: {
      if (total == 0) break;
      const auto& ms = job_.spec.min_success;
      if (ms && st_.succeeded >= *ms) {
        SetPhase(&st_, Str(api::kJobPhaseCompleted), now_str_);
        break;
      }
      if (st_.succeeded + st_.failed == total) {
        bool failed = false;
        int32_t task_min_sum = 0;
        for (const auto& task : job_.spec.tasks) task_min_sum += api::TaskMinAvailable(task);
        if (job_.spec.min_available >= task_min_sum) {
          for (const auto& task : job_.spec.tasks) {
            if (!task.min_available) continue;
            auto it = st_.task_status_count.find(TaskName(task));
            int32_t ok = 0;
            if (it != st_.task_status_count.end()) {
              auto pit = it->second.phase.find(Str(api::kPodSucceeded));
              if (pit != it->second.phase.end()) ok = pit->second;
            }
            if (ok < *task.min_available) failed = true;
          }
        }
        if (!failed) failed = (ms && st_.succeeded < *ms) || st_.succeeded < job_.spec.min_available;
        if (!failed) {
          SetPhase(&st_, Str(api::kJobPhaseCompleted), now_str_);
        } else if (last_failure_ != WallTime{} && obs_.now < last_failure_ + kFaultSettle) {
          MinRequeue(&out_, last_failure_ + kFaultSettle - obs_.now);
        } else {
          SetPhase(&st_, Str(api::kJobPhaseFailed), now_str_);
        }
        break;
      }
      if (st_.pending > total - job_.spec.min_available) SetPhase(&st_, Str(api::kJobPhasePending), now_str_);
      break;
    }
    case Check::kRestart:
      if (st_.retry_count >= job_.spec.max_retry) {
        SetPhase(&st_, Str(api::kJobPhaseFailed), now_str_, "MaxRetryReached",
                 "job restarted " + std::to_string(st_.retry_count) + " times, maxRetry is " +
                     std::to_string(job_.spec.max_retry));
      } else if (total - st_.terminating >= st_.min_available) {
        SetPhase(&st_, Str(api::kJobPhasePending), now_str_);
      }
      break;
    case Check::kFinishWhenIdle:
      if (st_.terminating == 0 && st_.pending == 0 && st_.running == 0) SetPhase(&st_, t.finished_phase, now_str_);
      break;
  }
}

void Planner::Ttl() {
  if (!IsFinishedPhase(st_.state.phase) || !job_.spec.ttl_seconds_after_finished) return;
  WallTime finished = ParseTime(st_.state.last_transition_time, obs_.now);
  WallTime deadline = finished + std::chrono::seconds(*job_.spec.ttl_seconds_after_finished);
  if (obs_.now >= deadline) {
    out_.delete_job = true;
  } else {
    MinRequeue(&out_, deadline - obs_.now);
  }
}

// When the job is Running in a queue that enforces running estimates: the message to terminate it with once its
// estimate has passed since it started running, or nullopt (with a requeue at the deadline) before then.
std::optional<std::string> Planner::OverRunningEstimate() {
  if (!obs_.queue) return std::nullopt;
  const auto& qa = obs_.queue->metadata.annotations;
  auto flag = qa.find(Str(api::kQueueEnforceRunningEstimateAnnotation));
  if (flag == qa.end() || flag->second != "true") return std::nullopt;
  auto seconds_of = [](const std::string& go) -> int64_t {
    if (go.empty()) return 0;
    auto d = api::ParseGoDuration(go);
    return d.ok() && d->count() > 0 ? std::chrono::duration_cast<std::chrono::seconds>(*d).count() : 0;
  };
  auto annotation = [&](std::string_view key) {
    auto it = qa.find(Str(key));
    return it == qa.end() ? std::string() : it->second;
  };
  int64_t limit = seconds_of(job_.spec.running_estimate);
  const int64_t max = seconds_of(annotation(api::kQueueMaxRunningEstimateAnnotation));
  if (limit <= 0) limit = seconds_of(annotation(api::kQueueDefaultRunningEstimateAnnotation));
  if (max > 0 && limit > max) limit = max;
  if (limit <= 0) return std::nullopt;  // nothing to hold it to
  const WallTime since = ParseTime(job_.status.state.last_transition_time, obs_.now);
  const WallTime deadline = since + std::chrono::seconds(limit);
  if (obs_.now < deadline) {
    MinRequeue(&out_, deadline - obs_.now);
    return std::nullopt;
  }
  return "the job ran " + api::FormatGoDuration(obs_.now - since) + ", past its running estimate " +
         api::FormatGoDuration(std::chrono::seconds(limit)) + "; queue " + obs_.queue->metadata.name +
         " enforces running estimates (" + Str(api::kQueueEnforceRunningEstimateAnnotation) + "), so it is terminated";
}

Actions Planner::Run() {
  // A job being deleted is left to the garbage collector (its pods are owned and go with it).
  if (!job_.metadata.deletion_timestamp.empty()) return std::move(out_);
  // Admission defaults first: no pod, PodGroup or status may be derived from a spec the mutating webhook
  // never saw (a missing minAvailable would mean no gang, a missing task name other pod names).
  if (ApplyDefaults()) return std::move(out_);
  if (CacheBehind()) {
    out_.log.push_back("job cache is behind our own writes; waiting for it to catch up");
    out_.requeue_after = milliseconds(200);
    return std::move(out_);
  }

  // 1. Which action? An explicit request wins; otherwise the strongest action any derived event resolves
  //    to (policies with a timeout only once the timeout has elapsed since the event's start).
  std::string action = Str(api::kActionSyncJob);
  std::string event = Str(api::kEventOutOfSync);
  const std::string phase = job_.status.state.phase;
  // A queue that enforces running estimates ends a job that outran its own (docs/reservations.md): the
  // reservations behind it were made on the promise.
  std::optional<std::string> overran = phase == api::kJobPhaseRunning && !obs_.request ? OverRunningEstimate() : std::nullopt;
  // Pod events only matter while the job runs or restarts; in every other phase any action maps to the
  // same row of the table, so deriving them would only produce noise.
  const bool live = phase.empty() || phase == api::kJobPhasePending || phase == api::kJobPhaseRunning ||
                    phase == api::kJobPhaseRestarting;
  std::vector<DerivedEvent> events = live ? DeriveEvents() : std::vector<DerivedEvent>{};
  std::vector<const DerivedEvent*> targets;
  if (obs_.request) {
    action = obs_.request->action;
    event = obs_.request->event;
  } else if (overran) {
    action = Str(api::kActionTerminateJob);
    event = "RunningEstimateExceeded";
    out_.events.push_back({Str(api::kEventTypeWarning), "RunningEstimateExceeded", *overran});
  } else {
    int best = ActionRank(action);
    for (const auto& ev : events) {
      Resolution r = ResolvePolicy(job_, ev);
      if (r.action == api::kActionSyncJob) continue;
      if (r.timeout) {
        WallTime due = ev.since + std::chrono::duration_cast<WallTime::duration>(*r.timeout);
        if (obs_.now < due) {
          MinRequeue(&out_, due - obs_.now);
          continue;
        }
      }
      int rank = ActionRank(r.action);
      if (rank < best) {
        best = rank;
        action = r.action;
        event = ev.event;
        targets.clear();
      }
      if (rank == best && r.action == action) targets.push_back(&ev);
    }
  }
  out_.action = action;
  out_.event = event;

  // 2. The state machine.
  Transition t = Decide(phase, action);
  if (t.retry_inc) ++st_.retry_count;
  if (t.bump_version) ++st_.version;
  // On the last retry (the one that fails the job) finished pods are kept for inspection.
  retain_finished_ = st_.retry_count >= job_.spec.max_retry;
  if (phase.empty()) SetPhase(&st_, Str(api::kJobPhasePending), now_str_);
  if (!t.next_phase.empty()) SetPhase(&st_, t.next_phase, now_str_, action == api::kActionSyncJob ? "" : action,
                                      obs_.request ? obs_.request->message : "");

  if (t.kill != KillKind::kNone) Kill(t.kill, targets, action);
  // A pod whose event was acted on but that someone else is already deleting is not a victim (nothing to
  // delete), and a targeted restart keeps the version, so until the API server forgets the pod it would
  // derive the same event, and the same restart, on every reconcile: one eviction used to spend the whole
  // maxRetry within 50 ms. It is marked instead.
  for (const DerivedEvent* ev : targets) {
    if (ev->pod.empty()) continue;
    for (const auto* p : view_.all)
      if (p->metadata.name == ev->pod && !p->metadata.deletion_timestamp.empty() && !MarkedOutOfSync(*p) &&
          !obs_.handled_pod_uids.count(p->metadata.uid))
        out_.mark_pods.push_back(p->metadata.name);
  }
  if (t.kill == KillKind::kTarget && targets.empty() && obs_.request)
    out_.log.push_back("action " + action + " from a command names no pod or task; nothing to restart");

  // Restarting: finish a full kill that a crash or a failed call interrupted.
  if (st_.state.phase == api::kJobPhaseRestarting && t.kill == KillKind::kNone) {
    bool full = PodGroupStale();
    for (const auto* p : view_.all) {
      if (PodVersion(*p) >= st_.version) continue;
      // Finished pods of an older run are what a soft kill keeps (Aborted -> ResumeJob); leave them.
      const std::string& ph = p->status.phase;
      if (ph == api::kPodSucceeded || ph == api::kPodFailed) continue;
      if (!Handled(*p)) full = true;
      AddVictim(*p);
    }
    if (full) KillPluginObjectsAndPodGroup();
  }
  // Pods marked out-of-sync by an earlier pass are always deleted.
  for (const auto* p : view_.all)
    if (MarkedOutOfSync(*p)) AddVictim(*p);

  if (t.sync) Sync(phase.empty() || phase == api::kJobPhasePending);

  CountPods();
  ApplyCheck(t);
  if (t.kill == KillKind::kJobNone || t.kill == KillKind::kJobSoft || IsFinishedPhase(st_.state.phase)) {
    WallTime created = ParseTime(job_.metadata.creation_timestamp, obs_.now);
    WallTime changed = ParseTime(st_.state.last_transition_time, obs_.now);
    if (changed > created) st_.running_duration = api::FormatGoDuration(changed - created);
  }
  Ttl();

  // Volcano's exact text, trailing space included: tools and alerts match Event messages as strings. (The
  // triggering event is in the controller's log line for the action.)
  if (action != api::kActionSyncJob)
    out_.events.push_back({Str(api::kEventTypeNormal), "ExecuteAction", "Start to execute action " + action + " "});
  if (api::ToJson(st_) != api::ToJson(job_.status)) out_.update_status = st_;
  return std::move(out_);
}

}  // namespace

Actions Plan(const Observed& obs) { return Planner(obs).Run(); }

}  // namespace tephra::reconcilers::job
