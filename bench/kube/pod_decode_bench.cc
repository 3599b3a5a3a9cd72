// Pod JSON decode throughput (Google Benchmark): parse only, parse + typed decode, and the informer's whole
// per-object path (transform, decode, DropUnknown, cache insert + indexes).
#include <benchmark/benchmark.h>

#include "pod_fixture.h"
#include "tephra/api/core_v1.h"
#include "tephra/kube/informer.h"

namespace {

using tephra::api::json;

std::vector<std::string> Texts(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(tephra::bench::MakePod(i).dump());
  return out;
}

void BM_ParsePodJson(benchmark::State& state) {
  auto texts = Texts(256);
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const auto& t = texts[i++ % texts.size()];
    auto j = tephra::api::ParseJson(t);
    benchmark::DoNotOptimize(j);
    bytes += t.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParsePodJson);

void BM_ParseAndDecodePod(benchmark::State& state) {
  auto texts = Texts(256);
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const auto& t = texts[i++ % texts.size()];
    auto j = tephra::api::ParseJson(t);
    tephra::api::Pod pod;
    auto s = Decode(*j, &pod);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(pod);
    bytes += t.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseAndDecodePod);

void BM_InformerApplyPod(benchmark::State& state) {
  auto texts = Texts(4096);
  tephra::kube::InformerOptions opts;
  opts.drop_unknown_fields = true;
  tephra::kube::Informer<tephra::api::Pod> inf(nullptr, opts);
  inf.AddIndexer(tephra::kube::kIndexOwnerUid, tephra::kube::OwnerUidIndexer<tephra::api::Pod>());
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const auto& t = texts[i++ % texts.size()];
    auto j = tephra::api::ParseJson(t);
    // Alternate ADDED/MODIFIED with a fresh RV so every event is applied (none dropped as duplicate).
    (*j)["metadata"]["resourceVersion"] = std::to_string(i);
    inf.Apply(tephra::kube::WatchEvent::Type::kModified, std::move(*j));
    bytes += t.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_InformerApplyPod);

}  // namespace

BENCHMARK_MAIN();
