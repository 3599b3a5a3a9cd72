"""The bench scripts' API client (stdlib only): HTTPS keep-alive connections with the harness's admin token,
one request helper, and a parallel creator. Reads the cluster from the e2e harness's environment
(tests/e2e/run-with-cluster.sh)."""
import http.client, json, os, ssl, sys, threading

API = os.environ["TEPHRA_E2E_API_URL"].replace("https://", "")
HOST, PORT = API.split(":")
TOKEN = open(os.environ["TEPHRA_E2E_TOKEN_FILE"]).read().strip()
CTX = ssl.create_default_context(cafile=os.environ["TEPHRA_E2E_CA_FILE"])


def conn(timeout=60):
    return http.client.HTTPSConnection(HOST, int(PORT), context=CTX, timeout=timeout)


def req(c, method, path, body=None):
    h = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse()
    return r.status, r.read()


def create_all(objs, threads):
    """POSTs (path, obj) pairs over `threads` connections; exits on any non-2xx answer."""
    idx = [0]
    lock = threading.Lock()
    errs = []

    def work():
        c = conn()
        while True:
            with lock:
                if idx[0] >= len(objs):
                    return
                path, o = objs[idx[0]]
                idx[0] += 1
            s, d = req(c, "POST", path, o)
            if s not in (200, 201):
                errs.append((s, d[:200]))
    ts = [threading.Thread(target=work) for _ in range(threads)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    if errs:
        sys.exit("create errors: %s" % errs[:3])
