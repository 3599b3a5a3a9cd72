#!/usr/bin/env python3
"""Admission traffic for the certificate-rotation check: server-side dry-run creates of a vcjob (each one goes
through /jobs/mutate and /jobs/validate) in a loop, until the file named by argv[1] exists or argv[2] seconds
pass. Prints "requests=<n> failures=<n>" and the first failures; exits 1 on any failure. Stdlib only."""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from apiclient import conn, req

stop_file, limit = sys.argv[1], float(sys.argv[2])
job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "dry", "namespace": "default"},
       "spec": {"tasks": [{"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}
path = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs?dryRun=All"
c = conn(timeout=30)
n, failures, deadline = 0, [], time.time() + limit
while time.time() < deadline and not os.path.exists(stop_file):
    try:
        status, body = req(c, "POST", path, job)
    except Exception as e:  # a broken connection to the API server is a failure too
        status, body = 0, str(e).encode()
        c = conn(timeout=30)
    n += 1
    if status not in (200, 201):
        failures.append((status, body[:300]))
    else:
        import json
        spec = json.loads(body)["spec"]
        if spec.get("schedulerName") != "volcano" or spec.get("minAvailable") != 1:
            failures.append(("not mutated", json.dumps(spec)[:300]))
print("requests=%d failures=%d" % (n, len(failures)))
for f in failures[:5]:
    print("  ", f)
sys.exit(1 if failures or n == 0 else 0)
