"""The production gateway (`python -m stack.gateway`): what the dev emulator does not have to do.

The shared Data API suite (test_data_api.py) runs against it too; these tests cover production mode
itself: no dev endpoints, keys and rotation, limits, health, logs, configuration errors, shutdown.
"""
import asyncio
import hmac
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

import mongomock
import pymongo
import pytest

from stack import data_api as data_api_mod
from stack import gateway as gw

from .conftest import GATEWAY_KEYS, ROOT, Client, start_gateway, stop_stack


def find_body(gateway):
    return {"dataSource": "x", "database": gateway["database"], "collection": "gw_misc", "filter": {}}


# -- production mode: no development endpoints -----------------------------------------------------
@pytest.mark.parametrize("method,path", [("GET", "/__stats"), ("POST", "/__stats/reset"), ("GET", "/__faults"),
                                         ("POST", "/__faults"), ("DELETE", "/__faults"), ("POST", "/__ttl/run"),
                                         ("GET", "/__health")])
def test_no_dev_endpoints(gateway, method, path):
    for headers in ({}, {"apiKey": GATEWAY_KEYS[0]}):
        body = {"rules": [{"match": "*", "mode": "fail_before"}]} if method == "POST" else None
        status, resp, _ = Client(gateway["data_api_url"], headers).request(method, path, body)
        assert status == 404 and resp["error_code"] == "NotFound"
    # and nothing was injected: a normal request still works
    assert Client(gateway["data_api_url"], {"apiKey": GATEWAY_KEYS[0]}).post("/action/find", find_body(gateway))[0] == 200


# -- keys --------------------------------------------------------------------------------------------
def test_key_rotation_two_keys(gateway):
    url = gateway["data_api_url"]
    for key in GATEWAY_KEYS:  # old and new key both work during a rotation
        for headers in ({"apiKey": key}, {"api-key": key}, {"Authorization": "Bearer " + key}):
            assert Client(url, headers).post("/action/find", find_body(gateway))[0] == 200
    for bad in ("", GATEWAY_KEYS[0][:-1], GATEWAY_KEYS[0] + "x", GATEWAY_KEYS[0].upper()):
        status, resp, _ = Client(url, {"apiKey": bad} if bad else {}).post("/action/find", find_body(gateway))
        assert status == 401 and resp["error_code"] == "InvalidSession"


def test_keys_compared_in_constant_time(monkeypatch):
    """Every configured key is compared with hmac.compare_digest, also after a match, on equal-length
    digests (so neither which key matched nor the presented key's length shows in the timing)."""
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(data_api_mod.hmac, "compare_digest", spy)
    ring = data_api_mod.KeyRing([("old", "a" * 20), ("new", "b" * 40), ("spare", "c" * 30)])
    for presented, expected in (("a" * 20, "old"), ("b" * 40, "new"), ("x", None), ("c" * 30, "spare")):
        calls.clear()
        assert ring.match(presented) == expected
        assert calls == [(32, 32)] * 3


def test_key_file_names_and_log(tmp_path):
    keys = tmp_path / "keys"
    new, old = "kfilenew" + secrets.token_hex(24), "kfileold" + secrets.token_hex(24)
    keys.write_text(f"# rotated 2026-11\nworker-2026-11 {new}\n{old}\n")
    log = tmp_path / "gw.log"
    proc, info = start_gateway(env={"GATEWAY_API_KEYS": "", "GATEWAY_API_KEYS_FILE": str(keys)}, log_path=log)
    try:
        assert info["keys"] == ["worker-2026-11", "file3"]
        c = Client(info["data_api_url"], {"apiKey": new})
        assert c.post("/action/find", {"dataSource": "x", "database": "app", "collection": "c"})[0] == 200
    finally:
        assert stop_stack(proc) == 0
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["key"] for x in lines if x.get("msg") == "request"] == ["worker-2026-11"]
    assert new not in log.read_text() and old not in log.read_text()


