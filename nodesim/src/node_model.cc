#include "tephra/nodesim/node_model.h"

#include <cstdio>

#include "tephra/api/devices.h"
#include "tephra/nodesim/pod_plan.h"

namespace tephra::nodesim {
namespace {

std::string Ip(uint32_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255);
  return buf;
}

constexpr uint32_t kNodeBase = 10u << 24;                 // 10.0.0.0/10
constexpr uint32_t kPodBase = (10u << 24) | (64u << 16);  // 10.64.0.0/10

json ConditionJson(const std::string& type, bool status, const char* reason, const char* message, const std::string& now,
                   const std::string& since) {
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"reason", reason},
          {"message", message},
          {"lastHeartbeatTime", now},
          {"lastTransitionTime", since}};
}

}  // namespace

std::string NodeInternalIp(int index) { return Ip(kNodeBase + ((static_cast<uint32_t>(index) + 1) & 0x3fffff)); }

std::string PodCidr(int index) {
  return Ip(kPodBase + ((static_cast<uint32_t>(index) & 0x3fff) << 8)) + "/24";
}

std::string PodIp(int index, uint32_t k) {
  return Ip(kPodBase + ((static_cast<uint32_t>(index) & 0x3fff) << 8) + 2 + (k % 253));
}

NodeFaults ReadFaults(const json& node) {
  NodeFaults f;
  if (!node.is_object()) return f;
  auto meta = node.find("metadata");
  if (meta == node.end() || !meta->is_object()) return f;
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return f;
  if (auto it = ann->find(kFailAnnotation); it != ann->end() && it->is_string()) {
    const std::string v = it->get<std::string>();
    f.fail = v == "true" || v == "True" || v == "1";
    if (!f.fail && v != "false" && v != "False" && v != "0") {
      f.problem = std::string(kFailAnnotation) + ": \"" + v + "\" is not true or false; treated as false";
    }
  }
  if (auto it = ann->find(kConditionsAnnotation); it != ann->end() && it->is_string()) {
    for (auto& c : api::SplitCardList(it->get<std::string>())) {
      if (c == "Ready" || c == "MemoryPressure" || c == "DiskPressure" || c == "PIDPressure") {
        f.problem = std::string(kConditionsAnnotation) + ": " + c + " is the kubelet's own condition; ignored";
        continue;
      }
      f.conditions.push_back(std::move(c));
    }
  }
  if (auto it = ann->find(std::string(api::kAscendUnhealthyKey)); it != ann->end() && it->is_string())
    f.unhealthy_npus = static_cast<int>(api::SplitCardList(it->get<std::string>()).size());
  if (auto it = ann->find(kUnhealthyGpusAnnotation); it != ann->end() && it->is_string()) {
    const std::string v = it->get<std::string>();
    int n = 0, used = 0;
    if (std::sscanf(v.c_str(), "%d%n", &n, &used) == 1 && used == static_cast<int>(v.size()) && n >= 0) {
      f.unhealthy_gpus = n;
    } else {
      f.problem = std::string(kUnhealthyGpusAnnotation) + ": \"" + v + "\" is not a count >= 0; treated as 0";
    }
  }
  return f;
}

