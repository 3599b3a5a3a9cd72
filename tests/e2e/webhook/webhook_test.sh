#!/usr/bin/env bash
# e2e for `tephra webhook` (run by run-with-cluster.sh). nodesim, the controller and the real scheduler run
# (tests/e2e/controller/command_env.sh); the webhook registers its own configurations with the API server,
# reached by URL on loopback, and a self-signed certificate kept in a Secret.
#  1. The API server calls ten of the eleven paths (/pods/mutate, which never patches without an admission
#     configuration, is served but not registered, and is called directly): Volcano's invalid manifests are
#     refused through kubectl with the webhook's name and message; defaults appear on stored Jobs, Queues and
#     PodGroups.
#  2. A job that omits every defaultable field runs to Completed as Volcano's would (pods <job>-default0-<i>).
#  3. Certificate rotation under traffic: a 60 s certificate is renewed while dry-run creates run through the
#     webhook; not one request fails, and the served certificate changed.
#  4. Webhook killed: pods (of any scheduler) are still created (failurePolicy Ignore); vcjobs are refused
#     (--failure-policy Fail); restarted with --failure-policy Ignore and killed again, vcjobs are created.
#  5. Mounted certificate mode (--tls-cert-file/--tls-private-key-file/--ca-cert-file): denials still work, and a
#     corrupt certificate written over the mounted one does not stop the server.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TEPHRA_E2E_REAL_SCHEDULER=1
# shellcheck source=../controller/command_env.sh
source "$HERE/../controller/command_env.sh"

phase() { k get vcjob -n $NS "$1" -o jsonpath='{.status.state.phase}'; }
phase_is() { [ "$(phase "$1")" = "$2" ]; }
dump() {
  k get vcjob -n $NS "$1" -o yaml 2>&1 | sed -n '/^status:/,$p' >&2 || true
  k get podgroups,pods -n $NS -o wide >&2 2>&1 || true
}
ALL=/jobs/mutate,/jobs/validate,/queues/mutate,/queues/validate,/podgroups/mutate,/podgroups/validate,/pods/mutate,/pods/validate,/jobflows/validate,/hypernodes/validate,/cronjobs/validate
k create namespace volcano-system >/dev/null 2>&1 || true
WH_LOG="$LOGS/webhook.log"
WH_PORT=$(free_port)
WH_HEALTH=$(free_port)
WH_METRICS=$(free_port)
# start_webhook <log-suffix> [extra args...]
start_webhook() {
  local suffix=$1 rc=0; shift
  start_role webhook "$WH_LOG$suffix" --kubeconfig "$KUBECONFIG" --listen-address 127.0.0.1 --port "$WH_PORT" \
    --webhook-url "https://127.0.0.1:$WH_PORT" --enabled-admission "$ALL" --resync-period 2s \
    --metrics-addr "127.0.0.1:$WH_METRICS" --health-addr "127.0.0.1:$WH_HEALTH" "$@" || rc=$?
  [ $rc -eq 0 ] || fail "tephra webhook did not start (rc=$rc)"
  WH_PID=${ROLE_PIDS[-1]}
  ready() { curl -fsS "http://127.0.0.1:$WH_HEALTH/readyz"; }
  wait_until "webhook ready" 60 ready || { tail -n 30 "$WH_LOG$suffix" >&2; fail "webhook not ready"; }
  # /pods/mutate is served but not registered: without an admission configuration it never patches, and a
  # registration would cost every pod creation a round trip (docs/webhook.md).
  configured() { [ "$(k get validatingwebhookconfigurations -o name | grep -c volcano-admission-service)" -eq 7 ] &&
                 [ "$(k get mutatingwebhookconfigurations -o name | grep -c volcano-admission-service)" -eq 3 ]; }
  wait_until "10 webhook configurations" 30 configured || fail "webhook configurations not written"
}
kill_webhook() {
  kill -KILL "$WH_PID" 2>/dev/null || true
  while kill -0 "$WH_PID" 2>/dev/null; do sleep 0.1; done
}
job_yaml() {  # job_yaml <name> <spec-yaml-flow-of-extra-fields> <tasks-yaml-flow>
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1, namespace: $NS}
spec: {$2 tasks: $3}
YAML
}
TASK='{replicas: 2, template: {spec: {containers: [{name: c, image: busybox}]}}}'

