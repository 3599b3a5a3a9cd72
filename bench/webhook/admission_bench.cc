// The CPU cost of one admission decision, in process (no TLS, no sockets): Admitter::Serve on the bodies the
// load generator sends. What bounds the webhook's request rate per core; the end-to-end latency under load is
// bench/webhook/run.sh.
//   admission_bench                                 (bench/RESULTS.md, "admission webhook")
//   ctest -L bench runs it with thresholds (bench/thresholds.yaml, section webhook)
#include <set>
#include <string>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "bodies.h"
#include "tephra/api/lookup.h"
#include "tephra/webhooks/admission.h"

namespace {

void Serve(benchmark::State& state, const char* path, const std::string& body) {
  tephra::api::FakeClusterLookup lookup;
  lookup.AddQueue("root").AddQueue("default", "root");
  std::set<std::string> all;
  for (const auto& e : tephra::webhooks::Endpoints()) all.emplace(e.path);
  tephra::webhooks::Admitter admitter({}, &lookup, all);
  for (auto _ : state) {
    auto r = admitter.Serve(path, "application/json", body);
    if (r.status != 200) state.SkipWithError(("status " + std::to_string(r.status)).c_str());
    benchmark::DoNotOptimize(r);
  }
  state.counters["body_bytes"] = static_cast<double>(body.size());
  state.counters["per_core_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                        benchmark::Counter::kIsRate);
}

void BM_JobValidate100(benchmark::State& s) { Serve(s, "/jobs/validate", tephra::bench::ReviewBody("job100")); }
void BM_JobMutate100(benchmark::State& s) { Serve(s, "/jobs/mutate", tephra::bench::ReviewBody("job100")); }
void BM_JobMutate100Bare(benchmark::State& s) { Serve(s, "/jobs/mutate", tephra::bench::ReviewBody("job100bare")); }
void BM_PodValidate(benchmark::State& s) { Serve(s, "/pods/validate", tephra::bench::ReviewBody("pod")); }
void BM_PodOtherScheduler(benchmark::State& s) { Serve(s, "/pods/validate", tephra::bench::ReviewBody("podother")); }

BENCHMARK(BM_JobValidate100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_JobMutate100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_JobMutate100Bare)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PodValidate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PodOtherScheduler)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
