"""The Data API suite, run against both servers: the dev emulator (mongomock) and the production
gateway (`python -m stack.gateway`, pymongo.MongoClient patched by mongomock)."""
import datetime

import pytest
from bson import ObjectId, json_util

from .conftest import Client


@pytest.fixture
def data_api(any_data_api):
    return any_data_api


def act(api, name, body, **kw):
    return api.post("/action/" + name, body, **kw)


def test_insert_find_one_and_app_route(api, coll):
    status, body, _ = act(api, "insertOne", {**coll, "document": {"name": "a", "n": 1}})
    assert status == 201 and "$oid" in body["insertedId"]
    status, body, _ = api.post("/app/data-abc/endpoint/data/v1/action/findOne", {**coll, "filter": {"name": "a"},
                                                                                 "projection": {"_id": 0}})
    assert (status, body) == (200, {"document": {"name": "a", "n": 1}})
    assert act(api, "findOne", {**coll, "filter": {"name": "zz"}})[1] == {"document": None}


def test_insert_many_find_sort_skip_limit_projection(api, coll):
    docs = [{"i": i, "grp": i % 2, "secret": "s"} for i in range(10)]
    status, body, _ = act(api, "insertMany", {**coll, "documents": docs})
    assert status == 201 and len(body["insertedIds"]) == 10
    _, body, _ = act(api, "find", {**coll, "filter": {"grp": 0}, "sort": {"i": -1}, "skip": 1, "limit": 2,
                                   "projection": {"_id": 0, "secret": 0}})
    assert body == {"documents": [{"i": 6, "grp": 0}, {"i": 4, "grp": 0}]}
    _, body, _ = act(api, "find", {**coll, "projection": {"i": 1, "_id": 0}, "sort": {"i": 1}, "limit": 3})
    assert body["documents"] == [{"i": 0}, {"i": 1}, {"i": 2}]


def test_update_one_upsert_set_on_insert_inc_set(api, coll):
    upd = {"$setOnInsert": {"created": 1}, "$set": {"name": "x"}, "$inc": {"hits": 1}}
    status, body, _ = act(api, "updateOne", {**coll, "filter": {"k": "a"}, "update": upd, "upsert": True})
    assert status == 200 and body["matchedCount"] == 0 and body["modifiedCount"] == 0 and "upsertedId" in body
    upd["$setOnInsert"] = {"created": 2}
    _, body, _ = act(api, "updateOne", {**coll, "filter": {"k": "a"}, "update": upd, "upsert": True})
    assert body == {"matchedCount": 1, "modifiedCount": 1}
    _, body, _ = act(api, "findOne", {**coll, "filter": {"k": "a"}, "projection": {"_id": 0}})
    assert body["document"] == {"k": "a", "created": 1, "name": "x", "hits": 2}


def test_push_each_slice_and_pull(api, coll):
    act(api, "insertOne", {**coll, "document": {"_id": "u1", "items": [1, 2]}})
    upd = {"$push": {"items": {"$each": [3, 4, 5], "$slice": -3}}}
    act(api, "updateOne", {**coll, "filter": {"_id": "u1"}, "update": upd})
    assert act(api, "findOne", {**coll, "filter": {"_id": "u1"}})[1]["document"]["items"] == [3, 4, 5]
    act(api, "updateOne", {**coll, "filter": {"_id": "u1"}, "update": {"$pull": {"items": {"$gte": 4}}}})
    assert act(api, "findOne", {**coll, "filter": {"_id": "u1"}})[1]["document"]["items"] == [3]


def test_ne_on_array_of_subdocuments(api, coll):
    act(api, "insertMany", {**coll, "documents": [
        {"_id": 1, "origins": [{"senderId": "a"}, {"senderId": "b"}]},
        {"_id": 2, "origins": [{"senderId": "c"}]},
        {"_id": 3},
    ]})
    _, body, _ = act(api, "find", {**coll, "filter": {"origins.senderId": {"$ne": "a"}}, "sort": {"_id": 1}})
    assert [d["_id"] for d in body["documents"]] == [2, 3]


def test_update_many_replace_delete(api, coll):
    act(api, "insertMany", {**coll, "documents": [{"t": "x", "v": i} for i in range(4)]})
    _, body, _ = act(api, "updateMany", {**coll, "filter": {"t": "x"}, "update": {"$set": {"done": True}}})
    assert body == {"matchedCount": 4, "modifiedCount": 4}
    _, body, _ = act(api, "replaceOne", {**coll, "filter": {"v": 0}, "replacement": {"t": "y", "v": 100}})
    assert body == {"matchedCount": 1, "modifiedCount": 1}
    _, body, _ = act(api, "replaceOne", {**coll, "filter": {"v": 7}, "replacement": {"v": 7}, "upsert": True})
    assert body["matchedCount"] == 0 and "upsertedId" in body
    assert act(api, "deleteOne", {**coll, "filter": {"t": "x"}})[1] == {"deletedCount": 1}
    assert act(api, "deleteMany", {**coll, "filter": {"t": "x"}})[1] == {"deletedCount": 2}
    _, body, _ = act(api, "find", {**coll, "filter": {}, "projection": {"_id": 0}, "sort": {"v": 1}})
    assert body["documents"] == [{"v": 7}, {"t": "y", "v": 100}]


