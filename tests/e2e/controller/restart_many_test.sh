#!/usr/bin/env bash
# e2e (issue 10): many jobs restarting at once never get stuck. N copies of a job whose pods all exit 3 after
# 2 s, with `PodFailed -> RestartJob` and maxRetry 2, are applied together, with the real `tephra scheduler`
# and controller. Every copy must reach Failed with retryCount 2: each run deletes the PodGroup and re-creates
# it under the same name, and the scheduler must give every new PodGroup its status (it used to keep what it
# had emitted for the old one, so some copies stayed Pending for good with retryCount 1).
#   RESTART_MANY_JOBS (default 16) copies per round, RESTART_MANY_ROUNDS (default 1) rounds in a row; e.g.
#   RESTART_MANY_JOBS=50 RESTART_MANY_ROUNDS=20 is the 1,000-copy run recorded in docs/job-controller.md.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TEPHRA_E2E_REAL_SCHEDULER=${TEPHRA_E2E_REAL_SCHEDULER:-1}
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"

N=${RESTART_MANY_JOBS:-16}
ROUNDS=${RESTART_MANY_ROUNDS:-1}

job_yaml() {
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1, namespace: $NS, labels: {round: "$2"}}
spec:
  minAvailable: 2
  maxRetry: 2
  schedulerName: volcano
  policies: [{event: PodFailed, action: RestartJob}]
  tasks:
  - name: t
    replicas: 2
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "2", tephra.io/sim-exit-code: "3"}}
      spec:
        restartPolicy: Never
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
---
YAML
}

# "<name> <phase> <retryCount>" per job of this round.
states() {
  k get vcjob -n $NS -l "round=$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.state.phase}{" "}{.status.retryCount}{"\n"}{end}'
}
all_failed() {
  local n
  n=$(states "$1" | awk '$2 == "Failed" && $3 == 2' | wc -l)
  [ "$n" -eq "$N" ]
}
dump_stuck() {
  states "$1" | awk '!($2 == "Failed" && $3 == 2)' >&2
  local j
  for j in $(states "$1" | awk '!($2 == "Failed" && $3 == 2) {print $1}' | head -n 3); do
    echo "--- $j" >&2
    k get vcjob -n $NS "$j" -o jsonpath='{.status}{"\n"}' >&2 || true
    k get podgroups -n $NS -o json | python3 -c '
import json, sys
for pg in json.load(sys.stdin)["items"]:
    if any(o.get("name") == sys.argv[1] for o in pg["metadata"].get("ownerReferences", [])):
        print("podgroup", pg["metadata"]["name"], pg["metadata"]["uid"], pg["metadata"].get("annotations", {}).get("tephra.io/job-version"), json.dumps(pg.get("status", {})))
' "$j" >&2 || true
    k get pods -n $NS -l "volcano.sh/job-name=$j" -o wide >&2 || true
  done
  grep -i 'warn\|error' "$LOGS/scheduler.log" | tail -n 20 >&2 || true
}

start=$(date +%s)
for r in $(seq 1 "$ROUNDS"); do
  t0=$(date +%s)
  for i in $(seq 1 "$N"); do job_yaml "hf-$r-$i" "$r"; done | k apply -f - >/dev/null
  wait_until "round $r: $N jobs Failed with retryCount 2" 300 all_failed "$r" ||
    { dump_stuck "$r"; fail "round $r: $(states "$r" | awk '!($2 == "Failed" && $3 == 2)' | wc -l) of $N jobs stuck"; }
  note "round $r: $N jobs Failed after 2 retries in $(( $(date +%s) - t0 ))s"
  k delete vcjob -n $NS -l "round=$r" --wait=false >/dev/null
done
note "$(( N * ROUNDS )) jobs, none stuck, in $(( $(date +%s) - start ))s"
echo PASS
