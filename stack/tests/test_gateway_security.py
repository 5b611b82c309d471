"""The gateway as an internet-facing service: key rule, failed-auth limiter, production mode's
allowlists and refused operators. Runs the gateway in production mode (the default) with the test
engine (pymongo.MongoClient patched by mongomock; no MongoDB server here)."""
import json
import os
import secrets

import pytest

from stack import data_api as data_api_mod
from stack import gateway as gw
from stack import keyrules

from .conftest import ROOT, Client, start_gateway, stop_stack

KEY = secrets.token_hex(32)
PROD = {"GATEWAY_MODE": "production", "GATEWAY_DATABASES": "app",
        "GATEWAY_COLLECTIONS": "notifications,notifications_dead", "GATEWAY_AUTH_FAILURES": "10",
        "GATEWAY_TRUSTED_PROXIES": "127.0.0.1"}


@pytest.fixture(scope="module")
def prod(tmp_path_factory):
    log = tmp_path_factory.mktemp("gw-prod") / "gateway.log"
    proc, info = start_gateway(env=PROD, keys=(KEY,), log_path=log)
    assert info["mode"] == "production"
    yield {**info, "log": log}
    stop_stack(proc)


def client(prod, addr, key=KEY):
    headers = {"X-Forwarded-For": addr}
    if key:
        headers["apiKey"] = key
    return Client(prod["data_api_url"], headers)


def body(collection="notifications", database="app", **extra):
    return {"dataSource": "x", "database": database, "collection": collection, **extra}


# -- keys ----------------------------------------------------------------------------------------
def test_key_rule_matches_the_workers_on_shared_samples():
    with open(os.path.join(ROOT, "tests/fixtures/secret_samples.json")) as f:
        samples = json.load(f)
    for s in samples:
        assert keyrules.estimate_bits(s["value"]) == s["bits"], s["value"]
    assert keyrules.weakness(secrets.token_hex(32)) is None
    assert "shorter" in keyrules.weakness("Zq8#vT2mLp")
    assert "entropy" in keyrules.weakness("0123456789" * 4)
    assert "entropy" in keyrules.weakness("password" * 5)


# -- allowlists and operators ----------------------------------------------------------------------
def test_only_the_allowlisted_database_and_collections(prod):
    c = client(prod, "198.51.100.1")
    assert c.post("/action/find", body(filter={}))[0] == 200
    assert c.post("/action/find", body("notifications_dead", filter={}))[0] == 200
    for b in (body("users", filter={}), body(database="other", filter={}), body("system.users", filter={})):
        status, resp, _ = c.post("/action/find", b)
        assert status == 403 and resp["error_code"] == "Forbidden", resp


@pytest.mark.parametrize("action,extra,op", [
    ("find", {"filter": {"$where": "sleep(100) || true"}}, "$where"),
    ("find", {"filter": {"a": {"$elemMatch": {"$where": "1"}}}}, "$where"),
    ("find", {"filter": {"$expr": {"$function": {"body": "function(){return true}", "args": [], "lang": "js"}}}},
     "$function"),
    ("aggregate", {"pipeline": [{"$group": {"_id": 1, "x": {"$accumulator": {}}}}]}, "$accumulator"),
    ("aggregate", {"pipeline": [{"$match": {}}, {"$out": "users_copy"}]}, "$out"),
    ("aggregate", {"pipeline": [{"$merge": {"into": "users_copy"}}]}, "$merge"),
    ("aggregate", {"pipeline": [{"$lookup": {"from": "users", "localField": "a", "foreignField": "b", "as": "u"}}]},
     "$lookup"),
    ("aggregate", {"pipeline": [{"$facet": {"x": [{"$lookup": {"from": "users", "as": "u", "pipeline": []}}]}}]},
     "$lookup"),
    ("aggregate", {"pipeline": [{"$graphLookup": {"from": "users"}}]}, "$graphLookup"),
    ("aggregate", {"pipeline": [{"$unionWith": "users"}]}, "$unionWith"),
    ("updateOne", {"filter": {}, "update": [{"$set": {"x": {"$function": {}}}}]}, "$function"),
    ("updateMany", {"filter": {"$where": "true"}, "update": {"$set": {"x": 1}}}, "$where"),
    ("deleteMany", {"filter": {"$or": [{"a": 1}, {"$where": "true"}]}}, "$where"),
])
def test_server_side_javascript_and_cross_collection_stages_are_refused(prod, action, extra, op):
    status, resp, _ = client(prod, "198.51.100.2").post(f"/action/{action}", body(**extra))
    assert status == 403 and resp["error_code"] == "Forbidden", resp
    assert op in resp["error"]


