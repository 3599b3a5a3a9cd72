#!/usr/bin/env bash
# The main job: Volcano batch jobs on Tephra, told as a three-act story on a small simulated cluster.
#
#   Act 1  a gang waits until it fits, then starts whole             scripts/demo/1-gang.yaml
#   Act 2  two queues share the cluster by weight (3:1)              scripts/demo/2-queues.yaml
#   Act 3  a failing job is retried by its policy until it succeeds  scripts/demo/3-retry.yaml
#
# Before the story: dependencies -> control-plane binaries (cached) -> build `tephra` -> a real control plane
# on loopback (etcd, kube-apiserver, kube-controller-manager) -> `helm install` Tephra's chart -> 4 simulated nodes.
# Every job ends Completed: the script waits on what it can observe in the API, never
# for a fixed time, and gives up after TEPHRA_DEMO_TIMEOUT seconds per wait. Then it says what happened, with
# the evidence, and how to look around. The cluster is left running.
#
# Environment: TEPHRA_DEMO_DIR (default /tmp/tephra-demo; wiped at start), TEPHRA_BUILD_DIR (default ./build),
# TEPHRA_JOBS (build parallelism, default 2), TEPHRA_DEMO_TIMEOUT (seconds, default 90).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=${TEPHRA_DEMO_DIR:-/tmp/tephra-demo}
BUILD=${TEPHRA_BUILD_DIR:-$ROOT/build}
TIMEOUT=${TEPHRA_DEMO_TIMEOUT:-90}
STORY=$ROOT/scripts/demo
# The cluster the manifests are sized for: 4 nodes x 6 CPUs = 24 CPUs.
NODES=4 NODE_CPU=6

# ------------------------------------------------------------------------------------------------- helpers
step() { printf '\n==> %s\n' "$*"; }
hms() { date -u -d "$1" +%T; }                   # RFC 3339 (API timestamps) -> HH:MM:SS, UTC like the API
clock() { date -u +%T; }
now() { date +%s.%N | cut -c1-14; }              # seconds, 3 decimals
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }
SUMMARY=()
tell() { SUMMARY+=("$*"); }                      # a line of "What happened"
SURPRISES=()
expect() { local what=$1; shift; "$@" || SURPRISES+=("$what"); }   # expect <what the story claims> <test...>
WATCHERS=()
trap 'for p in "${WATCHERS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

phase() { k get vcjob "$1" -o jsonpath='{.status.state.phase}' 2>/dev/null; }
phase_is() { [ "$(phase "$1")" = "$2" ]; }
ended() { case $(phase "$1") in Completed | Failed | Aborted | Terminated) return 0 ;; *) return 1 ;; esac; }
ended_at() { hms "$(k get vcjob "$1" -o jsonpath='{.status.state.lastTransitionTime}')"; }
podgroup_phase() {  # the PodGroup the job controller made for job $1 (named <job>-<uid>)
  k get podgroup -o json | jq -r --arg j "$1" \
    '[.items[] | select(.metadata.ownerReferences[0].name == $j) | .status.phase // "none"] | first // "none"'
}
# submit <act file> <step>: kubectl apply of the objects labelled demo.tephra.io/step=<step>. Retried for a
# while: an admission webhook may not know a queue created a moment ago ("unable to find job queue").
submit() {
  local out l deadline=$(( $(date +%s) + 20 ))
  until out=$(k apply -f "$STORY/$1" -l "demo.tephra.io/step=$2" 2>&1); do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "$out" >&2; give_up "acceptance of $1 (step $2)" 20; }
    sleep 0.5
  done
  while IFS= read -r l; do echo "    $l"; done <<<"$out"
}

