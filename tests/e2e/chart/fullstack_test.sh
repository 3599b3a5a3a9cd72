#!/usr/bin/env bash
# Full-stack e2e (run by run-with-cluster.sh): the product installed the way users install it.
#  1. `helm install` of charts/tephra (CRDs, RBAC, webhook configurations, scheduler ConfigMap, default Queue);
#     the three roles run as local processes with the flags of the chart's Deployments and the tokens of the
#     chart's ServiceAccounts (tests/e2e/lib/chart.sh), the webhook reached by URL; nodesim plays the kubelets.
#  2. With kubectl: MPI, PyTorch and TensorFlow jobs, a job with task dependencies and a JobFlow run to
#     Completed (Succeed); invalid manifests are denied; a job in a closed queue is refused.
#  3. `helm upgrade` (changed values and a new image tag): a running job keeps running with the same pods, no
#     object is lost, the webhook keeps its certificate; the roles restart with the new flags, and work goes on.
#  4. Least privilege: every request each role made (audit log) was granted by the chart, and every grant was
#     used or is allow-listed with a reason (rbac_check.py, docs/install.md).
#  5. `helm uninstall` leaves nothing behind but the CRDs and their objects (the kept `default` Queue among them).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source=../lib/chart.sh
source "$HERE/../lib/chart.sh"
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${HELM:?}" "${TEPHRA_E2E_DIR:?}"
LOGS=${TEPHRA_E2E_LOG_DIR:-$TEPHRA_E2E_DIR/logs}
WORK=$LOGS/../chart
mkdir -p "$WORK"
trap 'chart_stop_roles; stop_roles' EXIT
REL=tephra
RNS=tephra-system
NS=team-ml
WH_PORT=$(free_port)

# Everything cluster-scoped, and everything in the release namespace, as kind/name lines (Events excluded:
# they expire on their own).
snapshot() {
  local r
  for r in $(k api-resources --verbs=list --namespaced=false -o name | sort); do
    k get "$r" -o name 2>/dev/null || true
  done
  if k get namespace "$RNS" >/dev/null 2>&1; then
    for r in $(k api-resources --verbs=list --namespaced=true -o name | grep -v '^events' | sort); do
      k get "$r" -n "$RNS" -o name 2>/dev/null | sed "s|^|$RNS/|" || true
    done
  fi
}

note "nodesim: 4 nodes (the kubelets; not part of the chart)"
rc=0
start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes 4 --cpu 32 --gpus 0 || rc=$?
[ $rc -eq 0 ] || fail "tephra nodesim did not start (rc=$rc)"
node_count() { [ "$(k get nodes -o name | wc -l)" -ge 4 ]; }
wait_until "4 nodes" 90 node_count || fail "nodesim did not register nodes"
snapshot | sort >"$WORK/before.txt"

# ------------------------------------------------------------------------------------------------- 1. install
note "1. helm install"
chart_install "$REL" "$RNS" "$WH_PORT" --set custom.scheduler_schedule_period=1s >"$WORK/install.out" ||
  { cat "$WORK/install.out" >&2; fail "helm install failed"; }
