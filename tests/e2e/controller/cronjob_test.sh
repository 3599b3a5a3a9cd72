#!/usr/bin/env bash
# e2e: a CronJob "*/1 * * * *" with successfulJobsHistoryLimit 1 starts a vcjob at each minute boundary,
# named <cronjob>-<scheduled time in Unix minutes>, controlled by the CronJob, carrying the jobTemplate's
# labels and the scheduled-timestamp annotation; status.lastScheduleTime names that time; the job runs to
# Completed (nodesim), lastSuccessfulTime is set, and once the second run completed the first job is deleted
# (history limit). Every wait is on an observable change; the longest is the wait for a minute boundary.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"

cat <<YAML | k apply -f - >/dev/null
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata: {name: cj, namespace: $NS}
spec:
  schedule: "*/1 * * * *"
  concurrencyPolicy: Allow
  successfulJobsHistoryLimit: 1
  failedJobsHistoryLimit: 1
  jobTemplate:
    metadata:
      labels: {app: cron-e2e}
    spec:
      minAvailable: 1
      schedulerName: volcano
      queue: default
      tasks:
      - name: w
        replicas: 1
        template:
          metadata: {annotations: {tephra.io/sim-run-seconds: "1", tephra.io/sim-exit-code: "0"}}
          spec:
            restartPolicy: Never
            containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
YAML
CJ_UID=$(k get cronjob.batch.volcano.sh -n $NS cj -o jsonpath='{.metadata.uid}')
[ -n "$CJ_UID" ] || fail "CronJob not stored"

# Names of the vcjobs controlled by the CronJob, oldest first.
owned_jobs() {
  k get vcjob -n $NS -o json | python3 -c '
import json, sys
uid = sys.argv[1]
items = [j for j in json.load(sys.stdin)["items"]
         if any(r.get("uid") == uid and r.get("controller") and r.get("kind") == "CronJob"
                for r in j["metadata"].get("ownerReferences", []))]
for j in sorted(items, key=lambda j: j["metadata"]["name"]):
    print(j["metadata"]["name"])' "$CJ_UID"
}
has_jobs() { [ "$(owned_jobs | wc -l)" -ge "$1" ]; }

wait_until "first scheduled vcjob" 75 has_jobs 1 || fail "no vcjob created within 75 s: $(k get cronjob.batch.volcano.sh -n $NS cj -o jsonpath='{.status}')"
FIRST=$(owned_jobs | head -1)
note "first job $FIRST"
# The name is <cronjob>-<scheduled minute>, and the annotation is that minute (UTC: no timeZone).
TS=$(k get vcjob -n $NS "$FIRST" -o jsonpath='{.metadata.annotations.volcano\.sh/cronjob-scheduled-timestamp}')
MIN=$(python3 -c 'import datetime,sys; print(int(datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()) // 60)' "$TS") ||
  fail "scheduled-timestamp annotation '$TS' is not RFC 3339 UTC"
[ "$FIRST" = "cj-$MIN" ] || fail "job name $FIRST, expected cj-$MIN (annotation $TS)"
[ "$(k get vcjob -n $NS "$FIRST" -o jsonpath='{.metadata.labels.app}')" = cron-e2e ] || fail "jobTemplate labels not copied"
[ "$(k get vcjob -n $NS "$FIRST" -o jsonpath='{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].apiVersion}/{.metadata.ownerReferences[0].blockOwnerDeletion}')" = "cj/batch.volcano.sh/v1alpha1/true" ] ||
  fail "owner reference: $(k get vcjob -n $NS "$FIRST" -o jsonpath='{.metadata.ownerReferences}')"
last_schedule_is() { [ "$(k get cronjob.batch.volcano.sh -n $NS cj -o jsonpath='{.status.lastScheduleTime}')" = "$1" ]; }
wait_until "lastScheduleTime $TS" 20 last_schedule_is "$TS" ||
  fail "status.lastScheduleTime: $(k get cronjob.batch.volcano.sh -n $NS cj -o jsonpath='{.status}')"
created_event() {
  k get events -n $NS --field-selector involvedObject.kind=CronJob,involvedObject.name=cj,reason=SuccessfulCreate \
    -o jsonpath='{.items[*].message}' | grep -q "Created job $FIRST for CronJob $NS/cj"
}
wait_until "SuccessfulCreate event" 20 created_event || fail "no SuccessfulCreate event: $(k get events -n $NS)"

wait_until "$FIRST Completed" 90 vcjob_phase_is "$FIRST" Completed || fail "$FIRST not Completed (phase '$(vcjob_phase "$FIRST")')"
last_success() { [ -n "$(k get cronjob.batch.volcano.sh -n $NS cj -o jsonpath='{.status.lastSuccessfulTime}')" ]; }
wait_until "lastSuccessfulTime" 20 last_success || fail "no lastSuccessfulTime: $(k get cronjob.batch.volcano.sh -n $NS cj -o jsonpath='{.status}')"
not_active() { ! k get cronjob.batch.volcano.sh -n $NS cj -o jsonpath='{.status.active[*].name}' | grep -qw "$FIRST"; }
wait_until "$FIRST out of status.active" 20 not_active || fail "completed $FIRST still active"

# The next minute: a second job; once it completed, the history limit (1) deletes the first.
second_job() { owned_jobs | grep -vx "$FIRST" | grep -q .; }
wait_until "second scheduled vcjob" 75 second_job || fail "no second vcjob: $(owned_jobs | tr '\n' ' ')"
SECOND=$(owned_jobs | grep -vx "$FIRST" | head -1)
note "second job $SECOND"
[ "${SECOND#cj-}" -gt "$MIN" ] || fail "second job $SECOND is not for a later minute than $FIRST"
wait_until "$SECOND Completed" 90 vcjob_phase_is "$SECOND" Completed || fail "$SECOND not Completed (phase '$(vcjob_phase "$SECOND")')"
first_gone() { ! k get vcjob -n $NS "$FIRST" >/dev/null 2>&1; }
wait_until "$FIRST deleted (successfulJobsHistoryLimit 1)" 30 first_gone || fail "$FIRST not deleted: $(owned_jobs | tr '\n' ' ')"
k get vcjob -n $NS "$SECOND" >/dev/null 2>&1 || fail "the newest completed job $SECOND was deleted"
# One job per minute at most: no duplicate for a scheduled time.
[ "$(owned_jobs | sort | uniq -d | wc -l)" -eq 0 ] || fail "duplicate jobs"
grep -q '"controller":"cronjob-controller"' "$LOGS/controller.log" || grep -q 'cronjob-controller' "$LOGS/controller.log" ||
  fail "controller log does not name cronjob-controller"
echo PASS
