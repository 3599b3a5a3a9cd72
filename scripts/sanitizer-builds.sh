#!/usr/bin/env bash
# The sanitizer and libFuzzer builds of scripts/test.sh. Sourced, it defines their flags and the TSan test
# list; run as `sanitizer-builds.sh run <root> <jobs>`, it configures and builds the three trees (build-asan,
# build-tsan, build-fuzz) one after another. scripts/test.sh starts it in the background beside the e2e tier.
#
# Sanitizer builds compile only the test binaries they run, with line tables (symbolized reports). The ASan and
# TSan test builds use -O0: most of their compile time is the sanitizers' instrumentation, which -O1 then
# optimizes; -O0 builds about a third faster and the tests take seconds either way (docs/build.md). The
# libFuzzer build keeps -O1 because it runs for a fixed time, where speed is coverage.
SAN_FLAGS="-O0 -g1"
FUZZ_FLAGS="-O1 -g1"
# TSan needs every thread of the process instrumented; the client runtime and the scheduler process are where
# Tephra's own threads meet, and nodesim, the reconcilers with their own locks and ctl's wait add theirs. clang
# also checks the lock annotations (-Wthread-safety, an error with -Werror) of every file these tests compile,
# which is every file that declares a lock.
TSAN_TESTS=(kube_runtime_unit_test kube_runtime_integration_test scheduler_ext_unit_test nodesim_loop_test
  reconcilers_job_unit_test reconcilers_queue_unit_test reconcilers_jobflow_unit_test
  reconcilers_hypernode_unit_test ctl_unit_test)

sanitizer_builds() {
  local root=$1 jobs=$2 t=$SECONDS
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$root" -B "$root/build-asan" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$SAN_FLAGS" \
    -DTEPHRA_SANITIZER=address "${launcher[@]}" >/dev/null
  cmake --build "$root/build-asan" -j"$jobs" --target tephra_tests_unit tephra_tests_integration tephra_tests_fuzz
  echo "sanitizer-builds: ASan+UBSan $((SECONDS - t)) s"; t=$SECONDS
  CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-tsan" -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_FLAGS="$SAN_FLAGS" -DTEPHRA_SANITIZER=thread "${launcher[@]}" >/dev/null
  cmake --build "$root/build-tsan" -j"$jobs" --target "${TSAN_TESTS[@]}"
  echo "sanitizer-builds: TSan $((SECONDS - t)) s"; t=$SECONDS
  # Only the pure webhook library and its dependencies: the fuzz target is tests/fuzz/admission_fuzz_target.cc.
  CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_FLAGS="$FUZZ_FLAGS" -DTEPHRA_SANITIZER=address -DTEPHRA_LIBFUZZER=ON "${launcher[@]}" >/dev/null
  cmake --build "$root/build-fuzz" -j"$jobs" --target admission_fuzzer
  echo "sanitizer-builds: libFuzzer $((SECONDS - t)) s"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  [ "${1:-}" = run ] && [ $# -eq 3 ] || { echo "usage: $0 run <source-root> <jobs>" >&2; exit 2; }
  sanitizer_builds "$2" "$3"
fi
