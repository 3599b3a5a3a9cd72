// Informer memory harness: fills a Pod informer with 150,000 pods and a Node informer with 5,000 nodes from
// generated JSON (as a list would), then reports VmRSS growth from /proc/self/status. Exits 1 when the cache
// exceeds the budget (1 GiB), so ctest (label bench) fails on a regression.
//   informer_memory [pods] [nodes] [--keep-unknown | --strip=/json/pointer,/another]
// --strip removes the given JSON pointers from each pod before decode (through the informer's transform hook),
// to measure what a cache-specific transform saves.
#include <malloc.h>

#include <fstream>
#include <iostream>
#include <string>

#include "pod_fixture.h"
#include "tephra/api/core_v1.h"
#include "tephra/kube/informer.h"

namespace {

int64_t RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  int pods = argc > 1 ? std::stoi(argv[1]) : 150000;
  int nodes = argc > 2 ? std::stoi(argv[2]) : 5000;
  bool keep_unknown = argc > 3 && std::string(argv[3]) == "--keep-unknown";
  std::vector<tephra::api::json::json_pointer> strip;
  if (argc > 3 && std::string(argv[3]).rfind("--strip=", 0) == 0) {
    std::string list = std::string(argv[3]).substr(8);
    size_t start = 0;
    while (start < list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      strip.emplace_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  tephra::kube::InformerOptions opts;
  opts.drop_unknown_fields = !keep_unknown;
  tephra::kube::InformerOptions pod_opts = opts;
  if (!strip.empty()) {
    pod_opts.transform = [strip](tephra::api::json* j) {
      tephra::api::StripForCache(j);
      for (const auto& p : strip) {
        if (!j->contains(p)) continue;
        auto parent = p.parent_pointer();
        (*j)[parent].erase(p.back());
      }
    };
  }
  tephra::kube::Informer<tephra::api::Pod> pod_inf(nullptr, pod_opts);
  pod_inf.AddIndexer(tephra::kube::kIndexOwnerUid, tephra::kube::OwnerUidIndexer<tephra::api::Pod>());
  tephra::kube::Informer<tephra::api::Node> node_inf(nullptr, opts);
  const int64_t before = RssKiB();
  // One object at a time, as watch events arrive, so only the cache (not a whole list of JSON) is measured.
  for (int i = 0; i < pods; ++i) pod_inf.Apply(tephra::kube::WatchEvent::Type::kAdded, tephra::bench::MakePod(i));
  for (int i = 0; i < nodes; ++i) node_inf.Apply(tephra::kube::WatchEvent::Type::kAdded, tephra::bench::MakeNode(i));
  const int64_t after = RssKiB();
  // Heap bytes handed out vs. free inside the heap: separates what the cache holds from allocator slack.
  struct mallinfo2 mi = mallinfo2();
  std::cout << "heap_in_use_mib=" << mi.uordblks / 1048576.0 << " heap_free_mib=" << mi.fordblks / 1048576.0
            << " sizeof_pod=" << sizeof(tephra::api::Pod) << " sizeof_node=" << sizeof(tephra::api::Node) << "\n";
  const double mib = (after - before) / 1024.0;
  std::cout << "pods=" << pod_inf.Size() << " nodes=" << node_inf.Size() << " drop_unknown=" << !keep_unknown
            << " rss_before_mib=" << before / 1024.0 << " rss_after_mib=" << after / 1024.0
            << " cache_mib=" << mib << " bytes_per_pod=" << (after - before) * 1024.0 / std::max(1, pods + nodes)
            << "\n";
  if (static_cast<int>(pod_inf.Size()) != pods || static_cast<int>(node_inf.Size()) != nodes) {
    std::cerr << "decode failures: " << pod_inf.stats().decode_errors.load() << "\n";
    return 1;
  }
  return after / 1024.0 < 1024.0 ? 0 : 1;
}
