#!/usr/bin/env python3
"""A kube-scheduler extender that records, per pod, the nodes kube-scheduler's own filters passed, and
refuses them all so that nothing is bound and the cluster stays as the test built it.

kube-scheduler calls an extender's filter only with the nodes its plugins found feasible (with
percentageOfNodesToScore 100, all of them), so the recorded list is exactly kube-scheduler's feasible set.
A pod that no node passes never reaches the extender; the test reads that as the empty set once the pod's
PodScheduled condition is False.

Usage: recorder.py <port-file> <record-file>. Binds 127.0.0.1 on a free port, writes the port to
<port-file>, and appends one JSON line {"pod": "<ns>/<name>", "nodes": [...]} per call to <record-file>.
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def field(obj, key):
    """Go's encoding/json matches keys case-insensitively; kube-scheduler sends `Pod` and `NodeNames`."""
    if key in obj:
        return obj[key]
    for k, v in obj.items():
        if k.lower() == key.lower():
            return v
    return None


class Handler(BaseHTTPRequestHandler):
    record_path = ""

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            args = json.loads(body)
            pod = field(args, "Pod") or {}
            meta = pod.get("metadata", {})
            names = field(args, "NodeNames") or []
        except (ValueError, AttributeError) as e:
            self.send_error(400, f"bad ExtenderArgs: {e}")
            return
        with open(self.record_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pod": f"{meta.get('namespace', '')}/{meta.get('name', '')}",
                                "nodes": sorted(names)}) + "\n")
        out = {"NodeNames": [], "FailedNodes": {n: "feasibility probe: recorded, not placed" for n in names},
               "Error": ""}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_):
        pass


def main():
    port_file, Handler.record_path = sys.argv[1], sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
