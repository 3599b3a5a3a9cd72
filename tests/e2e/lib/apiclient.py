"""The e2e tests' and bench scripts' API client (stdlib only): HTTPS keep-alive connections with the harness's
admin token, one request helper, a parallel creator, and a retrying Client. Reads the cluster from the e2e
harness's environment (tests/e2e/run-with-cluster.sh). Users: bench/e2e_sched/*.py, tests/e2e/churn/churn.py."""
import http.client, json, os, ssl, sys, threading, time

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


class Client:
    """One keep-alive HTTPS connection with reconnect-and-retry on transport errors (a request that failed on
    the wire is sent again, so only use it for requests that are safe to repeat or whose repeat is recognisable:
    GET, DELETE, POST of named objects -> 409). Not thread-safe: one Client per thread.

    request() returns (status, decoded JSON body or None). Non-2xx statuses are returned, not raised."""

    def __init__(self, timeout=30, retries=4):
        self.timeout = timeout
        self.retries = retries
        self._c = None

    def close(self):
        if self._c is not None:
            try:
                self._c.close()
            except Exception:
                pass
            self._c = None

    def request(self, method, path, body=None, content_type="application/json"):
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        h = {"Authorization": "Bearer " + TOKEN, "Content-Type": content_type, "Accept": "application/json"}
        last = None
        for attempt in range(self.retries + 1):
            try:
                if self._c is None:
                    self._c = conn(self.timeout)
                self._c.request(method, path, body=data, headers=h)
                r = self._c.getresponse()
                raw = r.read()
                try:
                    obj = json.loads(raw) if raw else None
                except ValueError:
                    obj = {"raw": raw[:500].decode("utf-8", "replace")}
                return r.status, obj
            except (OSError, http.client.HTTPException) as e:  # connection reset, timeout, server restart
                last = e
                self.close()
                if attempt < self.retries:
                    time.sleep(min(0.2 * 2 ** attempt, 2.0))
        raise ConnectionError("%s %s: %s" % (method, path, last))

    def get(self, path):
        return self.request("GET", path)

    def items(self, path):
        """LIST -> items; raises on a non-200 answer."""
        s, d = self.request("GET", path)
        if s != 200:
            raise RuntimeError("LIST %s: %s %s" % (path, s, str(d)[:300]))
        return d.get("items") or []

    def post(self, path, obj):
        return self.request("POST", path, obj)

    def delete(self, path, body=None):
        return self.request("DELETE", path, body)

    def merge_patch(self, path, patch):
        return self.request("PATCH", path, patch, "application/merge-patch+json")
