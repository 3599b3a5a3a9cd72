#!/usr/bin/env bash
# e2e: a big gang is not starved by the small jobs behind it (docs/reservations.md), on the real control plane with
# 3 simulated nodes x 4 cpu and the scheduler at --reservation-depth 1 (EASY backfill). Pods run for their
# job's runningEstimate (tephra.io/sim-run-seconds says the same).
#  1. Two runners hold two nodes: one for 45 s, one for an hour. A gang of two whole nodes cannot start; it gets
#     a reservation at the 45 s runner's expected end, on its node and the idle one, and `vcctl job why` and
#     `vcctl job list -o wide` show that time; the scheduler exports it as a metric.
#  2. Behind it: a 10-minute job and a job without runningEstimate would hold the idle node past the reservation
#     and stay pending; a 10 s job fits before it and runs at once (time-limit backfill).
#     `vcctl job run --test-only` answers when a new job would start, and creates nothing.
#  3. The gang starts when the runner ends, at the time it was told (within the estimate resolution and the
#     simulated kubelet's delay), while the two held-back jobs are still pending.
#  4. A queue annotated tephra.io/enforce-running-estimate=true terminates a job that outruns its estimate.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=stack.sh
source "$HERE/stack.sh"

CTL_NODES=3 ctl_stack_up --reservation-depth 1 --estimate-resolution 1s --queue-position-interval 500ms

# job <name> <pods> <cpu> <runningEstimate|-> <run-seconds>
job() {
  local est=""
  [ "$4" = "-" ] || est="runningEstimate: $4"
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  schedulerName: volcano
  minAvailable: $2
  $est
  tasks:
  - name: w
    replicas: $2
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "$5"}}
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox, resources: {requests: {cpu: "$3"}}}]
YAML
}
submit() { job "$@" >"$WORK/$1.yaml" && vcctl job run -f "$WORK/$1.yaml" >/dev/null; }
phase() { k get vcjob "$1" -o jsonpath='{.status.state.phase}'; }
is_phase() { [ "$(phase "$1")" = "$2" ]; }
epoch() { date -u -d "$1" +%s; }

# ------------------------------------------------------------------------------ 1. the gang's reservation
submit runner-a 1 4 45s 45
submit runner-b 1 4 1h 3600
runners_running() { is_phase runner-a Running && is_phase runner-b Running; }
wait_until "runners Running" 120 runners_running ||
  fail "runners: $(k get vcjob,pods -o wide)"
a_start=$(k get pods -l volcano.sh/job-name=runner-a -o jsonpath='{.items[0].status.startTime}')
[ -n "$a_start" ] || fail "runner-a's pod has no startTime"
submit big 2 4 2m 20
reserved() { vcctl job why -N big -o json >"$WORK/why.json" 2>&1 &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d.get("startEstimate",{}).get("kind")=="reservation" else 1)' "$WORK/why.json"; }
wait_until "big holds a reservation" 60 reserved || fail "job why big: $(cat "$WORK/why.json")"
told=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["startEstimate"]["time"])' "$WORK/why.json")
nodes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["startEstimate"]["reservedNodes"])' "$WORK/why.json")
[ "$nodes" = 2 ] || fail "reserved on $nodes node(s), want 2: $(cat "$WORK/why.json")"
# The reservation is due when runner-a is expected to end: its start + 45 s (rounded up to the second).
due=$(( $(epoch "$a_start") + 45 ))
off=$(( $(epoch "$told") - due ))
[ "$off" -ge 0 ] && [ "$off" -le 2 ] || fail "big told $told, runner-a ends at $(date -u -d "@$due" +%FT%TZ) (off by ${off}s)"
vcctl job why -N big >"$WORK/why" && grep -qF "Starts:    $told (" "$WORK/why" || fail "job why big: $(cat "$WORK/why")"
cat "$WORK/why" >&2
vcctl job list -o wide >"$WORK/list"
awk '$1 == "big"' "$WORK/list" | grep -qF "$told" || fail "job list -o wide has no estimate for big: $(cat "$WORK/list")"
metric() { curl -fsS "http://127.0.0.1:$SCHED_METRICS_PORT/metrics" >"$WORK/metrics" &&
  grep -E '^tephra_job_estimated_start_time_seconds\{.*podgroup="big-[^"]*".*kind="reservation"' "$WORK/metrics" |
    awk -v want="$(epoch "$told")" '{ if ($2 + 0 >= want - 1 && $2 + 0 <= want) ok = 1 } END { exit !ok }'; }
wait_until "the estimate as a metric" 30 metric ||
  fail "metric: $(grep tephra_job_estimated_start "$WORK/metrics" || echo none)"
# What-if (sbatch --test-only): nothing is created; a 10-minute job would wait for big to be done (its 2m
# estimate after its start), a 10 s one would start now beside the reservation.
job whatif-long 1 4 10m 600 >"$WORK/whatif-long.yaml"
vcctl job run --test-only -f "$WORK/whatif-long.yaml" --scheduler-url "http://127.0.0.1:$SCHED_METRICS_PORT" -o json \
  >"$WORK/whatif.json" || fail "job run --test-only: $(cat "$WORK/whatif.json")"
