// Admission validation (docs/volcano-behaviour.md, "Admission validation") as pure functions over typed objects.
//
// Every problem is a FieldError{path, message}; an empty vector means valid. Paths use JSON names with
// indices ("spec.tasks[1].minAvailable"). Messages match Volcano's where its exact text is known; the
// webhook joins them with JoinFieldErrors() for the AdmissionReview message.
#pragma once

#include <string>
#include <vector>

#include "tephra/api/batch.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/flow.h"
#include "tephra/api/lookup.h"
#include "tephra/api/scheduling.h"
#include "tephra/api/topology.h"

namespace tephra::api {

struct FieldError {
  std::string path;
  std::string message;
  friend bool operator==(const FieldError&, const FieldError&) = default;
};
using FieldErrors = std::vector<FieldError>;

// "spec.tasks[0].name: duplicated task name task-1; spec.minAvailable: ..." (empty when no errors).
std::string JoinFieldErrors(const FieldErrors& errors);

enum class AdmissionOp { kCreate, kUpdate, kDelete };

// Plugins the webhook accepts (docs/volcano-behaviour.md, "Job plugins"); unknown ones are rejected.
inline const std::vector<std::string>& KnownJobPlugins() {
  static const std::vector<std::string> kPlugins = {"env",  "svc",        "ssh", "pytorch",
                                                    "mpi",  "tensorflow", "ray", "hcclrank"};
  return kPlugins;
}

// Job CREATE. `lookup` answers queue existence/state and PVC existence.
FieldErrors ValidateJobCreate(const Job& job, const ClusterLookup& lookup);
// Job UPDATE: only minAvailable, tasks[*].replicas/minAvailable, priorityClassName (and generated
// volumeClaimName) may change; plus VAP rules (queue immutable, non-negative counters, DNS-1123 task names).
// A defaulting update (IsDefaultingUpdate) is always accepted.
FieldErrors ValidateJobUpdate(const Job& old_job, const Job& new_job);
// Whether `new_job.spec` is exactly `old_job.spec` with MutateJob applied (default queue, and the scheduler
// name `new_job` carries) and differs from it: the job controller's write of the defaults the mutating
// webhook would have set, which fills only what was empty.
bool IsDefaultingUpdate(const Job& old_job, const Job& new_job);

struct QueueValidationConfig {
  int max_queue_depth = 5;                    // --max-queue-depth
  bool enable_root_queue_protection = true;   // --enable-root-queue-protection
  bool enable_allocated_pods_check = false;   // --enable-queue-allocated-pods-check
};
// Queue. `old_queue` is required for kUpdate (nullptr otherwise); for kDelete only `queue.metadata.name`
// matters.
FieldErrors ValidateQueue(AdmissionOp op, const Queue* old_queue, const Queue& queue, const ClusterLookup& lookup,
                          const QueueValidationConfig& config = {});
// PodGroup: queue exists and is Open; topology exclusivity (including subGroupPolicy).
FieldErrors ValidatePodGroup(const PodGroup& pg, const ClusterLookup& lookup);
// JobFlow: flow names unique, dependsOn targets defined, graph acyclic ("jobflow Flow is not DAG").
FieldErrors ValidateJobFlow(const JobFlow& flow);
// HyperNode: >= 1 member, exactly one selector, exactMatch name set, regex compiles, labelMatch only for Node
// and with valid operators.
FieldErrors ValidateHyperNode(const HyperNode& hn);
// Pod validation: not both jdb annotations; values a positive int or "1%".."99%".
FieldErrors ValidatePodJdb(const Pod& pod);
// The selectors of a pod spec's scheduling constraints, as the API server checks them: node affinity
// (required terms and preferred preferences: In/NotIn need values, Exists/DoesNotExist take none, Gt/Lt one
// integer, matchFields only metadata.name), pod (anti-)affinity label and namespace selectors, and topology
// spread label selectors. An unknown operator is an error at its path below `path`, e.g.
// "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator".
// Also run for every task template by ValidateJobCreate.
FieldErrors ValidatePodSchedulingSelectors(const PodSpec& spec, const std::string& path = "spec");

// Bounds a tenant's objects must stay within (docs/security.md). Far above any real job; they exist so that
// one object cannot make a role build millions of pods in memory or walk thousands of dependencies.
inline constexpr int64_t kMaxJobReplicas = 100000;  // pods of one vcjob, all tasks
inline constexpr size_t kMaxJobTasks = 256;          // tasks of one vcjob
inline constexpr size_t kMaxFlows = 256;             // flows of one JobFlow

// Name checks shared with the controller.
bool IsDns1123Label(std::string_view s);      // [a-z0-9]([-a-z0-9]*[a-z0-9])?, <= 63
bool IsDns1123Subdomain(std::string_view s);  // labels joined by '.', <= 253
// Kubernetes "qualified name": [prefix/]name, name <= 63 of [A-Za-z0-9_.-], alphanumeric at both ends.
bool IsQualifiedName(std::string_view s);

}  // namespace tephra::api
