#!/usr/bin/env bash
# e2e smoke test (run by run-with-cluster.sh, which provides KUBECONFIG, KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR):
#  1. the Volcano CRDs in crds/ install and become Established; `kubectl get vcjob,podgroup,queue` works;
#  2. every manifest in crds/examples/ is created and read back with no field pruned or changed
#     (plus a negative control proving the comparison catches pruning);
#  3. when `tephra nodesim` is implemented: 3 simulated nodes become Ready, and pods bound to one of them end
#     Succeeded (exit 0) or Failed with exit code 3, as chosen by annotations.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
source "$HERE/lib/common.sh"
e2e_begin

CRDS=$TEPHRA_SOURCE_DIR/crds
# ---------------------------------------------------------------------------------------------------- 1. CRDs
shopt -s nullglob
crd_files=("$CRDS"/*.yaml)
[ ${#crd_files[@]} -gt 0 ] || fail "no CRDs in $CRDS"
note "applying ${#crd_files[@]} CRD files"
k apply -f "$CRDS/" >/dev/null
k wait --for condition=Established --timeout 60s crd --all >/dev/null || fail "CRDs not Established"
for kind in vcjob podgroup queue; do
  k get "$kind" -A >/dev/null 2>&1 || fail "kubectl get $kind"
done
k get vcjob,podgroup,queue -A >/dev/null 2>&1 || fail "kubectl get vcjob,podgroup,queue"

# ---------------------------------------------------------------------------- 2. examples stored without loss
# Negative control first: a CRD of our own with a structural schema, and an object carrying one field the
# schema does not declare. The server prunes it, and compare_objects.py must say so.
cat >"$WORK/control-crd.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: prunecontrols.smoke.tephra.io}
spec:
  group: smoke.tephra.io
  names: {kind: PruneControl, plural: prunecontrols}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {kept: {type: string}}}
EOF
cat >"$WORK/control.yaml" <<'EOF'
apiVersion: smoke.tephra.io/v1
kind: PruneControl
metadata: {name: control, namespace: default}
spec: {kept: "yes", undeclared: "pruned by the server"}
EOF
k apply -f "$WORK/control-crd.yaml" >/dev/null
k wait --for condition=Established --timeout 60s crd/prunecontrols.smoke.tephra.io >/dev/null
k create --dry-run=client -o json -f "$WORK/control.yaml" >"$WORK/control.sent.json"
wait_until "PruneControl kind served" 30 k create -f "$WORK/control.yaml" || fail "cannot create the control object"
k get -o json -f "$WORK/control.yaml" >"$WORK/control.stored.json"
if python3 "$HERE/lib/compare_objects.py" "$WORK/control.sent.json" "$WORK/control.stored.json" >"$WORK/control.out" 2>&1; then
  fail "negative control: compare_objects.py did not notice the pruned field"
fi
grep -q '\.spec\.undeclared: pruned' "$WORK/control.out" || { cat "$WORK/control.out" >&2; fail "negative control: unexpected output"; }

examples=("$CRDS"/examples/*.yaml)
[ ${#examples[@]} -gt 0 ] || fail "no examples in $CRDS/examples"
bad=0
for f in "${examples[@]}"; do
  name=$(basename "$f" .yaml)
  k create --dry-run=client -o json -f "$f" >"$WORK/$name.sent.json" || { echo "$f: not parseable" >&2; bad=1; continue; }
  # Namespaces an example names must exist before it is created.
  for ns in $(jq -r '(if .kind=="List" then .items[] else . end) | .metadata.namespace // empty' "$WORK/$name.sent.json" | sort -u); do
    k get namespace "$ns" >/dev/null 2>&1 || k create namespace "$ns" >/dev/null
  done
  if ! k create -o json -f "$f" >"$WORK/$name.created.json" 2>"$WORK/$name.create.err"; then
    echo "$f: create failed:" >&2; cat "$WORK/$name.create.err" >&2; bad=1; continue
  fi
  # Read each object back by the name the server gave it (some examples use generateName), as
  # <kind>.<version>.<group>/<name> so the exact API version sent is the one read (core group: <kind>/<name>).
  jq -r '(if .kind=="List" then .items[] else . end)
         | (.apiVersion | split("/")) as $gv
         | "\(.kind | ascii_downcase)\(if ($gv|length)==2 then ".\($gv[1]).\($gv[0])" else "" end)/\(.metadata.name) \(.metadata.namespace // "")"' \
    "$WORK/$name.created.json" >"$WORK/$name.refs"
  : >"$WORK/$name.stored.json"
  while read -r ref ns; do
    k get -o json "$ref" ${ns:+-n "$ns"} >>"$WORK/$name.stored.json"
    echo "$ref $ns" >>"$WORK/created.refs"
  done <"$WORK/$name.refs"
  if python3 "$HERE/lib/compare_objects.py" "$WORK/$name.sent.json" "$WORK/$name.stored.json" >"$WORK/$name.diff" 2>&1; then
    note "example $name: $(tail -n 1 "$WORK/$name.diff")"
  else
    echo "$f: fields lost or changed by the server:" >&2; cat "$WORK/$name.diff" >&2; bad=1
  fi
done
[ $bad = 0 ] || fail "some examples were not stored intact"
while read -r ref ns; do
  k delete --wait=true --timeout 60s "$ref" ${ns:+-n "$ns"} >/dev/null
done <"$WORK/created.refs"

# ------------------------------------------------------------------------------------------------- 3. nodesim
start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes 3 || fail "tephra nodesim did not start"

node_count() { [ "$(k get nodes -o name | wc -l)" -ge "$1" ]; }
wait_until "3 nodes registered" 60 node_count 3 || fail "nodesim did not register 3 nodes"
k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
node=$(k get nodes -o jsonpath='{.items[0].metadata.name}')
note "3 simulated nodes Ready; binding pods to $node"

sim_pod() {  # sim_pod <name> <exit-code>
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
  annotations:
    tephra.io/sim-exit-code: "$2"
    tephra.io/sim-run-seconds: "1"
spec:
  nodeName: $node
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exit $2"]
EOF
}
sim_pod smoke-ok 0 | k create -f - >/dev/null
sim_pod smoke-fail 3 | k create -f - >/dev/null
k wait --for jsonpath='{.status.phase}'=Succeeded --timeout 60s pod/smoke-ok >/dev/null \
  || fail "pod smoke-ok did not reach Succeeded (phase $(k get pod smoke-ok -o jsonpath='{.status.phase}'))"
k wait --for jsonpath='{.status.phase}'=Failed --timeout 60s pod/smoke-fail >/dev/null \
  || fail "pod smoke-fail did not reach Failed (phase $(k get pod smoke-fail -o jsonpath='{.status.phase}'))"
code=$(k get pod smoke-fail -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
[ "$code" = 3 ] || fail "smoke-fail: containerStatuses exit code '$code', want 3"
k delete pod smoke-ok smoke-fail --wait=true --timeout 60s >/dev/null
stop_roles
echo "PASS (CRDs + ${#examples[@]} example files + nodesim)"
