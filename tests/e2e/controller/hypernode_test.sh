#!/usr/bin/env bash
# e2e: hyperNode-controller discovers HyperNodes from node labels (Volcano's `label` source).
# Eight labelled Node objects (Volcano's guide: volcano.sh/hypernode s0..s3 under volcano.sh/hypercluster s4, s5)
# and the discovery ConfigMap (located as Volcano does: <HELM_RELEASE_NAME>-controller-configmap in
# KUBE_POD_NAMESPACE) -> `tephra controller` with Volcano's default --controllers creates the 2-tier tree with
# deterministic names; a relabelled node moves between tier-1 HyperNodes, an emptied domain's HyperNode is
# deleted; a label making a domain a child of two parents writes nothing and reports a Warning Event on the
# ConfigMap; switching the label source off deletes every generated HyperNode and none that a user made.
# Every wait is on an observable change (wait_until).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$(mktemp -d)}
trap 'stop_roles' EXIT
HN=hypernodes.topology.volcano.sh
SRC=volcano.sh/network-topology-source

install_crds || fail "CRDs not Established"

export KUBE_POD_NAMESPACE=default HELM_RELEASE_NAME=hn-e2e
CM=hn-e2e-controller-configmap

# config <label-enabled>: the ConfigMap, with an enabled ufm source Tephra only warns about.
config() {
  cat <<YAML | k apply -f - >/dev/null
apiVersion: v1
kind: ConfigMap
metadata: {name: $CM, namespace: default}
data:
  volcano-controller.conf: |
    networkTopologyDiscovery:
      - source: ufm
        enabled: true
        interval: 10m
        config: {endpoint: "https://ufm-server:8080"}
      - source: label
        enabled: $1
        config:
          networkTopologyTypes:
            topologyA3:
              - nodeLabel: "volcano.sh/hypercluster"
              - nodeLabel: "volcano.sh/hypernode"
              - nodeLabel: "kubernetes.io/hostname"
YAML
}

for i in 0 1 2 3 4 5 6 7; do
  cat <<YAML | k apply -f - >/dev/null
apiVersion: v1
kind: Node
metadata:
  name: hn-node$i
  labels:
    kubernetes.io/hostname: hn-node$i
    volcano.sh/hypernode: s$((i / 2))
    volcano.sh/hypercluster: s$([ $i -lt 4 ] && echo 4 || echo 5)
YAML
done
# A user's HyperNode: discovery must never touch it.
cat <<YAML | k apply -f - >/dev/null
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: my-rack}
spec:
  tier: 1
  members: [{type: Node, selector: {exactMatch: {name: hn-node0}}}]
YAML
config true

rc=0
start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --metrics-addr "127.0.0.1:$(free_port)" --health-addr "127.0.0.1:$(free_port)" || rc=$?
[ $rc -eq 0 ] || fail "tephra controller did not start (rc=$rc)"

generated_count() { k get $HN -l "$SRC=label" -o name | wc -l; }
generated_is() { [ "$(generated_count)" -eq "$1" ]; }
# members <label-key> <value>: sorted member names of the generated HyperNode of that domain.
members() {
  k get $HN -l "$SRC=label,$1=$2" -o jsonpath='{range .items[*].spec.members[*]}{.selector.exactMatch.name}{"\n"}{end}' | sort | tr '\n' ' '
}
members_are() { [ "$(members "$1" "$2")" = "$3" ]; }

wait_until "6 generated HyperNodes" 60 generated_is 6 || fail "generated: $(k get $HN -o name | tr '\n' ' '); log: $(tail -5 "$LOGS/controller.log")"
for n in $(k get $HN -l "$SRC=label" -o jsonpath='{.items[*].metadata.name}'); do
  [[ $n =~ ^hypernode-topologya3-tier[12]-[0-9a-f]{12}$ ]] || fail "unexpected HyperNode name $n"
