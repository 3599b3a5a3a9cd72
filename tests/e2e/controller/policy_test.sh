#!/usr/bin/env bash
# e2e: lifecycle policies driven by real object changes, and TTL deletion (docs/volcano-behaviour.md,
# "Job lifecycle").
#  1. PodEvicted -> RestartJob: a pod of a Running job is deleted from outside (that is how Volcano sees an
#     eviction); status.version and status.retryCount go to 1, every pod is recreated (new UIDs, job-version 1)
#     and the job is Running again.
#  2. TaskCompleted -> CompleteJob (task policy): a short task finishes while a long one runs; the job ends
#     Completed, the long task's pods are deleted and the short task's Succeeded pod is kept.
#  3. ttlSecondsAfterFinished: 3: the job Completes and the controller then deletes it (polled with a deadline).
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"

status_of() { k get vcjob -n $NS "$1" -o jsonpath="{.status.$2}"; }
# omitempty: a zero version/retryCount is absent from the stored status.
num_of() { local v; v=$(status_of "$1" "$2"); echo "${v:-0}"; }
dump() {
  k get vcjob -n $NS "$1" -o yaml 2>&1 | sed -n '/^status:/,$p' >&2 || true
  k get podgroups,pods -n $NS -o wide >&2 2>&1 || true
  tail -n 30 "$LOGS/controller.log" >&2 || true
}
pod_uids() { k get pods -n $NS -l "volcano.sh/job-name=$1" -o jsonpath='{range .items[*]}{.metadata.uid}{" "}{end}'; }
# job_head <name> <minAvailable> <job-policies-flow-yaml> [extra spec line]
job_head() {
  cat <<YAML
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1, namespace: $NS}
spec:
  minAvailable: $2
  schedulerName: volcano
  queue: default
  maxRetry: 3
  policies: $3
  ${4:-}
  tasks:
YAML
}

# --------------------------------------------------------------------------- 1. PodEvicted -> RestartJob
{ job_head ev 2 '[{event: PodEvicted, action: RestartJob}]'; task_yaml w 2 600; } | k apply -f - >/dev/null
two_running() { [ "$(k get pods -n $NS -l volcano.sh/job-name=ev --field-selector=status.phase=Running -o name | wc -l)" -eq 2 ]; }
wait_until "job ev Running" 120 vcjob_phase_is ev Running || { dump ev; fail "job ev not Running ($(vcjob_phase ev))"; }
wait_until "ev: 2 running pods" 60 two_running || { dump ev; fail "job ev has no 2 running pods"; }
[ "$(num_of ev version)" = 0 ] && [ "$(num_of ev retryCount)" = 0 ] || fail "fresh job ev already restarted"
old_uids=$(pod_uids ev)
k delete pod -n $NS ev-w-0 --wait=false >/dev/null
restarted() { [ "$(num_of ev retryCount)" = 1 ] && [ "$(num_of ev version)" = 1 ]; }
wait_until "ev retryCount/version 1" 60 restarted ||
  { dump ev; fail "eviction did not restart the job (version $(num_of ev version), retryCount $(num_of ev retryCount))"; }
# Every pod of the new run: two of them, none of the old UIDs, all annotated with job-version 1, Running.
new_run() {
  local uids u
  uids=$(pod_uids ev)
  [ "$(wc -w <<<"$uids")" -eq 2 ] || return 1
  for u in $uids; do case " $old_uids " in *" $u "*) return 1 ;; esac; done
  [ "$(k get pods -n $NS -l volcano.sh/job-name=ev -o jsonpath='{range .items[*]}{.metadata.annotations.volcano\.sh/job-version}{" "}{end}')" = "1 1 " ]
}
wait_until "ev pods recreated" 120 new_run || { dump ev; fail "job ev pods not recreated for version 1"; }
wait_until "job ev Running again" 120 vcjob_phase_is ev Running || { dump ev; fail "job ev not Running after restart"; }
wait_until "ev: 2 running pods again" 60 two_running || { dump ev; fail "job ev restarted pods not running"; }
[ "$(num_of ev retryCount)" = 1 ] || fail "job ev retryCount $(num_of ev retryCount) after one eviction"
k delete vcjob -n $NS ev --wait=false >/dev/null
note "1. PodEvicted -> RestartJob: version 1, retryCount 1, pods recreated, Running"

# ------------------------------------------------------------------------ 2. TaskCompleted -> CompleteJob
{ job_head tc 3 '[]'; task_yaml short 1 3 '[{event: TaskCompleted, action: CompleteJob}]'; task_yaml long 2 600; } |
  k apply -f - >/dev/null
wait_until "job tc Completed" 150 vcjob_phase_is tc Completed || { dump tc; fail "job tc is $(vcjob_phase tc), not Completed"; }
# The long task's pods were killed (gone, or on their way out); the short task's Succeeded pod is kept.
long_gone() {
  local p
  for p in $(k get pods -n $NS -l volcano.sh/job-name=tc,volcano.sh/task-spec=long -o jsonpath='{range .items[*]}{.metadata.name}{"="}{.metadata.deletionTimestamp}{.status.phase}{" "}{end}'); do
    case "$p" in *=Running | *=Pending | *=) return 1 ;; esac
  done
}
wait_until "tc long pods terminated" 60 long_gone || { dump tc; fail "job tc long-task pods still running"; }
[ "$(k get pod -n $NS tc-short-0 -o jsonpath='{.status.phase}')" = Succeeded ] || { dump tc; fail "tc-short-0 not kept Succeeded"; }
[ "$(vcjob_phase tc)" = Completed ] || fail "job tc left Completed"
[ "$(num_of tc retryCount)" = 0 ] || fail "job tc counted a retry"
note "2. TaskCompleted -> CompleteJob: Completed, long task killed, short pod kept"

# ------------------------------------------------------------------------------- 3. ttlSecondsAfterFinished
{ job_head ttl 1 '[]' 'ttlSecondsAfterFinished: 3'; task_yaml w 1 2; } | k apply -f - >/dev/null
[ "$(k get vcjob -n $NS ttl -o jsonpath='{.spec.ttlSecondsAfterFinished}')" = 3 ] || fail "ttlSecondsAfterFinished not stored"
wait_until "job ttl Completed" 120 vcjob_phase_is ttl Completed || { dump ttl; fail "job ttl is $(vcjob_phase ttl)"; }
gone() { ! k get vcjob -n $NS ttl >/dev/null 2>&1; }
wait_until "job ttl deleted" 60 gone || { dump ttl; fail "finished job ttl not deleted after its TTL"; }
# Control: job tc finished earlier and has no TTL, so it must still be there.
k get vcjob -n $NS tc >/dev/null 2>&1 || fail "job tc (no ttlSecondsAfterFinished) was deleted too"
note "3. ttlSecondsAfterFinished: finished job deleted by the controller"
echo PASS