# await <what> <cmd...>: polls cmd every 0.5 s; after TIMEOUT s shows the cluster's state and stops the demo.
await() {
  local what=$1; shift
  wait_until "$what" "$TIMEOUT" "$@" || give_up "$what"
}
# check_deadline <deadline (epoch s)> <what>: for loops that look at the cluster while they wait.
check_deadline() { [ "$(date +%s)" -lt "$1" ] || give_up "$2"; }
give_up() {
  echo "The demo stopped: gave up waiting for $1 (${2:-$TIMEOUT}s). Jobs, PodGroups and pods now:" >&2
  k get vcjob,podgroup -o wide >&2 || true
  k get pods -o wide >&2 || true
  echo "Logs: $DIR/logs. Stop the cluster: bash $ROOT/tests/e2e/cluster.sh down $DIR" >&2
  exit 1
}

# ------------------------------------------------------------------------------------------------- set-up
prepare() {
  step "dependencies"
  bash scripts/deps.sh
  step "control-plane binaries (built once, then cached in ~/.cache/tephra)"
  bash tests/e2e/fetch-binaries.sh >/dev/null
  step "building tephra in $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" -j"${TEPHRA_JOBS:-2}" --target tephra
  export TEPHRA_BIN=$BUILD/bin/tephra
}

start_cluster() {
  step "control plane in $DIR"
  if [ -d "$DIR" ]; then bash tests/e2e/cluster.sh down "$DIR" 2>/dev/null || true; rm -rf "$DIR"; fi
  bash tests/e2e/cluster.sh up "$DIR"
  eval "$(bash tests/e2e/cluster.sh env "$DIR")"
  # shellcheck source=SCRIPTDIR/../tests/e2e/lib/common.sh
  source tests/e2e/lib/common.sh
  # Roles started by start_role are detached into the cluster's run/ dir, so `cluster.sh down` stops them
  # together with the control plane.
  export ROLE_PID_DIR=$DIR/run
}

# launch <role> [args...]: `tephra <role>` as a local process, logging to $DIR/logs/tephra-<role>.log.
launch() {
  local role=$1 log=$DIR/logs/tephra-$1.log; shift
  start_role "$role" "$log" "$@" || { echo "tephra $role did not start; see $log" >&2; exit 1; }
  echo "tephra $role: running (log: $log)"
}

# Tephra as users install it: `helm install` of charts/tephra (the CRDs, a ServiceAccount and least-privilege
# RBAC per role, the webhook configurations, the scheduler's configuration, the default Queue). This control
# plane has no kubelet to run the chart's pods, so the three roles run as local processes with the flags of the
# chart's Deployments and the tokens of the chart's ServiceAccounts (tests/e2e/lib/chart.sh): what the chart
# grants is what they can do. The API server reaches the webhook by URL on loopback.
ROLE_LOGS=""
install_tephra() {
  step "Tephra: helm install charts/tephra, then its three roles"
  export TEPHRA_SOURCE_DIR=$ROOT
  # shellcheck source=SCRIPTDIR/../tests/e2e/lib/chart.sh
  source tests/e2e/lib/chart.sh
  local port; port=$(free_port)
  # The scheduler's read-only web view (docs/web-view.md) is on too: the story can be watched in a browser.
  chart_install tephra tephra-system "$port" --set custom.scheduler_web_view_enable=true >"$DIR/logs/helm-install.log" ||
    { cat "$DIR/logs/helm-install.log" >&2; exit 1; }
  echo "helm: release tephra installed in namespace tephra-system ($("$HELM" list -n tephra-system -o json |
    jq -r '.[0] | "chart \(.chart), app \(.app_version)"'); helm's notes: $DIR/logs/helm-install.log)"
  crds_established() { k wait --for condition=Established --timeout 10s crd --all >/dev/null; }
  await "the chart's CRDs Established" crds_established
  chart_start_roles tephra tephra-system "$DIR/chart" "$port" ||
    { echo "the chart's roles did not start; logs in $DIR/chart" >&2; exit 1; }
  ROLE_LOGS="$DIR/chart/{admission,controllers,scheduler}.log"
  echo "tephra webhook, controller, scheduler: running as the chart's ServiceAccounts (logs: $ROLE_LOGS)"
}

