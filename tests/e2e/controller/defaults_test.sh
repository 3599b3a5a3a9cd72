#!/usr/bin/env bash
# e2e: the job controller applies the admission defaults when no mutating webhook ran
# (docs/job-controller.md, "Admission defaults applied by the controller"). No webhook is installed; the
# real `tephra scheduler` places the pods (it only takes pods whose schedulerName is volcano, so a job left
# undefaulted, whose pods would say default-scheduler, never runs here).
#  1. A job with one task of 3 replicas and no minAvailable, schedulerName, task name, queue or maxRetry:
#     the stored job gets queue default, schedulerName volcano, minAvailable 3, maxRetry 3, task name
#     default0 with minAvailable 3 (queue and maxRetry come from the CRD schema's defaults); a Normal
#     `Defaulted` Event names the fields the controller filled; its pods (running 15 s) are
#     <job>-default0-0..2 with schedulerName volcano; its PodGroup has minMember 3; it runs to Completed.
#  2. A PyTorch job without the svc plugin (everything else set): svc is added (the Event names only that)
#     and the headless Service exists.
#  3. A job written with all its defaults is never written by the controller: metadata.generation stays 1
#     and it has no Defaulted Event.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TEPHRA_E2E_REAL_SCHEDULER=${TEPHRA_E2E_REAL_SCHEDULER:-1}
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"

[ -z "$(k get mutatingwebhookconfigurations,validatingwebhookconfigurations -o name)" ] ||
  fail "this test needs a cluster without admission webhooks"

field() { k get vcjob -n $NS "$1" -o jsonpath="{$2}"; }
event_msgs() {
  k get events -n $NS --field-selector "involvedObject.name=$1,reason=$2" -o jsonpath='{range .items[*]}{.type}{" "}{.message}{"\n"}{end}'
}
dump() {
  k get vcjob -n $NS "$1" -o yaml >&2 2>&1 || true
  k get podgroups,pods -n $NS -o wide >&2 2>&1 || true
  k get events -n $NS --field-selector "involvedObject.name=$1" >&2 2>&1 || true
  tail -n 30 "$LOGS/controller.log" >&2 || true
}
# template [<run-seconds>]: pod template of nodesim pods exiting 0 after run-seconds (default 3), indented
# for a task entry.
template() {
  cat <<YAML
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "${1:-3}", tephra.io/sim-exit-code: "0"}}
      spec:
        restartPolicy: Never
        containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
YAML
}

# ------------------------------------------------------------------------- 1. a job without any default
{
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: bare, namespace: $NS}
spec:
  tasks:
  - replicas: 3
YAML
  template 15
} | k apply -f - >/dev/null
# ------------------------------------------------------- 2. PyTorch without svc  3. a job with its defaults
k apply -f - >/dev/null <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pt, namespace: $NS}
spec:
  schedulerName: volcano
  queue: default
  minAvailable: 3
  maxRetry: 3
  plugins: {pytorch: ["--master=master", "--worker=worker", "--port=23456"]}
  tasks:
  - name: master
    replicas: 1
    minAvailable: 1
    maxRetry: 3
$(template 30)
  - name: worker
    replicas: 2
    minAvailable: 2
    maxRetry: 3
$(template 30)
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: full, namespace: $NS}
spec:
  schedulerName: volcano
  queue: default
  minAvailable: 2
  maxRetry: 3
  tasks:
  - name: w
    replicas: 2
    minAvailable: 2
    maxRetry: 3
$(template)
YAML

# 2. PyTorch without svc. Checked first: the svc plugin's Service lives only while the job runs (its pods
#    run 30 s; a finished job's plugin objects are deleted, as Volcano's are).
has_svc() { k get vcjob -n $NS pt -o jsonpath='{.spec.plugins}' | grep -q '"svc"'; }
wait_until "pt: svc plugin stored" 60 has_svc || { dump pt; fail "svc plugin not added to pt"; }
pt_event() { event_msgs pt Defaulted | grep -q .; }
wait_until "pt: Defaulted event" 30 pt_event || { dump pt; fail "no Defaulted event on pt"; }
[ "$(event_msgs pt Defaulted)" = "Normal applied defaults the admission webhook would have set: spec.plugins.svc=[]" ] ||
  fail "pt Defaulted event: '$(event_msgs pt Defaulted)'"
