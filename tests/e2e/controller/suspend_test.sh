#!/usr/bin/env bash
# e2e: suspend and resume a vcjob with bus.volcano.sh Commands (what `vcctl job suspend/resume` creates).
#  1. a 2-pod job runs; Command AbortJob -> the Command is consumed (deleted), the job reaches Aborted and
#     its pods are gone;
#  2. Command ResumeJob -> the job runs again (Running, 2 running pods), the Command is consumed.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"

vcjob_yaml sus 2 600 | k apply -f - >/dev/null
wait_until "job sus Running" 120 vcjob_phase_is sus Running || fail "job sus not Running (phase '$(vcjob_phase sus)')"

command_yaml() {
  cat <<YAML
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: $1, namespace: $NS}
action: $2
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: sus, uid: $(k get vcjob -n $NS sus -o jsonpath='{.metadata.uid}')}
YAML
}
gone() { ! k get "$@" >/dev/null 2>&1; }
running_pods() { [ "$(k get pods -n $NS -l volcano.sh/job-name=sus --field-selector=status.phase=Running -o name | wc -l)" -eq "$1" ]; }
no_pods() { [ "$(k get pods -n $NS -l volcano.sh/job-name=sus -o name | wc -l)" -eq 0 ]; }

command_yaml abort-sus AbortJob | k apply -f - >/dev/null
wait_until "AbortJob command consumed" 60 gone command -n $NS abort-sus || fail "AbortJob command not consumed"
wait_until "job sus Aborted" 90 vcjob_phase_is sus Aborted || fail "job sus not Aborted (phase '$(vcjob_phase sus)')"
wait_until "job sus pods deleted" 90 no_pods || fail "aborted job still has pods"
k get events -n $NS --field-selector involvedObject.name=sus -o jsonpath='{.items[*].reason}' | grep -q CommandIssued ||
  fail "no CommandIssued event on the job"
note "suspended"

command_yaml resume-sus ResumeJob | k apply -f - >/dev/null
wait_until "ResumeJob command consumed" 60 gone command -n $NS resume-sus || fail "ResumeJob command not consumed"
wait_until "job sus Running again" 150 vcjob_phase_is sus Running || fail "job sus not resumed (phase '$(vcjob_phase sus)')"
wait_until "2 running pods" 90 running_pods 2 || fail "resumed job has no running pods"
note "resumed"
echo PASS
