#!/usr/bin/env bash
# Sets up a fresh Debian bookworm machine and runs every Tephra test tier with ctest:
#   deps (apt) -> control-plane binaries (cached in ~/.cache/tephra) -> release build -> ctest (e2e, bench)
#   -> ASan+UBSan build, unit + integration + fuzz tiers -> TSan build (clang), runtime + scheduler process
#   -> libFuzzer build (clang, ASan+UBSan), the admission webhook's exchange for TEPHRA_FUZZ_SECONDS (60).
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
STAGES=()
stage_done() { STAGES+=("$(printf '%-28s %4d s' "$1" $((SECONDS - T0)))"); T0=$SECONDS; }
report() {
  echo "== stage times"
  for s in "${STAGES[@]}"; do echo "   $s"; done
}
trap report EXIT

bash scripts/deps.sh
# The e2e tier needs the real control plane; fetch/build it (a no-op when cached).
bash tests/e2e/fetch-binaries.sh >/dev/null
stage_done "deps + control plane"

# ccache (keyed outside the checkout) makes a rebuild on a machine that has built once take seconds.
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# The full run compiles each test binary once: the release build holds the product, the e2e and bench tiers
# and the layering probes; the unit, integration and fuzz tiers are compiled and run in the ASan+UBSan build
# below (stricter, and the same tests). With extra ctest args, or without the sanitizer stages, the release
# build holds every tier as a developer expects.
FAST_TIERS=ON
[ $# -eq 0 ] && [ "$SANITIZERS" != 0 ] && FAST_TIERS=OFF
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEPHRA_FAST_TIERS=$FAST_TIERS "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD" -j"$JOBS"
stage_done "build"
# Summary line ("100% tests passed, 0 tests failed out of N") comes from ctest itself.
(cd "$BUILD" && ctest --output-on-failure -j"$JOBS" "$@")
stage_done "ctest (release build)"

if [ "$SANITIZERS" = 0 ]; then
  echo "sanitizer stages skipped (TEPHRA_SANITIZERS=0)"
  exit 0
fi

# Sanitizer builds compile only the test binaries they run, at -O1 with line tables (fast to build, still
# symbolized reports). Reports are fatal: halt_on_error / -fno-sanitize-recover.
SAN_FLAGS="-O1 -g1"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cmake -S "$ROOT" -B "$ROOT/build-asan" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$SAN_FLAGS" \
  -DTEPHRA_SANITIZER=address "${LAUNCHER[@]}" >/dev/null
cmake --build "$ROOT/build-asan" -j"$JOBS" --target tephra_tests_unit tephra_tests_integration tephra_tests_fuzz
stage_done "build (ASan+UBSan)"
(cd "$ROOT/build-asan" && ctest --output-on-failure -j"$JOBS" -L 'unit|integration|fuzz' -E '^layering_|^bench_')
stage_done "ctest (ASan+UBSan)"

# TSan needs every thread of the process instrumented; the client runtime and the scheduler process are where
# Tephra's own threads meet. clang also checks the lock annotations (-Wthread-safety, an error with -Werror).
TSAN_TESTS=(kube_runtime_unit_test kube_runtime_integration_test scheduler_ext_unit_test)
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/tsan.supp}
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$ROOT/build-tsan" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$SAN_FLAGS" \
  -DTEPHRA_SANITIZER=thread "${LAUNCHER[@]}" >/dev/null
cmake --build "$ROOT/build-tsan" -j"$JOBS" --target "${TSAN_TESTS[@]}"
stage_done "build (TSan, clang)"
regex="^($(IFS='|'; echo "${TSAN_TESTS[*]}"))\$"
(cd "$ROOT/build-tsan" && ctest --output-on-failure -j"$JOBS" -R "$regex")
stage_done "ctest (TSan)"

# Coverage-guided fuzzing of the admission webhook's decoder and exchange (tests/fuzz/admission_fuzz_target.cc)
# under ASan+UBSan: only the pure webhook library and its dependencies are built. The corpus is copied so a
# run never writes into the checkout; a crash leaves its input in the build dir and fails the stage.
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$ROOT/build-fuzz" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$SAN_FLAGS" \
  -DTEPHRA_SANITIZER=address -DTEPHRA_LIBFUZZER=ON "${LAUNCHER[@]}" >/dev/null
cmake --build "$ROOT/build-fuzz" -j"$JOBS" --target admission_fuzzer
stage_done "build (libFuzzer, clang)"
corpus=$(mktemp -d)
cp "$ROOT"/tests/fuzz/corpus-admission/* "$corpus"/
(cd "$ROOT/build-fuzz" && ./tests/fuzz/admission_fuzzer -max_total_time="${TEPHRA_FUZZ_SECONDS:-60}" -max_len=65536 \
  -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 "$corpus" 2>"$ROOT/build-fuzz/admission_fuzzer.log") ||
  { tail -n 60 "$ROOT/build-fuzz/admission_fuzzer.log"; echo "admission_fuzzer found a failing input"; exit 1; }
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "$ROOT/build-fuzz/admission_fuzzer.log" || true
rm -rf "$corpus"
stage_done "libFuzzer (admission)"
