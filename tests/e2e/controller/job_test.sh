#!/usr/bin/env bash
# e2e for the vcjob controller (run by run-with-cluster.sh: KUBECONFIG, KUBECTL, TEPHRA_BIN, TEPHRA_SOURCE_DIR).
# Set-up is command_env.sh: `tephra nodesim` plays the nodes and, in this suite by default, the real
# `tephra scheduler` enqueues and binds (controller and scheduler together, as users run them);
# TEPHRA_E2E_REAL_SCHEDULER=0 makes the test play the scheduler instead.
#  1. MPI job (master 1 + worker 2; mpi, svc, ssh plugins) runs to Completed: hosts ConfigMap, MPI_HOST on the
#     master, headless Service, NetworkPolicy, ssh Secret with the ssh config, PodGroup minMember.
#  2. PyTorch job: MASTER_ADDR / MASTER_PORT / WORLD_SIZE / RANK per pod.
#  3. exitCode policy: pods exit 3, policy exitCode 3 -> RestartJob, maxRetry 2 -> Failed with retryCount 2,
#     status.version bumped per restart.
#  4. The controller is SIGKILLed while a job runs and restarted: the job completes with exactly its replicas
#     (no duplicate pods) and retryCount 0.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TEPHRA_E2E_REAL_SCHEDULER=${TEPHRA_E2E_REAL_SCHEDULER:-1}
# nodesim, the controller and the scheduler.
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"
CTRL_LOG="$LOGS/controller.log"
# Starts a second controller process (after the first was killed), logging to controller.log.restarted.
start_controller() {
  local rc=0
  start_role controller "$CTRL_LOG.restarted" --kubeconfig "$KUBECONFIG" --metrics-addr "127.0.0.1:$(free_port)" \
    --health-addr "127.0.0.1:$(free_port)" ${TEPHRA_CONTROLLER_ARGS:-} || rc=$?
  return $rc
}

phase() { k get vcjob -n $NS "$1" -o jsonpath='{.status.state.phase}'; }
# What a failure message needs: the job's status, its PodGroups and pods.
dump() {
  k get vcjob -n $NS "$1" -o yaml 2>&1 | sed -n '/^status:/,$p' >&2 || true
  k get podgroups,pods -n $NS -o wide 2>&1 >&2 || true
  tail -n 30 "$CTRL_LOG" >&2 || true
  [ ! -f "$CTRL_LOG.restarted" ] || tail -n 30 "$CTRL_LOG.restarted" >&2 || true
}
phase_is() { [ "$(phase "$1")" = "$2" ]; }

