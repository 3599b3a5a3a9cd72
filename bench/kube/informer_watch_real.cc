// Informer watch throughput from a real kube-apiserver (run inside tests/e2e/run-with-cluster.sh; reads
// $KUBECONFIG):
//   kube_informer_watch_real [objects] [writer-threads]
// 1. Creates <objects> ConfigMaps of ~2.6 KB (about a Volcano pod's size) in a fresh namespace, noting the
//    resourceVersion before the first create. The 1.20 watch cache grows to hold events younger than 75 s, so
//    create fast enough (8 writers by default) for all of them to stay replayable.
// 2. Starts an Informer whose List is answered with an empty list at that old resourceVersion (a client
//    wrapper), so its first watch replays all <objects> ADDED events in one burst: the full informer path
//    (TLS, chunked stream, line split, JSON parse, decode, cache insert, index, handler) at the rate the real
//    server streams them, not the rate a writer can produce them.
// Reports events/s (wall) and process CPU µs per event during the replay (the writers have finished).
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <thread>
#include <vector>

#include "tephra/kube/config.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/transport.h"

namespace tephra::kube {
namespace {

const ResourceInfo kNamespaces{"", "v1", "Namespace", "namespaces", false};
const ResourceInfo kConfigMaps{"", "v1", "ConfigMap", "configmaps", true};

struct ConfigMap {
  static const ResourceInfo& Resource() { return kConfigMaps; }
  api::ObjectMeta metadata;
  std::map<std::string, std::string> data;
  json extra;
};
Status Decode(const json& j, ConfigMap* out) {
  api::FieldReader r(j, &out->extra);
  r.Get("metadata", &out->metadata).Get("data", &out->data);
  return r.status();
}

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Answers the informer's List with nothing at a chosen resourceVersion; everything else goes to the server.
class ReplayFromClient final : public Client {
 public:
  ReplayFromClient(ClientPtr inner, std::string rv) : inner_(std::move(inner)), rv_(std::move(rv)) {}
  StatusOr<json> Get(const ResourceInfo& r, const std::string& ns, const std::string& n, const std::string& s) override {
    return inner_->Get(r, ns, n, s);
  }
  StatusOr<ObjectList> List(const ResourceInfo&, const std::string&, const ListOptions&) override {
    ObjectList l;
    l.metadata.resource_version = rv_;
    return l;
  }
  StatusOr<json> Create(const ResourceInfo& r, const std::string& ns, const json& o, const std::string& s) override {
    return inner_->Create(r, ns, o, s);
  }
  StatusOr<json> Update(const ResourceInfo& r, const std::string& ns, const json& o, const std::string& s) override {
    return inner_->Update(r, ns, o, s);
  }
  StatusOr<json> Patch(const ResourceInfo& r, const std::string& ns, const std::string& n, PatchType t, const json& p,
                       const std::string& s) override {
    return inner_->Patch(r, ns, n, t, p, s);
  }
  Status Delete(const ResourceInfo& r, const std::string& ns, const std::string& n, const DeleteOptions& o) override {
    return inner_->Delete(r, ns, n, o);
  }
  Status Bind(const std::string& ns, const std::string& p, const std::string& u, const std::string& n,
              const std::map<std::string, std::string>& a) override {
    return inner_->Bind(ns, p, u, n, a);
  }
  Status Evict(const std::string& ns, const std::string& p, const DeleteOptions& o) override {
    return inner_->Evict(ns, p, o);
  }
  Status Watch(const ResourceInfo& r, const std::string& ns, const ListOptions& o,
               const std::function<bool(WatchEvent&&)>& h) override {
    return inner_->Watch(r, ns, o, h);
  }
  StatusOr<json> Raw(const std::string& m, const std::string& p, const json* b, const std::string& c) override {
    return inner_->Raw(m, p, b, c);
  }

 private:
  ClientPtr inner_;
  std::string rv_;
};

int Main(int n, int writers) {
  auto cfg = LoadConfig();
  if (!cfg.ok()) {
    std::cerr << cfg.status() << "\n";
    return 1;
  }
  cfg->qps = 0;  // no client-side limit: the server is what is measured
  auto client = NewClient(*cfg);
  if (!client.ok()) {
    std::cerr << client.status() << "\n";
    return 1;
  }
  ClientPtr c = *client;
  const std::string ns = "watch-bench-" + std::to_string(::getpid());
  auto created_ns = c->Create(kNamespaces, "", json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  if (!created_ns.ok()) {
    std::cerr << created_ns.status() << "\n";
    return 1;
  }
  const std::string from_rv = (*created_ns)["metadata"]["resourceVersion"].get<std::string>();
  const std::string payload(2400, 'x');
  std::atomic<int> next{0}, failures{0};
  auto w0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < writers; ++t)
    ts.emplace_back([&] {
      for (int i; (i = next++) < n;) {
        json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                   {"metadata", {{"name", "cm-" + std::to_string(i)}, {"labels", {{"bench", "watch"}}}}},
                   {"data", {{"payload", payload}}}};
        if (!c->Create(kConfigMaps, ns, cm).ok()) failures++;
      }
    });
  for (auto& t : ts) t.join();
  const double write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::cout << "created=" << n - failures.load() << " in " << write_s << " s (" << (n - failures.load()) / write_s
            << " creates/s, " << writers << " writers)\n";
  if (failures.load() > 0) return 1;

  InformerOptions io;
  io.namespace_ = ns;
  io.label_selector = "bench=watch";  // not kube-root-ca.crt, which the controller manager adds
  Informer<ConfigMap> inf(std::make_shared<ReplayFromClient>(c, from_rv), io);
  std::atomic<int> got{0};
  std::atomic<int64_t> done_ns{0};
  const auto r0 = std::chrono::steady_clock::now();
  inf.AddEventHandler({[&](const auto&) {
                         if (++got == n)
                           done_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now() - r0).count();
                       },
                       nullptr, nullptr});
  const double cpu0 = ProcessCpuSeconds();
  inf.Start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (done_ns.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double cpu = ProcessCpuSeconds() - cpu0;
  const double wall = done_ns.load() / 1e9;
  inf.Stop();
  const auto& st = inf.stats();
  std::cout << "replayed=" << got.load() << " wall_s=" << wall << " events_per_s=" << (wall > 0 ? got / wall : 0)
            << " process_cpu_us_per_event=" << cpu * 1e6 / std::max(1, got.load()) << " lists=" << st.lists.load()
            << " relists_after_410=" << st.relists_after_410.load() << " watches=" << st.watches.load() << "\n";
  (void)c->Delete(kNamespaces, "", ns);
  // A 410 here means the watch cache dropped part of the burst (writers too slow): not a valid measurement.
  return got.load() == n && st.relists_after_410.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tephra::kube

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::stoi(argv[1]) : 10000;
  const int writers = argc > 2 ? std::stoi(argv[2]) : 8;
  return tephra::kube::Main(n, writers);
}
