#!/usr/bin/env bash
# Runs one e2e test against a fresh control plane:
#   run-with-cluster.sh <test-cmd...>
# Brings a cluster up (cluster.sh) in a new temp dir, exports KUBECONFIG, KUBECTL, HELM, TEPHRA_BIN,
# TEPHRA_SOURCE_DIR and TEPHRA_E2E_* (see cluster.sh env), runs the test, tears the cluster down.
# On failure the dir is kept and the tail of every log is printed; on success it is removed unless
# TEPHRA_E2E_KEEP=1.
#
# Inputs (environment): TEPHRA_BIN (the built `tephra`; ctest passes $<TARGET_FILE:tephra>),
# TEPHRA_SOURCE_DIR (default: this checkout), TEPHRA_E2E_TEST_TIMEOUT (seconds the test itself may take,
# default 480: kept below the ctest TIMEOUT so the teardown below still runs when a test hangs).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 <test-cmd...>" >&2; exit 2; }

export TEPHRA_SOURCE_DIR=${TEPHRA_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
export TEPHRA_BIN=${TEPHRA_BIN:-}
if [ -z "$TEPHRA_BIN" ] || [ ! -x "$TEPHRA_BIN" ]; then
  echo "run-with-cluster: TEPHRA_BIN='$TEPHRA_BIN' is not an executable (build the 'tephra' target)" >&2
  exit 1
fi

DIR=$(mktemp -d "${TMPDIR:-/tmp}/tephra-e2e.XXXXXX")
# A watchdog in its own session: if this wrapper is SIGKILLed (e.g. by ctest on timeout) no trap runs, and
# the daemons (each in its own session) would outlive the test. The watchdog notices and tears them down.
# Its output goes to a file so ctest, which waits for EOF on the test's stdout, does not wait for it.
setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; bash "$2" down "$3"' _ \
  $$ "$HERE/cluster.sh" "$DIR" </dev/null >"$DIR/watchdog.log" 2>&1 &

finish() {
  local rc=$?
  trap - EXIT INT TERM
  bash "$HERE/cluster.sh" down "$DIR" || true
  if [ "$rc" -ne 0 ]; then
    echo "run-with-cluster: test failed (rc=$rc); logs kept in $DIR/logs" >&2
    local f
    for f in "$DIR"/logs/*.log; do
      [ -f "$f" ] || continue
      case $f in */audit.log) continue ;; esac   # one JSON line per request: too noisy to print
      echo "----- tail of $f -----" >&2
      tail -n 25 "$f" >&2
    done
  elif [ "${TEPHRA_E2E_KEEP:-0}" != 1 ]; then
    rm -rf "$DIR"
  else
    echo "run-with-cluster: kept $DIR" >&2
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

bash "$HERE/cluster.sh" up "$DIR"
eval "$(bash "$HERE/cluster.sh" env "$DIR")"
# Test-specific background processes (tephra roles) should keep their logs next to the cluster's.
export TEPHRA_E2E_LOG_DIR=$DIR/logs

rc=0
# `timeout` makes itself a process-group leader; its pid goes into run/ so that `cluster.sh down` (from the
# trap or from the watchdog) also stops the test and anything it started, if this wrapper dies first.
timeout --kill-after=10 "${TEPHRA_E2E_TEST_TIMEOUT:-480}" "$@" &
echo $! >"$DIR/run/test.pid"
wait $! || rc=$?
rm -f "$DIR/run/test.pid"
[ "$rc" -ne 124 ] || echo "run-with-cluster: test timed out after ${TEPHRA_E2E_TEST_TIMEOUT:-480}s" >&2
exit "$rc"
