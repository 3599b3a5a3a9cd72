#include "tephra/nodesim/device_plugin.h"

#include <algorithm>

#include "tephra/api/devices.h"
#include "tephra/core/quantity.h"

namespace tephra::nodesim {

namespace {

const json& Sub(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string StrAt(const json& obj, const std::string& key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t Units(const json& list, const std::string& name) {
  const std::string v = StrAt(list, name);
  if (v.empty()) return 0;
  auto q = core::Quantity::Parse(v);
  return q.ok() ? q->Value() : 0;
}

// The ring rule of each product, over the physical indices of the cards one pod gets.
std::string RingRule(const std::string& type, int npus, const std::vector<int>& idx) {
  const int n = static_cast<int>(idx.size());
  auto same_group = [&](int size) {
    for (int i : idx)
      if (i / size != idx.front() / size) return false;
    return true;
  };
  std::set<int> set(idx.begin(), idx.end());
  if (type == "module") {
    if (n == npus) return "";
    if ((n == 1 || n == 2 || n == 4) && same_group(4)) return "";
    return "module (910A) takes 1, 2 or 4 cards inside one HCCS ring of 4, or the whole node";
  }
  if (type == "module-910b-16") {
    if (n <= 8) return same_group(8) ? "" : "module-910b-16 takes up to 8 cards inside one HCCS ring of 8";
    if (n % 2 != 0) return "module-910b-16 takes an even number of cards above 8";
    for (int i : idx)
      if (!set.count(i < 8 ? i + 8 : i - 8)) return "module-910b-16 takes cards above 8 as pairs (i, i+8)";
    return "";
  }
  if (type == "module-a3-16") {
    if (n == 1) return "";
    if (n % 2 != 0) return "module-a3-16 takes 1 card or whole HiAM pairs";
    for (int i : idx)
      if (!set.count(i % 2 == 0 ? i + 1 : i - 1)) return "module-a3-16 takes 1 card or whole HiAM pairs";
    return "";
  }
  return "";  // module-910b-8 (full mesh) and unknown products: no rule
}

}  // namespace

NodeCards ReadNodeCards(const json& node, int npus) {
  NodeCards c;
  c.npus = npus;
  const json& meta = Sub(node, "metadata");
  c.accelerator_type = StrAt(Sub(meta, "labels"), std::string(api::kAcceleratorTypeLabel));
  for (auto& id : api::SplitCardList(StrAt(Sub(meta, "annotations"), std::string(api::kAscendUnhealthyKey))))
    c.unhealthy.insert(std::move(id));
  c.vgpus = api::ParseVgpuRegister(StrAt(Sub(meta, "annotations"), std::string(api::kVgpuRegisterAnnotation)));
  return c;
}

PodCards ReadPodCards(const json& pod) {
  PodCards p;
  const std::string res(api::kAscend910Resource);
  const json& containers = Sub(Sub(pod, "spec"), "containers");
  if (containers.is_array()) {
    for (const json& c : containers) {
      const json& r = Sub(c, "resources");
      auto units = [&](const std::string& name) {
        int64_t n = Units(Sub(r, "limits"), name);
        return n == 0 ? Units(Sub(r, "requests"), name) : n;
      };
      p.requested += units(res);
      p.gpus += units(std::string(api::kNvidiaGpuResource));
      // A container asks for vGPUs by count, or by memory alone (one card); with neither memory nor a
      // percentage it gets all of each card's memory.
      const int64_t number = units(std::string(api::kVgpuNumberResource));
      const int64_t memory = units(std::string(api::kVgpuMemoryResource));
      const int64_t count = number > 0 ? number : memory > 0 ? 1 : 0;
      p.vgpu_number += count;
      p.vgpu_memory += memory;
      p.vgpu_cores += units(std::string(api::kVgpuCoresResource));
      if (count > 0) {
        const int64_t percent = units(std::string(api::kVgpuMemoryPercentageResource));
        p.vgpu_asks.push_back({count, percent > 0 ? 0 : memory, percent > 0 ? percent : memory > 0 ? 0 : 100});
      }
    }
  }
  const json& ann = Sub(Sub(pod, "metadata"), "annotations");
  if (ann.is_object() && ann.contains(res) && ann[res].is_string()) {
    p.annotated = true;
    p.assigned = api::SplitCardList(ann[res].get<std::string>());
  }
  const std::string ids(api::kVgpuIdsAnnotation);
  if (ann.is_object() && ann.contains(ids) && ann[ids].is_string()) {
    p.vgpu_annotated = true;
    for (auto& container : api::DecodeVgpuIds(ann[ids].get<std::string>())) {
      if (container.empty()) continue;
      for (const auto& a : container) p.vgpu.push_back(a);
      p.vgpu_containers.push_back(std::move(container));
    }
  }
  return p;
}

namespace {

std::string AdmitVgpu(const NodeCards& node, const PodCards& pod, const std::vector<const PodCards*>& others) {
  const std::string prefix = "Allocate failed for volcano.sh/vgpu-number: ";
  if (!pod.vgpu_annotated) return prefix + "the pod has no volcano.sh/vgpu-ids-new annotation naming its GPUs";
  if (static_cast<int64_t>(pod.vgpu.size()) != pod.vgpu_number)
    return prefix + "the annotation names " + std::to_string(pod.vgpu.size()) + " GPUs, the pod requests " +
           std::to_string(pod.vgpu_number);
  // Each container that asks takes the next entry of the annotation, as the device plugin's Allocate does.
  if (pod.vgpu_containers.size() != pod.vgpu_asks.size())
    return prefix + "the annotation has cards for " + std::to_string(pod.vgpu_containers.size()) + " containers, " +
           std::to_string(pod.vgpu_asks.size()) + " containers ask for GPUs";
  std::set<std::string> seen;
  for (size_t i = 0; i < pod.vgpu_containers.size(); ++i) {
    const auto& ask = pod.vgpu_asks[i];
    if (static_cast<int64_t>(pod.vgpu_containers[i].size()) != ask.number)
      return prefix + "container " + std::to_string(i) + " is given " + std::to_string(pod.vgpu_containers[i].size()) +
             " GPUs, it asks for " + std::to_string(ask.number);
    for (const auto& a : pod.vgpu_containers[i]) {
      auto card = std::find_if(node.vgpus.begin(), node.vgpus.end(), [&](const api::VgpuCard& c) { return c.uuid == a.uuid; });
      if (card == node.vgpus.end()) continue;  // reported below
      const int64_t want = ask.percent > 0 ? card->memory * ask.percent / 100 : ask.memory;
      if (a.memory < want)
        return prefix + "GPU " + a.uuid + " is given " + std::to_string(a.memory) + " MiB, container " +
               std::to_string(i) + " asks for " + std::to_string(want);
    }
  }
  for (const auto& a : pod.vgpu) {
    auto card = std::find_if(node.vgpus.begin(), node.vgpus.end(), [&](const api::VgpuCard& c) { return c.uuid == a.uuid; });
    if (card == node.vgpus.end()) return prefix + "GPU " + a.uuid + " is not registered on this node";
    if (!seen.insert(a.uuid).second) return prefix + "GPU " + a.uuid + " is named twice";
    if (!card->healthy) return prefix + "GPU " + a.uuid + " is unhealthy";
    int64_t memory = a.memory, cores = a.cores, sharers = 1;
    for (const PodCards* o : others)
      for (const auto& b : o->vgpu)
        if (b.uuid == a.uuid) memory += b.memory, cores += b.cores, ++sharers;
    if (memory > card->memory)
      return prefix + "GPU " + a.uuid + " would hold " + std::to_string(memory) + " MiB, it has " + std::to_string(card->memory);
    if (cores > 100) return prefix + "GPU " + a.uuid + " would give " + std::to_string(cores) + "% of its compute";
    if (sharers > card->split)
      return prefix + "GPU " + a.uuid + " would be shared by " + std::to_string(sharers) + " pods, at most " +
             std::to_string(card->split);
  }
  return "";
}

}  // namespace

std::string AdmitCards(const NodeCards& node, const PodCards& pod, const std::vector<const PodCards*>& others) {
  if (pod.vgpu_number > 0)
    if (std::string why = AdmitVgpu(node, pod, others); !why.empty()) return why;
  if (pod.gpus > 0 && node.gpus > 0) {
    // The NVIDIA plugin hands out healthy cards nobody holds; the kubelet words a shortfall this way.
    int64_t available = node.gpus - node.unhealthy_gpus;
    for (const PodCards* o : others) available -= o->gpus;
    if (pod.gpus > available)
      return "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: " +
             std::to_string(pod.gpus) + ", Available: " + std::to_string(std::max<int64_t>(available, 0)) +
             ", which is unexpected";
  }
  if (pod.requested <= 0) return "";
  std::set<std::string> held;
  for (const PodCards* o : others) held.insert(o->assigned.begin(), o->assigned.end());
  const std::string prefix = "Allocate failed for huawei.com/Ascend910: ";
  if (!pod.annotated) return prefix + "the pod has no huawei.com/Ascend910 annotation naming its cards";
  if (static_cast<int64_t>(pod.assigned.size()) != pod.requested)
    return prefix + "the annotation names " + std::to_string(pod.assigned.size()) + " cards, the pod requests " +
           std::to_string(pod.requested);
  std::vector<int> idx;
  std::set<std::string> seen;
  for (const auto& id : pod.assigned) {
    auto i = api::AscendCardIndex(id);
    if (!i || *i >= node.npus) return prefix + "card " + id + " is not on this node";
    if (!seen.insert(id).second) return prefix + "card " + id + " is named twice";
    if (node.unhealthy.count(id)) return prefix + "card " + id + " is unhealthy";
    if (held.count(id)) return prefix + "card " + id + " is in use by another pod";
    idx.push_back(*i);
  }
  std::sort(idx.begin(), idx.end());
  if (std::string why = RingRule(node.accelerator_type, node.npus, idx); !why.empty())
    return prefix + api::JoinCardList(pod.assigned) + " break the ring rule: " + why;
  return "";
}

std::string DeviceFailure(const NodeCards& node, const PodCards& pod, int64_t gpu_offset) {
  for (const auto& id : pod.assigned)
    if (node.unhealthy.count(id)) return "device error: " + id + " is unhealthy (simulated)";
  for (const auto& a : pod.vgpu)
    for (const auto& card : node.vgpus)
      if (card.uuid == a.uuid && !card.healthy) return "CUDA error: GPU " + a.uuid + " is unhealthy (simulated)";
  if (pod.gpus > 0 && node.unhealthy_gpus > 0) {
    const int64_t first_bad = node.gpus - node.unhealthy_gpus;
    if (gpu_offset + pod.gpus > first_bad)
      return "CUDA error: GPU " + std::to_string(std::max(gpu_offset, first_bad)) +
             " has fallen off the bus (Xid 79, simulated)";
  }
  return "";
}

}  // namespace tephra::nodesim
