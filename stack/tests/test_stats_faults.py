import http.client
import socket
import time

from .conftest import Client


def test_stats_counters(stack, redis, api, coll, key):
    rs, ds = Client(stack["redis_rest_url"]), Client(stack["data_api_url"])
    assert rs.post("/__stats/reset")[0] == 200 and ds.post("/__stats/reset")[0] == 200
    redis.post("/", ["SET", key, "1"])
    redis.get(f"/get/{key}")
    redis.post("/", ["GET", key])
    redis.post("/pipeline", [["GET", key]])
    redis.post("/multi-exec", [["GET", key]])
    api.post("/action/find", {**coll, "filter": {}})
    api.post("/action/insertOne", {**coll, "document": {}})
    api.post("/action/find", {**coll, "filter": {}})
    _, body, _ = rs.get("/__stats")
    assert body["requests"] == {"set": 1, "get": 2, "pipeline": 1, "multi-exec": 1} and body["total"] == 5
    _, body, _ = ds.get("/__stats")
    assert body["requests"] == {"find": 2, "insertOne": 1} and body["total"] == 3
    assert body["in_flight"] == 0
    assert body["last"]["find"] == {**coll, "filter": {}}, "the last body per action is kept"
    ds.post("/__stats/reset")
    assert ds.get("/__stats")[1]["total"] == 0


def test_stats_count_errors_per_command(stack, redis, key):
    """An EVALSHA of an unknown script is answered NOSCRIPT and counted under `errors`, so a test
    can tell finished script calls (EVALSHA that ran, or NOSCRIPT then EVAL) from attempts."""
    rs = Client(stack["redis_rest_url"])
    rs.post("/__stats/reset")
    status, body, _ = redis.post("/", ["EVALSHA", "0" * 40, "1", key])
    assert status == 400 and body["error"].startswith("NOSCRIPT")
    redis.post("/", ["EVAL", "return 1", "1", key])
    redis.post("/", ["GET", key])
    _, body, _ = rs.get("/__stats")
    assert body["requests"] == {"evalsha": 1, "eval": 1, "get": 1}
    assert body["errors"] == {"evalsha": 1}
    rs.post("/__stats/reset")
    assert rs.get("/__stats")[1]["errors"] == {}


def test_fault_spec_validation(stack):
    for url in (stack["redis_rest_url"], stack["data_api_url"]):
        c = Client(url)
        assert c.post("/__faults", {"rules": [{"match": "*", "mode": "explode"}]})[0] == 400
        assert c.post("/__faults", raw=b"{nope")[0] == 400
        assert c.post("/__faults", {"rules": []})[0] == 200


def test_fail_before_applies_nothing(stack, api, coll, redis, key):
    ds = Client(stack["data_api_url"])
    ds.post("/__faults", {"rules": [{"match": "insertOne", "mode": "fail_before", "count": 1, "status": 503}]})
    status, body, _ = api.post("/action/insertOne", {**coll, "document": {"x": 1}})
    assert status == 503 and body["error_code"] == "InjectedFault"
    assert api.post("/action/find", {**coll, "filter": {}})[1] == {"documents": []}  # not matched by rule
    assert api.post("/action/insertOne", {**coll, "document": {"x": 1}})[0] == 201  # count exhausted
    Client(stack["redis_rest_url"]).post("/__faults", {"rules": [{"match": "set", "mode": "fail_before"}]})
    assert redis.post("/", ["SET", key, "v"])[0] == 503
    assert redis.post("/pipeline", [["SET", key, "v"]])[0] == 503
    assert redis.post("/", ["GET", key])[1] == {"result": None}


def test_fail_after_applies_then_errors(stack, api, coll, redis, key):
    Client(stack["data_api_url"]).post("/__faults", {"rules": [{"match": "updateOne", "mode": "fail_after",
                                                                   "status": 500}]})
    api.post("/action/insertOne", {**coll, "document": {"_id": 1, "n": 0}})
    status, body, _ = api.post("/action/updateOne", {**coll, "filter": {"_id": 1}, "update": {"$inc": {"n": 1}}})
    assert status == 500 and body["error_code"] == "InjectedFault"
    assert api.post("/action/findOne", {**coll, "filter": {"_id": 1}})[1]["document"]["n"] == 1
    Client(stack["redis_rest_url"]).post("/__faults", {"rules": [{"match": "incr", "mode": "fail_after"}]})
    assert redis.post("/", ["INCR", key])[0] == 503
    assert redis.post("/multi-exec", [["INCR", key]])[0] == 503
    assert redis.post("/", ["GET", key])[1] == {"result": "2"}


def test_delay_lets_client_timeouts_fire(stack, api, coll):
    Client(stack["data_api_url"]).post("/__faults", {"rules": [{"match": "find", "mode": "delay", "delay_ms": 3000,
                                                                   "count": 1}]})
    ds = Client(stack["data_api_url"])
    try:
        api.post("/action/find", {**coll, "filter": {}}, timeout=0.3)
        raise AssertionError("expected a client timeout")
    except (socket.timeout, TimeoutError, http.client.HTTPException):
        pass
    # The client gave up while the server still holds the request (observable, not timed).
    assert ds.get("/__stats")[1]["in_flight"] == 1
    deadline = time.monotonic() + 30
    while ds.get("/__stats")[1]["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ds.get("/__stats")[1]["in_flight"] == 0, "the delayed request drains"
    # server keeps serving; rule was count=1 so the next call is normal
    assert api.post("/action/find", {**coll, "filter": {}})[0] == 200


def test_delay_then_proceeds(stack, redis, key):
    Client(stack["redis_rest_url"]).post("/__faults", {"rules": [{"match": "*", "mode": "delay", "delay_ms": 200}]})
    t0 = time.monotonic()
    assert redis.post("/", ["SET", key, "v"])[1] == {"result": "OK"}
    assert time.monotonic() - t0 >= 0.2


def test_probability_with_seed_is_deterministic(stack, redis, key):
    rs = Client(stack["redis_rest_url"])
    rule = {"rules": [{"match": "ping", "mode": "fail_before", "probability": 0.5}], "seed": 42}

    def run():
        rs.post("/__faults", rule)
        return [redis.post("/", ["PING"])[0] for _ in range(20)]

    first, second = run(), run()
    assert first == second and 503 in first and 200 in first
    snap = rs.get("/__faults")[1]
    assert snap["seed"] == 42 and snap["rules"][0]["fired"] == first.count(503)
