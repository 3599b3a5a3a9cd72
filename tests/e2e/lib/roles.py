"""Tephra roles as child processes of a Python e2e harness (tests/e2e/churn/churn.py,
tests/e2e/controller/faults_chaos.py): start, SIGTERM, SIGKILL and restart a role, tell whether it is ready,
and the small helpers both harnesses need beside them. Stdlib only."""
import datetime
import os
import random
import signal
import socket
import subprocess
import urllib.request


def iso_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def free_port(_rng=random.Random()):
    """A free port in 20000-32767, below Linux's ephemeral range (as cluster.sh picks them): a role restarted
    after a SIGKILL binds the same port again, which an outgoing connection must not have taken meanwhile."""
    for _ in range(200):
        p = _rng.randint(20000, 32767)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            return p
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port in 20000-32767")


def scrape(port):
    """A role's /metrics as {(name + labels): value}, and None or the error that kept it from being read."""
    out = {}
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
            text = r.read().decode()
    except Exception as e:  # a role being restarted: the caller decides whether that matters
        return None, str(e)
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        try:
            key, val = line.rsplit(" ", 1)
            out[key] = float(val)
        except ValueError:
            pass
    return out, None


class Role:
    """`$TEPHRA_BIN <name> <args>` with its output appended to `logf`; each start is marked in the log, so one
    file tells the story of every restart. `tag` names the harness in those marks."""

    def __init__(self, name, args, logf, health_port=None, tag="e2e"):
        self.name, self.args, self.logf, self.health_port, self.tag = name, args, logf, health_port, tag
        self.proc = None
        self.starts = 0
        self.unexpected_exits = []

    def start(self):
        self.starts += 1
        with open(self.logf, "a") as f:
            f.write("==== %s: start #%d of tephra %s at %s ====\n" % (self.tag, self.starts, self.name, iso_now()))
        log = open(self.logf, "a")
        self.proc = subprocess.Popen([os.environ["TEPHRA_BIN"], self.name] + self.args, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL (a crash, as the harness injects it); returns the pid it had, or None when it was not running."""
        if self.proc is None:
            return None
        pid = self.proc.pid
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        return pid

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def check(self):
        """Returns the exit code when the process died on its own since the last call, else None."""
        if self.proc is not None and self.proc.poll() is not None:
            rc = self.proc.returncode
            self.unexpected_exits.append((iso_now(), rc))
            self.proc = None
            return rc
        return None

    def ready(self):
        if not self.alive():
            return False
        if not self.health_port:
            return True
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % self.health_port, timeout=2) as r:
                return r.status == 200
        except Exception:  # not listening yet, or restarting
            return False
