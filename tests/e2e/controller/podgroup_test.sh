#!/usr/bin/env bash
# e2e: plain pods with schedulerName volcano get a PodGroup: a bare pod gets podgroup-<pod uid> (owned by
# the pod, queue from its annotation); the pods of a ReplicaSet share podgroup-<rs uid> with minMember from
# the ReplicaSet's scheduling.volcano.sh/group-min-member; every pod is annotated with its group name.
# A pod for another scheduler gets nothing. Scaling the ReplicaSet to 0 deletes podgroup-<rs uid>; the bare
# pod's group stays.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"

cat <<YAML | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: bare
  namespace: $NS
  annotations: {scheduling.volcano.sh/queue-name: default, tephra.io/sim-run-seconds: "600"}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: $NS}
spec:
  schedulerName: someone-else
  containers: [{name: c, image: busybox}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: rs
  namespace: $NS
  annotations: {scheduling.volcano.sh/group-min-member: "2", volcano.sh/preemptable: "true"}
spec:
  replicas: 2
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}, annotations: {tephra.io/sim-run-seconds: "600"}}
    spec:
      schedulerName: volcano
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
YAML

uid=$(k get pod -n $NS bare -o jsonpath='{.metadata.uid}')
pg_exists() { k get podgroup -n $NS "$1" >/dev/null 2>&1; }
wait_until "podgroup-$uid" 60 pg_exists "podgroup-$uid" || fail "bare pod got no PodGroup"
[ "$(k get podgroup -n $NS "podgroup-$uid" -o jsonpath='{.spec.minMember} {.spec.queue} {.metadata.ownerReferences[0].kind}')" = "1 default Pod" ] ||
  fail "bare PodGroup: $(k get podgroup -n $NS "podgroup-$uid" -o jsonpath='{.spec} {.metadata.ownerReferences}')"
annotated() { [ "$(k get pod -n $NS "$1" -o jsonpath='{.metadata.annotations.scheduling\.k8s\.io/group-name}')" = "$2" ]; }
wait_until "bare annotated" 30 annotated bare "podgroup-$uid" || fail "bare pod not annotated"

rs_uid=$(k get rs -n $NS rs -o jsonpath='{.metadata.uid}')
wait_until "podgroup-$rs_uid" 60 pg_exists "podgroup-$rs_uid" || fail "ReplicaSet pods got no PodGroup"
[ "$(k get podgroup -n $NS "podgroup-$rs_uid" -o jsonpath='{.spec.minMember} {.metadata.ownerReferences[0].kind} {.metadata.annotations.volcano\.sh/preemptable}')" = "2 ReplicaSet true" ] ||
  fail "rs PodGroup: $(k get podgroup -n $NS "podgroup-$rs_uid" -o json)"
for p in $(k get pods -n $NS -l app=rs -o jsonpath='{.items[*].metadata.name}'); do
  wait_until "$p annotated" 30 annotated "$p" "podgroup-$rs_uid" || fail "pod $p not annotated"
done
[ "$(k get podgroups -n $NS -o name | grep -c /podgroup-)" -eq 2 ] || fail "unexpected PodGroups: $(k get podgroups -n $NS -o name)"
[ -z "$(k get pod -n $NS other -o jsonpath='{.metadata.annotations.scheduling\.k8s\.io/group-name}')" ] ||
  fail "a pod of another scheduler was grouped"

k scale rs -n $NS rs --replicas=0 >/dev/null
pg_gone() { ! pg_exists "$1"; }
wait_until "podgroup-$rs_uid deleted" 60 pg_gone "podgroup-$rs_uid" ||
  fail "PodGroup of the ReplicaSet scaled to 0 not deleted: $(k get podgroup -n $NS "podgroup-$rs_uid" -o yaml 2>&1)"
pg_exists "podgroup-$uid" || fail "the bare pod's PodGroup went too"
k get rs -n $NS rs >/dev/null || fail "the ReplicaSet itself is gone"
echo PASS
