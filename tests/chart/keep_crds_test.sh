#!/usr/bin/env bash
# charts/migrate/keep-crds.sh (the Helm post-renderer of docs/install.md, "Moving a cluster from Volcano"): every
# CustomResourceDefinition gains `helm.sh/resource-policy: keep` whether or not it has annotations already,
# other objects pass through byte for byte, and the output is valid YAML.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
in=$(cat <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: untouched
  annotations:
    a: b
data:
  kind: CustomResourceDefinition
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.4.1
  name: jobs.batch.volcano.sh
spec:
  group: batch.volcano.sh
---
# Source: volcano/templates/scheduling_v1beta1_queue.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: queues.scheduling.volcano.sh
spec:
  group: scheduling.volcano.sh
YAML
)
out=$(bash "$ROOT/charts/migrate/keep-crds.sh" <<<"$in")
python3 - "$out" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.argv[1]) if d]
assert len(docs) == 3, docs
cm, job, queue = docs
assert cm["metadata"]["annotations"] == {"a": "b"}, cm
assert cm["data"] == {"kind": "CustomResourceDefinition"}, cm
for crd in (job, queue):
    ann = crd["metadata"].get("annotations", {})
    assert ann.get("helm.sh/resource-policy") == "keep", crd
assert job["metadata"]["annotations"]["controller-gen.kubebuilder.io/version"] == "v0.4.1"
assert queue["metadata"]["name"] == "queues.scheduling.volcano.sh"
print("keep-crds: ok")
PY
# Objects that are not CRDs come out unchanged.
[ "$(sed -n '1,/^---/p' <<<"$out")" = "$(sed -n '1,/^---/p' <<<"$in")" ] || { echo "keep-crds changed a ConfigMap" >&2; exit 1; }
