#include "test_util.h"

#include <algorithm>

namespace tephra::reconcilers::job::testing {

core::Clock::WallTime Time(const std::string& s) {
  core::Clock::WallTime t;
  core::ParseRfc3339(s, &t);
  return t;
}

api::TaskSpec Task(const std::string& name, int replicas, std::optional<int> min_available) {
  api::TaskSpec t;
  t.name = name;
  t.replicas = replicas;
  if (min_available) t.min_available = *min_available;
  api::Container c;
  c.name = "main";
  c.image = "busybox";
  c.resources.requests["cpu"] = core::Quantity::MustParse("1");
  c.resources.requests["memory"] = core::Quantity::MustParse("1Gi");
  t.template_.spec.containers.push_back(c);
  t.template_.spec.restart_policy = "Never";
  return t;
}

api::Job MakeJob(const std::string& name, std::vector<api::TaskSpec> tasks, int min_available) {
  api::Job j;
  j.metadata.name = name;
  j.metadata.namespace_ = "ns";
  j.metadata.uid = "uid-" + name;
  j.metadata.resource_version = "1";
  j.metadata.creation_timestamp = "2026-11-22T09:00:00Z";
  j.spec.tasks = std::move(tasks);
  j.spec.queue = "default";
  j.spec.scheduler_name = "volcano";
  j.spec.max_retry = 3;
  int sum = 0;
  for (const auto& t : j.spec.tasks) sum += t.min_available.value_or(t.replicas);
  j.spec.min_available = min_available >= 0 ? min_available : sum;
  // Stored as the mutating webhook leaves it (task minAvailable, maxRetry): the plan writes missing
  // defaults back before anything else, which only the tests of that write-back want to see.
  api::MutateJob(&j, {});
  return j;
}

api::LifecyclePolicy Policy(const std::string& event, const std::string& action, const std::string& timeout) {
  api::LifecyclePolicy p;
  p.event = event;
  p.action = action;
  p.timeout = timeout;
  return p;
}

api::LifecyclePolicy ExitCodePolicy(int code, const std::string& action) {
  api::LifecyclePolicy p;
  p.exit_code = code;
  p.action = action;
  return p;
}

api::Pod MakePod(const api::Job& job, const std::string& task, int index, const std::string& phase) {
  const api::TaskSpec* t = job.spec.FindTask(task);
  PluginContext ctx;
  ctx.job = &job;
  auto pod = BuildPod(job, *t, index, {}, ctx);
  api::Pod p = std::move(pod).value();
  p.metadata.uid = "pod-uid-" + p.metadata.name + "-v" + std::to_string(job.status.version);
  p.metadata.creation_timestamp = "2026-11-22T09:30:00Z";
  p.status.phase = phase;
  return p;
}

void SetExitCode(api::Pod* pod, int code, const std::string& finished_at) {
  api::ContainerStatus cs;
  cs.name = "main";
  cs.state.terminated.emplace();
  cs.state.terminated->exit_code = code;
  cs.state.terminated->finished_at = finished_at;
  pod->status.container_statuses = {cs};
}

api::PodGroup MakePodGroup(const api::Job& job, const std::string& phase) {
  api::PodGroup pg = BuildPodGroup(job, {});
  pg.metadata.uid = "pg-uid";
  pg.status.phase = phase;
  return pg;
}

World::World(api::Job job) {
  obs.job = std::move(job);
  obs.now = Time(kNow);
}

void World::Apply(const Actions& a) {
  if (a.update_job) {
    api::JobStatus keep = obs.job.status;
    obs.job = *a.update_job;
    obs.job.status = keep;
  }
  if (a.update_status) obs.job.status = *a.update_status;
  for (const auto& pvc : a.create_pvcs) obs.pvcs.insert(pvc.metadata.name);
  for (const auto& name : a.delete_pods)
    obs.pods.erase(std::remove_if(obs.pods.begin(), obs.pods.end(),
                                  [&](const api::Pod& p) { return p.metadata.name == name; }),
                   obs.pods.end());
  for (const auto& name : a.mark_pods)
    if (api::Pod* p = FindPod(name)) p->metadata.annotations[std::string(api::kPodOutOfSyncKey)] = "true";
  for (auto p : a.create_pods) {
    p.metadata.uid = "uid-" + std::to_string(++uid_counter);
    p.metadata.creation_timestamp = kNow;
    p.status.phase = "Pending";
    obs.pods.push_back(std::move(p));
  }
  if (a.delete_pod_group) obs.pod_group.reset();
  if (a.create_pod_group) {
    obs.pod_group = *a.create_pod_group;
    obs.pod_group->status.phase = "Pending";
  }
  if (a.update_pod_group) obs.pod_group = *a.update_pod_group;
  auto& po = obs.plugin_objects;
  for (const auto& n : a.delete_plugin_objects.config_maps) po.config_maps.erase(n);
  for (const auto& n : a.delete_plugin_objects.services) po.services.erase(n);
  for (const auto& n : a.delete_plugin_objects.network_policies) po.network_policies.erase(n);
  for (const auto& n : a.delete_plugin_objects.secrets) po.secrets.erase(n);
  for (const auto& [n, o] : a.create_plugin_objects.config_maps) po.config_maps[n] = o;
  for (const auto& [n, o] : a.create_plugin_objects.services) po.services[n] = o;
  for (const auto& [n, o] : a.create_plugin_objects.network_policies) po.network_policies[n] = o;
  for (const auto& [n, o] : a.create_plugin_objects.secrets) po.secrets[n] = o;
  for (const auto& cm : a.update_config_maps) po.config_maps[cm.metadata.name] = cm;
}

int World::Converge(int n) {
  for (int i = 0; i < n; ++i) {
    Actions a = Plan();
    if (a.Empty()) return i;
    Apply(a);
  }
  return -1;
}

api::Pod* World::FindPod(const std::string& name) {
  for (auto& p : obs.pods)
    if (p.metadata.name == name) return &p;
  return nullptr;
}

void World::SetAllPods(const std::string& phase) {
  for (auto& p : obs.pods) p.status.phase = phase;
}

void World::SetPodGroupPhase(const std::string& phase) {
  if (obs.pod_group) obs.pod_group->status.phase = phase;
}

}  // namespace tephra::reconcilers::job::testing
