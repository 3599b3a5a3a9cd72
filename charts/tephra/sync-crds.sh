#!/usr/bin/env bash
# Refreshes the chart's copies of the CRDs from the repository's crds/ (the single source).
# `helm package` cannot follow a path outside the chart, so the chart carries copies; tests/chart/chart_test.sh
# fails when a copy differs from crds/*.yaml or a file is missing or extra.
#
#   charts/tephra/sync-crds.sh          copy crds/*.yaml into charts/tephra/crds/, drop files no longer there
#   charts/tephra/sync-crds.sh --check  exit 1 (listing the differences) when the copies are stale
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)/crds
dst=$here/crds
mode=${1:-sync}
case $mode in sync|--check) ;; *) echo "usage: $0 [--check]" >&2; exit 2 ;; esac

stale=0
shopt -s nullglob
for f in "$src"/*.yaml; do
  name=$(basename "$f")
  if ! cmp -s "$f" "$dst/$name"; then
    stale=1
    if [ "$mode" = --check ]; then
      [ -e "$dst/$name" ] && echo "differs: charts/tephra/crds/$name" || echo "missing: charts/tephra/crds/$name"
    else
      mkdir -p "$dst"
      cp "$f" "$dst/$name"
      echo "copied crds/$name"
    fi
  fi
done
for f in "$dst"/*; do
  name=$(basename "$f")
  if [ ! -e "$src/$name" ] || [ -d "$src/$name" ]; then
    stale=1
    if [ "$mode" = --check ]; then
      echo "extra: charts/tephra/crds/$name (not in crds/)"
    else
      rm -rf "$f"
      echo "removed charts/tephra/crds/$name"
    fi
  fi
done
if [ "$mode" = --check ] && [ $stale = 1 ]; then
  echo "run charts/tephra/sync-crds.sh to refresh the chart's CRDs" >&2
  exit 1
fi
exit 0
