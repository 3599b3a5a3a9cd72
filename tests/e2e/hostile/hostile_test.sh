#!/usr/bin/env bash
# e2e: what a hostile tenant, or anything on the pod network, sends to running roles (issue 41). Each attack is
# refused with a clear answer or passed over, every role keeps serving, and a normal vcjob still gets its pods.
#  1. the scheduler's what-if (POST /v1/test-only): a body of 200,000 nested arrays, and a job whose template
#     holds one, are 400; a job of 2147483647 replicas is 400 naming replicas; a caller from another host is 403.
#  2. PUT /debug/flags/v off from another host is 403 on the controller and the scheduler; the level stays.
#  3. a JobFlow whose flow name is 700 'é': its JobTemplateNotFound Event is written, cut on a character.
#  4. a JobTemplate holding a 600-deep array: after a controller restart the informers sync (the template is
#     passed over and counted), and a new vcjob gets its pods, placed by the scheduler.
# "Another host" is this machine's non-loopback address (what a pod on the cluster network looks like); the
# checks that need one are skipped, with a note, on a host without one.
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
e2e_begin
NS=default
REMOTE=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+\.' | grep -v '^127\.' | head -1 || true)

# code <curl args...>: the HTTP status only (000 when nothing answered).
code() { curl -s -o "$WORK/body" -w '%{http_code}' --max-time 20 "$@" || true; }
alive() { kill -0 "$1" 2>/dev/null || fail "$2 is gone; last lines of its log: $(tail -n 20 "$3")"; }

install_crds || fail "CRDs"
start_sim_nodes 2 "$LOGS/nodesim.log" --nodes 2 --cpu 8 --gpus 0 || fail "simulated nodes"
SPORT=$(free_port)
SHEALTH=$(free_port)
start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
  --listen-address "0.0.0.0:$SPORT" --health-addr "127.0.0.1:$SHEALTH" --reservation-depth 1 ||
  fail "tephra scheduler did not start"
SCHED_PID=${ROLE_PIDS[-1]}
wait_until "scheduler /readyz" 60 curl -fsS "http://127.0.0.1:$SHEALTH/readyz" || fail "scheduler not ready"
have_queue() { k get queue default; }
wait_until "default queue" 60 have_queue || fail "no default queue"
CPORT=$(free_port)
start_controller() {
  start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --leader-elect=false \
    --metrics-addr "0.0.0.0:$CPORT" --health-addr "127.0.0.1:$(free_port)" || fail "tephra controller did not start"
  CTRL_PID=${ROLE_PIDS[-1]}
}
start_controller

# ------------------------------------------------------------------------------------------- 1. what-if
python3 -c 'import sys; sys.stdout.write("[" * 200000 + "]" * 200000)' >"$WORK/deep.json"
python3 - "$WORK/deep-job.json" <<'PY'
import json, sys
job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "w"},
       "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"x": "HOLE"}}}]}}