start_webhook "" --cert-validity 60s

# ------------------------------------------------------------------------------- 1. every path, through kubectl
# No tasks: Volcano's CRD (minItems 1) refuses it before its webhook's "No task specified" can.
job_yaml no-tasks "" "[]" | expect_schema_refused "spec.tasks in body should have at least 1 items" apply -f -
job_yaml dup "" "[{name: a, replicas: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}, {name: a, replicas: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}]" |
  expect_denied validatejob.volcano.sh "spec.tasks[1].name: duplicated task name a" apply -f -
job_yaml too-many "" "[{name: a, replicas: 1, minAvailable: 2, template: {spec: {containers: [{name: c, image: busybox}]}}}]" |
  expect_denied validatejob.volcano.sh "'minAvailable' is greater than 'replicas' in task: a, job: too-many" apply -f -
job_yaml plug "plugins: {foo: []}," "[$TASK]" | expect_denied validatejob.volcano.sh "unable to find job plugin: foo" apply -f -
cat <<'YAML' | k apply -f - >/dev/null
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: shut}
spec: {reclaimable: false}
YAML
[ "$(k get queue shut -o jsonpath='{.spec.weight}')" = 1 ] || fail "/queues/mutate: weight not defaulted to 1"
# Closed the way users close a queue: a CloseQueue Command, carried out by the queue controller.
cat <<YAML | k create -f - >/dev/null
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {generateName: shut-close-, namespace: default}
action: CloseQueue
target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: shut, uid: $(k get queue shut -o jsonpath='{.metadata.uid}')}
YAML
closed() { [ "$(k get queue shut -o jsonpath='{.status.state}')" = Closed ]; }
wait_until "queue shut Closed" 30 closed || fail "could not close queue shut"
# The webhook sees the queue through its informer: retry (server-side dry run, nothing is stored) until it has.
# (pipefail is on: the refused create's status must not hide grep's.)
refusal() { local out; out=$("$@" 2>&1) || true; echo "$out"; }
closed_refused() { job_yaml in-closed "queue: shut," "[$TASK]" | refusal k create --dry-run=server -f - |
                   grep -qF "can only submit job to queue with state \`Open\`, queue \`shut\` status is \`Closed\`"; }
wait_until "a job in a Closed queue refused" 20 closed_refused ||
  fail "a job in a Closed queue was not refused: $(job_yaml in-closed "queue: shut," "[$TASK]" | k create --dry-run=server -f - 2>&1)"
expect_denied validatequeue.volcano.sh "\`default\` queue can not be deleted" delete queue default
# The closed queue still exists (the refused delete lost nothing).
k get queue default >/dev/null || fail "default queue is gone"
# PodGroups: the namespace's queue annotation (mutate) and a closed queue (validate).
k create namespace team-a >/dev/null
k annotate namespace team-a scheduling.volcano.sh/queue-name=default --overwrite >/dev/null
cat <<'YAML' | k apply -f - >/dev/null
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team-a-q}
spec: {weight: 2}
YAML
k annotate namespace team-a scheduling.volcano.sh/queue-name=team-a-q --overwrite >/dev/null
pg_yaml() { printf 'apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: %s, namespace: %s}\nspec: {minMember: 1, queue: %s}\n' "$@"; }
# The namespace annotation reaches the webhook through its informer: retry until it has seen it.
pg_queue() { k delete podgroup -n team-a pg1 --ignore-not-found >/dev/null; pg_yaml pg1 team-a default | k apply -f - >/dev/null &&
             [ "$(k get podgroup -n team-a pg1 -o jsonpath='{.spec.queue}')" = team-a-q ]; }
