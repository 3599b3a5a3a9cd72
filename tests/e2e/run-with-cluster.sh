#!/usr/bin/env bash
# Runs one e2e test against a real control plane:
#   run-with-cluster.sh <test-cmd...>
#
# Two modes (docs/e2e.md):
#  - own cluster (default): brings a cluster up (cluster.sh) in a new temp dir, runs the test, tears it down.
#  - shared cluster: with TEPHRA_E2E_SHARED_DIR set (ctest sets it for every scenario that can share; the
#    cluster is started once by the e2e_cluster_up fixture, shared-cluster.sh), the test runs on that cluster
#    with a directory of its own for logs and role pid files, and afterwards everything it left (processes and
#    API objects) is removed, so the next scenario finds the cluster as it came up.
# Either way the test gets KUBECONFIG, KUBECTL, HELM, TEPHRA_BIN, TEPHRA_SOURCE_DIR, TEPHRA_E2E_* (cluster.sh
# env) and TEPHRA_E2E_LOG_DIR. On failure the logs are kept and the tail of each is printed.
#
# Inputs (environment): TEPHRA_BIN (the built `tephra`; ctest passes $<TARGET_FILE:tephra>),
# TEPHRA_SOURCE_DIR (default: this checkout), TEPHRA_E2E_TEST_TIMEOUT (seconds the test itself may take,
# default 480: kept below the ctest TIMEOUT so the teardown below still runs when a test hangs),
# TEPHRA_E2E_SHARED_DIR (see above), TEPHRA_E2E_NAME (the scenario's name, for its log directory).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib/cluster_lib.sh"
[ $# -ge 1 ] || { echo "usage: $0 <test-cmd...>" >&2; exit 2; }

export TEPHRA_SOURCE_DIR=${TEPHRA_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
export TEPHRA_BIN=${TEPHRA_BIN:-}
if [ -z "$TEPHRA_BIN" ] || [ ! -x "$TEPHRA_BIN" ]; then
  echo "run-with-cluster: TEPHRA_BIN='$TEPHRA_BIN' is not an executable (build the 'tephra' target)" >&2
  exit 1
fi

SHARED=
if [ -n "${TEPHRA_E2E_SHARED_DIR:-}" ]; then
  # Which of the shared clusters: the one ctest allocated to this scenario ("id:b,slots:1"), else the first.
  # Scenarios on one cluster never overlap: the lock below holds even when ctest was run without the
  # resource spec (then every scenario queues for cluster a).
  id=$(sed -n 's/^id:\([a-z0-9]*\),.*/\1/p' <<<"${CTEST_RESOURCE_GROUP_0_E2E_CLUSTER:-}")
  SHARED=$TEPHRA_E2E_SHARED_DIR/${id:-a}
  exec 8>"$SHARED.lock"
  flock 8
fi
if [ -n "$SHARED" ]; then
  shared_cluster_usable "$SHARED" ||
    { echo "run-with-cluster: the shared cluster in $SHARED is not up (ctest starts it with the e2e_cluster_up fixture)" >&2; exit 1; }
  mkdir -p "$SHARED/tests"
  # The scenario's own directory: logs/ and run/ (pid files of what it starts detached), never the cluster's.
  DIR=$(mktemp -d "$SHARED/tests/${TEPHRA_E2E_NAME:-test}.XXXXXX")
  mkdir -p "$DIR/logs" "$DIR/run"
  # Whatever the last scenario left is removed first too: a scenario killed by ctest's timeout runs no trap.
  scenario_reset_if_needed "$SHARED" >"$DIR/logs/reset-before.log" 2>&1 ||
    { cat "$DIR/logs/reset-before.log" >&2; echo "run-with-cluster: could not reset the shared cluster" >&2; exit 1; }
else
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/tephra-e2e.XXXXXX")
fi

# A watchdog in its own session: if this wrapper is SIGKILLed (e.g. by ctest on timeout) no trap runs, and
# the daemons (each in its own session) would outlive the test. The watchdog notices and stops them: the whole
# cluster in own-cluster mode, only the scenario's processes on a shared cluster (the next scenario's reset
# removes its objects).
# Its output goes to a file so ctest, which waits for EOF on the test's stdout, does not wait for it.
setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; bash "$2" down "$3"' _ \
  $$ "$HERE/cluster.sh" "$DIR" </dev/null >"$DIR/watchdog.log" 2>&1 8>&- &

finish() {
  local rc=$?
  trap - EXIT INT TERM
  bash "$HERE/cluster.sh" down "$DIR" 2>/dev/null || true
  # Every scenario is also a safety test (issue 40): a bind the scheduler's guard refused is a scheduler bug,
  # whatever the scenario itself checked. The guard logs each refusal with its whole decision.
  local refused
  refused=$(grep -rl 'bind refused: the decision breaks a hard constraint' "$DIR/logs" 2>/dev/null || true)
  if [ -n "$refused" ]; then
    echo "run-with-cluster: the bind guard refused a bind (a scheduler bug); see:" >&2
    grep -rh 'bind refused: the decision breaks a hard constraint' "$DIR/logs" | head -n 5 >&2
    [ "$rc" -ne 0 ] || rc=1
  fi
  if [ -n "$SHARED" ]; then
    if ! scenario_reset "$SHARED" >"$DIR/logs/reset-after.log" 2>&1; then
      cat "$DIR/logs/reset-after.log" >&2
      echo "run-with-cluster: the scenario's objects could not be removed from the shared cluster" >&2
      [ "$rc" -ne 0 ] || rc=1
    fi
  fi
  if [ "$rc" -ne 0 ]; then
    echo "run-with-cluster: test failed (rc=$rc); logs kept in $DIR/logs" >&2
    local f
    for f in "$DIR"/logs/*.log; do
      [ -f "$f" ] || continue
      case $f in */audit.log | */reset-*.log) continue ;; esac   # audit: one JSON line per request, too noisy
      echo "----- tail of $f -----" >&2
      tail -n 25 "$f" >&2
    done
    [ -z "$SHARED" ] || echo "run-with-cluster: the shared control plane's own logs are in $SHARED/logs" >&2
  elif [ "${TEPHRA_E2E_KEEP:-0}" != 1 ]; then
    rm -rf "$DIR"
  else
    echo "run-with-cluster: kept $DIR" >&2
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

if [ -n "$SHARED" ]; then
  eval "$(bash "$HERE/cluster.sh" env "$SHARED")"
  # This scenario's part of the audit log starts here (lib/common.sh: audit_log).
  TEPHRA_E2E_AUDIT_OFFSET=$(stat -c %s "$TEPHRA_E2E_AUDIT_LOG" 2>/dev/null || echo 0)
  export TEPHRA_E2E_AUDIT_OFFSET
else
  bash "$HERE/cluster.sh" up "$DIR"
  eval "$(bash "$HERE/cluster.sh" env "$DIR")"
fi
# Test-specific background processes (tephra roles) keep their logs in the scenario's own directory.
export TEPHRA_E2E_LOG_DIR=$DIR/logs
export TEPHRA_E2E_RUN_DIR=$DIR/run

rc=0
# `timeout` makes itself a process-group leader; its pid goes into run/ so that `cluster.sh down` (from the
# trap or from the watchdog) also stops the test and anything it started, if this wrapper dies first.
timeout --kill-after=10 "${TEPHRA_E2E_TEST_TIMEOUT:-480}" "$@" 8>&- &
echo $! >"$DIR/run/test.pid"
wait $! || rc=$?
# test.pid stays: `cluster.sh down` in finish() stops whatever the test left running in its process group.
[ "$rc" -ne 124 ] || echo "run-with-cluster: test timed out after ${TEPHRA_E2E_TEST_TIMEOUT:-480}s" >&2
exit "$rc"