pt_running() { [ "$(vcjob_phase pt)" = Running ]; }
wait_until "pt Running" 90 pt_running || { dump pt; fail "job pt is $(vcjob_phase pt), not Running"; }
k get svc -n $NS pt >/dev/null || { dump pt; fail "no Service pt while the job runs"; }
[ "$(k get svc -n $NS pt -o jsonpath='{.spec.clusterIP}')" = None ] || fail "Service pt is not headless"
[ "$(k get pod -n $NS pt-worker-1 -o jsonpath='{.spec.subdomain}')" = pt ] || fail "pt-worker-1 has no subdomain pt"
[ "$(k get pod -n $NS pt-worker-1 -o jsonpath='{.spec.containers[0].env[?(@.name=="RANK")].value}')" = 2 ] ||
  fail "pt-worker-1 RANK"
note "2. pytorch job got svc: headless Service pt, pod subdomain pt"

# 1. The stored job carries the defaults.
named() { [ "$(field bare '.spec.tasks[0].name')" = default0 ]; }
wait_until "bare: task name default0 stored" 60 named || { dump bare; fail "job bare was not defaulted"; }
for f in '.spec.queue=default' '.spec.schedulerName=volcano' '.spec.minAvailable=3' '.spec.maxRetry=3' \
         '.spec.tasks[0].minAvailable=3' '.spec.tasks[0].maxRetry=3'; do
  [ "$(field bare "${f%%=*}")" = "${f#*=}" ] || { dump bare; fail "bare ${f%%=*} is '$(field bare "${f%%=*}")', want ${f#*=}"; }
done
defaulted_event() { event_msgs bare Defaulted | grep -q .; }
wait_until "bare: Defaulted event" 30 defaulted_event || { dump bare; fail "no Defaulted event on job bare"; }
msg=$(event_msgs bare Defaulted | head -1)
# The CRD schema itself defaults spec.queue and spec.maxRetry (as Volcano's does), so the API server stored
# those before the controller saw the job; the Event names what the controller filled.
[ "$msg" = "Normal applied defaults the admission webhook would have set: spec.minAvailable=3, spec.schedulerName=volcano, spec.tasks[0].maxRetry=3, spec.tasks[0].minAvailable=3, spec.tasks[0].name=default0" ] ||
  fail "Defaulted event on bare: '$msg'"
note "1a. stored job defaulted; event: $msg"

# Checked while the job runs: its PodGroup is deleted once the job finishes (its pods run 15 s, which a loaded
# machine can spend before a single read after the pods appear).
pg_of_bare() {
  k get podgroups -n $NS -o jsonpath='{range .items[?(@.metadata.ownerReferences[0].name=="bare")]}{.spec.minMember}{" "}{.spec.queue}{end}'
}
pg_defaulted() { [ "$(pg_of_bare)" = "3 default" ]; }
wait_until "bare: PodGroup with minMember 3 in queue default" 60 pg_defaulted ||
  { dump bare; fail "PodGroup of bare: minMember and queue '$(pg_of_bare)', want '3 default'"; }
three_pods() { [ "$(k get pods -n $NS -l volcano.sh/job-name=bare -o name | wc -l)" -eq 3 ]; }
wait_until "bare: 3 pods" 90 three_pods || { dump bare; fail "job bare has no 3 pods"; }
pods=$(k get pods -n $NS -l volcano.sh/job-name=bare -o jsonpath='{range .items[*]}{.metadata.name}{"="}{.spec.schedulerName}{" "}{end}')
[ "$pods" = "bare-default0-0=volcano bare-default0-1=volcano bare-default0-2=volcano " ] ||
  { dump bare; fail "pods of bare: '$pods'"; }
wait_until "bare Completed" 120 vcjob_phase_is bare Completed || { dump bare; fail "job bare is $(vcjob_phase bare), not Completed"; }
[ "$(event_msgs bare Defaulted | wc -l)" -eq 1 ] || fail "more than one Defaulted event on bare"
note "1b. pods $pods PodGroup minMember 3, Completed"

wait_until "pt Completed" 120 vcjob_phase_is pt Completed || { dump pt; fail "job pt is $(vcjob_phase pt)"; }
note "2b. pytorch job Completed"

# 3. A job with its defaults is not written.
wait_until "full Completed" 120 vcjob_phase_is full Completed || { dump full; fail "job full is $(vcjob_phase full)"; }
[ "$(k get vcjob -n $NS full -o jsonpath='{.metadata.generation}')" = 1 ] ||
  fail "job full was written: generation $(k get vcjob -n $NS full -o jsonpath='{.metadata.generation}')"
[ -z "$(event_msgs full Defaulted)" ] || fail "job full has a Defaulted event"
[ "$(k get vcjob -n $NS bare -o jsonpath='{.metadata.generation}')" = 2 ] ||
  fail "job bare was written more than once: generation $(k get vcjob -n $NS bare -o jsonpath='{.metadata.generation}')"
note "3. a job with its defaults is never written (generation 1); bare was written once (generation 2)"
echo PASS