json BuildNodeStatus(const NodeSpec& n, const NodeFaults& f, core::Clock::WallTime now_t) {
  const std::string now = core::FormatRfc3339(now_t);
  json capacity = json::object();
  json allocatable = json::object();
  for (const auto& [res, q] : n.group->capacity) {
    capacity[res] = q.ToString();
    core::Quantity a = q;
    const int unhealthy = res == kGpuResource ? f.unhealthy_gpus : res == kNpuResource ? f.unhealthy_npus : 0;
    if (unhealthy > 0) {
      a = a - core::Quantity::FromUnits(unhealthy);
      if (a.Sign() < 0) a = core::Quantity::FromUnits(0);
    }
    allocatable[res] = a.ToString();
  }
  // A condition's lastTransitionTime is when it last changed, not the heartbeat: fault handling measures
  // how long a node has been NotReady from it.
  const std::string since = f.since == core::Clock::WallTime{} ? now : core::FormatRfc3339(f.since);
  json conditions = json::array({
      ConditionJson("MemoryPressure", false, "KubeletHasSufficientMemory", "kubelet has sufficient memory available", now, since),
      ConditionJson("DiskPressure", false, "KubeletHasNoDiskPressure", "kubelet has no disk pressure", now, since),
      ConditionJson("PIDPressure", false, "KubeletHasSufficientPID", "kubelet has sufficient PID available", now, since),
      f.fail ? ConditionJson("Ready", false, "KubeletNotReady", "simulated failure (tephra.io/sim-fail)", now, since)
             : ConditionJson("Ready", true, "KubeletReady", "kubelet is posting ready status (tephra nodesim)", now, since),
  });
  for (const auto& c : f.conditions)
    conditions.push_back(ConditionJson(c, true, "SimulatedFault", "simulated fault (tephra.io/sim-conditions)", now, since));
  return {{"capacity", capacity},
          {"allocatable", allocatable},
          {"conditions", conditions},
          {"addresses", json::array({{{"type", "InternalIP"}, {"address", NodeInternalIp(n.index)}},
                                     {{"type", "Hostname"}, {"address", n.name}}})},
          {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}},
          {"nodeInfo",
           {{"machineID", n.name},
            {"systemUUID", n.name},
            {"bootID", n.name},
            {"kernelVersion", "5.10.0-tephra-sim"},
            {"osImage", "Tephra simulated node"},
            {"containerRuntimeVersion", "containerd://simulated"},
            {"kubeletVersion", "v1.20.2-tephra-nodesim"},
            {"kubeProxyVersion", "v1.20.2-tephra-nodesim"},
            {"operatingSystem", "linux"},
            {"architecture", "amd64"}}},
          {"phase", "Running"}};
}

std::vector<api::VgpuCard> VgpuCards(const NodeSpec& n) {
  std::vector<api::VgpuCard> out;
  auto gpus = n.group->capacity.find(kGpuResource);
  if (n.group->vgpu_split <= 0 || gpus == n.group->capacity.end()) return out;
  for (int64_t i = 0; i < gpus->second.Value(); ++i)
    out.push_back({"GPU-" + n.name + "-" + std::to_string(i), n.group->vgpu_split, n.group->vgpu_memory_mib,
                   n.group->gpu_product.empty() ? "NVIDIA-Tephra-Sim" : "NVIDIA-" + n.group->gpu_product, true,
                   "hami-core"});
  return out;
}

json NodeAnnotations(const NodeSpec& n) {
  json a = {{"node.alpha.kubernetes.io/ttl", "0"}};
  // The vGPU device plugin registers its cards at start; nodesim does it with the registration.
  if (auto cards = VgpuCards(n); !cards.empty()) a[std::string(api::kVgpuRegisterAnnotation)] = api::EncodeVgpuRegister(cards);
  return a;
}

json BuildNode(const NodeSpec& n, const NodeFaults& f, core::Clock::WallTime now) {
  json taints = json::array();
  for (const Taint& t : n.group->taints) {
    json tj = {{"key", t.key}, {"effect", t.effect}};
    if (!t.value.empty()) tj["value"] = t.value;
    taints.push_back(std::move(tj));
  }
  json spec = {{"podCIDR", PodCidr(n.index)}, {"podCIDRs", json::array({PodCidr(n.index)})}};
  if (!taints.empty()) spec["taints"] = taints;
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", n.name},
            {"labels", n.labels},
            // Like a kubelet: "node.alpha.kubernetes.io/ttl" tells the node controller nothing is cached.
            {"annotations", NodeAnnotations(n)}}},
          {"spec", spec},
          {"status", BuildNodeStatus(n, f, now)}};
}

json BuildLease(const std::string& node, const std::string& node_uid, int duration_seconds, core::Clock::WallTime now) {
  json meta = {{"name", node}, {"namespace", kLeaseNamespace}};
  if (!node_uid.empty()) {
    meta["ownerReferences"] = json::array({{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"uid", node_uid}}});
  }
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", meta},
          {"spec",
           {{"holderIdentity", node}, {"leaseDurationSeconds", duration_seconds}, {"renewTime", FormatMicroTime(now)}}}};
}

}  // namespace tephra::nodesim
