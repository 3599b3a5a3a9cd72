#!/usr/bin/env bash
# e2e: bad input gets a clear error and never stops the controller (issue #5, "Bad input and faults").
# The controller runs with --max-requeue-num 4 so the requeue limit is reached in seconds.
#  1. A job whose pod template the API server rejects (container name "Bad_Name"): a Warning FailedCreate
#     Event on the vcjob with the server's message naming the field, status.state.reason FailedCreatePod;
#     after the requeue limit the job is terminated (Volcano's TerminateJob): phase Terminating/Terminated.
#  2. Meanwhile a good job created after it runs to Completed.
#  3. A job that references a PVC that does not exist: no pods, a PVCError Event and
#     status.state.reason PVCNotFound naming the claim; once the PVC is created the pods are created, the
#     reason is cleared and the job Completes.
#  4. A job naming a queue that does not exist: a QueueNotFound Event, no pods, terminated after the limit.
#  5. A ray job without its head task: a PluginError Event, no pods, terminated after the limit.
#  6. A task name that is not a DNS label is refused by the API server (the CRD's pattern).
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TEPHRA_CONTROLLER_ARGS="${TEPHRA_CONTROLLER_ARGS:-} --max-requeue-num 4"
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"

state_of() { k get vcjob -n $NS "$1" -o jsonpath="{.status.state.$2}"; }
dump() {
  k get vcjob -n $NS "$1" -o yaml 2>&1 | sed -n '/^status:/,$p' >&2 || true
  k get events -n $NS --field-selector "involvedObject.name=$1" >&2 2>&1 || true
  tail -n 30 "$LOGS/controller.log" >&2 || true
}
# job <name> <container-name> <run-seconds> [volumes-yaml]: a one-pod job (task_yaml from command_env.sh).
job() {
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1, namespace: $NS}
spec:
  minAvailable: 1
  schedulerName: volcano
  queue: default
  ${4:-}
  tasks:
YAML
  task_yaml w 1 "$3" '[]' "$2"
}
event_msgs() { k get events -n $NS --field-selector "involvedObject.name=$1,reason=$2" -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'; }

# ------------------------------------------------------------------ 1 + 2. rejected pod template, good job flows
job bad Bad_Name 2 | k apply -f - >/dev/null
job good c 2 | k apply -f - >/dev/null
failed_create() { event_msgs bad FailedCreate | grep -q 'Bad_Name'; }
wait_until "FailedCreate event on job bad" 60 failed_create || { dump bad; fail "no FailedCreate event naming Bad_Name"; }
msg=$(event_msgs bad FailedCreate | head -1)
echo "$msg" | grep -q 'spec.containers\[0\].name' || fail "FailedCreate message does not name the field: $msg"
wait_until "job good Completed" 120 vcjob_phase_is good Completed || { dump good; fail "good job is $(vcjob_phase good) while bad one fails"; }
terminated() { case "$(vcjob_phase bad)" in Terminating | Terminated) return 0 ;; esac; return 1; }
wait_until "job bad terminated after the requeue limit" 120 terminated || { dump bad; fail "job bad is $(vcjob_phase bad), want Terminating/Terminated"; }
[ "$(k get pods -n $NS -l volcano.sh/job-name=bad -o name | wc -l)" = 0 ] || fail "job bad has pods"
note "1-2. rejected template: FailedCreate names spec.containers[0].name; terminated after the requeue limit ($(vcjob_phase bad)); good job Completed"

# ------------------------------------------------------------------------------------------ 3. missing PVC
job nopvc c 2 'volumes: [{mountPath: /data, volumeClaimName: later-pvc}]' | k apply -f - >/dev/null
pvc_reason() { [ "$(state_of nopvc reason)" = PVCNotFound ]; }
wait_until "nopvc state.reason PVCNotFound" 60 pvc_reason || { dump nopvc; fail "job nopvc reason '$(state_of nopvc reason)'"; }
state_of nopvc message | grep -q 'later-pvc' || fail "nopvc state.message does not name the claim: $(state_of nopvc message)"
event_msgs nopvc PVCError | grep -q 'later-pvc' || { dump nopvc; fail "no PVCError event naming later-pvc"; }
[ "$(k get pods -n $NS -l volcano.sh/job-name=nopvc -o name | wc -l)" = 0 ] || fail "job nopvc has pods without its PVC"
k create -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: later-pvc, namespace: $NS}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
YAML
wait_until "job nopvc Completed" 120 vcjob_phase_is nopvc Completed || { dump nopvc; fail "job nopvc is $(vcjob_phase nopvc) after its PVC appeared"; }
[ -z "$(state_of nopvc reason)" ] || [ "$(state_of nopvc reason)" != PVCNotFound ] || fail "PVCNotFound not cleared"
claim=$(k get pod -n $NS nopvc-w-0 -o jsonpath='{.spec.volumes[?(@.persistentVolumeClaim)].persistentVolumeClaim.claimName}')
[ "$claim" = later-pvc ] || fail "pod nopvc-w-0 does not mount later-pvc (got '$claim')"
note "3. missing PVC: PVCNotFound + PVCError naming it, no pods; after the PVC appears the job Completes"

# --------------------------------------------- 4 + 5. a queue that does not exist; a ray job with no head task
# Volcano's syncJob fails on both (the queue lister, the ray plugin's OnPodCreate); after the requeue limit the
# job is terminated instead of waiting in Pending for ever. Nothing is created for either.
job noqueue c 2 | sed 's/queue: default/queue: no-such-queue/' | k apply -f - >/dev/null
job noray c 2 'plugins: {ray: []}' | k apply -f - >/dev/null
queue_event() { event_msgs noqueue QueueNotFound | grep -q 'no-such-queue'; }
wait_until "QueueNotFound event on job noqueue" 60 queue_event || { dump noqueue; fail "no QueueNotFound event naming the queue"; }
terminated_job() { case "$(vcjob_phase "$1")" in Terminating | Terminated) return 0 ;; esac; return 1; }
for j in noqueue noray; do
  wait_until "job $j terminated after the requeue limit" 120 terminated_job $j || { dump $j; fail "job $j is $(vcjob_phase $j), want Terminating/Terminated"; }
  [ "$(k get pods -n $NS -l volcano.sh/job-name=$j -o name | wc -l)" = 0 ] || fail "job $j has pods"
done
event_msgs noray PluginError | grep -q 'no head task' || { dump noray; fail "no PluginError event naming the missing head task"; }
note "4-5. missing queue (QueueNotFound) and ray job without head (PluginError): no pods, terminated after the requeue limit"

# ------------------------------------------------------------- 6. task names are DNS labels, as in Volcano's CRD
# No webhook runs here: the CRD's own pattern refuses the name before anything is stored.
if out=$(job badname c 2 | sed 's/- name: w$/- name: Bad_Task/' | k create -f - 2>&1); then
  fail "a task named Bad_Task was stored"
fi
echo "$out" | grep -q 'spec.tasks\(\[0\]\)\{0,1\}.name.*Bad_Task' || fail "the API server's refusal does not name spec.tasks[].name: $out"
note "6. task name Bad_Task refused by the API server: $(echo "$out" | tail -1 | cut -c1-160)"
echo PASS
