#!/usr/bin/env bash
# e2e: `vcctl` (a symlink to tephra) as a CI pipeline uses it, against nodesim (2 nodes x 4 cpu), the real
# scheduler and the controller:
#  1. job run -f + job wait --for=Completed exits 0; job list / pod list columns, -o json;
#  2. a job whose pods fail beyond its retry policy: job wait exits 3;
#  3. a gang larger than the cluster with --timeout 5s exits 5; a missing job exits 6; an unknown flag exits 2;
#  4. job suspend -> Aborted (wait --for=terminal exits 4), resume -> Running again, delete -> gone (exit 6);
#  5. queue create / operate close, open, update -w 3 / list (parsed with awk) / get / delete.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=stack.sh
source "$HERE/stack.sh"   # lib/common.sh, LOGS, WORK (removed on exit), k, vcctl, ctl_stack_up
# expect_rc <rc> <cmd...>: runs cmd, fails unless it exits with rc; its stdout+stderr go to $WORK/out.
expect_rc() {
  local want=$1 rc=0; shift
  "$@" >"$WORK/out" 2>&1 || rc=$?
  [ "$rc" -eq "$want" ] || { cat "$WORK/out" >&2; fail "'$*' exited $rc, want $want"; }
}

ctl_stack_up

# job <name> <replicas> <run-seconds> <exit-code> [maxRetry] [policies-flow-yaml] [cpu]
job() {
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  schedulerName: volcano
  queue: default
  minAvailable: $2
  maxRetry: ${5:-3}
  policies: ${6:-[]}
  tasks:
  - name: w
    replicas: $2
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "$3", tephra.io/sim-exit-code: "$4"}}
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox, resources: {requests: {cpu: "${7:-1}"}}}]
YAML
}

# ------------------------------------------------------------------------------------------------ 1. success
job ok 2 2 0 >"$WORK/ok.yaml"
[ "$(vcctl job run -f "$WORK/ok.yaml")" = "run job ok successfully" ] || fail "job run -f output"
expect_rc 0 vcctl job wait ok --for=Completed --timeout 120s --follow
grep -q "Completed" "$WORK/out" || fail "--follow printed no Completed line: $(cat "$WORK/out")"
vcctl job list >"$WORK/list"
read -r -a head <"$WORK/list"
[ "${head[*]}" = "Name Creation Phase JobType Replicas Min Pending Running Succeeded Failed Unknown RetryCount" ] ||
  fail "job list header: ${head[*]}"
row=$(awk '$1 == "ok" {print $3, $4, $5, $9}' "$WORK/list")
[ "$row" = "Completed Batch 2 2" ] || fail "job list row for ok: '$row' ($(cat "$WORK/list"))"
[ "$(awk '$1 == "ok" {print $2}' "$WORK/list")" = "$(date -u +%Y-%m-%d)" ] || fail "Creation column: $(cat "$WORK/list")"
vcctl job list --all-namespaces | awk 'NR == 1 && $1 != "Namespace" {exit 1} NR > 1 && $2 == "ok" && $1 != "default" {exit 1}' ||
  fail "job list --all-namespaces"
vcctl job list -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["kind"]=="List" and any(i["metadata"]["name"]=="ok" and i["kind"]=="Job" for i in d["items"]), d' ||
  fail "job list -o json"
[ "$(vcctl job view -N ok -o yaml | awk '/^kind:/ {print $2}')" = Job ] || fail "job view -o yaml"
vcctl job view -N ok | grep -q "^Name:       	ok" || fail "job view"
vcctl pod list -j ok >"$WORK/pods"
[ "$(head -1 "$WORK/pods" | awk '{print $1, $2, $3, $4, $5}')" = "Name Ready Status Restart Age" ] || fail "pod list header"
[ "$(awk 'NR > 1 && $3 == "Completed"' "$WORK/pods" | wc -l)" -eq 2 ] || fail "pod list: $(cat "$WORK/pods")"
note "1. job run -f / wait Completed (0) / list / view / pod list"

# ------------------------------------------------------------------------------------------------ 2. failure
job bad 1 1 3 1 '[{exitCode: 3, action: RestartJob}]' >"$WORK/bad.yaml"
vcctl job run -f "$WORK/bad.yaml" >/dev/null
expect_rc 3 vcctl job wait bad --for=Completed --timeout 240s
grep -q "Failed" "$WORK/out" || fail "wait on a failed job does not say Failed: $(cat "$WORK/out")"
note "2. failing job: wait exits 3"