at=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["startTime"])' "$WORK/whatif.json") ||
  fail "what-if gave no time: $(cat "$WORK/whatif.json")"
off=$(( $(epoch "$at") - $(epoch "$told") - 120 ))
[ "$off" -ge -1 ] && [ "$off" -le 1 ] || fail "what-if for a 10m job says $at, want big's start $told + 2m: $(cat "$WORK/whatif.json")"
job whatif-short 1 2 10s 5 >"$WORK/whatif-short.yaml"
vcctl job run --test-only -f "$WORK/whatif-short.yaml" --scheduler-url "http://127.0.0.1:$SCHED_METRICS_PORT" \
  >"$WORK/whatif" || fail "job run --test-only: $(cat "$WORK/whatif")"
grep -qE "^Job default/whatif-short to start at [0-9T:-]+Z using 1 pod\(s\) on nodes [a-z0-9-]+ in queue default" "$WORK/whatif" ||
  fail "what-if for a 10 s job: $(cat "$WORK/whatif")"
now_at=$(sed -E 's/.* to start at ([0-9T:-]+Z) .*/\1/' "$WORK/whatif")
[ $(( $(epoch "$now_at") - $(date +%s) )) -le 2 ] || fail "a 10 s job would not start now: $(cat "$WORK/whatif")"
if k get vcjob whatif-long whatif-short >/dev/null 2>&1; then fail "--test-only created a job"; fi
cat "$WORK/whatif" >&2
note "1. big reserved on 2 nodes from $told (runner-a ends ${off}s before that); why, list -o wide and the metric agree"

# ------------------------------------------------------------------------ 2. who may use the held node now
# The short job first: jobs held back by the reservation still count against enqueue's admission budget
# (proportion, overcommit), and on this small cluster two of them would leave no room to admit it
# (docs/reservations.md, "Known limits").
submit short 1 2 10s 5
submit long-small 1 2 10m 600
submit no-estimate 1 1 - 600
wait_until "short ran (backfilled before the reservation)" 90 is_phase short Completed ||
  fail "short: $(phase short); $(k get pods -o wide)"
# Before saying the other two were held back, let the scheduler run more cycles with them in its view.
wait_scheduler_cycles "$SCHED_METRICS_PORT" 5 || fail "the scheduler stopped cycling"
for j in long-small no-estimate; do
  is_phase "$j" Pending || fail "$j is $(phase "$j"): it would hold reserved capacity past big's start"
done
is_phase big Pending || fail "big started before its time: $(phase big)"
note "2. a 10 s job backfilled; a 10 min job and one without runningEstimate held back"

# ------------------------------------------------------------------------------ 3. the gang starts on time
wait_until "big Running" 120 is_phase big Running || fail "big: $(phase big); $(k get pods -o wide)"
started=0
for t in $(k get pods -l volcano.sh/job-name=big -o jsonpath='{.items[*].status.startTime}'); do
  s=$(epoch "$t"); [ "$s" -gt "$started" ] && started=$s
done
late=$(( started - $(epoch "$told") ))
# Started no earlier than runner-a's end, and within a few seconds of the time it was told.
[ "$late" -ge -2 ] && [ "$late" -le 8 ] || fail "big started at $(date -u -d "@$started" +%FT%TZ), told $told (${late}s late)"
for j in long-small no-estimate; do is_phase "$j" Pending || fail "$j ran before big: $(phase "$j")"; done
note "3. big started ${late}s after the time it was told, before the jobs behind it"

# ---------------------------------------------------------------- 4. a queue that enforces running estimates
vcctl queue create -n strict >/dev/null
k annotate queue strict tephra.io/enforce-running-estimate=true >/dev/null
cat >"$WORK/overrun.yaml" <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: overrun}
spec:
  schedulerName: volcano
  queue: strict
  minAvailable: 1
  runningEstimate: 5s
  tasks:
  - name: w
    replicas: 1
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "600"}}
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox, resources: {requests: {cpu: "100m"}}}]
YAML
vcctl job run -f "$WORK/overrun.yaml" >/dev/null
wait_until "overrun Running" 60 is_phase overrun Running || fail "overrun: $(phase overrun)"
ran_from=$(date +%s)
ended() { [ "$(phase overrun)" = Terminated ]; }
wait_until "overrun terminated past its 5s estimate" 60 ended || fail "overrun: $(phase overrun)"
took=$(( $(date +%s) - ran_from ))
[ "$took" -le 15 ] || fail "terminated ${took}s after it started running, estimate 5s"
k get events --field-selector reason=RunningEstimateExceeded -o jsonpath='{.items[*].message}' >"$WORK/ev"
grep -q "past its running estimate 5s" "$WORK/ev" || fail "no RunningEstimateExceeded Event: $(cat "$WORK/ev")"
note "4. queue strict enforces running estimates: a job past its 5 s estimate was terminated after ${took}s"
