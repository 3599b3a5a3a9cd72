#include "tephra/api/defaults.h"

#include "tephra/api/labels.h"
#include "tephra/api/resources.h"

namespace tephra::api {

void MutateJob(Job* job, const JobDefaultsConfig& config) {
  JobSpec& spec = job->spec;
  if (spec.queue.empty()) spec.queue = config.default_queue;
  if (spec.scheduler_name.empty() && !config.scheduler_names.empty()) spec.scheduler_name = config.scheduler_names[0];
  if (spec.max_retry == 0) spec.max_retry = 3;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    TaskSpec& t = spec.tasks[i];
    if (t.name.empty()) t.name = "default" + std::to_string(i);
    PodSpec& ps = t.template_.spec;
    // A host-network pod with the default policy would resolve through the node's resolv.conf and miss
    // cluster DNS (the svc plugin's headless service names).
    if (ps.host_network && ps.dns_policy.empty()) ps.dns_policy = std::string(kDNSClusterFirstWithHostNet);
    if (!t.min_available) t.min_available = TaskMinAvailable(t);
    if (t.max_retry == 0) t.max_retry = 3;
  }
  if (spec.min_available == 0) {
    int64_t sum = 0;
    for (const auto& t : spec.tasks) sum += TaskMinAvailable(t);
    spec.min_available = sum > INT32_MAX ? INT32_MAX : static_cast<int32_t>(sum);
  }
  // Distributed-training plugins need the svc plugin's host files; mpi also needs ssh.
  bool needs_svc = false, needs_ssh = false;
  for (const char* p : {"tensorflow", "mpi", "pytorch", "ray"})
    if (spec.plugins.count(p)) needs_svc = true;
  if (spec.plugins.count("mpi")) needs_ssh = true;
  if (needs_svc && !spec.plugins.count("svc")) spec.plugins["svc"] = {};
  if (needs_ssh && !spec.plugins.count("ssh")) spec.plugins["ssh"] = {};
}

void MutateQueue(Queue* queue) {
  if (!queue->spec.reclaimable) queue->spec.reclaimable = true;
  if (queue->spec.weight == 0) queue->spec.weight = 1;
  auto& ann = queue->metadata.annotations;
  auto h = ann.find(std::string(kHierarchyAnnotation));
  auto w = ann.find(std::string(kHierarchyWeightsAnnotation));
  if (h != ann.end() && w != ann.end() && !h->second.empty() && !w->second.empty()) {
    std::string_view first = std::string_view(h->second).substr(0, h->second.find('/'));
    if (first != kRootQueue) {
      h->second = "root/" + h->second;
      w->second = "1/" + w->second;
    }
  }
}

void MutatePodGroup(PodGroup* pg, const ClusterLookup& lookup, const std::string& default_queue) {
  if (!pg->spec.queue.empty() && pg->spec.queue != default_queue) return;
  auto ann = lookup.NamespaceAnnotations(pg->metadata.namespace_);
  auto it = ann.find(std::string(kSchedulingQueueNameAnnotation));
  if (it != ann.end() && !it->second.empty()) pg->spec.queue = it->second;
  else if (pg->spec.queue.empty()) pg->spec.queue = default_queue;
}

namespace {
std::string EscapePointer(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out.push_back(c);
  }
  return out;
}

// elementwise: descend into arrays of equal length; set members with "add" (see defaults.h).
void Diff(const json& before, const json& after, const std::string& path, bool elementwise, bool is_index,
          json* ops) {
  if (before == after) return;
  if (before.is_object() && after.is_object()) {
    for (auto it = before.begin(); it != before.end(); ++it)
      if (!after.contains(it.key())) ops->push_back({{"op", "remove"}, {"path", path + "/" + EscapePointer(it.key())}});
    for (auto it = after.begin(); it != after.end(); ++it) {
      std::string p = path + "/" + EscapePointer(it.key());
      auto b = before.find(it.key());
      if (b == before.end()) ops->push_back({{"op", "add"}, {"path", p}, {"value", it.value()}});
      else Diff(*b, it.value(), p, elementwise, false, ops);
    }
    return;
  }
  if (elementwise && before.is_array() && after.is_array() && before.size() == after.size()) {
    for (size_t i = 0; i < before.size(); ++i)
      Diff(before[i], after[i], path + "/" + std::to_string(i), elementwise, true, ops);
    return;
  }
  const bool member = elementwise && !is_index && !path.empty();
  ops->push_back({{"op", member ? "add" : "replace"}, {"path", path}, {"value", after}});
}
}  // namespace

json JsonPatchDiff(const json& before, const json& after) {
  json ops = json::array();
  Diff(before, after, "", false, false, &ops);
  return ops;
}

json JsonPatchDiffElementwise(const json& before, const json& after) {
  json ops = json::array();
  Diff(before, after, "", true, false, &ops);
  return ops;
}

StatusOr<json> ApplyJsonPatch(const json& doc, const json& patch) {
  // nlohmann implements all of RFC 6902 but reports errors by throwing; keep that inside this function.
  try {
    return doc.patch(patch);
  } catch (const json::exception& e) {
    return core::InvalidArgumentError(std::string("json patch: ") + e.what());
  }
}

}  // namespace tephra::api
