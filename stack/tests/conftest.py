import base64
import http.client
import json
import secrets
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


# Drawn per run: keys must pass the gateway's rule (>= 32 bytes, ~128 bits), and a fixed one
# would be a published value. Hex: it can never spell a placeholder marker (xxxx, todo, ...).
GATEWAY_KEYS = (secrets.token_hex(32), secrets.token_hex(32))


def start_gateway(*extra, env=None, log_path=None, keys=GATEWAY_KEYS):
    """Start `python -m stack.gateway` with the test engine (pymongo.MongoClient patched by
    mongomock) on a free port; stderr (JSON logs) goes to `log_path`. By default in development
    mode (the shared suite uses many collections) with a failed-auth budget that tests of bad keys
    do not exhaust; test_gateway_security.py runs production mode and the default limit."""
    full_env = {**os.environ, "GATEWAY_ENGINE": "mongomock-patch", "GATEWAY_API_KEYS": ",".join(keys),
                "GATEWAY_MODE": "development", "GATEWAY_AUTH_FAILURES": "100000"}
    full_env.pop("MONGODB_URI", None)
    full_env.update(env or {})
    err = open(log_path, "w") if log_path else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "stack.gateway", "--port", "0", "--exit-with-parent", *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True, env=full_env)
    if log_path:
        err.close()
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise RuntimeError("gateway failed to start" + (": " + open(log_path).read() if log_path else ""))
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
        if f:
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


@pytest.fixture(scope="session")
def gateway(tmp_path_factory):
    """The production gateway with the test engine; `log` is the path of its JSON log."""
    log = tmp_path_factory.mktemp("gateway") / "gateway.log"
    proc, info = start_gateway(log_path=log)
    yield {**info, "data_api_key": GATEWAY_KEYS[0], "keys": GATEWAY_KEYS, "data_source": "mongodb-atlas",
           "database": "app", "log": log, "proc": proc}
    stop_stack(proc)


def _dev_data_api(stack):
    return {"kind": "dev", "data_api_url": stack["data_api_url"], "data_api_key": stack["data_api_key"],
            "data_source": stack["data_source"], "database": stack["database"], "dev_endpoints": True,
            "rollback_partial_inserts": True}


def _gateway_data_api(gateway):
    return {"kind": "gateway", "data_api_url": gateway["data_api_url"], "data_api_key": gateway["data_api_key"],
            "data_source": gateway["data_source"], "database": gateway["database"], "dev_endpoints": False,
            "rollback_partial_inserts": False}  # pymongo semantics: an insertMany keeps the prefix


@pytest.fixture
def data_api(stack):
    """The Data API server under test: the dev emulator, unless a module overrides this fixture."""
    return _dev_data_api(stack)


@pytest.fixture(params=["dev", "gateway"])
def any_data_api(request):
    """Both servers: the dev emulator (mongomock) and the production gateway (pymongo.MongoClient,
    patched by mongomock). Modules opt in by overriding `data_api` with this."""
    if request.param == "dev":
        return _dev_data_api(request.getfixturevalue("stack"))
    return _gateway_data_api(request.getfixturevalue("gateway"))


@pytest.fixture
def redis(stack):
    return Client(stack["redis_rest_url"], {"Authorization": "Bearer " + stack["redis_token"]})


@pytest.fixture
def redis_ro(stack):
    return Client(stack["redis_rest_url"], {"Authorization": "Bearer " + stack["redis_readonly_token"]})


@pytest.fixture
def api(data_api):
    return Client(data_api["data_api_url"], {"apiKey": data_api["data_api_key"]})


@pytest.fixture
def coll(data_api):
    """Per-test body prefix: dataSource/database + a fresh collection."""
    return {"dataSource": data_api["data_source"], "database": data_api["database"],
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
