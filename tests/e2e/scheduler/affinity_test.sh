#!/usr/bin/env bash
# e2e for required inter-pod affinity on a topology key other than the hostname, and for topology spread
# (run by run-with-cluster.sh: KUBECONFIG, KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR). 4 nodesim nodes of 4 cpu,
# labelled zone a (sim-0, sim-2) and zone b (sim-1, sim-3), so that spreading by least-requested would cross
# zones.
#  1. a gang of 4 one-cpu pods with podAffinity to itself on the zone key lands in one zone;
#  2. a pod with podAntiAffinity to that gang on the zone key lands in the other zone;
#  3. a gang whose pods need a pod that does not exist stays Pending, and its PodGroup says why;
#  4. on the emptied cluster, zone b half full (least-requested alone would put everything in zone a,
#     binpack everything in zone b): a gang of 4 one-cpu pods with a DoNotSchedule zone spread (maxSkew 1)
#     lands two and two;
#  5. with zone b then filled up, a second such gang can place one pod in zone a and no more: it stays
#     Pending, and its PodGroup names the spread constraint;
#  6. soft rules, which only score (the configuration file is rewritten without binpack, whose weight 10
#     outweighs them, and reloaded): on the emptied cluster, zone b half full, two pods that prefer the zone
#     of a db pod in zone b land in zone b (least-requested alone puts them in zone a), and a gang of 4 with a
#     ScheduleAnyway zone spread lands two and two (least-requested alone: four in zone a, which the same gang
#     without constraints shows); the same gang behind a headless Service lands two and two, by
#     kube-scheduler's system-default spread constraints.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
trap 'stop_roles' EXIT
ZONE=topology.kubernetes.io/zone

install_crds || fail "CRDs not Established"
start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes 4 --name-prefix sim- --cpu 4 --memory 16Gi ||
  fail "tephra nodesim did not start"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge "$1" ]; }
wait_until "4 nodes registered" 90 node_count 4 || fail "nodesim did not register 4 nodes"
k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
k taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true  # see scheduler_test.sh
k label node sim-0 sim-2 "$ZONE=a" >/dev/null
k label node sim-1 sim-3 "$ZONE=b" >/dev/null

# The built-in default configuration, written out so that step 6 can change it.
CONF=$LOGS/volcano-scheduler.conf
write_conf() {  # write_conf <binpack plugin lines...>
  printf '%s\n' 'actions: "enqueue, allocate, backfill"' 'tiers:' '- plugins:' '  - name: priority' \
    '  - name: gang' '    enablePreemptable: false' '  - name: conformance' '- plugins:' '  - name: overcommit' \
    '  - name: drf' '    enablePreemptable: false' '  - name: predicates' '  - name: proportion' \
    '  - name: nodeorder' "$@" >"$CONF.new"
  mv "$CONF.new" "$CONF"
}
write_conf '  - name: binpack' '    arguments: {binpack.weight: 10, binpack.cpu: 5}'
HEALTH_PORT=$(free_port)
start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false --listen-address 0 \
  --health-addr "127.0.0.1:$HEALTH_PORT" --scheduler-conf "$CONF" || fail "tephra scheduler did not start"
wait_until "scheduler /readyz" 60 curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" || fail "scheduler never ready"
have_default() { k get queue default; }
wait_until "default queue" 30 have_default || fail "scheduler did not create the default queue"

