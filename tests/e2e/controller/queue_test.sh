#!/usr/bin/env bash
# e2e: queue state by Command (what `vcctl queue operate` creates): a new queue gets parent root and state
# Open; CloseQueue while a PodGroup is in it -> Closing, then Closed once the PodGroup is gone; OpenQueue ->
# Open; closing a parent closes its open child (closed-by-parent) and reopening it reopens the child.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=command_env.sh
source "$HERE/command_env.sh"

queue_state() { k get queue "$1" -o jsonpath='{.status.state}'; }
state_is() { [ "$(queue_state "$1")" = "$2" ]; }
qcmd() {
  cat <<YAML | k create -f - >/dev/null
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {generateName: $1-$(echo "$2" | tr '[:upper:]' '[:lower:]')-, namespace: default}
action: $2
target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: $1, uid: $(k get queue "$1" -o jsonpath='{.metadata.uid}')}
YAML
}
no_commands() { [ "$(k get commands -n default -o name | wc -l)" -eq 0 ]; }

cat <<YAML | k apply -f - >/dev/null
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team}
spec: {weight: 1, reclaimable: true}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team-child}
spec: {weight: 1, reclaimable: true, parent: team}
YAML
wait_until "team Open" 30 state_is team Open || fail "queue team state '$(queue_state team)'"
[ "$(k get queue team -o jsonpath='{.spec.parent}')" = root ] || fail "queue team parent not defaulted to root"

cat <<YAML | k apply -f - >/dev/null
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: holder, namespace: $NS}
spec: {minMember: 1, queue: team}
YAML
qcmd team CloseQueue
wait_until "team Closing" 30 state_is team Closing || fail "queue team with a PodGroup: state '$(queue_state team)'"
wait_until "team-child closed by parent" 30 state_is team-child Closed || fail "child state '$(queue_state team-child)'"
[ "$(k get queue team-child -o jsonpath='{.metadata.annotations.volcano\.sh/closed-by-parent}')" = true ] ||
  fail "child lacks volcano.sh/closed-by-parent"
k delete podgroup -n $NS holder >/dev/null
wait_until "team Closed" 30 state_is team Closed || fail "queue team state '$(queue_state team)' after its PodGroup left"

qcmd team-child OpenQueue
sleep_until_consumed() { wait_until "commands consumed" 30 no_commands || fail "commands not consumed"; }
sleep_until_consumed
state_is team-child Closed || fail "child opened while its parent is Closed"

qcmd team OpenQueue
wait_until "team Open" 30 state_is team Open || fail "queue team state '$(queue_state team)'"
wait_until "team-child reopened" 30 state_is team-child Open || fail "child not reopened: '$(queue_state team-child)'"
sleep_until_consumed
echo PASS
