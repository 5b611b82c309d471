import base64
import http.client
import json
import os
import signal
import subprocess
import sys
import uuid
from urllib.parse import urlsplit

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_stack(*extra, env=None):
    """Start `python -m stack` on free ports; return (Popen, info dict)."""
    cmd = [sys.executable, "-m", "stack", "--redis-rest-port", "0", "--data-api-port", "0",
           "--exit-with-parent", *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise RuntimeError("stack failed to start: " + proc.stderr.read())
    return proc, json.loads(line)


def stop_stack(proc, sig=signal.SIGTERM):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for f in (proc.stdout, proc.stderr):
        f.close()
    return proc.returncode


class Client:
    """Minimal HTTP/JSON client over one keep-alive connection per call site."""

    def __init__(self, base, headers=None):
        u = urlsplit(base)
        self.host, self.port = u.hostname, u.port
        self.headers = headers or {}

    def request(self, method, path, body=None, headers=None, raw=None, timeout=10):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            hdrs = {**self.headers, **(headers or {})}
            if data is not None and "Content-Type" not in hdrs:
                hdrs["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            payload = resp.read()
            try:
                parsed = json.loads(payload) if payload else None
            except ValueError:
                parsed = payload
            return resp.status, parsed, resp
        finally:
            conn.close()

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)


@pytest.fixture(scope="session")
def stack():
    proc, info = start_stack("--ttl-interval", "0")
    yield info
    stop_stack(proc)


@pytest.fixture
def redis(stack):
    return Client(stack["redis_rest_url"], {"Authorization": "Bearer " + stack["redis_token"]})


@pytest.fixture
def redis_ro(stack):
    return Client(stack["redis_rest_url"], {"Authorization": "Bearer " + stack["redis_readonly_token"]})


@pytest.fixture
def api(stack):
    return Client(stack["data_api_url"], {"apiKey": stack["data_api_key"]})


@pytest.fixture
def coll(stack):
    """Per-test body prefix: dataSource/database + a fresh collection."""
    return {"dataSource": stack["data_source"], "database": stack["database"],
            "collection": "t_" + uuid.uuid4().hex[:10]}


@pytest.fixture
def key():
    return "k:" + uuid.uuid4().hex[:10]


@pytest.fixture(autouse=True)
def _clear_faults(request):
    yield
    if "stack" in request.fixturenames:
        info = request.getfixturevalue("stack")
        for url in (info["redis_rest_url"], info["data_api_url"]):
            Client(url).request("DELETE", "/__faults")


def b64(s):
    return base64.b64encode(s.encode()).decode()
