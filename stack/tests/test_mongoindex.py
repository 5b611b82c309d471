"""The dev stack's equality indexes (stack/mongoindex.py) answer exactly what mongomock's scan
answers, in the same order, through inserts, updates that move or retype the indexed fields,
upserts, rollbacks, deletes and drops."""
import random

import mongomock
import mongomock.filtering
import pytest
from mongomock.filtering import filter_applies

from stack import mongoindex

mongoindex.install(mongomock)

OWNERS = ["u1", "u2", "u3", "x"]


def filters(rng):
    ids = [f"d{rng.randrange(40):02d}" for _ in range(3)]
    return [
        {},
        {"_id": ids[0]},
        {"_id": 7},
        {"_id": {"$in": ids}},
        {"_id": {"$eq": ids[1]}},
        {"_id": {"$gt": "d10", "$lt": "d30"}},
        {"_id": {"$gte": "d10", "$lte": "d30"}, "n": {"$gt": 3}},
        {"_id": {"$gt": "d05"}},
        {"owner": rng.choice(OWNERS)},
        {"owner": {"$in": OWNERS[:2]}},
        {"owner": {"$eq": "u2"}, "itemKey": rng.choice(["a", "b", "c"])},
        {"o": rng.choice(OWNERS), "k": {"$in": ["a", "c"]}},
        {"$and": [{"owner": "u1"}, {"_id": {"$in": ids}}]},
        {"owner": "u1", "n": {"$gte": 5}},
        {"owner": {"$regex": "^u"}},
        {"owner": None},
    ]


def random_doc(rng, i):
    doc = {"_id": f"d{i:02d}", "n": rng.randrange(10)}
    for f, vals in (("owner", OWNERS), ("o", OWNERS), ("itemKey", "abc"), ("k", "abc")):
        r = rng.random()
        if r < 0.7:
            doc[f] = rng.choice(list(vals))
        elif r < 0.8:
            doc[f] = [rng.choice(list(vals)), "zz"]  # an array: matches by element
        elif r < 0.9:
            doc[f] = 3
    return doc


def check(coll, rng):
    for f in filters(rng):
        scan = list(coll._scan_documents(f))
        assert list(coll._iter_documents(f)) == scan, f
        if "_id" in f and mongoindex.id_range(f["_id"]) is not None:
            page = mongoindex.sorted_page(coll, f, [("_id", 1)], 4, None)
            want = sorted(d["_id"] for d in scan)[:4] if all(isinstance(d["_id"], str) for d in coll.find()) \
                else None
            assert page == want, f


@pytest.mark.parametrize("seed", range(8))
def test_the_index_answers_what_the_scan_answers(seed):
    rng = random.Random(seed)
    coll = mongomock.MongoClient()["db"][f"c{seed}"]
    if seed % 2:
        coll.create_index([("owner", 1), ("itemKey", 1)], unique=True)
    for step in range(400):
        r = rng.random()
        i = rng.randrange(40)
        try:
            if r < 0.3:
                coll.insert_one(random_doc(rng, i))
            elif r < 0.45:
                coll.update_one({"_id": f"d{i:02d}"}, {"$set": {"owner": rng.choice(OWNERS)}},
                                upsert=rng.random() < 0.5)
            elif r < 0.55:
                coll.update_many({"owner": rng.choice(OWNERS)},
                                 {"$set": {"o": [rng.choice(OWNERS)]}, "$inc": {"n": 1}})
            elif r < 0.6:
                coll.update_many({"n": {"$gt": 5}}, {"$unset": {"owner": ""}})
            elif r < 0.65:
                coll.update_one({"owner": rng.choice(OWNERS), "itemKey": "a"},
                                {"$set": {"k": "b"}, "$setOnInsert": {"n": 1}}, upsert=True)
            elif r < 0.7:
                coll.replace_one({"_id": f"d{i:02d}"}, random_doc(rng, i))
            elif r < 0.75:
                coll.update_one({"_id": f"d{i:02d}"}, {"$set": {"_id": "moved"}})  # refused
            elif r < 0.85:
                coll.delete_many({"owner": rng.choice(OWNERS)})
            elif r < 0.9:
                coll.delete_one({"_id": f"d{i:02d}"})
            elif r < 0.92:
                coll.insert_one({"_id": 7, "owner": "u1"})  # a non-string id: ranges scan
            elif r < 0.93:
                coll.drop()
                if seed % 2:
                    coll.create_index([("owner", 1), ("itemKey", 1)], unique=True)
            else:
                coll.insert_many([random_doc(rng, rng.randrange(40)) for _ in range(3)])
        except (mongomock.DuplicateKeyError, mongomock.WriteError, mongomock.BulkWriteError):
            pass
        check(coll, rng)


def test_candidates_are_few_and_a_page_stops_at_its_limit():
    coll = mongomock.MongoClient()["db"]["big"]
    coll.insert_many([{"_id": f"s:{i:05d}", "o": f"u{i % 100}", "k": str(i)} for i in range(5000)])
    store = coll._store
    assert len(mongoindex.candidates(store, {"o": "u7"})) == 50
    assert mongoindex.candidates(store, {"_id": {"$in": ["s:00001", "nope"]}}) == {"s:00001"}
    assert mongoindex.candidates(store, {"n": 1}) is None
    calls = []

    def counting(f, d):
        calls.append(d["_id"])
        return filter_applies(f, d)

    orig = mongomock.filtering.filter_applies
    mongomock.filtering.filter_applies = counting
    try:
        page = mongoindex.sorted_page(coll, {"_id": {"$gt": "s:00100", "$lt": "s;"}}, [("_id", 1)], 25, None)
    finally:
        mongomock.filtering.filter_applies = orig
    assert page == [f"s:{i:05d}" for i in range(101, 126)]
    assert len(calls) == 25


def test_a_cursor_yields_what_it_did_in_linear_time():
    coll = mongomock.MongoClient()["db"]["cur"]
    coll.insert_many([{"_id": i, "n": i % 7} for i in range(3000)])
    for skip, limit in ((0, 0), (5, 0), (0, 10), (2990, 20), (100, -3)):
        cur = coll.find({"n": {"$lt": 5}}).sort("n").skip(skip).limit(limit)
        want = [d["_id"] for d in coll._scan_documents({"n": {"$lt": 5}})]
        want = sorted(want, key=lambda i: (i % 7, i))[skip:]
        want = want[:abs(limit)] if limit else want
        assert [d["_id"] for d in cur] == want
    assert list(coll.aggregate([{"$count": "n"}])) == [{"n": 3000}]
