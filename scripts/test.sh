#!/usr/bin/env bash
# Sets up a fresh Debian bookworm machine and runs every Tephra test tier with ctest:
#   deps (apt) -> control-plane binaries (cached in ~/.cache/tephra) -> release build
#   -> ctest: e2e, layering, chart, image; meanwhile, in the background at the lowest priority, the ASan+UBSan,
#      TSan (clang) and libFuzzer (clang) builds (scripts/sanitizer-builds.sh)
#   -> ctest: the bench tier, on a quiet machine -> ASan+UBSan: unit + integration + fuzz tiers
#   -> TSan: runtime + scheduler process -> libFuzzer: the admission webhook's exchange for TEPHRA_FUZZ_SECONDS (60).
# Usage: bash scripts/test.sh [extra ctest args for the main run, e.g. -L unit]
#   Without args: the release build runs the e2e, bench and layering tests and the ASan+UBSan build runs the
#   unit, integration and fuzz tiers (each test binary compiled once). With args (or TEPHRA_SANITIZERS=0) the
#   release build holds and runs every tier.
# Env:   TEPHRA_SANITIZERS=0 skips the sanitizer and libFuzzer stages (quick local runs); TEPHRA_BUILD_DIR, TEPHRA_JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${TEPHRA_BUILD_DIR:-$ROOT/build}
JOBS=${TEPHRA_JOBS:-2}
SANITIZERS=${TEPHRA_SANITIZERS:-1}

T0=$SECONDS
T_START=$SECONDS
STAGES=()
stage_done() { STAGES+=("$(printf '%-60s %5d s' "$1" $((SECONDS - T0)))"); T0=$SECONDS; }
# Every ctest run's output is kept (build-logs/ctest-<stage>.log) so the report can name the slowest tests.
LOGS=$ROOT/build-logs
mkdir -p "$LOGS"
rm -f "$LOGS"/ctest-*.log
# The resource spec hands each e2e scenario one of the shared control planes (tests/e2e/CMakeLists.txt).
run_ctest() {
  local dir=$1 tag=$2; shift 2
  (cd "$dir" && ctest --output-on-failure --resource-spec-file "$ROOT/tests/e2e/clusters.json" "$@") 2>&1 |
    tee "$LOGS/ctest-$tag.log"
  return "${PIPESTATUS[0]}"
}
report() {
  # The report must never change the run's verdict: keep the status the run ended with (passed as $1 by a
  # trap that runs other commands first, which would reset $?).
  local rc=${1:-$?}
  set +e
  echo "== stage times"
  for s in "${STAGES[@]}"; do echo "   $s"; done
  printf '   %-60s %5d s\n' "total" $((SECONDS - T_START))
  # ctest's result lines: "  3/53 Test  #7: e2e_smoke .......   Passed   25.31 sec"
  if ls "$LOGS"/ctest-*.log >/dev/null 2>&1; then
    echo "== slowest ten tests"
    for f in "$LOGS"/ctest-*.log; do
      awk -v stage="$(basename "$f" .log | sed 's/^ctest-//')" \
        '/ Test +#[0-9]+: / && $(NF) == "sec" { for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) name = $(i + 1);
                                                printf "%8.1f s  %-40s %s\n", $(NF - 1), name, stage }' "$f"
    # sed reads to the end (head would close the pipe early and sort would die of SIGPIPE: exit 141).
    done | sort -rn | sed -n '1,10s/^/   /p'
  fi
  exit "$rc"
}
trap report EXIT

bash scripts/deps.sh
# The e2e tier needs the real control plane; fetch/build it (a no-op when cached).
bash tests/e2e/fetch-binaries.sh >/dev/null
stage_done "deps + control plane"

