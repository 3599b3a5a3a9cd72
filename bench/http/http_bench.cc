// kube::HttpServer under load, with keep-alive clients (cpp-httplib's client, one connection per thread):
//   BM_Metrics/<clients>              GET /metrics of a registry of ~2,000 series (a busy scheduler's size)
//   BM_ExtenderFilter/<nodes>/<clients> POST <prefix>/filter with every node name (what a nodeCacheCapable
//                                     kube-scheduler sends), evaluated against a ClusterState of <nodes> nodes
// Each runs for a fixed time; counters: requests_per_s, p50_ms, p99_ms, errors.
//   BM_ClientTlsConnection            one GET over a new TLS connection of the REST client's transport
//                                     (what each of a role's API connections costs to open); process CPU per
//                                     connection, client and server side. main() calls PrepareProcessTls as
//                                     the roles do; `SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
//                                     http_bench --benchmark_filter=ClientTls` measures it without.
//   http_bench                                        (manual, bench/RESULTS.md "HTTP server")
//   ctest -L bench runs the small shapes with thresholds (bench/thresholds.yaml, section http)
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <benchmark/benchmark.h>
#include <httplib.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"
#include "tephra/kube/http_server.h"
#include "tephra/kube/log.h"
#include "tephra/kube/metrics.h"
#include "tephra/kube/transport.h"
#include "tephra/sched/cluster_state.h"
#include "tephra/scheduler/extender.h"

namespace {

using tephra::api::json;
namespace kube = tephra::kube;
namespace sched = tephra::sched;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

// Runs `clients` threads issuing `call` back to back for `seconds`; fills the counters.
template <typename Call>
void Drive(benchmark::State& state, int port, int clients, double seconds, Call call) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> errors{0};
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::vector<std::thread> ts;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < clients; ++i) {
    ts.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", port);
      c.set_keep_alive(true);
      // As Go's net package (kube-scheduler, the API server) does by default: without it, a POST's body
      // waits for the ACK of its headers (Nagle + delayed ACK, 40 ms a request).
      c.set_tcp_nodelay(true);
      c.set_read_timeout(10);
      while (!stop) {
        const auto a = std::chrono::steady_clock::now();
        if (!call(c)) ++errors;
        lat[static_cast<size_t>(i)].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : ts) t.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  state.SetIterationTime(elapsed);
  state.counters["requests_per_s"] = static_cast<double>(all.size()) / elapsed;
  state.counters["p50_ms"] = Percentile(all, 0.5);
  state.counters["p99_ms"] = Percentile(all, 0.99);
  state.counters["errors"] = static_cast<double>(errors.load());
}

void BM_Metrics(benchmark::State& state) {
  const int clients = static_cast<int>(state.range(0));
  (void)kube::log::Init("warn");
  kube::metrics::Registry reg;
  // ~2,000 series: per-queue gauges for 200 queues, a histogram family by action and plugin, counters.
  auto& g = reg.AddGauge("bench_queue_allocated", "Allocated per queue", {"queue_name", "resource"});
  for (int q = 0; q < 200; ++q)
    for (const char* r : {"cpu", "memory", "nvidia.com/gpu", "pods"}) g.With({"q" + std::to_string(q), r})->Set(q);
  auto& h = reg.AddHistogram("bench_latency_milliseconds", "Latency", {"plugin"},
                             kube::metrics::ExponentialBuckets(1, 2, 13));
  for (int p = 0; p < 60; ++p) h.With({"p" + std::to_string(p)})->Observe(p);
  auto& c = reg.AddCounter("bench_events_total", "Events", {"reason"});
  for (int i = 0; i < 200; ++i) c.With({"r" + std::to_string(i)})->Inc(i);
  kube::HttpServer srv;
  kube::InstallStandardEndpoints(srv, reg, {});
  if (!srv.Start("127.0.0.1:0").ok()) {
    state.SkipWithError("cannot start the server");
    return;
  }
  for (auto _ : state) {
    Drive(state, srv.port(), clients, 3.0, [](httplib::Client& cl) {
      auto r = cl.Get("/metrics");
      return r && r->status == 200 && !r->body.empty();
    });
  }
  srv.Stop();
}

