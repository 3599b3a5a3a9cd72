// Realistic generated Pod and Node JSON for the client benches (shaped like what kube-apiserver 1.20 returns for
// a Volcano job's pod: managedFields, labels/annotations, one container with env/resources/mounts, status).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tephra::bench {

inline nlohmann::json MakePod(int i) {
  using nlohmann::json;
  std::string n = std::to_string(i);
  std::string job = "job-" + std::to_string(i / 8);
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", job + "-worker-" + std::to_string(i % 8)},
        {"namespace", "team-" + std::to_string(i % 50)},
        {"uid", "5c1f3a2e-8f7b-4c3d-9e2a-" + std::string(12 - std::min<size_t>(12, n.size()), '0') + n},
        {"resourceVersion", std::to_string(100000 + i)},
        {"creationTimestamp", "2026-11-22T09:00:00Z"},
        {"labels",
         {{"volcano.sh/job-name", job}, {"volcano.sh/job-namespace", "team"}, {"volcano.sh/queue-name", "default"},
          {"volcano.sh/task-spec", "worker"}, {"volcano.sh/job-version", "0"}}},
        {"annotations",
         {{"scheduling.k8s.io/group-name", job}, {"volcano.sh/job-name", job}, {"volcano.sh/task-spec", "worker"},
          {"volcano.sh/template-uid", job + "-worker"}, {"volcano.sh/job-version", "0"}}},
        {"ownerReferences",
         json::array({{{"apiVersion", "batch.volcano.sh/v1alpha1"}, {"kind", "Job"}, {"name", job},
                       {"uid", "0b9c7d1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e"}, {"controller", true},
                       {"blockOwnerDeletion", true}}})},
        {"managedFields",
         json::array({{{"manager", "tephra"}, {"operation", "Update"}, {"apiVersion", "v1"},
                       {"time", "2026-11-22T09:00:00Z"}, {"fieldsType", "FieldsV1"},
                       {"fieldsV1", {{"f:metadata", {{"f:labels", {{".", json::object()}, {"f:volcano.sh/job-name", json::object()}}}}},
                                     {"f:spec", {{"f:containers", {{"k:{\"name\":\"main\"}", {{".", json::object()}}}}}}}}}}})}}},
      {"spec",
       {{"schedulerName", "volcano"},
        {"restartPolicy", "OnFailure"},
        {"terminationGracePeriodSeconds", 30},
        {"dnsPolicy", "ClusterFirst"},
        {"serviceAccountName", "default"},
        {"priority", 0},
        {"enableServiceLinks", true},
        {"nodeName", "node-" + std::to_string(i % 5000)},
        {"tolerations",
         json::array({{{"key", "node.kubernetes.io/not-ready"}, {"operator", "Exists"}, {"effect", "NoExecute"},
                       {"tolerationSeconds", 300}}})},
        {"volumes",
         json::array({{{"name", "default-token-abcde"}, {"secret", {{"secretName", "default-token-abcde"}, {"defaultMode", 420}}}}})},
        {"containers",
         json::array({{{"name", "main"},
                       {"image", "registry.example.com/train:1.2.3"},
                       {"command", json::array({"python", "train.py", "--epochs=10"})},
                       {"env", json::array({{{"name", "VK_TASK_INDEX"}, {"value", std::to_string(i % 8)}},
                                            {{"name", "VC_WORKER_HOSTS"}, {"value", job + "-worker-0." + job}}})},
                       {"resources", {{"requests", {{"cpu", "2"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "1"}}},
                                      {"limits", {{"cpu", "2"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "1"}}}}},
                       {"volumeMounts", json::array({{{"name", "default-token-abcde"}, {"readOnly", true},
                                                      {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}}})},
                       {"terminationMessagePath", "/dev/termination-log"},
                       {"terminationMessagePolicy", "File"},
                       {"imagePullPolicy", "IfNotPresent"}}})}}},
      {"status",
       {{"phase", "Running"},
        {"hostIP", "10.1." + std::to_string((i / 250) % 250) + "." + std::to_string(i % 250)},
        {"podIP", "10.2." + std::to_string((i / 250) % 250) + "." + std::to_string(i % 250)},
        {"startTime", "2026-11-22T09:00:01Z"},
        {"qosClass", "Guaranteed"},
        {"conditions",
         json::array({{{"type", "Initialized"}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T09:00:01Z"}},
                      {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T09:00:03Z"}},
                      {{"type", "ContainersReady"}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T09:00:03Z"}},
                      {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T09:00:00Z"}}})},
        {"containerStatuses",
         json::array({{{"name", "main"}, {"ready", true}, {"restartCount", 0}, {"started", true},
                       {"image", "registry.example.com/train:1.2.3"}, {"imageID", "docker-pullable://registry.example.com/train@sha256:0123"},
                       {"containerID", "containerd://" + std::string(40, 'a')},
                       {"state", {{"running", {{"startedAt", "2026-11-22T09:00:02Z"}}}}},
                       {"lastState", json::object()}}})}}}};
  return pod;
}

inline nlohmann::json MakeNode(int i) {
  using nlohmann::json;
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", "node-" + std::to_string(i)},
            {"uid", "node-uid-" + std::to_string(i)},
            {"resourceVersion", std::to_string(5000 + i)},
            {"labels", {{"kubernetes.io/hostname", "node-" + std::to_string(i)}, {"kubernetes.io/os", "linux"},
                        {"kubernetes.io/arch", "amd64"}, {"topology.kubernetes.io/zone", "z" + std::to_string(i % 3)}}},
            {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}}}}},
          {"spec", {{"podCIDR", "10.244." + std::to_string(i % 250) + ".0/24"}}},
          {"status",
           {{"capacity", {{"cpu", "64"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}}},
            {"allocatable", {{"cpu", "63"}, {"memory", "250Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}}},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"},
                                         {"lastHeartbeatTime", "2026-11-22T09:00:00Z"},
                                         {"lastTransitionTime", "2026-11-22T08:00:00Z"}}})},
            {"addresses", json::array({{{"type", "InternalIP"}, {"address", "10.1.0." + std::to_string(i % 250)}}})},
            {"nodeInfo", {{"kubeletVersion", "v1.20.2"}, {"osImage", "nodesim"}}}}}};
}

}  // namespace tephra::bench
