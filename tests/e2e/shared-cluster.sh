#!/usr/bin/env bash
# The control planes that e2e scenarios share (docs/e2e.md, "Shared control planes"):
#   shared-cluster.sh up <root>     start one cluster per id in tests/e2e/clusters.json, each in <root>/<id>,
#                                   at the same time, and record each one's baseline objects
#   shared-cluster.sh down <root>   stop them; their logs stay in <root>/<id>/logs
# ctest runs these as the e2e_cluster_up / e2e_cluster_down fixtures. ctest hands each scenario one of the
# clusters (its resource allocation, `--resource-spec-file tests/e2e/clusters.json`), so two scenarios can run
# at once, each alone on its cluster; run-with-cluster.sh runs the scenario there.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib/cluster_lib.sh"
[ $# -eq 2 ] || { echo "usage: $0 up|down <root>" >&2; exit 2; }
root=$2
mapfile -t ids < <(python3 -c 'import json,sys; print("\n".join(c["id"] for c in json.load(open(sys.argv[1]))["local"][0]["e2e_cluster"]))' "$HERE/clusters.json")

up_one() {
  local dir=$1
  # A cluster left by an earlier run of the same build tree (a killed ctest) is replaced.
  bash "$HERE/cluster.sh" down "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"; mkdir -p "$dir"
  bash "$HERE/cluster.sh" up "$dir" 2>"$dir.up.log" || { cat "$dir.up.log" >&2; return 1; }
  ( eval "$(bash "$HERE/cluster.sh" env "$dir")"; python3 "$HERE/lib/cluster_reset.py" snapshot "$dir/baseline.json" )
  shared_cluster_usable "$dir" || { echo "shared-cluster: $dir came up but is not usable" >&2; return 1; }
  touch "$dir/clean"
  echo "shared-cluster: $dir up ($(grep -o "timing.*" "$dir.up.log"))"
}

case $1 in
  up)
    mkdir -p "$root"
    pids=()
    for id in "${ids[@]}"; do up_one "$root/$id" & pids+=($!); done
    rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    if [ "$rc" -ne 0 ]; then
      for id in "${ids[@]}"; do bash "$HERE/cluster.sh" down "$root/$id" >/dev/null 2>&1 || true; done
      exit 1
    fi
    ;;
  down)
    for id in "${ids[@]}"; do bash "$HERE/cluster.sh" down "$root/$id" || true; done
    # Each scenario's directory is removed when it passes; what is left belongs to failures: keep it.
    ;;
  *) echo "usage: $0 up|down <root>" >&2; exit 2 ;;
esac
