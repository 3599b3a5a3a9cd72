#!/usr/bin/env bash
# e2e for the kube-scheduler extender API of `tephra scheduler` (run by run-with-cluster.sh: KUBECONFIG,
# KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR, TEPHRA_E2E_DIR).
#
# 4 nodesim nodes with 4 cpu each; sim-0..sim-2 are filled by pods placed directly (spec.nodeName). kube-scheduler
# v1.20.2 runs with a KubeSchedulerConfiguration whose profile has its own NodeResourcesFit filter disabled and
# whose `extenders:` entry points at Tephra (filter, prioritize, bind; nodeCacheCapable). So only Tephra's
# accounting can keep pods off the full nodes:
#  1. two 2-cpu pods (schedulerName default-scheduler) land on sim-3, bound through Tephra's /bind;
#  2. a third 2-cpu pod fits nowhere by Tephra's state: it stays Pending and kube-scheduler's FailedScheduling
#     event carries Tephra's reason ("insufficient cpu");
#  3. gang awareness: a pod of a PodGroup Tephra cannot admit (minResources beyond the cluster) is refused on
#     every node with "gang not admitted"; a pod of an admitted (Inqueue) PodGroup is placed;
#  4. a malformed request gets HTTP 400 naming the problem.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}" "${TEPHRA_E2E_DIR:?}"
# shellcheck source=../lib/kube_scheduler.sh
source "$HERE/../lib/kube_scheduler.sh"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
WORK=$(mktemp -d)
trap 'stop_kube_scheduler; stop_roles; rm -rf "$WORK"' EXIT

install_crds || fail "CRDs not Established"

start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes 4 --name-prefix sim- --cpu 4 --memory 16Gi \
  || fail "tephra nodesim did not start"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge "$1" ]; }
wait_until "4 nodes registered" 90 node_count 4 || fail "nodesim did not register 4 nodes"
k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
# See tests/e2e/scheduler/scheduler_test.sh: the not-ready taint is never lifted in this harness.
k taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true

EXT_PORT=$(free_port)
HEALTH_PORT=$(free_port)
METRICS_PORT=$(free_port)
start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --listen-address "127.0.0.1:$METRICS_PORT" --health-addr "127.0.0.1:$HEALTH_PORT" \
  --extender-address "127.0.0.1:$EXT_PORT" --extender-prefix /tephra --log-level debug \
  || fail "tephra scheduler did not start"
wait_until "scheduler /readyz" 60 curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" || fail "scheduler never ready"

pod() {  # pod <name> <cpu> [node] [group]
  printf '%s\n' "apiVersion: v1" "kind: Pod" "metadata:" "  name: $1" "  namespace: default" "  labels: {e2e: ext}"
  [ -z "${4:-}" ] || echo "  annotations: {scheduling.k8s.io/group-name: $4}"
  echo "spec:"
  [ -z "${3:-}" ] || echo "  nodeName: $3"
  printf '%s\n' "  restartPolicy: Never" "  containers:" "  - name: main" "    image: busybox" "    resources:" \
    "      requests: {cpu: \"$2\"}" "---"
}
node_of() { k get pod "$1" -o jsonpath='{.spec.nodeName}'; }
is_bound() { [ -n "$(node_of "$1")" ]; }

# Fill sim-0..sim-2 without any scheduler; Tephra's informer accounts for them like any bound pod.
for i in 0 1 2; do pod "fill-$i" 4 "sim-$i"; done | k create -f - >/dev/null

# kube-scheduler: its own resource filter off, Tephra as extender.
cat >"$WORK/kube-scheduler.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $TEPHRA_E2E_DIR/kube-scheduler.kubeconfig
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      disabled:
      - name: NodeResourcesFit
extenders:
- urlPrefix: http://127.0.0.1:$EXT_PORT/tephra
  filterVerb: filter
  prioritizeVerb: prioritize
  bindVerb: bind
  weight: 1
  nodeCacheCapable: true
  enableHTTPS: false
  httpTimeout: 5s
YAML
start_kube_scheduler "$WORK/kube-scheduler.yaml" "$LOGS/kube-scheduler-extender.log"

# Tephra must see the fill pods before kube-scheduler asks (otherwise sim-0..2 would look empty to it too).
probe() {  # the extender's own answer for a 2-cpu pod over all nodes
  curl -sS -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$EXT_PORT/tephra/filter" \
    -d '{"Pod":{"metadata":{"name":"probe","namespace":"default"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"2"}}}]}},"NodeNames":["sim-0","sim-1","sim-2","sim-3"]}'
}
only_sim3() { [ "$(probe | jq -c .NodeNames)" = '["sim-3"]' ]; }
wait_until "Tephra sees sim-0..2 full" 30 only_sim3 || fail "extender filter answer: $(probe)"
note "0. direct filter call: $(probe | jq -c '{NodeNames, FailedNodes}')"

