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
  return c;
}

PodCards ReadPodCards(const json& pod) {
  PodCards p;
  const std::string res(api::kAscend910Resource);
  const json& containers = Sub(Sub(pod, "spec"), "containers");
  if (containers.is_array()) {
    for (const json& c : containers) {
      const json& r = Sub(c, "resources");
      int64_t n = Units(Sub(r, "limits"), res);
      if (n == 0) n = Units(Sub(r, "requests"), res);
      p.requested += n;
    }
  }
  const json& ann = Sub(Sub(pod, "metadata"), "annotations");
  if (ann.is_object() && ann.contains(res) && ann[res].is_string()) {
    p.annotated = true;
    p.assigned = api::SplitCardList(ann[res].get<std::string>());
  }
  return p;
}

std::string AdmitCards(const NodeCards& node, const PodCards& pod, const std::set<std::string>& held) {
  if (pod.requested <= 0) return "";
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

}  // namespace tephra::nodesim