# -------------------------------------------------------------------------------- 3. timeout, not found, usage
job huge 4 600 0 3 '[]' 3 >"$WORK/huge.yaml"   # 4 x 3 cpu on 2 x 4 cpu: the gang never fits
vcctl job run -f "$WORK/huge.yaml" -n default >/dev/null
start=$(date +%s)
expect_rc 5 vcctl job wait huge --timeout 5s
[ $(( $(date +%s) - start )) -lt 30 ] || fail "--timeout 5s took $(( $(date +%s) - start ))s"
expect_rc 6 vcctl job wait nope --timeout 30s
grep -q "job default/nope not found" "$WORK/out" || fail "not-found message: $(cat "$WORK/out")"
expect_rc 2 vcctl job list --no-such-flag
expect_rc 2 vcctl job wait huge --for=Sideways
vcctl job delete -N huge >/dev/null
note "3. gang too big: 5; missing: 6; usage: 2"

# ------------------------------------------------------------------------------ 4. suspend / resume / delete
job long 2 600 0 >"$WORK/long.yaml"
vcctl job run -f "$WORK/long.yaml" >/dev/null
expect_rc 0 vcctl job wait long --for=Running --timeout 120s
vcctl job suspend -N long
expect_rc 4 vcctl job wait long --for=terminal --timeout 120s
[ "$(k get vcjob long -o jsonpath='{.status.state.phase}')" = Aborted ] || fail "suspended job not Aborted"
vcctl job resume -N long
not_aborted() { [ "$(k get vcjob long -o jsonpath='{.status.state.phase}')" != Aborted ]; }
wait_until "long leaves Aborted" 60 not_aborted || fail "resume did not take effect"
expect_rc 0 vcctl job wait long --for=Running --timeout 150s
[ "$(vcctl job delete -N long)" = "delete job long successfully" ] || fail "job delete output"
expect_rc 6 vcctl job wait long --timeout 60s
gone() { ! k get vcjob long >/dev/null 2>&1; }
wait_until "long gone" 60 gone || fail "deleted job still there"
note "4. suspend (4) / resume (Running, 0) / delete (6)"

# ---------------------------------------------------------------------------------------------------- 5. queues
qfield() { vcctl queue list | awk -v q="$1" -v c="$2" '$1 == q {print $c}'; }
qfield_is() { [ "$(qfield "$1" "$2")" = "$3" ]; }
vcctl queue create -n ci -w 2
vcctl queue list | head -1 | grep -q '^Name                     Weight  State   Parent  Inqueue Pending Running Unknown Completed' ||
  fail "queue list header: $(vcctl queue list | head -1)"
wait_until "queue ci Open" 60 qfield_is ci 3 Open || fail "queue ci not Open: $(vcctl queue list)"
[ "$(qfield ci 2)" = 2 ] || fail "queue ci weight"
vcctl queue operate -n ci -a close
wait_until "queue ci Closed" 60 qfield_is ci 3 Closed || fail "queue ci not Closed: $(vcctl queue list)"
vcctl queue operate -n ci -a open
wait_until "queue ci Open again" 60 qfield_is ci 3 Open || fail "queue ci not reopened"
vcctl queue operate -n ci -a update -w 3
[ "$(vcctl queue get -n ci | awk 'NR == 2 {print $1, $2}')" = "ci 3" ] || fail "queue get after update: $(vcctl queue get -n ci)"
# vcctl counts the queue's PodGroups per phase client-side: its five columns must add up to the PodGroups of
# queue default in those phases as kubectl lists them (finished jobs' PodGroups may already be gone).
pgs_in_default() {
  k get podgroups -A -o jsonpath='{range .items[*]}{.spec.queue}{" "}{.status.phase}{"\n"}{end}' |
    awk '$1 == "default" && $2 ~ /^(Inqueue|Pending|Running|Unknown|Completed)$/' | wc -l
}
default_counted() {
  [ "$(vcctl queue get -n default | awk 'NR == 2 {print $5 + $6 + $7 + $8 + $9}')" = "$(pgs_in_default)" ]
}
wait_until "vcctl's default queue counts match the PodGroups" 30 default_counted ||
  fail "default queue podgroup counts: $(vcctl queue get -n default); kubectl counts $(pgs_in_default)"
expect_rc 2 vcctl queue operate -n ci -a update
vcctl queue delete -n ci
expect_rc 1 vcctl queue get -n ci
grep -q "queue ci not found" "$WORK/out" || fail "queue get of a deleted queue: $(cat "$WORK/out")"
note "5. queue create / close / open / update / list / get / delete"
echo PASS
