#!/usr/bin/env bash
# Helm post-renderer: adds `helm.sh/resource-policy: keep` to every CustomResourceDefinition of a rendered
# release, so that a later `helm uninstall` leaves the CRDs (and every object of them) in place. Used once,
# when moving a cluster from Volcano, whose chart renders its CRDs as templates (docs/install.md).
# Reads the rendered manifests on stdin, writes them on stdout; other objects pass through unchanged.
set -euo pipefail
awk '
function flush(   i, n, lines, is_crd, done, in_meta) {
  n = split(doc, lines, "\n")
  is_crd = 0
  for (i = 1; i <= n; i++) if (lines[i] ~ /^kind:[ \t]*CustomResourceDefinition[ \t]*$/) is_crd = 1
  done = !is_crd; in_meta = 0
  for (i = 1; i < n; i++) {
    print lines[i]
    if (done) continue
    if (lines[i] ~ /^metadata:[ \t]*$/) { in_meta = 1; continue }
    if (in_meta && lines[i] ~ /^  annotations:[ \t]*$/) { print "    helm.sh/resource-policy: keep"; done = 1; continue }
    if (in_meta && (i + 1 > n - 1 || lines[i + 1] !~ /^  /)) {
      print "  annotations:"; print "    helm.sh/resource-policy: keep"; done = 1
    }
  }
  doc = ""
}
/^---/ { flush(); print; next }
{ doc = doc $0 "\n" }
END { flush() }
'
