// Watch throughput harness: the fake API server (tests/integration/fake_apiserver) replays N pod events over one
// chunked watch stream on loopback; the real client (cpprest transport + REST watch decoding) receives them.
// Reports events/s and MB/s of wall time, and the client's CPU time per event.
//   kube_watch_throughput [events]
#include <sys/resource.h>

#include <chrono>
#include <iostream>

#include "fake_apiserver.h"
#include "pod_fixture.h"
#include "tephra/kube/client.h"
#include "tephra/kube/transport.h"

namespace {
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::stoi(argv[1]) : 20000;
  tephra::fakeapi::FakeApiServer server;
  server.Start();
  const std::string from = std::to_string(server.current_rv());
  size_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    auto pod = tephra::bench::MakePod(i);
    bytes += pod.dump().size();
    const std::string ns = pod["metadata"]["namespace"];
    server.Put("/api/v1/pods", ns, std::move(pod));
  }
  tephra::kube::RestConfig cfg;
  cfg.server = server.url();
  cfg.qps = 0;
  auto client = tephra::kube::NewClient(cfg);
  if (!client.ok()) return 1;
  tephra::kube::ListOptions o;
  o.resource_version = from;
  o.timeout_seconds = 120;
  int got = 0;
  const tephra::api::ResourceInfo pods{"", "v1", "Pod", "pods", true};
  auto start = std::chrono::steady_clock::now();
  double cpu0 = CpuSeconds();
  tephra::core::Status s = (*client)->Watch(pods, "", o, [&](tephra::kube::WatchEvent&&) { return ++got < n; });
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double cpu = CpuSeconds() - cpu0;
  std::cout << "events=" << got << " status=" << s.ToString() << " wall_s=" << wall << " events_per_s=" << got / wall
            << " MB_per_s=" << bytes / wall / 1e6 << " client_thread_cpu_us_per_event=" << cpu * 1e6 / std::max(1, got)
            << "\n";
  return got == n && s.ok() ? 0 : 1;
}
