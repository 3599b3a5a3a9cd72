#!/usr/bin/env bash
# Sets up a fresh Debian bookworm machine and runs every Tephra test tier with ctest:
#   deps (apt) -> control-plane binaries (cached in ~/.cache/tephra) -> build -> ctest.
# Usage: bash scripts/test.sh [extra ctest args, e.g. -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${TEPHRA_BUILD_DIR:-$ROOT/build}
JOBS=${TEPHRA_JOBS:-2}

bash scripts/deps.sh
# The e2e tier needs the real control plane; fetch/build it (a no-op when cached).
bash tests/e2e/fetch-binaries.sh >/dev/null

# ccache (keyed outside the checkout) makes a rebuild on a machine that has built once take seconds.
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD" -j"$JOBS"
cd "$BUILD"
# Summary line ("100% tests passed, 0 tests failed out of N") comes from ctest itself.
ctest --output-on-failure -j"$JOBS" "$@"
