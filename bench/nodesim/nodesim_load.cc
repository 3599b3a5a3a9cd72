// Load generator for the nodesim bench: creates pods already bound (spec.nodeName) to simulated nodes, as
// fast as the given QPS allows, and prints how fast the API server accepted them. nodesim then drives them.
//
//   nodesim_load --kubeconfig K --pods 20000 --nodes 5000 [--name-prefix tephra-sim-] [--namespace nsbench]
//                [--qps 300] [--threads 8] [--run-seconds 5]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tephra/kube/client.h"
#include "tephra/kube/config.h"
#include "tephra/kube/transport.h"

using tephra::kube::json;

int main(int argc, char** argv) {
  std::string kubeconfig, prefix = "tephra-sim-", ns = "nsbench", run_seconds = "5";
  int pods = 1000, nodes = 3, threads = 8;
  double qps = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--kubeconfig") kubeconfig = v;
    else if (k == "--pods") pods = std::atoi(v.c_str());
    else if (k == "--nodes") nodes = std::atoi(v.c_str());
    else if (k == "--name-prefix") prefix = v;
    else if (k == "--namespace") ns = v;
    else if (k == "--qps") qps = std::atof(v.c_str());
    else if (k == "--threads") threads = std::atoi(v.c_str());
    else if (k == "--run-seconds") run_seconds = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  auto cfg = tephra::kube::LoadConfig(kubeconfig);
  if (!cfg.ok()) {
    std::fprintf(stderr, "%s\n", cfg.status().ToString().c_str());
    return 1;
  }
  cfg->qps = qps;
  cfg->burst = static_cast<int>(qps);
  cfg->user_agent = "nodesim-load";
  auto client = tephra::kube::NewClient(*cfg);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  static const tephra::kube::ResourceInfo kNs{"", "v1", "Namespace", "namespaces", false};
  static const tephra::kube::ResourceInfo kPod{"", "v1", "Pod", "pods", true};
  auto s = (*client)->Create(kNs, "", json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  if (!s.ok() && !tephra::core::IsAlreadyExists(s.status())) {
    std::fprintf(stderr, "namespace: %s\n", s.status().ToString().c_str());
    return 1;
  }
  std::atomic<int> next{0}, created{0}, failed{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      for (int i = next++; i < pods; i = next++) {
        json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata",
                     {{"name", "load-" + std::to_string(i)},
                      {"namespace", ns},
                      {"annotations", {{"tephra.io/sim-run-seconds", run_seconds}}}}},
                    {"spec",
                     {{"nodeName", prefix + std::to_string(i % nodes)},
                      {"restartPolicy", "Never"},
                      {"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
        auto r = (*client)->Create(kPod, ns, pod);
        if (r.ok() || tephra::core::IsAlreadyExists(r.status())) {
          created++;
        } else if (failed++ < 5) {
          std::fprintf(stderr, "create load-%d: %s\n", i, r.status().ToString().c_str());
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("created=%d failed=%d seconds=%.1f pods_per_second=%.1f\n", created.load(), failed.load(), secs,
              created.load() / secs);
  return failed.load() == 0 ? 0 : 1;
}