# ---------------------------------------------------------------------- 1. pods land where Tephra allows
pod a 2 | k create -f - >/dev/null
wait_until "pod a bound" 60 is_bound a || fail "pod a not bound: $(k get pod a -o json | jq -c .status)"
[ "$(node_of a)" = sim-3 ] || fail "pod a on $(node_of a), want sim-3 (the only node with room by Tephra's state)"
pod b 2 | k create -f - >/dev/null
wait_until "pod b bound" 60 is_bound b || fail "pod b not bound"
[ "$(node_of b)" = sim-3 ] || fail "pod b on $(node_of b), want sim-3"
# The binding was posted by Tephra (bindVerb), not by kube-scheduler: the audit log names the user agent.
audit_log >/dev/null || fail "no API audit log"
tephra_bound() { audit_log | grep '"subresource":"binding"' | grep '"name":"a"' | grep -q '"userAgent":"tephra-scheduler'; }
wait_until "audit record of Tephra binding pod a" 20 tephra_bound || fail "pod a's binding was not posted by tephra-scheduler"
note "1. pods a and b on sim-3 (kube-scheduler's own NodeResourcesFit is off), bound through Tephra's /bind"

# ------------------------------------------------------------------ 2. nothing fits: Tephra's reason shown
full_seen() { [ "$(probe | jq -c .NodeNames)" = '[]' ]; }
wait_until "Tephra sees sim-3 full" 30 full_seen || fail "extender still offers nodes: $(probe)"
pod c 2 | k create -f - >/dev/null
fs_msg() { k get events --field-selector "involvedObject.name=c,reason=FailedScheduling" -o jsonpath='{.items[*].message}'; }
has_fs() { fs_msg | grep -q "insufficient cpu"; }
wait_until "FailedScheduling for c with Tephra's reason" 60 has_fs || fail "no FailedScheduling naming cpu for c: '$(fs_msg)'"
is_bound c && fail "pod c was bound to $(node_of c) although every node is full by Tephra's state"
note "2. pod c Pending: $(fs_msg | head -c 300)"
k delete pod c a --wait=true --timeout 60s >/dev/null

# --------------------------------------------------------------------------------------------- 3. gangs
printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" "metadata: {name: pg-huge, namespace: default}" \
  "spec: {minMember: 1, queue: default, minResources: {cpu: \"1000\"}}" "---" \
  "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" "metadata: {name: pg-ok, namespace: default}" \
  "spec: {minMember: 1, queue: default, minResources: {cpu: \"1\"}}" | k create -f - >/dev/null
pg_phase() { k get podgroup "$1" -o jsonpath='{.status.phase}'; }
inqueue() { [ "$(pg_phase pg-ok)" = Inqueue ]; }
wait_until "pg-ok Inqueue" 60 inqueue || fail "pg-ok phase '$(pg_phase pg-ok)', want Inqueue"
pod gang-huge 100m "" pg-huge | k create -f - >/dev/null
pod gang-ok 1 "" pg-ok | k create -f - >/dev/null
wait_until "gang-ok bound" 60 is_bound gang-ok || fail "gang-ok (admitted PodGroup) not bound: $(k get events --field-selector involvedObject.name=gang-ok -o jsonpath='{.items[*].message}')"
[ "$(node_of gang-ok)" = sim-3 ] || fail "gang-ok on $(node_of gang-ok), want sim-3"
gang_msg() { k get events --field-selector "involvedObject.name=gang-huge,reason=FailedScheduling" -o jsonpath='{.items[*].message}'; }
has_gang_msg() { gang_msg | grep -q "gang not admitted"; }
wait_until "gang-huge refused as not admitted" 60 has_gang_msg || fail "gang-huge: no 'gang not admitted' event: '$(gang_msg)'"
is_bound gang-huge && fail "gang-huge bound although its PodGroup is $(pg_phase pg-huge)"
note "3. gang-ok (pg-ok Inqueue) on sim-3; gang-huge Pending: $(gang_msg | head -c 300)"

# ------------------------------------------------------------------------------------- 4. bad requests
code=$(curl -sS -o "$WORK/bad.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  "http://127.0.0.1:$EXT_PORT/tephra/filter" -d '{"Pod": {"metadata": ')
[ "$code" = 400 ] || fail "malformed filter request: HTTP $code, want 400"
grep -q "body is not JSON" "$WORK/bad.out" || fail "400 body does not say what is wrong: $(cat "$WORK/bad.out")"
code=$(curl -sS -o "$WORK/bad2.out" -w '%{http_code}' -X POST "http://127.0.0.1:$EXT_PORT/tephra/prioritize" -d '{"NodeNames":[]}')
[ "$code" = 400 ] && grep -q "ExtenderArgs.Pod is missing" "$WORK/bad2.out" || fail "prioritize without Pod: HTTP $code $(cat "$WORK/bad2.out")"
code=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$EXT_PORT/tephra/filter")
[ "$code" = 405 ] || fail "GET on filter: HTTP $code, want 405"
note "4. malformed JSON -> 400 ($(head -c 120 "$WORK/bad.out"))"
