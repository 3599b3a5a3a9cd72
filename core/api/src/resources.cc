#include "tephra/api/resources.h"

#include <algorithm>
#include <string>

namespace tephra::api {
namespace {
// 10^29 nano-units: far above any real request, and far enough below the __int128 limit (~1.7e38 nano)
// that summing a few such values cannot overflow.
constexpr __int128 kMaxNano = static_cast<__int128>(100000000000000000LL) * 1000000000000LL;
}  // namespace

void AddResources(ResourceList* a, const ResourceList& b) {
  for (const auto& [name, q] : b) {
    auto it = a->find(name);
    if (it == a->end()) a->emplace(name, q);
    else it->second += q;
  }
}

void MaxResources(ResourceList* a, const ResourceList& b) {
  for (const auto& [name, q] : b) {
    auto it = a->find(name);
    if (it == a->end()) a->emplace(name, q);
    else if (it->second < q) it->second = q;
  }
}

bool LessEqual(const ResourceList& a, const ResourceList& b) {
  for (const auto& [name, q] : a) {
    auto it = b.find(name);
    core::Quantity other = it == b.end() ? core::Quantity() : it->second;
    if (q > other) return false;
  }
  return true;
}

namespace {
// A container's effective requests: requests, plus limits for resources with no request.
ResourceList ContainerRequests(const Container& c) {
  ResourceList out = c.resources.requests;
  for (const auto& [name, q] : c.resources.limits) out.emplace(name, q);  // emplace keeps an existing request
  return out;
}

bool IsNativeComputeResource(std::string_view name) {
  return name == kResourceCPU || name == kResourceMemory || name == kResourceEphemeralStorage;
}
}  // namespace

ResourceList PodRequests(const PodSpec& spec) {
  ResourceList total;
  for (const auto& c : spec.containers) AddResources(&total, ContainerRequests(c));
  // Init containers run one at a time before the app containers, so only the largest matters.
  for (const auto& c : spec.init_containers) MaxResources(&total, ContainerRequests(c));
  AddResources(&total, spec.overhead);
  return total;
}

ResourceList PodQuotaUsage(const PodSpec& spec) {
  ResourceList usage;
  ResourceList requests = PodRequests(spec);
  for (const auto& [name, q] : requests) {
    // Native compute resources, hugepages and extended resources are all counted under "<r>" and
    // "requests.<r>" (Kubernetes' quota keys, with Volcano's unprefixed copy of the extended ones).
    usage[name] = q;
    usage["requests." + name] = q;
  }
  // Limits: same aggregation (sum of containers, max with init containers) over limits only.
  ResourceList limits;
  for (const auto& c : spec.containers) AddResources(&limits, c.resources.limits);
  for (const auto& c : spec.init_containers) MaxResources(&limits, c.resources.limits);
  for (const auto& [name, q] : limits)
    if (IsNativeComputeResource(name)) {
      core::Quantity v = q;
      auto oh = spec.overhead.find(name);
      if (oh != spec.overhead.end()) v += oh->second;
      usage["limits." + name] = v;
    }
  usage[std::string(kResourcePods)] = core::Quantity::FromUnits(1);
  usage["count/pods"] = core::Quantity::FromUnits(1);
  return usage;
}

int32_t TaskMinAvailable(const TaskSpec& task) {
  if (task.min_available) return *task.min_available;
  if (task.partition_policy && task.partition_policy->min_partitions > 0 && task.partition_policy->partition_size > 0)
    return task.partition_policy->min_partitions * task.partition_policy->partition_size;
  return task.replicas;
}

ResourceList MinResourcesForJob(const Job& job, const PriorityLookup& priority) {
  struct Entry {
    int32_t priority;
    const TaskSpec* task;
  };
  std::vector<Entry> tasks;
  tasks.reserve(job.spec.tasks.size());
  for (const auto& t : job.spec.tasks) {
    int32_t p = 0;
    const std::string& pc = t.template_.spec.priority_class_name;
    if (!pc.empty() && priority) p = priority(pc).value_or(0);
    tasks.push_back({p, &t});
  }
  std::stable_sort(tasks.begin(), tasks.end(), [](const Entry& a, const Entry& b) { return a.priority > b.priority; });

  int64_t total_min = 0;
  for (const auto& t : job.spec.tasks) total_min += TaskMinAvailable(t);
  const int32_t job_min = job.spec.min_available;

  ResourceList out;
  int32_t count = 0;
  // Adds min(n, remaining slots) pods of `t` by multiplication, so a job with 10^9 replicas costs the
  // same as one with 10.
  auto add_pods = [&](const TaskSpec& t, int32_t n) {
    int32_t k = std::min(n, job_min - count);
    if (k <= 0) return;
    ResourceList usage = PodQuotaUsage(t.template_.spec);
    for (auto& [name, q] : usage) {
      __int128 scaled;
      // Quantity's operator* does not check overflow; saturate at a huge but harmless value instead.
      if (__builtin_mul_overflow(q.NanoValue(), static_cast<__int128>(k), &scaled) || scaled > kMaxNano || scaled < -kMaxNano)
        q = core::Quantity::MustParse("1e20");
      else
        q = q * k;
    }
    AddResources(&out, usage);
    count += k;
  };
  if (job_min < total_min) {
    for (const auto& e : tasks) add_pods(*e.task, e.task->replicas);
  } else {
    for (const auto& e : tasks) add_pods(*e.task, std::min(TaskMinAvailable(*e.task), e.task->replicas));
    for (const auto& e : tasks) add_pods(*e.task, e.task->replicas - std::min(TaskMinAvailable(*e.task), e.task->replicas));
  }
  return out;
}

}  // namespace tephra::api
