// The PodGroup controller for plain pods (docs/controllers.md, "PodGroups for plain pods"): pure
// Plan(Observed) -> Actions.
//
// A pod whose spec.schedulerName is one of ours (--scheduler-name) and that names no PodGroup
// (`scheduling.k8s.io/group-name`) gets PodGroup `podgroup-<uid of its controlling owner, else its own uid>`
// (so all replicas of one ReplicaSet/StatefulSet share one gang), then the pod is annotated with that name.
// Names are deterministic, so a crash between the two writes converges: the create answers AlreadyExists
// and the annotation is written on the next pass.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "tephra/api/core_v1.h"
#include "tephra/api/scheduling.h"

namespace tephra::reconcilers::podgroup {

struct Observed {
  api::Pod pod;
  std::set<std::string> scheduler_names;  // the managed names
  // Whether the PodGroup the pod would get exists already (in the cache).
  bool pod_group_exists = false;
  // Annotations of the pod's controlling owner (nullopt: no owner, or it could not be read).
  std::optional<std::map<std::string, std::string>> owner_annotations;
  bool inherit_owner_annotations = true;
};

struct Actions {
  std::optional<api::PodGroup> create_pod_group;
  std::optional<std::string> annotate_pod;  // the group name to write into the pod's annotation

  bool Empty() const { return !create_pod_group && !annotate_pod; }
};

// True when the pod is ours and still lacks a group (the informer filter; Plan checks the same).
bool NeedsPodGroup(const api::Pod& pod, const std::set<std::string>& scheduler_names);
// "podgroup-<controller owner uid or pod uid>".
std::string PodGroupName(const api::Pod& pod);
// Whether Plan needs the owner's annotations (the pod has a controlling owner and no group yet).
bool WantsOwner(const api::Pod& pod);

api::PodGroup BuildPodGroup(const Observed& obs);
Actions Plan(const Observed& obs);

// A ReplicaSet or StatefulSet scaled to 0 no longer needs its pods' gang: Volcano deletes
// `podgroup-<owner uid>` then (the PodGroup would otherwise keep its minResources reserved in the queue
// until the workload itself is deleted). Returns that PodGroup's name when it should be deleted: the owner
// has 0 replicas, is not itself being deleted (then the garbage collector removes the group), and the group
// exists and lists the owner among its ownerReferences (a group of that name that is not the owner's is left
// alone).
std::optional<std::string> PlanScaledToZero(const api::ObjectMeta& owner, int32_t replicas,
                                            const api::PodGroup* pod_group);

}  // namespace tephra::reconcilers::podgroup