# ccache (keyed outside the checkout) makes a rebuild on a machine that has built once take seconds. Paths are
# hashed relative to the checkout, so a fresh clone at another path (as CI makes) still hits the cache.
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
# The full run compiles each test binary once: the release build holds the product, the e2e and bench tiers
# and the layering probes; the unit, integration and fuzz tiers are compiled and run in the ASan+UBSan build
# below (stricter, and the same tests). With extra ctest args, or without the sanitizer stages, the release
# build holds every tier as a developer expects.
FAST_TIERS=ON
[ $# -eq 0 ] && [ "$SANITIZERS" != 0 ] && FAST_TIERS=OFF
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEPHRA_FAST_TIERS=$FAST_TIERS "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD" -j"$JOBS"
stage_done "build"

if [ "$SANITIZERS" = 0 ]; then
  # Summary line ("100% tests passed, 0 tests failed out of N") comes from ctest itself.
  run_ctest "$BUILD" release -j"$JOBS" "$@"
  stage_done "ctest (release build)"
  echo "sanitizer stages skipped (TEPHRA_SANITIZERS=0)"
  exit 0
fi

# The e2e tier runs one control plane at a time and spends much of its wall time waiting on it (a cluster
# coming up, a controller's resync, a CronJob's minute), so the sanitizer builds run beside it in the
# background at the lowest priority: in their own session with autogroup nice 19 (with autogroups the kernel
# shares the CPU between sessions first; plain nice only orders processes within one session), and nice 19
# for kernels without autogroups. The bench tier, which measures time, runs after them on a quiet machine.
# Their output goes to build-sanitizers.log, whose tail is printed if they fail.
source "$ROOT/scripts/sanitizer-builds.sh"
SAN_LOG=$ROOT/build-sanitizers.log
setsid -w bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 bash "$0" run "$1" "$2"' \
  "$ROOT/scripts/sanitizer-builds.sh" "$ROOT" "$JOBS" >"$SAN_LOG" 2>&1 </dev/null &
SAN_PID=$!
trap 'st=$?; kill -- -"$SAN_PID" 2>/dev/null || true; report "$st"' EXIT

if [ $# -eq 0 ]; then
  run_ctest "$BUILD" release -j"$JOBS" -LE '^bench$'
  stage_done "ctest (release: all but bench; sanitizer builds beside it)"
fi
rc=0; wait "$SAN_PID" || rc=$?
trap report EXIT
grep '^sanitizer-builds:' "$SAN_LOG" || true
if [ "$rc" -ne 0 ]; then
  tail -n 80 "$SAN_LOG"; echo "sanitizer builds failed (rc=$rc); full log: $SAN_LOG"; exit 1
fi
stage_done "sanitizer builds (what was left)"
if [ $# -eq 0 ]; then
  run_ctest "$BUILD" bench -j"$JOBS" -L '^bench$'
  stage_done "ctest (release: bench)"
else
  # A selection from the command line may hold timing tests: it runs once the builds are done, like the bench tier.
  run_ctest "$BUILD" release -j"$JOBS" "$@"
  stage_done "ctest (release build)"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/tests/lsan.supp}
run_ctest "$ROOT/build-asan" asan -j"$JOBS" -L 'unit|integration|fuzz' -E '^layering_|^bench_'
stage_done "ctest (ASan+UBSan)"

export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/tsan.supp}
regex="^($(IFS='|'; echo "${TSAN_TESTS[*]}"))\$"
run_ctest "$ROOT/build-tsan" tsan -j"$JOBS" -R "$regex"
stage_done "ctest (TSan)"

# The fuzz corpus is copied so a run never writes into the checkout; a crash leaves its input in the build dir
# and fails the stage.
corpus=$(mktemp -d)
cp "$ROOT"/tests/fuzz/corpus-admission/* "$corpus"/
(cd "$ROOT/build-fuzz" && ./tests/fuzz/admission_fuzzer -max_total_time="${TEPHRA_FUZZ_SECONDS:-60}" -max_len=65536 \
  -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 "$corpus" 2>"$ROOT/build-fuzz/admission_fuzzer.log") ||
  { tail -n 60 "$ROOT/build-fuzz/admission_fuzzer.log"; echo "admission_fuzzer found a failing input"; exit 1; }
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "$ROOT/build-fuzz/admission_fuzzer.log" || true
rm -rf "$corpus"
stage_done "libFuzzer (admission)"