def test_aggregate_match_group_count(api, coll):
    act(api, "insertMany", {**coll, "documents": [{"c": c, "n": n} for c, n in
                                                   [("a", 1), ("a", 2), ("b", 5), ("c", 0)]]})
    pipeline = [{"$match": {"n": {"$gt": 0}}}, {"$group": {"_id": "$c", "total": {"$sum": "$n"}}},
                {"$sort": {"_id": 1}}]
    _, body, _ = act(api, "aggregate", {**coll, "pipeline": pipeline})
    assert body["documents"] == [{"_id": "a", "total": 3}, {"_id": "b", "total": 5}]
    _, body, _ = act(api, "aggregate", {**coll, "pipeline": [{"$match": {"c": "a"}}, {"$count": "cnt"}]})
    assert body["documents"] == [{"cnt": 2}]


def test_ejson_dates_roundtrip(api, coll):
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
    oid = ObjectId()
    raw = json_util.dumps({**coll, "document": {"_id": oid, "at": when}},
                          json_options=json_util.CANONICAL_JSON_OPTIONS).encode()
    status, body, resp = act(api, "insertOne", None, raw=raw, headers={"Content-Type": "application/ejson"})
    assert status == 201 and resp.getheader("Content-Type") == "application/ejson"
    assert body == {"insertedId": {"$oid": str(oid)}}
    # canonical out
    _, body, _ = act(api, "findOne", None, raw=json_util.dumps({**coll, "filter": {"at": {"$gte": when}}}).encode(),
                     headers={"Content-Type": "application/ejson"})
    assert body["document"]["at"] == {"$date": {"$numberLong": str(int(when.replace(
        tzinfo=datetime.timezone.utc).timestamp() * 1000))}}
    # relaxed out; relaxed $date in the filter is a real date too
    _, body, _ = act(api, "findOne", {**coll, "filter": {"at": {"$lt": {"$date": "2025-01-01T00:00:00Z"}}}})
    assert body["document"]["at"] == {"$date": "2024-05-06T07:08:09.123Z"}
    assert body["document"]["_id"] == {"$oid": str(oid)}
    _, body, _ = act(api, "findOne", {**coll, "filter": {"at": {"$lt": "2025-01-01T00:00:00Z"}}})
    assert body["document"] is None  # a plain string is not a date


def test_indexes_unique_and_compound(data_api, api, coll):
    idx = {**coll, "indexes": [{"key": {"a": 1, "b": 1}, "name": "a_b", "unique": True},
                               {"key": {"email": 1}, "unique": True,
                                "partialFilterExpression": {"email": {"$exists": True}}}]}
    status, body, _ = act(api, "createIndexes", idx)
    assert status == 200 and body["createdIndexes"] == ["a_b", "email_1"]
    assert act(api, "createIndexes", idx)[0] == 200  # idempotent
    _, body, _ = act(api, "listIndexes", coll)
    by_name = {i["name"]: i for i in body["indexes"]}
    assert by_name["a_b"]["key"] == {"a": 1, "b": 1} and by_name["a_b"]["unique"] is True
    assert act(api, "insertOne", {**coll, "document": {"a": 1, "b": 1}})[0] == 201
    assert act(api, "insertOne", {**coll, "document": {"a": 1, "b": 2}})[0] == 201
    status, body, _ = act(api, "insertOne", {**coll, "document": {"a": 1, "b": 1, "extra": True}})
    assert status == 409 and body["error_code"] == "DuplicateKey"
    status, body, _ = act(api, "updateOne", {**coll, "filter": {"b": 2}, "update": {"$set": {"b": 1}}})
    assert status == 409 and body["error_code"] == "DuplicateKey"
    status, body, _ = act(api, "insertMany", {**coll, "documents": [{"a": 9, "b": 9}, {"a": 1, "b": 1}]})
    assert status == 409 and body["error_code"] == "DuplicateKey"
    _, body, _ = act(api, "find", {**coll, "filter": {}, "projection": {"_id": 0, "a": 1, "b": 1},
                                   "sort": {"b": 1}})
    if data_api["rollback_partial_inserts"]:  # dev emulator: nothing applied
        assert body["documents"] == [{"a": 1, "b": 1}, {"a": 1, "b": 2}]
    else:  # gateway = MongoDB semantics: an ordered insertMany keeps the prefix before the duplicate
        assert body["documents"] == [{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 9, "b": 9}]


