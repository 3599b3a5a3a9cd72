// AdmissionReview bodies shared by the admission load generator and the in-process bench.
//   job100      a vcjob of 100 tasks as stored after the mutating webhook (CREATE): what /jobs/validate sees
//   job100bare  the same job with no defaults set (no queue, scheduler, task names or counts): a real mutation
//   job1        one task, defaulted
//   pod         a pod of the volcano scheduler with a jdb annotation
//   podother    a pod of another scheduler (the early exit)
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tephra::bench {

inline nlohmann::json BenchContainer() {
  return {{"name", "c"}, {"image", "busybox"}, {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}};
}

inline nlohmann::json BenchJob(int tasks, bool defaulted) {
  using nlohmann::json;
  json ts = json::array();
  for (int i = 0; i < tasks; ++i) {
    json t = {{"replicas", 2},
              {"policies", json::array({{{"event", "PodEvicted"}, {"action", "RestartJob"}}})},
              {"template", {{"metadata", {{"labels", {{"app", "bench"}}}}},
                            {"spec", {{"restartPolicy", "Never"}, {"containers", json::array({BenchContainer()})}}}}}};
    if (defaulted) {
      t["name"] = "task-" + std::to_string(i);
      t["minAvailable"] = 2;
      t["maxRetry"] = 3;
    }
    ts.push_back(std::move(t));
  }
  json spec = {{"plugins", {{"svc", json::array()}, {"env", json::array()}}}, {"tasks", ts}};
  if (defaulted) {
    spec["queue"] = "default";
    spec["schedulerName"] = "volcano";
    spec["minAvailable"] = 2 * tasks;
    spec["maxRetry"] = 3;
  }
  return {{"apiVersion", "batch.volcano.sh/v1alpha1"},
          {"kind", "Job"},
          {"metadata", {{"name", "bench"}, {"namespace", "default"}}},
          {"spec", spec}};
}

inline nlohmann::json BenchPod(const std::string& scheduler) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "bench-0"}, {"namespace", "default"}, {"annotations", {{"volcano.sh/jdb-min-available", "1"}}}}},
          {"spec", {{"schedulerName", scheduler}, {"containers", nlohmann::json::array({BenchContainer()})}}}};
}

// "" for an unknown name.
inline std::string ReviewBody(const std::string& name) {
  nlohmann::json obj;
  std::string kind = "Job";
  if (name == "job100") obj = BenchJob(100, true);
  else if (name == "job100bare") obj = BenchJob(100, false);
  else if (name == "job1") obj = BenchJob(1, true);
  else if (name == "pod") obj = BenchPod("volcano"), kind = "Pod";
  else if (name == "podother") obj = BenchPod("default-scheduler"), kind = "Pod";
  else return "";
  return nlohmann::json{{"apiVersion", "admission.k8s.io/v1"},
                        {"kind", "AdmissionReview"},
                        {"request",
                         {{"uid", "bench"},
                          {"kind", {{"group", ""}, {"version", "v1"}, {"kind", kind}}},
                          {"operation", "CREATE"},
                          {"namespace", "default"},
                          {"object", obj}}}}
      .dump();
}

}  // namespace tephra::bench