wait_until "/podgroups/mutate takes the namespace queue" 20 pg_queue || fail "PodGroup queue not taken from the namespace"
pg_yaml pg2 default shut | expect_denied validatepodgroup.volcano.sh "queue \`shut\` status is \`Closed\`" apply -f -
# Pods: ours with both jdb annotations are refused; another scheduler's pass untouched.
pod_yaml() { printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s, annotations: {volcano.sh/jdb-min-available: "1", volcano.sh/jdb-max-unavailable: "1"}}\nspec: {schedulerName: %s, containers: [{name: c, image: busybox}]}\n' "$@"; }
pod_yaml p-ours $NS volcano | expect_denied validatepod.volcano.sh "not allow configure multiple annotations" apply -f -
pod_yaml p-theirs $NS other-scheduler | k apply -f - >/dev/null || fail "a pod of another scheduler was refused"
# /pods/mutate, called directly over TLS with the webhook's own CA (the API server is not sent there).
k get secret -n volcano-system volcano-admission-secret -o jsonpath='{.data.ca\.crt}' | base64 -d >"$LOGS/wh-ca.crt"
review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"direct","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"metadata":{"name":"x"},"spec":{"schedulerName":"volcano","containers":[]}}}}'
answer=$(curl -fsS --cacert "$LOGS/wh-ca.crt" -H 'Content-Type: application/json' -d "$review" "https://127.0.0.1:$WH_PORT/pods/mutate")
grep -q '"allowed":true' <<<"$answer" && grep -q '"uid":"direct"' <<<"$answer" || fail "/pods/mutate answered: $answer"
cat <<'YAML' | expect_denied validatejobflow.volcano.sh "jobflow Flow is not DAG" apply -f -
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: loop, namespace: default}
spec: {flows: [{name: a, dependsOn: {targets: [b]}}, {name: b, dependsOn: {targets: [a]}}]}
YAML
cat <<'YAML' | expect_denied validatehypernode.volcano.sh "regexMatch" apply -f -
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: bad-regex}
spec: {tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: "node-[0-9"}}}]}
YAML
# Go's syntax, which ECMAScript lacks, is admitted as Volcano admits it (docs/volcano-conformance.md).
cat <<'YAML' | k apply -f - >/dev/null || fail "a Go-syntax regexMatch pattern was refused"
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: go-regex}
spec: {tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: "(?i)^gpu-[[:digit:]]+"}}}]}
YAML
k delete hypernode go-regex >/dev/null
cat <<'YAML' | expect_denied validatecronjob.volcano.sh "schedule is not a valid cron expression" apply -f -
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata: {name: nightly, namespace: default}
spec: {schedule: "61 * * * *", jobTemplate: {spec: {tasks: [{name: a, replicas: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}]}}}
YAML
note "1. the API server called ten paths and /pods/mutate answered directly; denials name the webhook, the field and the rule"

# ------------------------------------------------------------------ 2. the issue's job: every default omitted
job_yaml bare "" "[{replicas: 3, template: {metadata: {annotations: {tephra.io/sim-run-seconds: '2'}}, spec: {restartPolicy: Never, containers: [{name: c, image: busybox, resources: {requests: {cpu: '1'}}}]}}}]" |
  k apply -f - >/dev/null
got=$(k get vcjob -n $NS bare -o jsonpath='{.spec.queue}/{.spec.schedulerName}/{.spec.minAvailable}/{.spec.maxRetry}/{.spec.tasks[0].name}/{.spec.tasks[0].minAvailable}')
[ "$got" = default/volcano/3/3/default0/3 ] || fail "stored job lacks Volcano's defaults: $got"
wait_until "bare Completed" 120 phase_is bare Completed || { dump bare; fail "bare job is $(phase bare), not Completed"; }
for i in 0 1 2; do
  [ "$(k get pod -n $NS "bare-default0-$i" -o jsonpath='{.spec.schedulerName}')" = volcano ] || fail "pod bare-default0-$i"
done
# The job cannot be changed beyond what Volcano allows.
expect_denied validatejob.volcano.sh "job updates may not change fields other than" \
  patch vcjob -n $NS bare --type json -p '[{"op":"replace","path":"/spec/tasks/0/template/spec/containers/0/image","value":"x"}]'
note "2. a job without any defaultable field got Volcano's defaults and Completed as bare-default0-{0,1,2}"

# --------------------------------------------------------------------- 3. certificate rotation under traffic
serial() { echo | openssl s_client -connect "127.0.0.1:$WH_PORT" 2>/dev/null | openssl x509 -noout -serial; }
first=$(serial)
[ -n "$first" ] || fail "could not read the served certificate"
stop_file="$LOGS/traffic.stop"
python3 "$HERE/traffic.py" "$stop_file" 90 >"$LOGS/traffic.out" 2>&1 &
traffic=$!
# 60 s certificates are renewed with 20 s left, so within ~45 s of the first one's issue.
rotated() { [ "$(serial)" != "$first" ]; }
wait_until "served certificate renewed" 75 rotated || { kill $traffic; fail "certificate not renewed"; }
# Requests after the switch, too: wait for 20 more admissions to be counted by the webhook.
validated() { curl -fsS "http://127.0.0.1:$WH_METRICS/metrics" |
              awk '/^tephra_webhook_admission_requests_total\{path="\/jobs\/validate"/ {s += $2} END {print s+0}'; }