crds_established() { k wait --for condition=Established --timeout 10s crd --all >/dev/null; }
wait_until "CRDs Established" 60 crds_established || fail "the chart's CRDs are not Established"
k get queue default >/dev/null || fail "the chart did not create the default Queue"
chart_start_roles "$REL" "$RNS" "$WORK/run1" "$WH_PORT" || fail "the chart's roles did not start"
# Self-signed mode: the role fills the chart's empty Secret and writes its CA into the chart's configurations.
ca_written() {
  local n
  n=$(k get validatingwebhookconfigurations,mutatingwebhookconfigurations -o json |
      jq "[.items[] | select(.metadata.name | startswith(\"$REL-admission-service-\")) | .webhooks[] |
           select((.clientConfig.caBundle // \"\") == \"\")] | length")
  [ "$n" = 0 ]
}
wait_until "caBundle in every webhook configuration" 60 ca_written || fail "caBundle not written"
[ -n "$(k -n "$RNS" get secret volcano-admission-secret -o jsonpath='{.data.tls\.crt}')" ] ||
  fail "the certificate Secret was not filled"
CERT_BEFORE=$(k -n "$RNS" get secret volcano-admission-secret -o jsonpath='{.data.tls\.crt}')
[ "$(k -n "$RNS" get secret volcano-admission-secret -o jsonpath='{.metadata.annotations.meta\.helm\.sh/release-name}')" = "$REL" ] ||
  fail "filling the certificate Secret dropped Helm's ownership annotations"
k create namespace "$NS" >/dev/null

# ------------------------------------------------------------------------------------------ 2. jobs and denials
note "2. jobs: MPI, PyTorch, TensorFlow, task dependencies, JobFlow"
# pod template fields every job shares: the simulated containers run 2 s and exit 0.
SIM='metadata: {annotations: {tephra.io/sim-run-seconds: "2"}}'
# pod <restartPolicy> <container> <image>: a pod template's spec, one container asking for 1 CPU.
pod() { echo "spec: {restartPolicy: $1, containers: [{name: $2, image: $3, resources: {requests: {cpu: \"1\"}}}]}"; }
cat >"$WORK/jobs.yaml" <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: mpi, namespace: $NS}
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins: {ssh: [], svc: [], mpi: ["--master=mpimaster", "--worker=mpiworker", "--port=22"]}
  policies: [{event: PodEvicted, action: RestartJob}]
  tasks:
  - name: mpimaster
    replicas: 1
    policies: [{event: TaskCompleted, action: CompleteJob}]
    template:
      $SIM
      $(pod OnFailure mpimaster mpi:latest)
  - name: mpiworker
    replicas: 2
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "30"}}
      $(pod OnFailure mpiworker mpi:latest)
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pytorch, namespace: $NS}
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins: {pytorch: ["--master=master", "--worker=worker", "--port=23456"], env: [], svc: []}
  tasks:
  - name: master
    replicas: 1
    template:
      $SIM
      $(pod OnFailure master pytorch:latest)
  - name: worker
    replicas: 2
    template:
      $SIM
      $(pod OnFailure worker pytorch:latest)
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: tensorflow, namespace: $NS}
spec:
  minAvailable: 3
  schedulerName: volcano
  plugins: {tensorflow: ["--ps=ps", "--worker=worker", "--port=2222"], env: [], svc: []}
  tasks:
  - name: ps
    replicas: 1
    template:
      $SIM
      $(pod OnFailure tensorflow tf:latest)
  - name: worker
    replicas: 2
    template:
      $SIM
      $(pod OnFailure tensorflow tf:latest)
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: deps, namespace: $NS}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - name: prepare
    replicas: 1
    template:
      $SIM
      $(pod Never c busybox)
  - name: train
    replicas: 2
    dependsOn: {name: [prepare]}
    template:
      $SIM
      $(pod Never c busybox)
YAML
for t in a b; do
  cat >>"$WORK/jobs.yaml" <<YAML
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: step-$t, namespace: $NS}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - name: w
    replicas: 1
    template:
      $SIM
      $(pod Never c busybox)
YAML
done
cat >>"$WORK/jobs.yaml" <<YAML
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: flow, namespace: $NS}
spec:
  jobRetainPolicy: retain
  flows:
  - name: step-a
  - name: step-b
    dependsOn: {targets: [step-a]}
YAML
k apply -f "$WORK/jobs.yaml" >/dev/null
phase() { k get vcjob -n "$NS" "$1" -o jsonpath='{.status.state.phase}' 2>/dev/null; }
phase_is() { [ "$(phase "$1")" = "$2" ]; }
flow_done() { [ "$(k get jobflow -n "$NS" flow -o jsonpath='{.status.state.phase}')" = Succeed ]; }

note "2b. denials while the jobs run"
expect_denied validatejob.volcano.sh "duplicated task name" create -f - <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: bad-dup, namespace: $NS}
spec:
  minAvailable: 1
  tasks:
  - {name: a, replicas: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}
  - {name: a, replicas: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}
YAML
expect_denied validatequeue.volcano.sh "parent queue nowhere does not exist" create -f - <<YAML
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: orphan}
spec: {weight: 1, parent: nowhere}
YAML
expect_denied validatequeue.volcano.sh "\`default\` queue can not be deleted" delete queue default </dev/null
# No tasks: the CRD schema (minItems 1, as Volcano's) refuses it before the webhook is asked.
expect_schema_refused "spec.tasks in body should have at least 1 items" create -f - <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: bad-empty, namespace: $NS}
spec: {minAvailable: 1, tasks: []}
YAML