# -- limits --------------------------------------------------------------------------------------------
def test_body_limit_413(gateway):
    c = Client(gateway["data_api_url"], {"apiKey": GATEWAY_KEYS[0]})
    big = {**find_body(gateway), "document": {"blob": "x" * (1024 * 1024)}}
    status, resp, _ = c.post("/action/insertOne", big)
    assert status == 413 and resp["error_code"] == "RequestTooLarge"
    # chunked (no Content-Length): cut off as soon as the limit is passed
    conn = socket.create_connection(("127.0.0.1", int(gateway["data_api_url"].rsplit(":", 1)[1])), timeout=10)
    head = (f"POST /action/insertOne HTTP/1.1\r\nHost: x\r\napiKey: {GATEWAY_KEYS[0]}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    conn.sendall(head)
    chunk = b"x" * 65536
    try:
        for _ in range(40):
            conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    except (BrokenPipeError, ConnectionResetError):
        pass
    reply = conn.recv(4096)
    conn.close()
    assert reply.startswith(b"HTTP/1.1 413")
    assert c.post("/action/find", find_body(gateway))[0] == 200


def _asgi(app, method, path, body=b"", headers=()):
    """Call the ASGI app in-process; returns (status, json body)."""
    async def run():
        sent, got = [], []
        msgs = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive():
            return msgs.pop(0) if msgs else {"type": "http.disconnect"}

        async def send(msg):
            sent.append(msg)

        scope = {"type": "http", "method": method, "path": path, "query_string": b"", "client": ("127.0.0.1", 1),
                 "headers": [(k.lower().encode(), v.encode()) for k, v in
                             [("content-type", "application/json"), ("content-length", str(len(body))), *headers]]}
        await app(scope, receive, send)
        got = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return sent[0]["status"], json.loads(got)
    return asyncio.run(run())


def test_request_timeout_504(monkeypatch):
    """A database call that runs past GATEWAY_REQUEST_TIMEOUT_S: 504, within the limit (+ backstop), and
    pymongo's client-side timeout (CSOT) is set for the call so a real driver would give up too."""
    seen = {}
    release = threading.Event()

    def slow_find(self, coll, body):
        seen["csot"] = pymongo.timeout  # the call runs inside `with pymongo.timeout(...)`
        from pymongo import _csot  # pinned pymongo 4.20: where the per-operation deadline lives
        seen["remaining"] = _csot.remaining()
        release.wait(2)
        return {"documents": []}

    monkeypatch.setattr(data_api_mod.DataApi, "_find", slow_find)
    app = gw.GatewayApp(mongomock.MongoClient(), [("k", GATEWAY_KEYS[0])], timeout=0.3, pool_size=2)
    try:
        t0 = time.monotonic()
        status, body = _asgi(app, "POST", "/action/find", json.dumps(
            {"dataSource": "x", "database": "app", "collection": "c"}).encode(), [("apiKey", GATEWAY_KEYS[0])])
        took = time.monotonic() - t0
        assert (status, body["error_code"]) == (504, "Timeout")
        assert 0.3 <= took < 0.3 + gw.BACKSTOP_S + 0.5
        assert seen["remaining"] is not None and 0 < seen["remaining"] <= 0.3
    finally:
        release.set()
        app.close()


def test_database_unreachable_real_pymongo():
    """Real pymongo (no mongomock) against a port where nothing listens: health says 503 and an action
    fails fast with 503 instead of hanging; the pool and timeouts come from configuration."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    cfg = gw.Config({"MONGODB_URI": f"mongodb://127.0.0.1:{port}/?directConnection=true",
                     "GATEWAY_API_KEYS": GATEWAY_KEYS[0], "GATEWAY_REQUEST_TIMEOUT_S": "0.5", "GATEWAY_POOL_SIZE": "7",
                     "GATEWAY_MODE": "development"},
                    gw.parse_args([]))
    client, lock = gw.make_client(cfg)
    assert isinstance(client, pymongo.MongoClient) and lock is None
    assert client.options.pool_options.max_pool_size == 7
    app = gw.GatewayApp(client, cfg.keys, cfg.max_body, cfg.timeout, cfg.pool_size, lock)
    try:
        t0 = time.monotonic()
        status, body = _asgi(app, "GET", "/healthz")
        assert status == 503 and body["ok"] is False and time.monotonic() - t0 < 3
        t0 = time.monotonic()
        status, body = _asgi(app, "POST", "/action/find", json.dumps(
            {"dataSource": "x", "database": "app", "collection": "c"}).encode(), [("apiKey", GATEWAY_KEYS[0])])
        assert status in (503, 504) and body["error_code"] in ("ServiceUnavailable", "Timeout")
        assert time.monotonic() - t0 < 3
    finally:
        app.close()


def test_test_engine_goes_through_pymongo_mongoclient(monkeypatch):
    """GATEWAY_ENGINE=mongomock-patch calls pymongo.MongoClient(uri, maxPoolSize=...) exactly like
    production; mongomock.patch turns that call into a mongomock client."""
    mpatch = sys.modules["mongomock.patch"]  # the module (mongomock.patch is also the function)
    calls = []
    real = mpatch.MongoClient
    monkeypatch.setattr(mpatch, "MongoClient", lambda *a, **kw: calls.append((a, kw)) or real(*a, **kw))
    cfg = gw.Config({"GATEWAY_ENGINE": "mongomock-patch", "GATEWAY_API_KEYS": GATEWAY_KEYS[0], "GATEWAY_POOL_SIZE": "5",
                     "GATEWAY_MODE": "development"},
                    gw.parse_args([]))
    client, lock = gw.make_client(cfg)
    assert isinstance(client, mongomock.MongoClient) and lock is not None
    assert calls == [((gw.DEFAULT_TEST_URI,), {"maxPoolSize": 5, "appname": "data-api-gateway",
                                               "serverSelectionTimeoutMS": 10000, "tz_aware": False})]
    assert pymongo.MongoClient is not mongomock.MongoClient  # the patch is gone afterwards


# -- health, logs, databases ----------------------------------------------------------------------------
def test_healthz(gateway):
    status, body, _ = Client(gateway["data_api_url"]).get("/healthz")
    assert (status, body) == (200, {"ok": True, "database": "ok", "engine": "mongomock-patch"})
    assert Client(gateway["data_api_url"]).post("/healthz")[0] == 405


def test_healthz_503_when_ping_fails():
    class Down:
        class admin:  # noqa: N801
            @staticmethod
            def command(name):
                raise pymongo.errors.ServerSelectionTimeoutError("db.example:27017: connection refused")

        def close(self):
            pass

    app = gw.GatewayApp(Down(), [("k", GATEWAY_KEYS[0])], timeout=1)
    try:
        assert _asgi(app, "GET", "/healthz") == (503, {"ok": False, "database": "ServerSelectionTimeoutError",
                                                       "engine": "pymongo"})
    finally:
        app.close()


def test_system_databases_refused(gateway):
    c = Client(gateway["data_api_url"], {"apiKey": GATEWAY_KEYS[0]})
    for db, coll in (("admin", "c"), ("local", "c"), ("config", "c"), ("app", "system.users")):
        status, body, _ = c.post("/action/find", {"dataSource": "x", "database": db, "collection": coll})
        assert status == 403 and body["error_code"] == "Forbidden"


def test_logs_are_json_and_contain_no_key(gateway):
    c = Client(gateway["data_api_url"])
    c.post("/action/find", find_body(gateway), headers={"apiKey": GATEWAY_KEYS[1]})
    c.post("/action/find", find_body(gateway), headers={"Authorization": "Bearer " + GATEWAY_KEYS[0]})
    c.post("/action/find", find_body(gateway), headers={"apiKey": "wrong-key-value-0123456789"})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        text = gateway["log"].read_text()
        if "wrong" not in text and text.count('"status": 401') >= 1:
            break
        time.sleep(0.05)
    lines = [json.loads(x) for x in text.splitlines()]  # every line is JSON
    reqs = [x for x in lines if x.get("msg") == "request"]
    assert reqs and all({"ts", "method", "path", "action", "status", "duration_ms", "key"} <= set(x) for x in reqs)
    assert {"key0", "key1"} <= {x["key"] for x in reqs}
    assert any(x["status"] == 401 and x["key"] is None for x in reqs)
    for secret in (*GATEWAY_KEYS, "wrong-key-value"):
        assert secret not in text


# -- configuration and lifecycle -------------------------------------------------------------------------
@pytest.mark.parametrize("env,message", [
    ({"GATEWAY_ENGINE": "", "MONGODB_URI": "", "GATEWAY_API_KEYS": GATEWAY_KEYS[0]}, "MONGODB_URI is required"),
    ({"GATEWAY_ENGINE": "", "MONGODB_URI": "mongodb://db.example/", "GATEWAY_API_KEYS": ""}, "no API keys"),
    ({"GATEWAY_API_KEYS": "short"}, "shorter than 32 bytes"),
    ({"GATEWAY_API_KEYS": "a" * 64}, "bits of estimated entropy"),
    ({"GATEWAY_API_KEYS": "replace-with-a-long-random-gateway-key-value"}, "placeholder"),
    ({"GATEWAY_API_KEYS": "local-dev-data-api-key"}, "published"),
    ({"GATEWAY_MODE": "production"}, "production mode needs GATEWAY_DATABASES and GATEWAY_COLLECTIONS"),
    ({"GATEWAY_MODE": "production", "GATEWAY_DATABASES": "app"}, "production mode needs GATEWAY_COLLECTIONS"),
    ({"GATEWAY_MODE": "staging"}, "GATEWAY_MODE must be"),
    ({"GATEWAY_MODE": "production", "GATEWAY_DATABASES": "app", "GATEWAY_COLLECTIONS": "notifications",
      "GATEWAY_AUTH_FAILURES": "0"}, "GATEWAY_AUTH_FAILURES must be >= 1"),
    ({"GATEWAY_MAX_BODY": "lots"}, "GATEWAY_MAX_BODY must be a number"),
    ({"GATEWAY_ENGINE": "mongomock"}, "GATEWAY_ENGINE must be"),
])
def test_refuses_to_start_misconfigured(env, message):
    full = {**os.environ, "GATEWAY_ENGINE": "mongomock-patch", "GATEWAY_API_KEYS": GATEWAY_KEYS[0]}
    full.pop("MONGODB_URI", None)
    full.update(env)
    res = subprocess.run([sys.executable, "-m", "stack.gateway", "--port", "0"], cwd=ROOT, env=full,
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and message in res.stderr and res.stdout == ""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_graceful_shutdown_exits_0(tmp_path, sig):
    ready, log = tmp_path / "ready.json", tmp_path / "gw.log"
    proc, info = start_gateway("--ready-file", str(ready), log_path=log)
    assert json.loads(ready.read_text()) == info
    c = Client(info["data_api_url"], {"apiKey": GATEWAY_KEYS[0]})
    assert c.post("/action/insertOne", {"dataSource": "x", "database": "app", "collection": "c",
                                        "document": {"a": 1}})[0] == 201
    assert stop_stack(proc, sig) == 0
    assert not ready.exists()
    msgs = [json.loads(x)["msg"] for x in log.read_text().splitlines()]
    assert msgs[-2:] == ["shutting down: in-flight requests finished, closing the pool", "stopped"]


def test_in_flight_request_finishes_on_sigterm(tmp_path):
    """SIGTERM while a request is being sent: uvicorn stops accepting, the request still completes."""
    proc, info = start_gateway(log_path=tmp_path / "gw.log")
    port = int(info["data_api_url"].rsplit(":", 1)[1])
    body = json.dumps({"dataSource": "x", "database": "app", "collection": "c", "document": {"a": 1}}).encode()
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall((f"POST /action/insertOne HTTP/1.1\r\nHost: x\r\napiKey: {GATEWAY_KEYS[0]}\r\nContent-Type: "
                  f"application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body[:10])
    time.sleep(0.3)  # the request has started (headers + part of the body are in)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert proc.poll() is None  # still waiting for our request
    conn.sendall(body[10:])
    reply = conn.recv(4096)
    conn.close()
    assert reply.startswith(b"HTTP/1.1 201")
    assert proc.wait(15) == 0
    proc.stdout.close()


def test_deploy_requirements_match_the_pins():
    """stack/deploy/requirements.txt (the gateway alone) pins exactly what stack/requirements.txt pins."""
    def pins(path):
        with open(os.path.join(ROOT, path)) as f:
            return {line.strip() for line in f if line.strip() and not line.startswith("#")}
    deploy = pins("stack/deploy/requirements.txt")
    assert deploy and deploy <= pins("stack/requirements.txt")
    assert not any(p.startswith("mongomock") for p in deploy)
