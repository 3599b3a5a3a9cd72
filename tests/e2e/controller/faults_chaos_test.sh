#!/usr/bin/env bash
# e2e chaos for the fault-controller (docs/faults.md): random faults on a busy cluster, with the controller and
# the scheduler killed mid-recovery, on the real control plane with nodesim. 64 nodes of 8 GPUs in 8 leaves
# (tephra.io/leaf). The controller runs with --fault-cordon, so that the node budget (6 of 64 at the default
# --fault-max-node-fraction 0.1) shows as cordons, and --fault-avoid-seconds 30, so that healed nodes come back
# within the run; the scheduler with the leaf/spine label keys. 15 vcjobs that never end hold 44% of the GPUs:
# 4-pod x 8-GPU gangs with networkTopology hard tier 1 (one per leaf, by pod anti-affinity, so each leaf keeps
# spare nodes for replacements), 2-pod x 4-GPU jobs with PodEvicted -> RestartJob, 4-pod x 2-GPU jobs and
# single pods (kept out of the gangs' leaves).
# FAULTS faults (20), as many of each kind nodesim can inject (node death, one unhealthy GPU, GpuXidError,
# NetworkUnavailable, the nvidia.com/gpu-xid-error taint), on seeded random nodes (mostly busy ones; always ones
# whose jobs can still be made whole), at seeded random intervals, at most 3 live at once, each healed a few
# seconds after its jobs recover. The controller is SIGKILLed right after one fault, the scheduler after another.
# In between, a burst faults 8 nodes at once: 6 must be acted on, 2 held with their pods left alone until two
# healed nodes free the budget.
# Checked from watches (every state, not samples): no vcjob lost or failed; never more than 6 nodes cordoned or
# marked; a job none of whose pods sat on a faulted node keeps its pods; nothing deleted from a held node. Per
# fault: recorded in time with its signal; then what it strands gone from the node (every pod; for a bad GPU
# the pod holding it, and none when the pods ask no more than the 7 healthy GPUs); every job that lost pods
# whole again, a gang inside one leaf; a healed node unmarked and uncordoned. Prints recovery p50/max and PASS.
# Knobs (environment): SEED (1; printed, replay with it), FAULTS (20). The driver is faults_chaos.py (Python
# 3 stdlib); it starts nodesim, the controller and the scheduler itself, because it SIGKILLs and restarts them.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${KUBECONFIG:?run me through run-with-cluster.sh}" "${TEPHRA_BIN:?}" "${TEPHRA_SOURCE_DIR:?}"
exec python3 -u "$HERE/faults_chaos.py" "$@"