podgroup() {  # podgroup <name> <minMember>
  printf '%s\n' "apiVersion: scheduling.volcano.sh/v1beta1" "kind: PodGroup" \
    "metadata: {name: $1, namespace: default}" "spec: {minMember: $2, queue: default}" "---"
}
pod() {  # pod <name> <group> <affinity kind> <selector label value>
  printf '%s\n' "apiVersion: v1" "kind: Pod" \
    "metadata:" "  name: $1" "  namespace: default" "  labels: {e2e-group: $2}" \
    "  annotations: {scheduling.k8s.io/group-name: $2}" \
    "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  terminationGracePeriodSeconds: 1" \
    "  affinity:" "    $3:" "      requiredDuringSchedulingIgnoredDuringExecution:" \
    "      - labelSelector: {matchLabels: {e2e-group: $4}}" "        topologyKey: $ZONE" \
    "  containers:" "  - name: main" "    image: busybox" \
    "    resources:" "      requests: {cpu: \"1\"}" "      limits: {cpu: \"1\"}" "---"
}
zones_of() {  # the zones of a group's bound pods, one per line, sorted and unique
  local n
  for n in $(k get pods -l "e2e-group=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}'); do
    k get node "$n" -o jsonpath="{.metadata.labels.topology\.kubernetes\.io/zone}{\"\\n\"}"
  done | sort -u
}
bound_count() { k get pods -l "e2e-group=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true; }

# ------------------------------------------------------------------------ 1. a self-affine gang: one zone
{ podgroup train 4; for i in 0 1 2 3; do pod "train-$i" train podAffinity train; done; } | k create -f - >/dev/null
train_bound() { [ "$(bound_count train)" -eq 4 ]; }
wait_until "4 train pods bound" 90 train_bound || fail "train: $(bound_count train)/4 bound"
zones=$(zones_of train)
[ "$(echo "$zones" | wc -l)" -eq 1 ] || fail "train pods span zones: $(echo "$zones" | tr '\n' ' ')"
note "1. train: 4/4 bound, all in zone $zones"

# --------------------------------------------------------------------- 2. anti-affinity: the other zone
{ podgroup apart 1; pod apart-0 apart podAntiAffinity train; } | k create -f - >/dev/null
apart_bound() { [ "$(bound_count apart)" -eq 1 ]; }
wait_until "apart pod bound" 60 apart_bound || fail "apart: not bound"
[ "$(zones_of apart)" != "$zones" ] || fail "apart landed in the train zone $zones"
note "2. apart: bound in zone $(zones_of apart)"

# ------------------------------------------------------- 3. affinity to nothing: Pending, with the reason
{ podgroup lonely 1; pod lonely-0 lonely podAffinity nobody; } | k create -f - >/dev/null
reason() { k get podgroup lonely -o jsonpath='{range .status.conditions[*]}{.message}{"\n"}{end}'; }
has_reason() { reason | grep -q "didn't match pod affinity rules"; }
wait_until "lonely's PodGroup names the affinity" 60 has_reason || fail "lonely: conditions: $(reason | tr '\n' ' ')"
wait_scheduler_cycles "$HEALTH_PORT" 3 || fail "the scheduler stopped cycling"
[ "$(bound_count lonely)" -eq 0 ] || fail "lonely was bound although no pod matches its affinity"
note "3. lonely: Pending; $(reason | grep "pod affinity" | head -1)"

spread_pod() {  # spread_pod <name> <group>: one cpu, spread over the zones with the pods of its group
  printf '%s\n' "apiVersion: v1" "kind: Pod" \
    "metadata:" "  name: $1" "  namespace: default" "  labels: {e2e-group: $2}" \
    "  annotations: {scheduling.k8s.io/group-name: $2}" \
    "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  terminationGracePeriodSeconds: 1" \
    "  topologySpreadConstraints:" "  - maxSkew: 1" "    topologyKey: $ZONE" "    whenUnsatisfiable: DoNotSchedule" \
    "    labelSelector: {matchLabels: {e2e-group: $2}}" \
    "  containers:" "  - name: main" "    image: busybox" \
    "    resources:" "      requests: {cpu: \"1\"}" "      limits: {cpu: \"1\"}" "---"
}
filler_pod() {  # filler_pod <name> <group> <cpu>: in zone b
  printf '%s\n' "apiVersion: v1" "kind: Pod" \
    "metadata:" "  name: $1" "  namespace: default" "  labels: {e2e-group: $2}" \
    "  annotations: {scheduling.k8s.io/group-name: $2}" \
    "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  terminationGracePeriodSeconds: 1" \
    "  nodeSelector: {$ZONE: b}" "  containers:" "  - name: main" "    image: busybox" \
    "    resources:" "      requests: {cpu: \"$3\"}" "      limits: {cpu: \"$3\"}" "---"
}
zone_counts() {  # "<count> <zone> " per zone of a group's bound pods, on one line
  local n
  for n in $(k get pods -l "e2e-group=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}'); do
    k get node "$n" -o jsonpath="{.metadata.labels.topology\.kubernetes\.io/zone}{\"\\n\"}"
  done | sort | uniq -c | awk '{printf "%s %s ", $1, $2}'
}

# ---------------------------------------------- 4. zone spread: two and two although zone a scores higher
k delete pods --all --wait=true --timeout 60s >/dev/null
{ podgroup filler 2; filler_pod filler-0 filler 2; filler_pod filler-1 filler 2; } | k create -f - >/dev/null
filler_bound() { [ "$(bound_count filler)" -eq 2 ]; }
wait_until "2 filler pods bound" 60 filler_bound || fail "filler: $(bound_count filler)/2 bound"
{ podgroup web 4; for i in 0 1 2 3; do spread_pod "web-$i" web; done; } | k create -f - >/dev/null
web_bound() { [ "$(bound_count web)" -eq 4 ]; }
wait_until "4 web pods bound" 90 web_bound || fail "web: $(bound_count web)/4 bound"
counts=$(zone_counts web)
[ "$counts" = "2 a 2 b " ] || fail "web pods not two per zone: $counts"
note "4. web: $counts"

# ------------------------------------------ 5. a spread that cannot be met: Pending, with the reason
{ podgroup fill 2; filler_pod fill-0 fill 1; filler_pod fill-1 fill 1; } | k create -f - >/dev/null  # zone b full
fill_bound() { [ "$(bound_count fill)" -eq 2 ]; }
wait_until "2 fill pods bound" 60 fill_bound || fail "fill: $(bound_count fill)/2 bound"
{ podgroup tight 4; for i in 0 1 2 3; do spread_pod "tight-$i" tight; done; } | k create -f - >/dev/null
tight_reason() { k get podgroup tight -o jsonpath='{range .status.conditions[*]}{.message}{"\n"}{end}'; }
has_spread_reason() { tight_reason | grep -q "didn't match pod topology spread constraints"; }
wait_until "tight's PodGroup names the spread" 60 has_spread_reason ||
  fail "tight: conditions: $(tight_reason | tr '\n' ' ')"
wait_scheduler_cycles "$HEALTH_PORT" 3 || fail "the scheduler stopped cycling"
[ "$(bound_count tight)" -eq 0 ] || fail "tight was (partly) bound although its spread cannot be met"
note "5. tight: Pending; $(tight_reason | grep "spread" | head -1)"

# ----------------------------------------------- 6. soft rules score: preferred affinity, ScheduleAnyway
metric() { curl -fsS "http://127.0.0.1:$HEALTH_PORT/metrics" | awk -v m="$1" '$1 == m {print int($2)}'; }
write_conf
reloaded() { [ "$(metric 'tephra_scheduler_conf_reloads_total{result="success"}')" = 1 ]; }
wait_until "the configuration without binpack reloaded" 30 reloaded || fail "scheduler did not reload $CONF"
k delete pods --all --wait=true --timeout 60s >/dev/null
{ podgroup half 2; filler_pod half-0 half 2; filler_pod half-1 half 2; } | k create -f - >/dev/null
half_bound() { [ "$(bound_count half)" -eq 2 ]; }
wait_until "2 half pods bound" 60 half_bound || fail "half: $(bound_count half)/2 bound"
soft_pod() {  # soft_pod <name> <group> <affinity lines...>: one cpu
  local name=$1 group=$2; shift 2
  printf '%s\n' "apiVersion: v1" "kind: Pod" \
    "metadata:" "  name: $name" "  namespace: default" "  labels: {e2e-group: $group}" \
    "  annotations: {scheduling.k8s.io/group-name: $group}" \
    "spec:" "  schedulerName: volcano" "  restartPolicy: Never" "  terminationGracePeriodSeconds: 1" "$@" \
    "  containers:" "  - name: main" "    image: busybox" \
    "    resources:" "      requests: {cpu: \"1\"}" "      limits: {cpu: \"1\"}" "---"
}
{ podgroup near 2
  for i in 0 1; do
    soft_pod "near-$i" near "  affinity:" "    podAffinity:" "      preferredDuringSchedulingIgnoredDuringExecution:" \
      "      - weight: 100" "        podAffinityTerm:" "          labelSelector: {matchLabels: {e2e-group: half}}" \
      "          topologyKey: $ZONE"
  done; } | k create -f - >/dev/null
near_bound() { [ "$(bound_count near)" -eq 2 ]; }
wait_until "2 near pods bound" 60 near_bound || fail "near: $(bound_count near)/2 bound"
[ "$(zones_of near)" = b ] || fail "near pods not all in the zone they prefer (b): $(zone_counts near)"
note "6a. near (preferred zone affinity to zone b's pods): $(zone_counts near)"
k delete pods -l e2e-group=near --wait=true --timeout 60s >/dev/null
{ podgroup soft 4
  for i in 0 1 2 3; do
    soft_pod "soft-$i" soft "  topologySpreadConstraints:" "  - maxSkew: 1" "    topologyKey: $ZONE" \
      "    whenUnsatisfiable: ScheduleAnyway" "    labelSelector: {matchLabels: {e2e-group: soft}}"
  done; } | k create -f - >/dev/null
soft_bound() { [ "$(bound_count soft)" -eq 4 ]; }
wait_until "4 soft pods bound" 90 soft_bound || fail "soft: $(bound_count soft)/4 bound"
counts=$(zone_counts soft)
[ "$counts" = "2 a 2 b " ] || fail "ScheduleAnyway spread pods not two per zone: $counts"
note "6b. soft (ScheduleAnyway zone spread): $counts"

# ------------------------------- 6c. system-default spreading: pods a Service selects, no constraints of their own
k delete pods -l e2e-group=soft --wait=true --timeout 60s >/dev/null
{ podgroup lone 4; for i in 0 1 2 3; do soft_pod "lone-$i" lone; done; } | k create -f - >/dev/null
lone_bound() { [ "$(bound_count lone)" -eq 4 ]; }
wait_until "4 lone pods bound" 90 lone_bound || fail "lone: $(bound_count lone)/4 bound"
counts=$(zone_counts lone)
[ "$counts" = "4 a " ] || fail "without a Service, least-requested should put all four in zone a: $counts"
k delete pods -l e2e-group=lone --wait=true --timeout 60s >/dev/null
printf '%s\n' "apiVersion: v1" "kind: Service" "metadata: {name: served, namespace: default}" \
  "spec: {clusterIP: None, selector: {e2e-group: served}, ports: [{port: 80}]}" | k create -f - >/dev/null
{ podgroup served 4; for i in 0 1 2 3; do soft_pod "served-$i" served; done; } | k create -f - >/dev/null
served_bound() { [ "$(bound_count served)" -eq 4 ]; }
wait_until "4 served pods bound" 90 served_bound || fail "served: $(bound_count served)/4 bound"
counts=$(zone_counts served)
[ "$counts" = "2 a 2 b " ] || fail "pods behind a Service not spread by the system defaults: $counts"
note "6c. the same gang without a Service: 4 a; behind a headless Service (system-default spread): $counts"
echo "PASS affinity e2e"