# Simulated nodes: `tephra nodesim` plays the kubelets (docs/nodesim.md), so it keeps the admin kubeconfig.
start_nodes() {
  step "$NODES simulated nodes of $NODE_CPU CPUs"
  launch nodesim --kubeconfig "$KUBECONFIG" --nodes "$NODES" --cpu "$NODE_CPU" --memory 8Gi --gpus 0
  nodes_ready() {
    [ "$(k get nodes -o json | jq --arg c "$NODE_CPU" '[.items[] | select(.status.allocatable.cpu == $c and
      any(.status.conditions[]; .type == "Ready" and .status == "True"))] | length')" -eq "$NODES" ]
  }
  await "$NODES Ready nodes of $NODE_CPU CPUs" nodes_ready
  # The scheduler creates the `default` queue at start-up, as Volcano's does; acts 1 and 3 use it.
  await "queue default" k get queue default
  k get nodes
}

# ------------------------------------------------------------------------------------------------- act 1
act1_gang() {
  step "Act 1: a gang waits until it fits, then starts whole ($STORY/1-gang.yaml)"
  submit 1-gang.yaml 1
  await "running holder" phase_is holder Running
  local holder_nodes idle start
  holder_nodes=$(k get pods -l volcano.sh/job-name=holder -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort)
  idle=$(comm -23 <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort) <(echo "$holder_nodes") | paste -sd' ' -)
  start=$(hms "$(k get pods -l volcano.sh/job-name=holder -o jsonpath='{.items[0].status.startTime}')")
  echo "    holder runs on $(paste -sd' ' - <<<"$holder_nodes"); idle: ${idle:-none}"
  submit 1-gang.yaml 2
  local submitted; submitted=$(clock)
  pg_exists() { [ "$(podgroup_phase gang)" != none ]; }
  await "PodGroup of gang" pg_exists

  # Look at gang while all of holder's pods still run. The PodGroup is read before the pods, and the pods of
  # both jobs come from one LIST, so every look that still shows holder's 3 pods running is a look at gang
  # while holder held its nodes.
  local looks=0 first="" last="" pg jp counts h_run g_pods g_bound max_pods=0 max_bound=0 pg_seen="" job_seen=""
  local why="" out line
  local deadline=$(( $(date +%s) + TIMEOUT ))
  while check_deadline "$deadline" "end of holder"; do
    if ! { pg=$(podgroup_phase gang) && jp=$(phase gang) &&
      counts=$(k get pods -l 'volcano.sh/job-name in (holder,gang)' -o json | jq -r '[.items[] |
        {j: .metadata.labels["volcano.sh/job-name"], b: (.spec.nodeName != null), p: .status.phase}]
        | [ (map(select(.j == "holder" and .p == "Running")) | length), (map(select(.j == "gang")) | length),
            (map(select(.j == "gang" and .b)) | length) ] | @tsv'); }; then sleep 0.5; continue; fi
    read -r h_run g_pods g_bound <<<"$counts"
    [ "$h_run" -eq 3 ] || break
    looks=$((looks + 1)); last=$(clock); [ -n "$first" ] || first=$last
    [ "$g_pods" -le "$max_pods" ] || max_pods=$g_pods
    [ "$g_bound" -le "$max_bound" ] || max_bound=$g_bound
    case "/$pg_seen/" in *"/$pg/"*) ;; *) pg_seen="${pg_seen:+$pg_seen/}$pg" ;; esac
    case "/$job_seen/" in *"/$jp/"*) ;; *) job_seen="${job_seen:+$job_seen/}$jp" ;; esac
    # Ask what a user would ask: why is it pending? (tephra ctl, the vcctl-compatible CLI; docs/ctl.md)
    if [ -z "$why" ] && out=$("$TEPHRA_BIN" ctl job why -N gang 2>/dev/null) && grep -q "^  Why:" <<<"$out"; then
      why=$out
    fi
    sleep 0.5
  done
  echo "    while holder ran: $looks looks at gang ($first..$last): job $job_seen, PodGroup $pg_seen, $max_pods pods, $max_bound bound"
  expect "gang looked at while holder ran" [ "$looks" -ge 3 ]
  expect "no pod of gang bound while holder ran" [ "$max_bound" -eq 0 ]
  expect "tephra ctl job why explained the wait" [ -n "$why" ]
  await "running gang" phase_is gang Running
  await "completed gang" phase_is gang Completed
  await "completed holder" phase_is holder Completed
  echo "    holder and gang Completed"

  local holder_end gang_pods b1 b2 bound
  holder_end=$(k get pods -l volcano.sh/job-name=holder -o json |
    jq -r '[.items[].status.containerStatuses[0].state.terminated.finishedAt] | max')
  gang_pods=$(k get pods -l volcano.sh/job-name=gang -o json | jq -r '.items | sort_by(.metadata.name)[] |
    "\(.metadata.name)|\(.spec.nodeName)|\(.status.conditions[] | select(.type == "PodScheduled") | .lastTransitionTime)"')
  # Bind times (the PodScheduled condition) have a resolution of one second.
  b1=$(cut -d'|' -f3 <<<"$gang_pods" | sort | head -n1); b2=$(cut -d'|' -f3 <<<"$gang_pods" | sort | tail -n1)
  if [ "$b1" = "$b2" ]; then bound="in the same second, $(hms "$b1")"; else bound="between $(hms "$b1") and $(hms "$b2")"; fi
  expect "gang's pods bound within a second of each other" [ $(( $(date -d "$b2" +%s) - $(date -d "$b1" +%s) )) -le 1 ]
  expect "gang's pods bound after holder's ended" [ "$(date -d "$b1" +%s)" -ge "$(date -d "$holder_end" +%s)" ]
  tell "Act 1 - a gang waits until it fits, then starts whole"
  tell "  holder (3 pods x 6 CPUs) ran from $start on $(paste -sd' ' - <<<"$holder_nodes"); ${idle:-no node} stayed idle (6 CPUs)."
  tell "  gang (3 pods x 3 CPUs, minAvailable 3) was submitted at $submitted. Two of its pods would have fit on the idle node,"
  tell "  but a gang starts whole or not at all: in $looks looks from $first to $last, while holder's pods ran, the job was"
  if [ "$max_pods" -eq 0 ]; then
    tell "  $job_seen and its PodGroup $pg_seen: the scheduler did not admit the gang, so the job controller created none of"
    tell "  its pods (0 existed, 0 bound) and nothing sat half-started on the idle node."
  else
    tell "  $job_seen and its PodGroup $pg_seen; up to $max_pods of its pods existed and $max_bound was ever bound."
  fi
  tell "  Asked why, \`tephra ctl job why -N gang\` (or vcctl) answered:"
  while IFS= read -r line; do tell "  $line"; done < <(grep -E "^  (Why|What next):|^             " <<<"$why")
  tell "  holder's pods finished at $(hms "$holder_end"); gang's 3 pods were bound $bound:"
  tell "    $(awk -F'|' '{printf "%s%s -> %s", (NR > 1 ? ",  " : ""), $1, $2}' <<<"$gang_pods")"
  tell "  holder Completed at $(ended_at holder), gang Completed at $(ended_at gang)."
}