open(sys.argv[1], "w").write(json.dumps(job).replace('"HOLE"', "[" * 200000 + "]" * 200000))
PY
cat >"$WORK/huge.json" <<'JSON'
{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","metadata":{"name":"huge"},
 "spec":{"minAvailable":1,"tasks":[{"name":"t","replicas":2147483647,
   "template":{"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"1"}}}]}}}]}}
JSON
WHATIF="http://127.0.0.1:$SPORT/v1/test-only"
[ "$(code -X POST -H 'Content-Type: application/json' --data-binary @"$WORK/deep.json" "$WHATIF")" = 400 ] ||
  fail "200,000 nested arrays: want 400, got $(cat "$WORK/body")"
[ "$(code -X POST -H 'Content-Type: application/json' --data-binary @"$WORK/deep-job.json" "$WHATIF")" = 400 ] ||
  fail "a job holding 200,000 nested arrays: want 400, got $(cat "$WORK/body")"
[ "$(code -X POST -H 'Content-Type: application/json' --data-binary @"$WORK/huge.json" "$WHATIF")" = 400 ] ||
  fail "2147483647 replicas: want 400, got $(cat "$WORK/body")"
grep -q replicas "$WORK/body" || fail "the refusal of 2147483647 replicas does not name replicas: $(cat "$WORK/body")"
alive "$SCHED_PID" scheduler "$LOGS/scheduler.log"
curl -fsS "http://127.0.0.1:$SHEALTH/healthz" >/dev/null || fail "scheduler /healthz after the what-if attacks"
if [ -n "$REMOTE" ]; then
  [ "$(code --interface "$REMOTE" -X POST -H 'Content-Type: application/json' --data-binary @"$WORK/huge.json" \
    "http://$REMOTE:$SPORT/v1/test-only")" = 403 ] || fail "what-if from $REMOTE: want 403, got $(cat "$WORK/body")"
fi
note "1. what-if: deep bodies and 2^31-1 replicas are 400, the scheduler serves on${REMOTE:+; from $REMOTE 403}"

# ------------------------------------------------------------------------------------------- 2. log level
if [ -n "$REMOTE" ]; then
  for port in "$CPORT" "$SPORT"; do
    [ "$(code --interface "$REMOTE" -X PUT -d off "http://$REMOTE:$port/debug/flags/v")" = 403 ] ||
      fail "PUT /debug/flags/v off from $REMOTE on port $port: want 403, got $(cat "$WORK/body")"
    [ "$(curl -fsS "http://127.0.0.1:$port/debug/flags/v")" = info ] || fail "the log level changed on port $port"
  done
  note "2. PUT /debug/flags/v from $REMOTE is 403 on the controller and the scheduler; the level stays info"
else
  note "2. SKIPPED: this host has no non-loopback address"
fi

# ------------------------------------------------------------------------------------------- 3. JobFlow
FLOW=$(python3 -c 'print("\u00e9" * 700)')
k apply -f - >/dev/null <<YAML
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: accents, namespace: $NS}
spec:
  jobRetainPolicy: retain
  flows:
  - name: "$FLOW"
YAML
event_msg() {
  k get events -n $NS --field-selector "involvedObject.name=accents,reason=JobTemplateNotFound" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}
has_event() { [ -n "$(event_msg)" ]; }
wait_until "JobTemplateNotFound Event on jobflow accents" 60 has_event ||
  fail "no JobTemplateNotFound Event; controller log: $(tail -n 20 "$LOGS/controller.log")"
msg=$(event_msg | head -1)
[ "$(printf '%s' "$msg" | wc -c)" -le 1024 ] || fail "the Event message is longer than 1024 bytes"
printf '%s' "$msg" | python3 -c 'import sys; sys.stdin.buffer.read().decode("utf-8")' ||
  fail "the Event message is not valid UTF-8"
alive "$CTRL_PID" controller "$LOGS/controller.log"
note "3. a JobFlow with a 700-character flow name: its Event is written, cut on a character; the controller serves"

# ------------------------------------------------------------------------------------------- 4. JobTemplate
python3 - "$WORK/template.json" <<'PY'
import json, sys
t = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate", "metadata": {"name": "deep", "namespace": "default"},
     "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": {"x": "HOLE"}}]}}
open(sys.argv[1], "w").write(json.dumps(t).replace('"HOLE"', "[" * 600 + "]" * 600))
PY
k create -f "$WORK/template.json" >/dev/null || fail "the API server refused the deep JobTemplate"
stop_pids 10 "$CTRL_PID"
start_controller
cat <<YAML | k apply -f - >/dev/null
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: after, namespace: $NS}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: default
  tasks:
  - name: w
    replicas: 2
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "600"}}
      spec:
        restartPolicy: Never
        containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
YAML
placed() {
  [ "$(k get pods -n $NS -l volcano.sh/job-name=after -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' |
    grep -c .)" -ge 2 ]
}
wait_until "vcjob after's 2 pods placed" 120 placed ||
  fail "vcjob after has no placed pods; controller log: $(tail -n 20 "$LOGS/controller.log")"
skipped() {
  curl -fsS "http://127.0.0.1:$CPORT/metrics" |
    awk '$1 == "tephra_informer_decode_errors_total{resource=\"jobtemplates\"}" && $2 >= 1 {ok = 1} END {exit !ok}'
}
wait_until "the deep JobTemplate counted" 30 skipped || fail "tephra_informer_decode_errors_total{resource=jobtemplates} is 0"
grep -q 'object=default/deep' "$LOGS/controller.log" || fail "the controller log does not name default/deep"
alive "$CTRL_PID" controller "$LOGS/controller.log"
alive "$SCHED_PID" scheduler "$LOGS/scheduler.log"
note "4. a 600-deep JobTemplate is passed over and counted after a restart; a new vcjob's pods are placed"
echo "PASS"
