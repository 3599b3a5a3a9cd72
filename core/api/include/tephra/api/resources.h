// Resource arithmetic shared by the scheduler and the job controller.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "tephra/api/batch.h"
#include "tephra/api/core_v1.h"

namespace tephra::api {

// a += b, per resource name.
void AddResources(ResourceList* a, const ResourceList& b);
// a = max(a, b), per resource name.
void MaxResources(ResourceList* a, const ResourceList& b);
// Every resource in `a` is <= the same resource in `b` (missing in b counts as zero).
bool LessEqual(const ResourceList& a, const ResourceList& b);

// Effective requests of a pod, as the scheduler accounts them: Σ containers' requests, then per resource
// max(that, each init container's request), plus spec.overhead. A container resource with a limit but no
// request counts the limit (the API server defaults requests to limits; templates are not defaulted).
ResourceList PodRequests(const PodSpec& spec);

// Kubernetes quota usage of one pod built from `spec` (docs/volcano-behaviour.md, "PodGroup of a vcjob
// (minResources)"): "cpu"/"requests.cpu",
// "memory"/"requests.memory", "ephemeral-storage"/"requests.ephemeral-storage", "limits.<r>" for those
// three, "requests.<ext>" and "<ext>" for extended resources, "pods" = 1, "count/pods" = 1.
ResourceList PodQuotaUsage(const PodSpec& spec);

// Priority of a PriorityClass by name; nullopt when unknown (counts as 0).
using PriorityLookup = std::function<std::optional<int32_t>(std::string_view priority_class_name)>;

// PodGroup.spec.minResources for a vcjob (same section): tasks sorted by their template's
// PriorityClass value (highest first, stable); if job.minAvailable < Σ task minAvailable, the first
// job.minAvailable pods in that order; else each task's minAvailable pods (capped at job.minAvailable in
// total), then the remaining slots from spare replicas in priority order.
ResourceList MinResourcesForJob(const Job& job, const PriorityLookup& priority = nullptr);

// Task minAvailable as the controller/webhook use it: explicit value, else minPartitions × partitionSize
// when both > 0, else replicas.
int32_t TaskMinAvailable(const TaskSpec& task);

}  // namespace tephra::api
