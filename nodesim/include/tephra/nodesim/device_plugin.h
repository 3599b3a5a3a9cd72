// The simulated device plugin: what a node's Ascend device plugin would do with a pod bound to it. The scheduler
// names the cards in the pod's `huawei.com/Ascend910` annotation; a real plugin mounts exactly those, and the
// kubelet fails the pod (reason UnexpectedAdmissionError) when the plugin cannot. nodesim refuses a pod whose
// cards are missing, of the wrong count, not on the node, unhealthy, held by another pod of the node, or
// against the node's HCCS ring rule, so the e2e tests prove the scheduler's choice is one a device plugin
// could honour.
//
// The ring rules are written here from the products' documentation, independently of the scheduler's card
// choice (core/sched devices.cc), so a bug there is not mirrored here.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tephra::nodesim {

using json = nlohmann::json;

// What the device plugin knows about its node.
struct NodeCards {
  std::string accelerator_type = {};  // node label accelerator-type
  int npus = 0;                  // capacity huawei.com/Ascend910: cards Ascend910-0 .. npus-1
  std::set<std::string> unhealthy = {};  // the node's huawei.com/Ascend910-Unhealthy annotation
};
// From the Node object (labels, annotations) and the group's configured NPU count.
NodeCards ReadNodeCards(const json& node, int npus);

// What a pod asks and was given.
struct PodCards {
  int64_t requested = 0;            // huawei.com/Ascend910 over the containers (limits, else requests)
  std::vector<std::string> assigned = {};  // the pod's huawei.com/Ascend910 annotation
  bool annotated = false;           // the annotation is present
};
PodCards ReadPodCards(const json& pod);

// "" when the plugin can mount the pod's cards; else why not, in a kubelet-like sentence. `held`: the cards
// other pods admitted on the node hold.
std::string AdmitCards(const NodeCards& node, const PodCards& pod, const std::set<std::string>& held);

}  // namespace tephra::nodesim
