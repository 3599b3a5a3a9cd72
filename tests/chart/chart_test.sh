#!/usr/bin/env bash
# Static checks of the Helm chart charts/tephra (ctest chart_static, label unit; no cluster, ~15 s):
#   1. helm lint --strict of the chart's defaults;
#   2. the CRDs the chart carries (charts/tephra/crds/) are exactly the repository's crds/*.yaml;
#   3. `helm package` works, keeps the CRDs and the Grafana dashboards, and its chart renders the same;
#   4. chart_test.py: helm template for a matrix of values, each render parsed and checked object by object;
#      the schema refuses bad values naming the key; the webhook configurations equal the role's own
#      (`tephra webhook --print-configurations`); every role accepts the exact flags of its Deployment.
# helm comes from tests/e2e/fetch-binaries.sh ($TEPHRA_CACHE/clients-v32/helm, or $HELM); the binary from
# $TEPHRA_BIN (ctest sets both TEPHRA_BIN and TEPHRA_SOURCE_DIR, as for the e2e tests).
# usage: bash tests/chart/chart_test.sh [--only <substring of a check name>]
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${TEPHRA_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}
CACHE=${TEPHRA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tephra}
HELM=${HELM:-$CACHE/clients-v32/helm}
TEPHRA_BIN=${TEPHRA_BIN:-$SRC/build/bin/tephra}
CHART=$SRC/charts/tephra
ONLY=
[ "${1:-}" = --only ] && ONLY=${2:-}

if [ ! -x "$HELM" ]; then
  echo "chart_test: no helm at $HELM; fetch it with tests/e2e/fetch-binaries.sh (or set HELM)" >&2
  exit 77   # ctest: skipped
fi
python3 -c 'import yaml' 2>/dev/null || { echo "chart_test: python3-yaml is missing (scripts/deps.sh)" >&2; exit 1; }

failed=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $1"; shift; [ $# -gt 0 ] && printf '       %s\n' "$@"; failed=1; }
want() { [ -z "$ONLY" ] || [[ $1 == *"$ONLY"* ]]; }

# 1. lint
if want "lint --strict defaults"; then
  if out=$("$HELM" lint --strict "$CHART" 2>&1); then ok "lint --strict defaults"
  else mapfile -t lines <<<"$out"; fail "lint --strict defaults" "${lines[@]}"; fi
fi

# 2. CRDs: the chart's copies are the repository's crds/*.yaml, byte for byte, no file missing or extra.
if want "crds"; then
  problems=()
  for f in "$SRC"/crds/*.yaml; do
    n=$(basename "$f")
    if [ ! -f "$CHART/crds/$n" ]; then problems+=("missing: charts/tephra/crds/$n")
    elif ! cmp -s "$f" "$CHART/crds/$n"; then problems+=("differs: charts/tephra/crds/$n")
    fi
  done
  for f in "$CHART"/crds/*; do
    n=$(basename "$f")
    [ -f "$SRC/crds/$n" ] && [[ $n == *.yaml ]] || problems+=("extra: charts/tephra/crds/$n (not in crds/*.yaml)")
  done
  [ -n "$(ls "$SRC"/crds/*.yaml 2>/dev/null)" ] || problems+=("no crds/*.yaml found under $SRC")
  if [ ${#problems[@]} -eq 0 ]; then ok "crds: charts/tephra/crds/ == crds/*.yaml ($(ls "$SRC"/crds/*.yaml | wc -l) files)"
  else fail "crds: the chart's CRDs differ from crds/ (refresh: charts/tephra/sync-crds.sh)" "${problems[@]}"; fi
fi

# 3. `helm package` keeps what the templates read (the CRDs, config/) and drops the tooling (.helmignore).
if want "package"; then
  tmp=$(mktemp -d)
  if out=$("$HELM" package "$CHART" -d "$tmp" 2>&1) && pkg=$(ls "$tmp"/tephra-*.tgz 2>/dev/null) &&
     "$HELM" template t "$pkg" -n tephra-system >"$tmp/from-package.yaml" 2>"$tmp/err" &&
     "$HELM" template t "$CHART" -n tephra-system >"$tmp/from-dir.yaml" 2>>"$tmp/err"; then
    files=$(tar tzf "$pkg")
    problems=()
    cmp -s "$tmp/from-package.yaml" "$tmp/from-dir.yaml" || problems+=("the packaged chart renders differently from the directory")
    for f in "$SRC"/crds/*.yaml; do
      grep -qx "tephra/crds/$(basename "$f")" <<<"$files" || problems+=("package lacks crds/$(basename "$f")")
    done
    for f in "$CHART"/dashboards/*.json; do
      grep -qx "tephra/dashboards/$(basename "$f")" <<<"$files" || problems+=("package lacks dashboards/$(basename "$f")")
    done
    ! grep -q "sync-crds.sh" <<<"$files" || problems+=("package contains sync-crds.sh")
    if [ ${#problems[@]} -eq 0 ]; then ok "package: $(basename "$pkg") ($(wc -l <<<"$files") files)"
    else fail "package" "${problems[@]}"; fi
  else
    mapfile -t lines < <(echo "$out"; cat "$tmp/err" 2>/dev/null); fail "package" "${lines[@]}"
  fi
  rm -rf "$tmp"
fi

# 4. renders, schema, webhook drift, role flags
python3 "$HERE/chart_test.py" --helm "$HELM" --chart "$CHART" --values-dir "$HERE/values" --tephra "$TEPHRA_BIN" \
  ${ONLY:+--only "$ONLY"} || failed=1

if [ $failed -ne 0 ]; then echo "chart_test: FAILED"; exit 1; fi
echo "chart_test: all checks passed"