note "2c. a job in a closed queue is refused"
k apply -f - >/dev/null <<YAML
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: frozen}
spec: {weight: 1}
YAML
queue_state() { k get queue "$1" -o jsonpath='{.status.state}'; }
queue_state_is() { [ "$(queue_state "$1")" = "$2" ]; }
wait_until "queue frozen Open" 30 queue_state_is frozen Open || fail "queue frozen not Open: '$(queue_state frozen)'"
k create -f - >/dev/null <<YAML
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {generateName: frozen-close-, namespace: default}
action: CloseQueue
target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: frozen, uid: $(k get queue frozen -o jsonpath='{.metadata.uid}')}
YAML
wait_until "queue frozen Closed" 30 queue_state_is frozen Closed || fail "queue frozen not Closed: '$(queue_state frozen)'"
expect_denied validatejob.volcano.sh "can only submit job to queue with state \`Open\`" create -f - <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: late, namespace: $NS}
spec:
  minAvailable: 1
  queue: frozen
  tasks: [{name: a, replicas: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}]
YAML

note "2d. plain pods of a Deployment (schedulerName volcano), and a job that deletes itself after it ends"
k apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: $NS}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {schedulerName: volcano, containers: [{name: web, image: nginx, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: short-lived, namespace: $NS}
spec:
  minAvailable: 1
  schedulerName: volcano
  ttlSecondsAfterFinished: 0
  tasks:
  - name: w
    replicas: 1
    template:
      $SIM
      $(pod Never c busybox)
YAML
web_running() { [ "$(k get pods -n "$NS" -l app=web --field-selector status.phase=Running -o name | wc -l)" -eq 2 ]; }
wait_until "the Deployment's 2 pods Running" 90 web_running || { k get pods,podgroups -n "$NS" -o wide >&2; fail "web pods not Running"; }
no_short_lived() { ! k get vcjob -n "$NS" short-lived >/dev/null 2>&1; }
wait_until "short-lived deleted by its TTL" 90 no_short_lived || fail "short-lived not deleted (phase '$(phase short-lived)')"
k delete deployment -n "$NS" web >/dev/null

for j in mpi pytorch tensorflow deps; do
  wait_until "$j Completed" 180 phase_is "$j" Completed ||
    { k get vcjob,podgroup,pods -n "$NS" -o wide >&2; fail "$j not Completed (phase '$(phase "$j")')"; }
done
wait_until "JobFlow Succeed" 120 flow_done ||
  fail "JobFlow not Succeed: $(k get jobflow -n "$NS" flow -o jsonpath='{.status}')"

# ----------------------------------------------------------------------------------------------- 3. upgrade
note "3. helm upgrade with a running job"
k apply -f - >/dev/null <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: keeper, namespace: $NS}
spec:
  minAvailable: 2
  schedulerName: volcano
  plugins: {svc: []}
  tasks:
  - name: w
    replicas: 2
    template:
      $(pod Never c busybox)
YAML
wait_until "keeper Running" 90 phase_is keeper Running || fail "keeper not Running (phase '$(phase keeper)')"
# Scaled up while it runs: the controller rewrites its PodGroup and the svc plugin's hosts ConfigMap.
k patch vcjob -n "$NS" keeper --type json \
  -p '[{"op":"replace","path":"/spec/minAvailable","value":3},{"op":"replace","path":"/spec/tasks/0/replicas","value":3}]' >/dev/null
keeper_scaled() {
  [ "$(k get podgroup -n "$NS" -o jsonpath='{range .items[?(@.metadata.ownerReferences[0].name=="keeper")]}{.spec.minMember}{end}')" = 3 ] &&
  [ "$(k get pods -n "$NS" -l volcano.sh/job-name=keeper --field-selector status.phase=Running -o name | wc -l)" -eq 3 ]
}
wait_until "keeper scaled to 3 running pods" 90 keeper_scaled ||
  { k get podgroup,pods -n "$NS" -o wide >&2; fail "keeper did not scale to 3"; }
inventory() {
  k get jobs.batch.volcano.sh,podgroups,pods,services,configmaps,secrets,jobflows,jobtemplates -n "$NS" \
    -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort
  k get queues -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort
  k get pods -n "$NS" -l volcano.sh/job-name=keeper \
    -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}' | sort
}
inventory >"$WORK/inventory-before.txt"
"$HELM" upgrade "$REL" "$CHART_DIR" --kubeconfig "$KUBECONFIG" -n "$RNS" --reuse-values --wait --timeout 120s \
  --set basic.image_tag_version=0.1.1-rc1 --set custom.scheduler_kube_api_qps=500 \
  --set custom.controller_worker_threads=4 >"$WORK/upgrade.out" || { cat "$WORK/upgrade.out" >&2; fail "helm upgrade failed"; }
