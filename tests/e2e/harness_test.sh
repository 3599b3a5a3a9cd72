#!/usr/bin/env bash
# e2e test of the harness itself (run by run-with-cluster.sh, so cluster A is already up):
#  - the controller-manager controllers tests rely on work: namespace gets a default ServiceAccount with a token,
#    garbage collection follows ownerReferences, namespace deletion finishes;
#  - RBAC is enforced and the audit log records the denial; TokenRequest (service-account issuer) works;
#  - a second cluster B can run at the same time without clashing, `up` refuses a dir that is in use, and
#    `down` stops every B process while A keeps serving.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
source "$HERE/lib/common.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_E2E_DIR:?}" "${TEPHRA_E2E_API_URL:?}"
B=$(mktemp -d "${TMPDIR:-/tmp}/tephra-e2e-b.XXXXXX")
trap 'bash "$HERE/cluster.sh" down "$B" >/dev/null 2>&1 || true; rm -rf "$B"' EXIT

# ------------------------------------------------------------------------------------ controllers we rely on
k create namespace harness-a >/dev/null
sa_token_name() { [ -n "$(k -n harness-a get serviceaccount default -o jsonpath='{.secrets[0].name}')" ]; }
wait_until "default ServiceAccount with a token in harness-a" 30 sa_token_name || fail "serviceaccount controllers"

owner_uid=$(k -n harness-a create configmap owner -o jsonpath='{.metadata.uid}')
k -n harness-a create -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: "$owner_uid"}]
EOF
k -n harness-a delete configmap owner >/dev/null
dependent_gone() { ! k -n harness-a get configmap dependent >/dev/null 2>&1; }
wait_until "garbage collection of the dependent ConfigMap" 60 dependent_gone || fail "garbage collector"
note "serviceaccount, serviceaccount-token and garbagecollector controllers work"

# ---------------------------------------------------------------------------------------- RBAC, audit, tokens
# A ServiceAccount without bindings may not list pods: the request must be denied with 403 and audited.
secret=$(k -n harness-a get serviceaccount default -o jsonpath='{.secrets[0].name}')
sa_token=$(k -n harness-a get secret "$secret" -o jsonpath='{.data.token}' | base64 -d)
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TEPHRA_E2E_CA_FILE" \
  -H "Authorization: Bearer $sa_token" "$TEPHRA_E2E_API_URL/api/v1/namespaces/kube-system/pods")
[ "$code" = 403 ] || fail "unbound ServiceAccount listing kube-system pods: HTTP $code, want 403"
audited() {
  audit_log | grep '"system:serviceaccount:harness-a:default"' | grep -q '"code":403'
}
wait_until "the 403 in the audit log" 15 audited || fail "audit log has no 403 for the ServiceAccount"
# TokenRequest needs --service-account-issuer and the signing key: a bound token must be issued and accepted.
bound=$(k -n harness-a create token default --duration 10m) || fail "TokenRequest (kubectl create token)"
curl -sf -o /dev/null --cacert "$TEPHRA_E2E_CA_FILE" -H "Authorization: Bearer $bound" -H 'Content-Type: application/json' \
  -X POST "$TEPHRA_E2E_API_URL/apis/authorization.k8s.io/v1/selfsubjectrulesreviews" \
  -d '{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"harness-a"}}' \
  || fail "bound token rejected by the API server"
note "RBAC denies, audit records it, bound tokens are issued and accepted"

k delete namespace harness-a --wait=true --timeout 60s >/dev/null || fail "namespace deletion did not finish"

# ---------------------------------------------------------------------------------- a second cluster at once
bash "$HERE/cluster.sh" up "$B" 2>"$B.up.log" || { cat "$B.up.log" >&2; fail "second cluster did not come up"; }
rm -f "$B.up.log"
b_url=$(bash "$HERE/cluster.sh" env "$B" | sed -n 's/^export TEPHRA_E2E_API_URL=//p')
[ "$b_url" != "$TEPHRA_E2E_API_URL" ] || fail "cluster B got cluster A's API port"
k --kubeconfig "$B/kubeconfig" get namespace default >/dev/null || fail "cluster B not serving"
k create namespace only-in-a >/dev/null
! k --kubeconfig "$B/kubeconfig" get namespace only-in-a >/dev/null 2>&1 || fail "clusters share state"
if bash "$HERE/cluster.sh" up "$B" >/dev/null 2>&1; then fail "'up' accepted a dir whose cluster is running"; fi
b_pids=$(cat "$B"/run/*.pid)
[ "$(echo "$b_pids" | wc -w)" -ge 3 ] || fail "cluster B recorded fewer than 3 pids"
bash "$HERE/cluster.sh" down "$B" 2>/dev/null
for pid in $b_pids; do
  ! kill -0 "$pid" 2>/dev/null || fail "pid $pid of cluster B survived 'down'"
done
bash "$HERE/cluster.sh" down "$B" 2>/dev/null || fail "a second 'down' is not harmless"
[ -s "$B/logs/kube-apiserver.log" ] || fail "'down' did not keep cluster B's logs"
k get namespace only-in-a >/dev/null || fail "cluster A stopped serving after B went down"
note "two clusters ran side by side; down B left A intact"
echo "PASS"