void BM_ExtenderFilter(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int clients = static_cast<int>(state.range(1));
  (void)kube::log::Init("warn");
  sched::ClusterState st;
  const int gpu = *st.resources().Intern("nvidia.com/gpu");
  std::vector<std::string> names;
  for (int i = 0; i < nodes; ++i) {
    sched::NodeInfo n;
    n.name = "node-" + std::to_string(i);
    n.allocatable = sched::Resource::CpuMem(128000, 1024LL << 30).With(sched::kPods, 110).With(gpu, 8);
    n.labels = {{"tephra.io/leaf", "leaf-" + std::to_string(i / 32)}};
    st.UpsertNode(n);
    names.push_back(n.name);
  }
  auto ext = tephra::scheduler::Extender::Create(sched::SchedulerConf::Default(), sched::PluginRegistry::Builtin());
  if (!ext.ok()) {
    state.SkipWithError(ext.status().ToString().c_str());
    return;
  }
  std::mutex mu;  // the state's one owner, as the scheduler process's state thread is
  kube::HttpServer srv;
  tephra::scheduler::InstallExtenderEndpoints(
      srv, "/tephra", ext->get(),
      [&](const std::function<void(sched::ClusterState&)>& fn) {
        std::lock_guard l(mu);
        fn(st);
      },
      std::make_shared<kube::testing::FakeClient>());
  if (!srv.Start("127.0.0.1:0").ok()) {
    state.SkipWithError("cannot start the server");
    return;
  }
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "u1"}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", "4"}, {"nvidia.com/gpu", "1"}}}}}}})}}}};
  const std::string body = json({{"Pod", pod}, {"NodeNames", names}}).dump();
  for (auto _ : state) {
    Drive(state, srv.port(), clients, 4.0, [&](httplib::Client& cl) {
      auto r = cl.Post("/tephra/filter", body, "application/json");
      return r && r->status == 200;
    });
  }
  state.counters["request_bytes"] = static_cast<double>(body.size());
  srv.Stop();
}

// A self-signed certificate for 127.0.0.1 (its own CA), as PEM files.
bool WriteSelfSigned(const std::string& cert_path, const std::string& key_path) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  bool ok = X509_sign(x, key, EVP_sha256()) > 0;
  if (FILE* f = std::fopen(cert_path.c_str(), "w")) {
    ok = ok && PEM_write_X509(f, x) == 1;
    std::fclose(f);
  }
  if (FILE* f = std::fopen(key_path.c_str(), "w")) {
    ok = ok && PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    std::fclose(f);
  }
  X509_free(x);
  EVP_PKEY_free(key);
  return ok;
}

void BM_ClientTlsConnection(benchmark::State& state) {
  (void)kube::log::Init("warn");
  const auto dir = std::filesystem::temp_directory_path() / ("tephra-bench-tls-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cert = (dir / "tls.crt").string(), key = (dir / "tls.key").string();
  if (!WriteSelfSigned(cert, key)) {
    state.SkipWithError("cannot write a certificate");
    return;
  }
  kube::HttpServerOptions o;
  o.tls_cert_file = cert;
  o.tls_key_file = key;
  kube::HttpServer srv(o);
  srv.Handle("/healthz", [](const kube::ServerRequest&) { return kube::ServerResponse{200, "text/plain", "ok"}; });
  if (!srv.Start("127.0.0.1:0").ok()) {
    state.SkipWithError("server did not start");
    return;
  }
  tephra::kube::RestConfig cfg;
  cfg.server = "https://127.0.0.1:" + std::to_string(srv.port());
  cfg.ca_file = cert;
  int64_t errors = 0;
  for (auto _ : state) {
    // A new transport has an empty connection pool: the GET opens (and verifies) a new TLS connection.
    auto t = kube::NewCpprestTransport(cfg);
    if (!t.ok()) {
      ++errors;
      continue;
    }
    kube::HttpRequest req;
    req.path = "/healthz";
    auto r = (*t)->Do(req);
    if (!r.ok() || r->status != 200) ++errors;
  }
  state.counters["errors"] = static_cast<double>(errors);
  srv.Stop();
  std::filesystem::remove_all(dir);
}

BENCHMARK(BM_Metrics)->Arg(1)->Arg(8)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExtenderFilter)->Args({500, 8})->Args({5000, 8})->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ClientTlsConnection)->Iterations(30)->MeasureProcessCPUTime()->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  kube::PrepareProcessTls();  // as every role's main does
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