done
members_are volcano.sh/hypernode s0 "hn-node0 hn-node1 " || fail "s0 members: $(members volcano.sh/hypernode s0)"
S0=$(k get $HN -l "$SRC=label,volcano.sh/hypernode=s0" -o jsonpath='{.items[0].metadata.name}')
S1=$(k get $HN -l "$SRC=label,volcano.sh/hypernode=s1" -o jsonpath='{.items[0].metadata.name}')
members_are volcano.sh/hypercluster s4 "$(printf '%s\n' "$S0" "$S1" | sort | tr '\n' ' ')" ||
  fail "s4 members: $(members volcano.sh/hypercluster s4)"
[ "$(k get $HN "$S0" -o jsonpath='{.spec.tier}/{.spec.tierName}')" = "1/volcano.sh/hypernode" ] || fail "s0 tier: $(k get $HN "$S0" -o yaml)"
grep -q 'is enabled but not implemented' "$LOGS/controller.log" || fail "no warning about the ufm source"
note "tree discovered: $(k get $HN -l "$SRC=label" -o name | tr '\n' ' ')"

# Relabel: hn-node7 moves from s3 to s2.
k label node hn-node7 volcano.sh/hypernode=s2 --overwrite >/dev/null
wait_until "hn-node7 in s2" 30 members_are volcano.sh/hypernode s2 "hn-node4 hn-node5 hn-node7 " ||
  fail "s2 members: $(members volcano.sh/hypernode s2)"
wait_until "s3 = {hn-node6}" 30 members_are volcano.sh/hypernode s3 "hn-node6 " || fail "s3 members: $(members volcano.sh/hypernode s3)"
# hn-node6 follows: s3 has no node left, so its HyperNode goes and s5 keeps only s2.
k label node hn-node6 volcano.sh/hypernode=s2 --overwrite >/dev/null
wait_until "s3 deleted" 30 generated_is 5 || fail "generated: $(k get $HN -l "$SRC=label" -o name | tr '\n' ' ')"
S2=$(k get $HN -l "$SRC=label,volcano.sh/hypernode=s2" -o jsonpath='{.items[0].metadata.name}')
wait_until "s5 = {s2}" 30 members_are volcano.sh/hypercluster s5 "$S2 " || fail "s5 members: $(members volcano.sh/hypercluster s5)"

# Not a tree: s0 would be under s4 (hn-node0) and s5 (hn-node1). Nothing is written; a Warning Event says why.
BEFORE=$(k get $HN -l "$SRC=label" -o jsonpath='{range .items[*]}{.metadata.name}{.metadata.resourceVersion}{end}')
k label node hn-node1 volcano.sh/hypercluster=s5 --overwrite >/dev/null
failed_event() {
  k get events -n default --field-selector "involvedObject.name=$CM,reason=NetworkTopologyDiscoveryFailed" \
    -o jsonpath='{.items[*].message}' | grep -q "under two parents"
}
wait_until "NetworkTopologyDiscoveryFailed event" 30 failed_event || fail "no Warning event: $(k get events -n default)"
AFTER=$(k get $HN -l "$SRC=label" -o jsonpath='{range .items[*]}{.metadata.name}{.metadata.resourceVersion}{end}')
[ "$BEFORE" = "$AFTER" ] || fail "a HyperNode changed although the topology is not a tree"
k label node hn-node1 volcano.sh/hypercluster=s4 --overwrite >/dev/null

# The label source switched off: every generated HyperNode goes, the user's stays.
config false
wait_until "generated HyperNodes deleted" 30 generated_is 0 || fail "left: $(k get $HN -l "$SRC=label" -o name | tr '\n' ' ')"
k get $HN my-rack >/dev/null || fail "the user's HyperNode my-rack was deleted"
[ -z "$(k get $HN my-rack -o jsonpath='{.metadata.labels}')" ] || fail "my-rack was modified"
note "hypernode discovery e2e passed"