after=$(( $(validated) + 20 ))
more_traffic() { [ "$(validated)" -ge "$after" ]; }
wait_until "20 admissions after the renewal" 30 more_traffic || { kill $traffic; fail "no traffic after the renewal"; }
touch "$stop_file"
wait $traffic || { cat "$LOGS/traffic.out" >&2; fail "admission requests failed during the certificate rotation"; }
note "3. certificate renewed under traffic: $(head -n1 "$LOGS/traffic.out")"

# ---------------------------------------------------------------------------- 4. webhook down: failure policy
kill_webhook
pod_yaml p-while-down $NS volcano | sed 's/annotations: {[^}]*}, //' | k apply -f - >/dev/null ||
  fail "a pod was refused while the webhook was down (pods must fail open)"
out=$(job_yaml while-down "" "[$TASK]" | k apply -f - 2>&1) && fail "a vcjob was admitted with the webhook down and --failure-policy Fail"
grep -q "failed calling webhook" <<<"$out" || fail "unexpected refusal while down: $out"
start_webhook ".ignore" --failure-policy Ignore --cert-validity 8760h
policy() { [ "$(k get validatingwebhookconfiguration volcano-admission-service-jobs-validate -o jsonpath='{.webhooks[0].failurePolicy}')" = Ignore ]; }
wait_until "failurePolicy Ignore" 20 policy || fail "failurePolicy not updated"
kill_webhook
job_yaml while-down "" "[$TASK]" | k apply -f - >/dev/null || fail "vcjob refused with the webhook down and --failure-policy Ignore"
note "4. webhook down: pods created, vcjobs follow --failure-policy (Fail refuses, Ignore admits)"

# ------------------------------------------------------------------------------- 5. mounted certificate mode
pki="$LOGS/pki"
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=test-ca" -days 2 \
  -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=webhook" \
  -keyout "$pki/tls.key" -out "$pki/tls.csr" 2>/dev/null
openssl x509 -req -in "$pki/tls.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 1 \
  -extfile <(printf 'subjectAltName=IP:127.0.0.1\n') -out "$pki/tls.crt" 2>/dev/null
start_webhook ".mounted" --tls-cert-file "$pki/tls.crt" --tls-private-key-file "$pki/tls.key" --ca-cert-file "$pki/ca.crt"
# The API server may still hold the previous caBundle for a moment: retry until the new one is in use.
denied_plugin() { job_yaml plug2 "plugins: {bar: []}," "[$TASK]" | refusal k apply -f - | grep -qF "unable to find job plugin: bar"; }
wait_until "denial through the mounted certificate" 30 denied_plugin || fail "mounted-certificate webhook not called"
good=$(serial)
echo "not a certificate" >"$pki/tls.crt.new" && mv "$pki/tls.crt.new" "$pki/tls.crt"
# Every serial() is a new TLS handshake; past the server's 1 s re-read interval one of them makes it read the
# corrupt file, say so, and keep presenting the last good certificate.
kept_good() { [ "$(serial)" = "$good" ] && grep -q "cannot be loaded; keeping the previous one" "$WH_LOG.mounted"; }
wait_until "the server to notice the corrupt certificate and keep the good one" 30 kept_good ||
  fail "the webhook did not keep serving its last good certificate: serial now '$(serial)', was '$good'"
job_yaml plug3 "plugins: {baz: []}," "[$TASK]" |
  expect_denied validatejob.volcano.sh "unable to find job plugin: baz" create --dry-run=server -f -
requests=$(curl -fsS "http://127.0.0.1:$WH_METRICS/metrics" | awk '/^tephra_webhook_admission_requests_total/ {s += $2} END {print s+0}')
[ "$requests" -gt 0 ] || fail "tephra_webhook_admission_requests_total is not counted"
note "5. mounted certificate: served, and a corrupt replacement did not stop the server ($requests requests counted)"
echo "PASS: webhook e2e"