def test_denied_operator_finds_nested_keys_only():
    assert data_api_mod.denied_operator({"filter": {"a": [{"b": {"$lookup": {}}}]}}) == "$lookup"
    # A value (not a key) that reads like an operator is data, not an operator.
    assert data_api_mod.denied_operator({"filter": {"note": "$where"}}) is None
    assert data_api_mod.denied_operator({"pipeline": [{"$match": {"a": 1}}, {"$sort": {"a": 1}}]}) is None
    deep = {}
    cur = deep
    for _ in range(100):
        cur["a"] = {}
        cur = cur["a"]
    assert data_api_mod.denied_operator(deep) is not None


# -- failed-auth limiter ---------------------------------------------------------------------------
def test_failed_authentications_are_limited_per_address(prod):
    attacker, bystander = "203.0.113.7", "198.51.100.3"
    bad = client(prod, attacker, key=secrets.token_hex(32))
    for i in range(10):
        status, resp, _ = bad.post("/action/find", body(filter={}))
        assert status == 401, (i, resp)
    status, resp, raw = bad.post("/action/find", body(filter={}))
    assert status == 429 and resp["error_code"] == "TooManyRequests"
    retry = int(raw.getheader("retry-after"))
    assert 1 <= retry <= 60
    # Even the right key waits once the address is limited (so a guess cannot be confirmed)...
    assert client(prod, attacker).post("/action/find", body(filter={}))[0] == 429
    # ...and other addresses are not affected, successes cost nothing.
    ok = client(prod, bystander)
    for _ in range(30):
        assert ok.post("/action/find", body(filter={}))[0] == 200
    miss = client(prod, bystander, key="x" * 40)
    assert all(miss.post("/action/find", body(filter={}))[0] == 401 for _ in range(10))
    # Without a trusted proxy's header, the peer address counts (here: the loopback).
    log = prod["log"].read_text()
    assert KEY not in log


def test_limiter_refills_and_stays_bounded():
    now = [0.0]
    lim = gw.AuthLimiter(limit=10, window=60.0, max_tracked=3, clock=lambda: now[0])
    for _ in range(10):
        assert lim.retry_after("a") == 0
        lim.failed("a")
    assert lim.retry_after("a") == 6  # one failure's worth refills in 60/10 s
    now[0] = 5.9
    assert lim.retry_after("a") == 1
    now[0] = 6.0
    assert lim.retry_after("a") == 0
    # Bounded: refilled entries go first, then the oldest.
    for addr in ("b", "c", "d"):
        lim.failed(addr)
    assert list(lim.buckets) == ["b", "c", "d"]  # none had refilled: the oldest ("a") went
    now[0] = 1000.0
    lim.failed("e")
    assert list(lim.buckets) == ["e"]


def test_untrusted_peers_cannot_choose_their_address():
    app = gw.GatewayApp.__new__(gw.GatewayApp)
    app.trusted_proxies = frozenset({"10.0.0.1"})
    hdrs = gw._Headers({"x-forwarded-for": "1.1.1.1, 2.2.2.2"})
    assert app._client_addr({"client": ("10.0.0.1", 5)}, hdrs) == "2.2.2.2"
    assert app._client_addr({"client": ("10.0.0.9", 5)}, hdrs) == "10.0.0.9"
