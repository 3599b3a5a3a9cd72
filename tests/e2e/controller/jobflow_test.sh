#!/usr/bin/env bash
# e2e: a JobFlow DAG of three JobTemplates (a; b after a; c after b) creates jf-a, then jf-b once jf-a is
# Completed, then jf-c; the flow reaches Succeed with three completed jobs; JobTemplate status lists its job.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"

for t in a b c; do
  cat <<YAML | k apply -f - >/dev/null
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: $t, namespace: $NS}
spec:
  minAvailable: 1
  schedulerName: volcano
  queue: default
  tasks:
  - name: w
    replicas: 1
    template:
      metadata: {annotations: {tephra.io/sim-run-seconds: "2", tephra.io/sim-exit-code: "0"}}
      spec:
        restartPolicy: Never
        containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
YAML
done
cat <<YAML | k apply -f - >/dev/null
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: jf, namespace: $NS}
spec:
  jobRetainPolicy: retain
  flows:
  - name: a
  - name: b
    dependsOn: {targets: [a]}
  - name: c
    dependsOn: {targets: [b]}
YAML

exists() { k get vcjob -n $NS "$1" >/dev/null 2>&1; }
wait_until "jf-a created" 60 exists jf-a || fail "jf-a not created"
exists jf-b && fail "jf-b created before jf-a completed"
wait_until "jf-a Completed" 120 vcjob_phase_is jf-a Completed || fail "jf-a not Completed (phase '$(vcjob_phase jf-a)')"
wait_until "jf-b created" 60 exists jf-b || fail "jf-b not created after jf-a completed"
if exists jf-c && ! vcjob_phase_is jf-b Completed; then fail "jf-c created before jf-b completed"; fi
wait_until "jf-c Completed" 180 vcjob_phase_is jf-c Completed || fail "jf-c not Completed (phase '$(vcjob_phase jf-c)')"
flow_phase() { [ "$(k get jobflow -n $NS jf -o jsonpath='{.status.state.phase}')" = "$1" ]; }
wait_until "JobFlow Succeed" 60 flow_phase Succeed || fail "JobFlow not Succeed: $(k get jobflow -n $NS jf -o jsonpath='{.status}')"
[ "$(k get jobflow -n $NS jf -o jsonpath='{.status.completedJobs}')" = '["jf-a","jf-b","jf-c"]' ] ||
  fail "completedJobs: $(k get jobflow -n $NS jf -o jsonpath='{.status.completedJobs}')"
# Creation order follows the DAG.
ta=$(k get vcjob -n $NS jf-a -o jsonpath='{.metadata.creationTimestamp}')
tb=$(k get vcjob -n $NS jf-b -o jsonpath='{.metadata.creationTimestamp}')
tc=$(k get vcjob -n $NS jf-c -o jsonpath='{.metadata.creationTimestamp}')
[[ "$ta" < "$tb" || "$ta" == "$tb" ]] && [[ "$tb" < "$tc" || "$tb" == "$tc" ]] || fail "creation order $ta $tb $tc"
[ "$(k get vcjob -n $NS jf-b -o jsonpath='{.metadata.labels.volcano\.sh/createdByJobFlow}')" = "$NS.jf" ] ||
  fail "jf-b lacks the createdByJobFlow label"
# runningHistories: one entry per observed phase, oldest first; every entry but the last is closed and the
# last one is the job's final phase. The jobs run 2 s, so at least one earlier phase was seen.
k get jobflow -n $NS jf -o json | python3 -c '
import json, sys
st = json.load(sys.stdin)["status"]
for js in st["jobStatusList"]:
    h = js.get("runningHistories", [])
    assert len(h) >= 2, (js["name"], h)
    assert h[-1]["state"] == "Completed" and not h[-1].get("endTimestamp"), (js["name"], h)
    assert all(e.get("endTimestamp") and e["startTimestamp"] <= e["endTimestamp"] for e in h[:-1]), (js["name"], h)
    assert all(a["state"] != b["state"] for a, b in zip(h, h[1:])), (js["name"], h)
' || fail "runningHistories: $(k get jobflow -n $NS jf -o jsonpath='{.status.jobStatusList}')"
tmpl_list() { [ "$(k get jobtemplate -n $NS b -o jsonpath='{.status.jobDependsOnList}')" = '["jf-b"]' ]; }
wait_until "JobTemplate b status" 30 tmpl_list || fail "JobTemplate b jobDependsOnList: $(k get jobtemplate -n $NS b -o jsonpath='{.status}')"
echo PASS
