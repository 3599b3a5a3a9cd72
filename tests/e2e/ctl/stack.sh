# Shared by the ctl e2e scripts (sourced): lib/common.sh, a log and a work directory (the roles stop and the
# work directory goes on exit), `k` (kubectl), and
#   ctl_stack_up [scheduler flags...]   the CRDs, $CTL_NODES (2) simulated nodes x 4 cpu (and $CTL_GPUS GPUs,
#                                       default 0: none advertised), the scheduler and the
#                                       controller, and a `vcctl` symlink to the binary in $WORK; the scheduler's
#                                       /metrics port in $SCHED_METRICS_PORT.
# shellcheck source=../lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
e2e_begin

ctl_stack_up() {
  install_crds || fail "CRDs not Established"
  local nodes=${CTL_NODES:-2}
  start_role nodesim "$LOGS/nodesim.log" --kubeconfig "$KUBECONFIG" --nodes "$nodes" --cpu 4 --gpus "${CTL_GPUS:-0}" ||
    fail "tephra nodesim did not start"
  node_count() { [ "$(k get nodes -o name | wc -l)" -ge "$1" ]; }
  wait_until "$nodes nodes" 90 node_count "$nodes" || fail "nodesim did not register nodes"
  k wait --for condition=Ready --timeout 60s node --all >/dev/null || fail "simulated nodes not Ready"
  k taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  # Both roles also get the args Volcano's chart gives its own components (klog flags, --enable-*, the
  # controller list of a chart without hypernode discovery, the stray "2>&1"): they must start unchanged.
  SCHED_METRICS_PORT=$(free_port)
  start_role scheduler "$LOGS/scheduler.log" --kubeconfig "$KUBECONFIG" --leader-elect=false "$@" \
    --logtostderr --enable-healthz=true --enable-metrics=true --enable-pprof=true --percentage-nodes-to-find=100 \
    -v=3 '2>&1' \
    --listen-address "127.0.0.1:$SCHED_METRICS_PORT" --health-addr "127.0.0.1:$(free_port)" ||
    fail "tephra scheduler did not start"
  start_role controller "$LOGS/controller.log" --kubeconfig "$KUBECONFIG" --metrics-addr "127.0.0.1:$(free_port)" \
    --logtostderr --enable-healthz=true --enable-metrics=true --leader-elect=false \
    --worker-threads-for-gc=5 '--controllers=*,-sharding-controller,-hyperNode-controller' -v=4 '2>&1' \
    --health-addr "127.0.0.1:$(free_port)" || fail "tephra controller did not start"
  have_queues() { k get queue root && k get queue default; }
  wait_until "root and default queues" 60 have_queues || fail "scheduler did not create root/default queues"
  ln -s "$TEPHRA_BIN" "$WORK/vcctl"
}
vcctl() { "$WORK/vcctl" "$@"; }   # reads $KUBECONFIG, like vcctl