# vcjob <name> <run-seconds> <exit-code> <maxRetry> <plugins-flow-yaml> <policies-flow-yaml> <task>=<replicas>...
vcjob() {
  local name=$1 run=$2 code=$3 retry=$4 plugins=$5 policies=$6; shift 6
  local total=0 t
  for t in "$@"; do total=$(( total + ${t#*=} )); done
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $name, namespace: $NS}
spec:
  schedulerName: volcano
  queue: default
  minAvailable: $total
  maxRetry: $retry
  plugins: $plugins
  policies: $policies
  tasks:
YAML
  for t in "$@"; do
    cat <<YAML
  - name: ${t%=*}
    replicas: ${t#*=}
    template:
      metadata:
        annotations: {tephra.io/sim-run-seconds: "$run", tephra.io/sim-exit-code: "$code"}
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox
          resources: {requests: {cpu: "1", memory: 1Gi}}
YAML
  done
}
env_of() {  # env_of <pod> <var>
  k get pod -n $NS "$1" -o jsonpath="{.spec.containers[0].env[?(@.name==\"$2\")].value}"
}


# JOB_TEST_PART=restart runs only scenario 4 (registered separately as e2e_controller_job_restart).
if [ "${JOB_TEST_PART:-main}" = main ]; then
# ------------------------------------------------------------------------------------------------ 1. MPI
# Its pods run 12 s: the plugin objects checked below go when the job completes, which 3 s pods on a loaded
# machine did before the last read.
vcjob mpi 12 0 3 '{mpi: ["--master=master", "--worker=worker", "--port=22"], svc: [], ssh: []}' '[]' master=1 worker=2 |
  k apply -f - >/dev/null
wait_until "mpi pods" 90 bash -c "[ \$($KUBECTL get pods -n $NS -l volcano.sh/job-name=mpi -o name | wc -l) -eq 3 ]" ||
  { dump mpi; fail "mpi job pods not created"; }
[ "$(env_of mpi-master-0 MPI_HOST)" = "mpi-worker-0.mpi,mpi-worker-1.mpi" ] || fail "MPI_HOST on the master: '$(env_of mpi-master-0 MPI_HOST)'"
[ "$(k get cm -n $NS mpi-svc -o jsonpath='{.data.VC_WORKER_HOSTS}')" = "mpi-worker-0.mpi,mpi-worker-1.mpi" ] || fail "svc ConfigMap"
[ "$(k get cm -n $NS mpi-svc -o jsonpath='{.data.worker\.host}')" = "$(printf 'mpi-worker-0.mpi\nmpi-worker-1.mpi')" ] || fail "worker.host"
[ "$(k get svc -n $NS mpi -o jsonpath='{.spec.clusterIP}')" = None ] || fail "headless service"
# The plugins' objects are written beside the pods, not before them: wait rather than read once.
mpi_np() { k get networkpolicy -n $NS mpi; }
wait_until "mpi NetworkPolicy" 30 mpi_np || fail "network policy"
k get secret -n $NS mpi-ssh -o jsonpath='{.data.config}' | base64 -d | grep -q "HostName mpi-worker-1.mpi" || fail "ssh config"
k get secret -n $NS mpi-ssh -o jsonpath='{.data.id_rsa}' | base64 -d | grep -q "BEGIN RSA PRIVATE KEY" || fail "ssh key"
[ "$(k get pod -n $NS mpi-master-0 -o jsonpath='{.metadata.ownerReferences[0].kind}')" = Job ] || fail "owner ref"
pg=$(k get podgroups -n $NS -o jsonpath='{.items[?(@.metadata.ownerReferences[0].name=="mpi")].metadata.name}')
[ "$(k get podgroup -n $NS "$pg" -o jsonpath='{.spec.minMember}')" = 3 ] || fail "PodGroup minMember"
wait_until "mpi Completed" 120 phase_is mpi Completed || fail "mpi job is $(phase mpi), not Completed"
note "1. MPI job Completed with hosts, env, service, ssh"

# ------------------------------------------------------------------------------------------------ 2. PyTorch
vcjob pt 3 0 3 '{pytorch: ["--master=master", "--worker=worker", "--port=23456"], svc: []}' '[]' master=1 worker=2 |
  k apply -f - >/dev/null
wait_until "pytorch pods" 90 bash -c "[ \$($KUBECTL get pods -n $NS -l volcano.sh/job-name=pt -o name | wc -l) -eq 3 ]" ||
  fail "pytorch pods not created"
for p in pt-master-0:0 pt-worker-0:1 pt-worker-1:2; do
  pod=${p%:*}
  [ "$(env_of "$pod" RANK)" = "${p#*:}" ] || fail "$pod RANK=$(env_of "$pod" RANK)"
  [ "$(env_of "$pod" WORLD_SIZE)" = 3 ] || fail "$pod WORLD_SIZE"
  [ "$(env_of "$pod" MASTER_ADDR)" = pt-master-0.pt ] || fail "$pod MASTER_ADDR"
  [ "$(env_of "$pod" MASTER_PORT)" = 23456 ] || fail "$pod MASTER_PORT"
done
wait_until "pt Completed" 120 phase_is pt Completed || fail "pytorch job is $(phase pt)"
note "2. PyTorch ranks and world size"

# ------------------------------------------------------------------------------------------- 3. exit-code policy
vcjob ec 1 3 2 '{}' '[{exitCode: 3, action: RestartJob}]' worker=1 | k apply -f - >/dev/null
wait_until "ec Failed" 240 phase_is ec Failed || fail "exit-code job is $(phase ec), retryCount $(k get vcjob -n $NS ec -o jsonpath='{.status.retryCount}')"
[ "$(k get vcjob -n $NS ec -o jsonpath='{.status.retryCount}')" = 2 ] || fail "retryCount"
[ "$(k get vcjob -n $NS ec -o jsonpath='{.status.version}')" -ge 2 ] || fail "version not bumped per restart"
note "3. exitCode policy restarted twice, then Failed"

fi

if [ "${JOB_TEST_PART:-main}" = restart ]; then
# ------------------------------------------------------------------------------ 4. controller restart mid-job
# The pods run 60 s: the restarted replica waits for the killed one's lease to expire (15 s) and must take
# over while they still run, so the restart really happens mid-job.
vcjob long 60 0 3 '{}' '[]' worker=4 | k apply -f - >/dev/null
wait_until "long Running" 90 phase_is long Running || { dump long; fail "long job is $(phase long)"; }
four_running() { [ "$(k get pods -n $NS -l volcano.sh/job-name=long --field-selector=status.phase=Running -o name | wc -l)" -eq 4 ]; }
wait_until "long: 4 running pods" 60 four_running || { dump long; fail "long job pods not running"; }
uids() { k get pods -n $NS -l volcano.sh/job-name=long -o jsonpath='{range .items[*]}{.metadata.uid}{" "}{end}'; }
uids_before=$(uids)
kill -KILL "$CTRL_PID"
start_controller || fail "controller did not restart"
took_over() { grep -q 'controller-manager running' "$CTRL_LOG.restarted"; }
wait_until "restarted controller leading" 90 took_over || { dump long; fail "restarted controller never took over"; }
[ "$(phase long)" = Running ] || { dump long; fail "job long is $(phase long) when the restarted controller took over, not Running (not mid-job)"; }
wait_until "long Completed" 120 phase_is long Completed || { dump long; fail "long job is $(phase long) after the restart"; }
# Same 4 pods (no duplicates, none recreated), no restart: version and retryCount stay 0. Both fields are
# omitempty (as in Volcano's Go types), so 0 reads back as an empty string.
[ "$(uids)" = "$uids_before" ] || { dump long; fail "pods changed across the restart: '$uids_before' -> '$(uids)'"; }
[ "$(k get pods -n $NS -l volcano.sh/job-name=long -o name | wc -l)" -eq 4 ] || fail "pod count after restart"
rc_long=$(k get vcjob -n $NS long -o jsonpath='{.status.retryCount}')
ver_long=$(k get vcjob -n $NS long -o jsonpath='{.status.version}')
[ "${rc_long:-0}" = 0 ] && [ "${ver_long:-0}" = 0 ] ||
  { dump long; fail "restart counted a retry: retryCount='$rc_long' version='$ver_long'"; }
note "4. controller SIGKILL + restart: job Completed, 4 pods, no retry"
fi
echo PASS