"$HELM" get manifest "$REL" -n "$RNS" --kubeconfig "$KUBECONFIG" | grep -q 'image: .*:0.1.1-rc1' ||
  fail "helm upgrade did not change the image tag"
inventory >"$WORK/inventory-after.txt"
diff "$WORK/inventory-before.txt" "$WORK/inventory-after.txt" >&2 || fail "helm upgrade changed or lost objects"
[ "$(k -n "$RNS" get secret volcano-admission-secret -o jsonpath='{.data.tls\.crt}')" = "$CERT_BEFORE" ] ||
  fail "helm upgrade replaced the webhook's certificate"
ca_written || fail "helm upgrade wiped a caBundle"
# The rollout: old processes stop, new ones start with the upgraded Deployments' flags.
chart_stop_roles
chart_start_roles "$REL" "$RNS" "$WORK/run2" "$WH_PORT" || fail "the upgraded roles did not start"
ps -o args= -p "${CHART_ROLE_PID[scheduler]}" | grep -q -- '--kube-api-qps=500' ||
  fail "the scheduler did not restart with the upgraded --kube-api-qps"
phase_is keeper Running || fail "keeper not Running after the upgrade (phase '$(phase keeper)')"
inventory >"$WORK/inventory-restarted.txt"
diff "$WORK/inventory-before.txt" "$WORK/inventory-restarted.txt" >&2 || fail "the restarted roles changed the running job"
k apply -f - >/dev/null <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: after-upgrade, namespace: $NS}
spec:
  minAvailable: 1
  schedulerName: volcano
  tasks:
  - name: w
    replicas: 1
    template:
      $SIM
      $(pod Never c busybox)
YAML
wait_until "after-upgrade Completed" 120 phase_is after-upgrade Completed ||
  fail "a job submitted after the upgrade did not complete (phase '$(phase after-upgrade)')"
k delete vcjob -n "$NS" keeper --wait=false >/dev/null
gone() { [ -z "$(k get pods -n "$NS" -l volcano.sh/job-name=keeper -o name)" ] && ! k get vcjob -n "$NS" keeper >/dev/null 2>&1; }
wait_until "keeper and its pods deleted" 90 gone || fail "keeper not cleaned up"

# ------------------------------------------------------------------------------------------- 4. least privilege
note "4. RBAC: granted vs used"
chart_stop_roles
audit_log >"$LOGS/audit-slice.log" || fail "no audit log"
python3 "$HERE/rbac_check.py" --audit "$LOGS/audit-slice.log" --manifest "$WORK/run2/manifest.yaml" --release "$REL" \
  --namespace "$RNS" --allow-list "$TEPHRA_SOURCE_DIR/docs/install.md" || fail "the chart's RBAC is not least privilege"

# ---------------------------------------------------------------------------------------------- 5. uninstall
note "5. helm uninstall"
"$HELM" uninstall "$REL" -n "$RNS" --kubeconfig "$KUBECONFIG" --wait --timeout 120s >/dev/null
snapshot | sort >"$WORK/after.txt"
# Left behind on purpose: the CRDs (Helm never deletes them), the APIServices the API server registers for
# their groups, objects of those CRDs (users' Queues and jobs, the kept `default` Queue), and the release
# namespace itself with what Kubernetes puts in every namespace.
leftover=$(comm -13 "$WORK/before.txt" "$WORK/after.txt" |
  grep -v -E '^customresourcedefinition\.apiextensions\.k8s\.io/' |
  grep -v -E '^apiservice\.apiregistration\.k8s\.io/v[0-9a-z]+\.[a-z]+\.volcano\.sh$' |
  grep -v -E '^[a-z]+\.(batch|scheduling|flow|bus|topology)\.volcano\.sh/' |
  grep -v -E "^namespace/($RNS|$NS)\$" |
  grep -v -E "^$RNS/(serviceaccount/default|secret/default-token-[a-z0-9]+|configmap/kube-root-ca\.crt)\$" || true)
[ -z "$leftover" ] || fail "helm uninstall left objects behind:
$leftover"
k get queue default >/dev/null || fail "the default Queue (helm.sh/resource-policy: keep) was deleted"
note "PASS: install, jobs, denials, upgrade, least privilege, uninstall"
