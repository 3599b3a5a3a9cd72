#!/usr/bin/env bash
# nodesim bench against the real control plane (tests/e2e/cluster.sh). Results go to bench/RESULTS.md "nodesim".
#
#   bench/nodesim/run.sh [nodes=5000] [pods=20000] [qps=300]
#
# A. nodes registered/s: `tephra nodesim --nodes N` from an empty cluster until all N exist.
# B. the load generator creates the pods already bound to the simulated nodes while nodesim is stopped.
# C. nodesim restarts (adopting the N nodes), finds every pod Pending and drives each to Running then
#    Succeeded (run-seconds 0): 2 status writes per pod. Pod status writes/s = writes / time to finish all.
# nodesim's CPU (utime+stime) and peak RSS (VmHWM) are read from /proc for each phase.
# Env: BUILD (build dir with bin/tephra and bench/nodesim/nodesim_load), DIR (cluster dir), KEEP=1 keeps it up.
set -euo pipefail
NODES=${1:-5000}
PODS=${2:-20000}
QPS=${3:-300}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-/tmp/build-nodesim}
TEPHRA=$BUILD/bin/tephra
LOAD=$BUILD/bench/nodesim/nodesim_load
DIR=${DIR:-/tmp/ns-nodesim-bench}
NS_PID=

cleanup() {
  [ -n "$NS_PID" ] && kill "$NS_PID" 2>/dev/null && wait "$NS_PID" 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] || bash "$ROOT/tests/e2e/cluster.sh" down "$DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT

bash "$ROOT/tests/e2e/cluster.sh" up "$DIR" >"$DIR.up.log" 2>&1 || { cat "$DIR.up.log"; exit 1; }
eval "$(bash "$ROOT/tests/e2e/cluster.sh" env "$DIR")"

now() { date +%s.%N; }
stat_of() {  # stat_of <log> <field>: the field of the last stats line
  grep 'msg="nodesim stats"' "$1" | tail -1 | sed -n "s/.* $2=\([0-9]*\).*/\1/p" || true
}
wait_stat() {  # wait_stat <log> <field> <value> <timeout-s>
  local deadline=$(( $(date +%s) + $4 )) v
  while :; do
    v=$(stat_of "$1" "$2"); v=${v:-0}
    [ "$v" -ge "$3" ] && return 0
    [ "$(date +%s)" -lt "$deadline" ] || { echo "timeout: $2=$v, want $3" >&2; return 1; }
    sleep 0.5
  done
}
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{print ($14+$15)/t}' "/proc/$1/stat"; }
rss_mb() { awk '/VmHWM/ {print $2/1024}' "/proc/$1/status"; }
start_nodesim() {  # start_nodesim <log>
  "$TEPHRA" nodesim --kubeconfig "$KUBECONFIG" --nodes "$NODES" --kube-api-qps "$QPS" --kube-api-burst "$QPS" \
    --stats-seconds 0.5 --workers 8 >"$1" 2>&1 &
  NS_PID=$!
}
stop_nodesim() { kill "$NS_PID"; wait "$NS_PID" || true; NS_PID=; }

echo "nodesim bench: nodes=$NODES pods=$PODS qps=$QPS (machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"

# A
t0=$(now)
start_nodesim "$DIR/nodesim-a.log"
wait_stat "$DIR/nodesim-a.log" registered "$NODES" 900
t1=$(now)
echo "A: $NODES nodes registered in $(echo "$t1 - $t0" | bc) s: $(echo "scale=1; $NODES / ($t1 - $t0)" | bc) nodes/s;" \
     "nodesim cpu $(cpu_s "$NS_PID") s, rss $(rss_mb "$NS_PID") MB"
sleep 12  # one lease round: every node's lease exists and is renewed
echo "A: lease renewals after ~12 s: $(stat_of "$DIR/nodesim-a.log" lease_renewals), write errors $(stat_of "$DIR/nodesim-a.log" write_errors);" \
     "cpu $(cpu_s "$NS_PID") s"
stop_nodesim

# B
"$LOAD" --kubeconfig "$KUBECONFIG" --pods "$PODS" --nodes "$NODES" --qps "$QPS" --threads 8 --run-seconds 0 \
  | sed 's/^/B: /'

# C
t2=$(now)
start_nodesim "$DIR/nodesim-c.log"
wait_stat "$DIR/nodesim-c.log" pods_finished "$PODS" 1800
t3=$(now)
w=$(stat_of "$DIR/nodesim-c.log" pod_status_writes)
echo "C: $PODS pods Pending->Running->Succeeded in $(echo "$t3 - $t2" | bc) s: $w status writes," \
     "$(echo "scale=1; $w / ($t3 - $t2)" | bc) writes/s at --kube-api-qps $QPS;" \
     "nodesim cpu $(cpu_s "$NS_PID") s, peak rss $(rss_mb "$NS_PID") MB," \
     "write errors $(stat_of "$DIR/nodesim-c.log" write_errors), lease renewals $(stat_of "$DIR/nodesim-c.log" lease_renewals)"
succeeded=$("$KUBECTL" get pods -n nsbench --field-selector status.phase=Succeeded -o name | wc -l)
echo "C: kubectl sees $succeeded Succeeded pods in nsbench"
