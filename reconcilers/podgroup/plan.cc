#include "podgroup/plan.h"

#include <charconv>

#include "tephra/api/labels.h"
#include "tephra/api/resources.h"

namespace tephra::reconcilers::podgroup {
namespace {

std::optional<std::string> Annotation(const std::map<std::string, std::string>& a, std::string_view key) {
  auto it = a.find(std::string(key));
  if (it == a.end()) return std::nullopt;
  return it->second;
}

std::optional<int32_t> ParseInt(const std::string& s) {
  int32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

bool NeedsPodGroup(const api::Pod& pod, const std::set<std::string>& scheduler_names) {
  if (!scheduler_names.count(pod.spec.scheduler_name)) return false;
  auto g = Annotation(pod.metadata.annotations, api::kPodGroupAnnotation);
  if (g && !g->empty()) return false;
  // A pod on its way out or already finished would only leave an orphan gang behind.
  if (!pod.metadata.deletion_timestamp.empty()) return false;
  return pod.status.phase != "Succeeded" && pod.status.phase != "Failed";
}

std::string PodGroupName(const api::Pod& pod) {
  const api::OwnerReference* ref = pod.metadata.ControllerRef();
  return std::string(api::kPodGroupNamePrefix) + (ref ? ref->uid : pod.metadata.uid);
}

bool WantsOwner(const api::Pod& pod) { return pod.metadata.ControllerRef() != nullptr; }

api::PodGroup BuildPodGroup(const Observed& obs) {
  const api::Pod& pod = obs.pod;
  api::PodGroup pg;
  pg.api_version = api::PodGroup::Resource().ApiVersion();
  pg.kind = std::string(api::PodGroup::Resource().kind);
  pg.metadata.name = PodGroupName(pod);
  pg.metadata.namespace_ = pod.metadata.namespace_;
  if (!pod.metadata.owner_references.empty()) {
    // The gang lives as long as the workload that owns the pods (garbage-collected with it).
    pg.metadata.owner_references = pod.metadata.owner_references;
  } else {
    api::OwnerReference r;
    r.api_version = "v1";
    r.kind = "Pod";
    r.name = pod.metadata.name;
    r.uid = pod.metadata.uid;
    r.controller = true;
    r.block_owner_deletion = true;
    pg.metadata.owner_references.push_back(std::move(r));
  }
  int32_t min_member = 1;
  if (obs.owner_annotations) {
    if (auto v = Annotation(*obs.owner_annotations, api::kGroupMinMemberAnnotation))
      if (auto n = ParseInt(*v); n && *n > 0) min_member = *n;
    if (obs.inherit_owner_annotations)
      for (const auto& [k, v] : *obs.owner_annotations)
        if (k.rfind("volcano.sh/", 0) == 0) pg.metadata.annotations[k] = v;
  }
  pg.spec.min_member = min_member;
  api::ResourceList usage = api::PodQuotaUsage(pod.spec);
  api::ResourceList min_resources;
  for (const auto& [name, q] : usage) min_resources[name] = q * min_member;
  pg.spec.min_resources = std::move(min_resources);
  if (auto q = Annotation(pod.metadata.annotations, api::kSchedulingQueueNameAnnotation)) pg.spec.queue = *q;
  pg.spec.priority_class_name = pod.spec.priority_class_name;
  auto mode = Annotation(pod.metadata.annotations, api::kNetworkTopologyModeAnnotation);
  auto tier = Annotation(pod.metadata.annotations, api::kNetworkTopologyHighestTierAnnotation);
  if (mode || tier) {
    api::NetworkTopologySpec nt;
    nt.mode = mode.value_or(std::string(api::kNetworkTopologyHard));
    if (tier)
      if (auto n = ParseInt(*tier)) nt.highest_tier_allowed = *n;
    pg.spec.network_topology = std::move(nt);
  }
  return pg;
}

Actions Plan(const Observed& obs) {
  Actions a;
  if (!NeedsPodGroup(obs.pod, obs.scheduler_names)) return a;
  if (!obs.pod_group_exists) a.create_pod_group = BuildPodGroup(obs);
  a.annotate_pod = PodGroupName(obs.pod);
  return a;
}

std::optional<std::string> PlanScaledToZero(const api::ObjectMeta& owner, int32_t replicas,
                                            const api::PodGroup* pod_group) {
  if (replicas != 0 || !owner.deletion_timestamp.empty() || !pod_group) return std::nullopt;
  if (pod_group->metadata.name != std::string(api::kPodGroupNamePrefix) + owner.uid) return std::nullopt;
  if (!pod_group->metadata.deletion_timestamp.empty()) return std::nullopt;
  for (const auto& r : pod_group->metadata.owner_references)
    if (r.uid == owner.uid) return pod_group->metadata.name;
  return std::nullopt;
}

}  // namespace tephra::reconcilers::podgroup