# ------------------------------------------------------------------------------------------------- act 2
# One look at both queues: "<t> <cpu held a> <cpu held b> <pods waiting a> <pods waiting b> <status a> <status b>",
# CPUs held = requests of bound pods not yet finished; status = Queue status.allocated.cpu (the scheduler's view).
queue_look() {
  local queues pods
  queues=$(k get queue team-a team-b -o json | jq -r 'def cpu: if . == null then 0 elif endswith("m")
    then (.[:-1] | tonumber) / 1000 else tonumber end; [.items[] | .status.allocated.cpu | cpu] | @tsv') || return 1
  pods=$(k get pods -l 'volcano.sh/queue-name in (team-a,team-b)' -o json | jq -r 'def cpu: if endswith("m")
    then (.[:-1] | tonumber) / 1000 else tonumber end;
    [.items[] | {q: .metadata.labels["volcano.sh/queue-name"], b: (.spec.nodeName != null),
       done: (.status.phase == "Succeeded" or .status.phase == "Failed"),
       cpu: ([.spec.containers[].resources.requests.cpu // "0" | cpu] | add)}] as $p
    | [ ($p | map(select(.q == "team-a" and .b and (.done | not)) | .cpu) | add // 0),
        ($p | map(select(.q == "team-b" and .b and (.done | not)) | .cpu) | add // 0),
        ($p | map(select(.q == "team-a" and (.b | not))) | length),
        ($p | map(select(.q == "team-b" and (.b | not))) | length) ] | @tsv') || return 1
  echo "$(now) $pods $queues"
}

act2_queues() {
  step "Act 2: two queues share the cluster by weight ($STORY/2-queues.yaml)"
  submit 2-queues.yaml 0
  local t0; t0=$(now)
  submit 2-queues.yaml 1
  b_fills() { [ "$(queue_look | awk '{print $3}')" = 24 ]; }
  await "team-b holding all 24 CPUs" b_fills
  local tb; tb=$(since "$t0")
  echo "    team-b holds all 24 CPUs"
  submit 2-queues.yaml 2
  local ta; ta=$(since "$t0")
  echo "    looking at both queues until both sweeps end"
  local looks=$DIR/act2-looks.txt deadline=$(( $(date +%s) + TIMEOUT ))
  : >"$looks"
  until ended team-a-sweep && ended team-b-sweep; do
    check_deadline "$deadline" "end of both sweeps"
    queue_look >>"$looks" || true
    sleep 0.3
  done
  await "completed team-a-sweep" phase_is team-a-sweep Completed
  await "completed team-b-sweep" phase_is team-b-sweep Completed
  echo "    both sweeps Completed"

  # Timeline: states (CPUs held, pods waiting) that lasted at least a second; a burst of pods finishing at once
  # passes through short in-between states that say nothing.
  local timeline window from to avg_a avg_b ratio
  timeline=$(awk -v t0="$t0" '
    function flush() { if (n && last - since >= 1) printf "    +%4.0fs  team-a %2d CPUs (%2d pods waiting)   team-b %2d CPUs (%2d waiting)   Queue status: %s / %s\n",
                         since - t0, a, wa, b, wb, qa, qb }
    { if (!n || $2 != a || $3 != b || $4 != wa || $5 != wb) { flush(); since = $1; a = $2; b = $3; wa = $4; wb = $5; n = 1 } qa = $6; qb = $7; last = $1 }
    END { flush() }' "$looks")
  # While both queues had pods waiting, once team-b's head start had drained (it no longer held more than its
  # weight's share, 6 of 24 CPUs; how fast its first pods end depends on the machine): CPUs held, averaged over
  # time. team-a's side is what the check tests: it must have been given the other 18.
  window=$(awk -v t0="$t0" '
    $2 > 0 && $3 <= 6 { started = 1 }
    started && $4 > 0 && $5 > 0 { if (pt) { dt = $1 - pt; sa += pa * dt; sb += pb * dt; T += dt } if (!t1) t1 = $1; t2 = $1; pa = $2; pb = $3; pt = $1; next }
    { pt = 0 }
    END { if (T > 0) printf "%.0f %.0f %.1f %.1f %.1f", t1 - t0, t2 - t0, sa / T, sb / T, (sb > 0 ? sa / sb : 0) }' "$looks")
  tell "Act 2 - two queues share the cluster by weight"
  tell "  Queues team-a (weight 3) and team-b (weight 1). team-b's sweep (24 pods x 2 CPUs) came first, at +0s,"
  tell "  and took the whole idle cluster (24 CPUs at +${tb}s); team-a's sweep (27 pods x 2 CPUs) came at +${ta}s and waited:"
  tell "  the default configuration does not preempt. As pods finished, each freed slot went to the queue furthest"
  tell "  below its share. CPUs held by running pods (and each Queue's status.allocated.cpu), as the looks saw them:"
  while IFS= read -r l; do tell "$l"; done <<<"$timeline"
  if [ -n "$window" ]; then
    read -r from to avg_a avg_b ratio <<<"$window"
    expect "a 3:1 split while both queues had pods waiting (saw $ratio:1)" awk -v r="$ratio" 'BEGIN { exit !(r >= 2.5 && r <= 3.5) }'
    tell "  While both queues had pods waiting and team-b's head start was gone (+${from}s to +${to}s), team-a held"
    tell "  $avg_a CPUs and team-b $avg_b on average:"
    tell "  $ratio : 1, the ratio of their weights (3 : 1)."
  else
    tell "  (the looks never saw both queues with pods waiting after team-a started)"
    expect "looks at both queues with pods waiting" false
  fi
  tell "  team-a-sweep Completed at $(ended_at team-a-sweep), team-b-sweep at $(ended_at team-b-sweep)."
}

# ------------------------------------------------------------------------------------------------- act 3
act3_retry() {
  step "Act 3: a failing job is retried by its policy ($STORY/3-retry.yaml)"
  # Watches (not polls) on the job and its pods, started before the job exists, so that every state the API
  # server stored is seen, even ones that last a few milliseconds.
  local jobw=$DIR/act3-job.txt podw=$DIR/act3-pods.txt
  "$KUBECTL" get vcjob --field-selector metadata.name=flaky -w -o jsonpath='{.status.state.lastTransitionTime}{" "}{.status.state.phase}{" "}{.status.retryCount}{"\n"}' >"$jobw" 2>>"$DIR/logs/act3-watch.err" &
  WATCHERS+=($!)
  "$KUBECTL" get pods -l volcano.sh/job-name=flaky -w -o jsonpath='{.metadata.name}{"|"}{.metadata.annotations.volcano\.sh/job-retry-count}{"|"}{.spec.nodeName}{"|"}{.status.phase}{"|"}{.status.containerStatuses[0].state.terminated.exitCode}{"|"}{.status.containerStatuses[0].state.terminated.finishedAt}{"\n"}' >"$podw" 2>>"$DIR/logs/act3-watch.err" &
  WATCHERS+=($!)
  submit 3-retry.yaml 1
  await "end of flaky" ended flaky
  await "completed flaky" phase_is flaky Completed
  local retries
  retries=$(k get vcjob flaky -o jsonpath='{.status.retryCount}')
  # The last watch events may still be on their way: wait until the pod watch shows the last attempt's failure.
  last_attempt_seen() { grep -q "^[^|]*|$(( ${retries:-0} - 1 ))|[^|]*|Failed|" "$podw"; }
  await "the watch to show the last attempt" last_attempt_seen
  for p in "${WATCHERS[@]}"; do kill "$p" 2>/dev/null || true; done
  WATCHERS=()
  echo "    flaky: Completed after $retries restarts"

  local phases
  # Job phases in order, with status.retryCount once it is counted: Pending -> Running -> Restarting(1) -> ...
  phases=$(awk '$2 != "" { r = ($3 == "" ? 0 : $3); s = $2 (r > 0 ? "(" r ")" : ""); if (s != prev) { out = out (out ? " -> " : "") s; prev = s } }
    END { print out }' "$jobw")
  tell "Act 3 - a failing job is retried by its policy until it succeeds"
  tell "  flaky (2 pods whose container exits with 1 after 3 s in the first 2 attempts; policy PodFailed -> RestartJob,"
  tell "  maxRetry 3) went through"
  tell "    $phases"
  tell "  (job phase, with status.retryCount in brackets). Its attempts, from the pods' failures:"
  # One line per attempt (the pods' volcano.sh/job-retry-count annotation): which pod failed where, when, how.
  local attempt pods when n=0
  while IFS=$'\t' read -r attempt pods when; do
    [ -n "$attempt" ] || continue
    n=$((n + 1))
    tell "    attempt $((attempt + 1)) (pods annotated volcano.sh/job-retry-count=$attempt): failed at $(hms "$when"):$pods"
  done < <(awk -F'|' '$4 == "Failed" && !seen[$1 FS $2]++ {
      if (!($2 in pods)) order[n++] = $2; pods[$2] = pods[$2] " " $1 " on " $3 " exit code " $5 ";"; t[$2] = $6 }
    END { for (i = 0; i < n; i++) printf "%s\t%s\t%s\n", order[i], substr(pods[order[i]], 1, length(pods[order[i]]) - 1), t[order[i]] }' "$podw")
  expect "flaky restarted twice" [ "$retries" = 2 ]
  expect "2 failed attempts of flaky seen (saw $n)" [ "$n" -eq 2 ]
  tell "  Each failure restarted the whole job (every pod killed and created again, the gang scheduled again);"
  tell "  attempt 3 succeeded: flaky Completed at $(ended_at flaky) after $retries restarts, one short of maxRetry."
  tell "  Had every attempt failed, the policy would have given up after 3 restarts (phase Failed, reason MaxRetryReached)."
}

# ------------------------------------------------------------------------------------------------- epilogue
epilogue() {
  step "What happened (times in UTC)"
  printf '%s\n' "${SUMMARY[@]}"
  echo
  k get vcjob -o custom-columns='JOB:.metadata.name,QUEUE:.spec.queue,PHASE:.status.state.phase,SUCCEEDED:.status.succeeded,FAILED:.status.failed,RETRIES:.status.retryCount,ENDED:.status.state.lastTransitionTime'
  local want="flaky=Completed gang=Completed holder=Completed team-a-sweep=Completed team-b-sweep=Completed" got
  got=$(k get vcjob -o jsonpath='{range .items[*]}{.metadata.name}={.status.state.phase}{" "}{end}' | xargs -n1 | sort | xargs)
  expect "jobs ending $want (they ended $got)" [ "$got" = "$want" ]
  echo
  if [ ${#SURPRISES[@]} -gt 0 ]; then
    echo "NOT AS THE STORY SAYS:" >&2
    printf '  expected %s\n' "${SURPRISES[@]}" >&2
    echo "Logs: $DIR/logs. Stop the cluster: bash $ROOT/tests/e2e/cluster.sh down $DIR" >&2
    exit 1
  fi
  echo "Every job ended as meant. Dependencies and build took $(( RUN_START - SCRIPT_START ))s, the cluster and Tephra" \
    "$(( STORY_START - RUN_START ))s, the story $(( $(date +%s) - STORY_START ))s."

  step "Look around (the cluster is still running)"
  cat <<EOF
  eval "\$(bash $ROOT/tests/e2e/cluster.sh env $DIR)"     # sets KUBECONFIG and KUBECTL for this cluster
  \$KUBECTL get vcjob                      # the five jobs, their phases (batch.volcano.sh Job)
  \$KUBECTL get podgroup                   # the scheduler's unit: one gang per job, with its phase
  \$KUBECTL get queue team-a -o yaml       # weight, and status.allocated while it runs work
  \$KUBECTL get pods -o wide               # every pod, on which node it ran
  \$KUBECTL describe vcjob flaky           # conditions, retryCount, Events (ExecuteAction RestartJob)
  \$KUBECTL get events --sort-by=.lastTimestamp
The scheduler's web view (queues, waiting jobs and why, placement, the cluster map): http://127.0.0.1:${CHART_ROLE_METRICS[scheduler]:-8080}/ui/
Try it again: delete the jobs (\$KUBECTL delete vcjob --all) and apply an act, e.g.
  \$KUBECTL apply -f $STORY/3-retry.yaml
Logs: Tephra $ROLE_LOGS
      simulated nodes $DIR/logs/tephra-nodesim.log, control plane $DIR/logs/{kube-apiserver,audit}.log
The looks and watches behind "What happened": $DIR/act2-looks.txt, $DIR/act3-job.txt, $DIR/act3-pods.txt
Stop everything (control plane and Tephra):
  bash $ROOT/tests/e2e/cluster.sh down $DIR
EOF
}

# ------------------------------------------------------------------------------------------------- main
SCRIPT_START=$(date +%s)
prepare
RUN_START=$(date +%s)
start_cluster
install_tephra
start_nodes
STORY_START=$(date +%s)
act1_gang
act2_queues
act3_retry
epilogue
