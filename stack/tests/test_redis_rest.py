import hashlib

from .conftest import Client, b64


def test_set_get_json_body(redis, key):
    assert redis.post("/", ["SET", key, "héllo"]) [:2] == (200, {"result": "OK"})
    assert redis.post("/", ["GET", key])[:2] == (200, {"result": "héllo"})
    assert redis.post("/", ["GET", key + ":missing"])[:2] == (200, {"result": None})


def test_integers_and_numbers_as_args(redis, key):
    assert redis.post("/", ["SET", key, 5])[1] == {"result": "OK"}
    assert redis.post("/", ["INCRBY", key, 10])[1] == {"result": 15}
    assert redis.post("/", ["INCRBYFLOAT", key, 0.5])[1] == {"result": "15.5"}


def test_path_form_and_post_body_as_last_arg(redis, key):
    assert redis.get(f"/set/{key}/a%2Fb%20c")[1] == {"result": "OK"}
    assert redis.get(f"/get/{key}")[1] == {"result": "a/b c"}
    status, body, _ = redis.post(f"/set/{key}", raw=b'{"raw": "json value"}', headers={"Content-Type": "text/plain"})
    assert (status, body) == (200, {"result": "OK"})
    assert redis.get(f"/get/{key}")[1] == {"result": '{"raw": "json value"}'}


def test_hash_commands_and_arrays(redis, key):
    assert redis.post("/", ["HSET", key, "a", "1", "b", "2"])[1] == {"result": 2}
    assert redis.post("/", ["HSETNX", key, "a", "9"])[1] == {"result": 0}
    assert redis.post("/", ["HGETALL", key])[1] == {"result": ["a", "1", "b", "2"]}


def test_base64_encoding(redis, key):
    h = {"Upstash-Encoding": "base64"}
    assert redis.post("/", ["SET", key, "välue"], headers=h)[1] == {"result": "OK"}  # status stays plain
    assert redis.post("/", ["GET", key], headers=h)[1] == {"result": b64("välue")}
    assert redis.post("/", ["STRLEN", key], headers=h)[1] == {"result": 6}  # integers untouched
    assert redis.post("/", ["PING"], headers=h)[1] == {"result": b64("PONG")}
    assert redis.post("/", ["MGET", key, key + "x"], headers=h)[1] == {"result": [b64("välue"), None]}
    status, body, _ = redis.post("/pipeline", [["GET", key], ["INCR", key]], headers=h)
    assert status == 200 and body[0] == {"result": b64("välue")} and "error" in body[1]


def test_redis_error_is_400(redis, key):
    redis.post("/", ["SET", key, "x"])
    status, body, _ = redis.post("/", ["LPUSH", key, "y"])
    assert status == 400 and body["error"].startswith("WRONGTYPE")
    status, body, _ = redis.post("/", ["NOSUCHCMD"])
    assert status == 400 and body["error"].startswith("ERR unknown command")


def test_pipeline_non_atomic(redis, key):
    status, body, _ = redis.post("/pipeline", [["SET", key, "1"], ["LPUSH", key, "x"], ["INCR", key]])
    assert status == 200
    assert body[0] == {"result": "OK"}
    assert body[1]["error"].startswith("WRONGTYPE")
    assert body[2] == {"result": 2}


def test_multi_exec_atomic(redis, key):
    status, body, _ = redis.post("/multi-exec", [["SET", key, "1"], ["INCR", key], ["GET", key]])
    assert (status, body) == (200, [{"result": "OK"}, {"result": 2}, {"result": "2"}])
    # queue-time error -> whole transaction rejected, nothing applied
    status, body, _ = redis.post("/multi-exec", [["SET", key, "100"], ["INCR"]])
    assert status == 400 and "wrong number of arguments" in body["error"]
    assert redis.post("/", ["GET", key])[1] == {"result": "2"}


def test_eval_evalsha_script_load(redis, key):
    script = "return redis.call('SET', KEYS[1], ARGV[1])"
    assert redis.post("/", ["EVAL", script, 1, key, "v1"])[1] == {"result": "OK"}
    sha = hashlib.sha1(b"return ARGV[1] .. KEYS[1]").hexdigest()
    status, body, _ = redis.post("/", ["EVALSHA", sha, 1, "k", "a"])
    assert status == 400 and body["error"].startswith("NOSCRIPT")
    assert redis.post("/", ["SCRIPT", "LOAD", "return ARGV[1] .. KEYS[1]"])[1] == {"result": sha}
    assert redis.post("/", ["EVALSHA", sha, 1, "k", "a"])[1] == {"result": "ak"}


def test_auth(stack, key):
    anon = Client(stack["redis_rest_url"])
    assert anon.post("/", ["PING"])[:2] == (401, {"error": "Unauthorized"})
    bad = Client(stack["redis_rest_url"], {"Authorization": "Bearer nope"})
    assert bad.post("/", ["PING"])[:2] == (401, {"error": "Unauthorized"})
    assert anon.post("/?_token=" + stack["redis_token"], ["PING"])[:2] == (200, {"result": "PONG"})


def test_readonly_token(redis, redis_ro, key):
    redis.post("/", ["SET", key, "v"])
    assert redis_ro.post("/", ["GET", key])[1] == {"result": "v"}
    status, body, _ = redis_ro.post("/", ["SET", key, "w"])
    assert status == 403 and body["error"].startswith("NOPERM")
    assert redis_ro.post("/", ["EVAL", "return 1", 0])[0] == 403
    assert redis_ro.post("/", ["EVAL_RO", "return 1", 0])[1] == {"result": 1}
    status, body, _ = redis_ro.post("/pipeline", [["GET", key], ["DEL", key]])
    assert body[0] == {"result": "v"} and body[1]["error"].startswith("NOPERM")
    assert redis_ro.post("/multi-exec", [["GET", key], ["DEL", key]])[0] == 403
    assert redis.post("/", ["GET", key])[1] == {"result": "v"}


def test_denied_connection_state_commands(redis):
    status, body, _ = redis.post("/", ["SELECT", 1])
    assert status == 400 and "not available" in body["error"]


def test_malformed_json_executes_nothing(redis, key):
    status, body, _ = redis.post("/", raw=b'["SET", "%s", "x"' % key.encode())
    assert status == 400 and "JSON" in body["error"]
    status, _, _ = redis.post("/pipeline", raw=b'[["SET", "%s", "x"]' % key.encode())
    assert status == 400
    assert redis.post("/", {"not": "an array"})[0] == 400
    assert redis.post("/", [["nested"]])[0] == 400
    assert redis.post("/", ["GET", key])[1] == {"result": None}


def test_oversized_body(redis, key):
    big = "x" * (1024 * 1024 + 10)
    status, body, _ = redis.post("/", ["SET", key, big])
    assert status == 413 and "error" in body
    assert redis.post("/", ["EXISTS", key])[1] == {"result": 0}