def test_ttl_index_and_expiry(data_api, api, coll):
    status, body, _ = act(api, "createIndexes", {**coll, "indexes": [{"key": {"expiresAt": 1},
                                                                       "expireAfterSeconds": 0}]})
    assert (status, body) == (200, {"createdIndexes": ["expiresAt_1"]})
    by_name = {i["name"]: i for i in act(api, "listIndexes", coll)[1]["indexes"]}
    assert by_name["expiresAt_1"]["expireAfterSeconds"] == 0 and by_name["expiresAt_1"]["key"] == {"expiresAt": 1}
    now = datetime.datetime.now(datetime.timezone.utc)
    past, future = now - datetime.timedelta(minutes=1), now + datetime.timedelta(hours=1)
    raw = json_util.dumps({**coll, "documents": [
        {"_id": "old", "expiresAt": past}, {"_id": "new", "expiresAt": future}, {"_id": "nodate", "expiresAt": "x"},
    ]}, json_options=json_util.CANONICAL_JSON_OPTIONS).encode()
    assert act(api, "insertMany", None, raw=raw, headers={"Content-Type": "application/ejson"})[0] == 201
    # mongomock 4.3 also expires lazily on read, so `deleted` may be 0 here; the doc must be gone either way.
    # The gateway has no /__ttl (a real mongod runs its own TTL monitor, about every 60 s); behind it
    # mongomock's read-time expiry stands in for that monitor.
    status, body, _ = Client(data_api["data_api_url"]).post("/__ttl/run")
    if data_api["dev_endpoints"]:
        assert status == 200 and isinstance(body["deleted"], int)
    else:
        assert status == 404
    _, body, _ = act(api, "find", {**coll, "filter": {}, "sort": {"_id": 1}})
    assert [d["_id"] for d in body["documents"]] == ["new", "nodate"]


def test_ttl_monitor_deletes_without_reads(coll):
    """The monitor itself (not mongomock's lazy read-time expiry) removes expired docs."""
    import threading

    import mongomock

    from stack.ttl import run_ttl_once
    client = mongomock.MongoClient()
    col = client["app"]["ttl"]
    col.create_index([("at", 1)], expireAfterSeconds=30)
    now = datetime.datetime.utcnow()
    col._store._ttl_indexes.clear()  # disable mongomock's private lazy expiry (pinned 4.3.0)
    col.insert_many([{"_id": 1, "at": now - datetime.timedelta(seconds=60)},
                     {"_id": 2, "at": now - datetime.timedelta(seconds=5)}])
    assert run_ttl_once(client, threading.RLock()) == 1
    assert [d["_id"] for d in col.find()] == [2]


def test_auth_variants(data_api, coll):
    url, key = data_api["data_api_url"], data_api["data_api_key"]
    body = {**coll, "filter": {}}
    for headers in ({"api-key": key}, {"apiKey": key}, {"Authorization": "Bearer " + key}):
        assert Client(url, headers).post("/action/find", body)[0] == 200
    import base64
    basic = base64.b64encode(("user:" + key).encode()).decode()
    assert Client(url, {"Authorization": "Basic " + basic}).post("/action/find", body)[0] == 200
    for headers in ({}, {"apiKey": "wrong"}, {"Authorization": "Bearer wrong"},
                    {"Authorization": "Basic " + base64.b64encode(b"user:wrong").decode()}):
        status, resp, _ = Client(url, headers).post("/action/find", body)
        assert status == 401 and resp["error_code"] == "InvalidSession" and resp["error"]


def test_bad_requests(api, coll):
    status, body, _ = api.post("/action/find", raw=b'{"dataSource": "local", ')
    assert status == 400 and body["error_code"] == "InvalidParameter"
    status, body, _ = api.post("/action/frobnicate", coll)
    assert status == 404 and body["error_code"] and body["error"]
    assert api.post("/nope", coll)[0] == 404
    status, body, _ = act(api, "find", {"dataSource": "local", "database": "app"})
    assert status == 400 and "collection" in body["error"]
    status, body, _ = act(api, "find", {**coll, "filter": {"a": {"$frob": 1}}})
    assert status == 400 and "$frob" in body["error"]
    status, body, _ = act(api, "updateOne", {**coll, "filter": {}, "update": {"$frob": {"a": 1}}})
    assert status == 400 and "$frob" in body["error"]
    status, body, _ = act(api, "aggregate", {**coll, "pipeline": [{"$frob": {}}]})
    assert status == 400 and "$frob" in body["error"]
    status, body, _ = act(api, "updateOne", {**coll, "filter": {}, "update": {"plain": 1}})
    assert status == 400


def test_oversized_body(api, coll):
    status, body, _ = act(api, "insertOne", {**coll, "document": {"blob": "x" * (1024 * 1024)}})
    assert status == 413 and body["error"]
    assert act(api, "find", {**coll, "filter": {}})[1] == {"documents": []}
