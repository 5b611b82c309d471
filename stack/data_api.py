"""MongoDB Atlas Data API (v1): the engine-independent core and the dev server around it.

`DataApi` is routing, auth, (E)JSON and the actions over any pymongo-compatible client (mongomock or
a real `pymongo.MongoClient`). Two front ends call it: `DataApiApp` (the dev stack's threading server,
with /__stats, /__faults, /__ttl) and `stack.gateway` (the production ASGI gateway, none of those).

Routes: POST /action/<name> and POST /app/<appid>/endpoint/data/v1/action/<name>.
"""
import datetime
import base64
import contextlib
import hashlib
import hmac
import re
import threading

import pymongo
from bson import json_util
from bson.errors import BSONError
from pymongo.errors import BulkWriteError, ConnectionFailure, DuplicateKeyError, OperationFailure, PyMongoError

from . import mongoindex
from .httpbase import App, Response, json_response
from .ttl import run_ttl_once

ROUTE = re.compile(r"^(?:/app/[^/]+/endpoint/data/(?:v1|beta))?/action/([A-Za-z]+)$")
IN_OPTS = json_util.JSONOptions(tz_aware=False)
def _current_date_ms(upd):
    """mongomock's `$currentDate` keeps microseconds; a BSON date (what mongod stores) has ms.
    Without this, `{sync: {$gt: <the same date read back>}}` would match the document itself."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)
    upd = dict(upd)
    fields = upd.pop("$currentDate")
    upd["$set"] = {**upd.get("$set", {}), **{k: now for k in fields}}
    return upd


UPDATE_OPS = {"$set", "$unset", "$inc", "$mul", "$rename", "$setOnInsert", "$min", "$max", "$currentDate",
              "$push", "$pull", "$pullAll", "$addToSet", "$pop", "$bit"}
ACTIONS = ("find", "findOne", "insertOne", "insertMany", "updateOne", "updateMany", "replaceOne",
           "deleteOne", "deleteMany", "aggregate", "createIndexes", "listIndexes")
SYSTEM_DATABASES = ("admin", "local", "config")
# Refused anywhere in a request body by the gateway (403 naming the operator): server-side
# JavaScript, and stages that write to or read from another collection than the one named.
DENIED_OPERATORS = ("$where", "$function", "$accumulator", "$out", "$merge", "$lookup", "$graphLookup",
                    "$unionWith")


def denied_operator(value, depth=0):
    """The first denied operator used as a key anywhere in `value` (nested documents and arrays
    included), else None. Too deep a nesting is refused as a whole (depth 64)."""
    if depth > 64:
        return "nesting deeper than 64 levels"
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and k in DENIED_OPERATORS:
                return k
            found = denied_operator(v, depth + 1)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for v in value:
            found = denied_operator(v, depth + 1)
            if found:
                return found
    return None


class ApiError(Exception):
    def __init__(self, status, message, code):
        super().__init__(message)
        self.status, self.code = status, code


def _bad(message):
    return ApiError(400, message, "InvalidParameter")


def error_response(status, message, code=None):
    return json_response(status, {"error": message, "error_code": code or "InternalServerError"})


def presented_key(req):
    """The API key a request carries: `apiKey`/`api-key` header, Bearer token, or Basic password."""
    key = req.header("apiKey") or req.header("api-key")
    auth = req.header("Authorization") or ""
    if not key and auth[:7].lower() == "bearer ":
        key = auth[7:].strip()
    elif not key and auth[:6].lower() == "basic ":
        try:
            key = base64.b64decode(auth[6:].strip()).decode().partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            key = None
    return key or None


class KeyRing:
    """Several API keys at once (rotation), each with a name that is safe to log.

    A presented key is hashed and compared with *every* configured key's hash using
    `hmac.compare_digest`, with no early exit: the time taken reveals neither the key's length nor
    which (or whether any) key matched.
    """

    def __init__(self, keys):
        self._keys = [(name, hashlib.sha256(value.encode()).digest()) for name, value in keys]
        if not self._keys:
            raise ValueError("at least one API key is required")
        self.names = [name for name, _ in self._keys]

    def match(self, presented):
        digest = hashlib.sha256(presented.encode()).digest()
        found = None
        for name, expected in self._keys:
            if hmac.compare_digest(digest, expected) and found is None:
                found = name
        return found


class DataApi:
    """Routing, auth, EJSON and the actions; no server, no dev endpoints.

    `lock`: mongomock is not thread-safe, so its callers pass one lock; pymongo needs none.
    `rollback_partial_inserts`: mongomock dev semantics (a duplicate in insertMany applies nothing);
    a real MongoDB keeps the inserted prefix, and so does the gateway.
    `databases`: allowlist of database names (None = any); `collections`: allowlist of collection
    names (None = any); `deny_system`: refuse admin/local/config and `system.*` collections;
    `deny_operators`: refuse DENIED_OPERATORS anywhere in a body (403 naming it).
    """

    def __init__(self, client, keys, lock=None, rollback_partial_inserts=False, databases=None,
                 deny_system=False, collections=None, deny_operators=False):
        self.client = client
        self.keys = keys if isinstance(keys, KeyRing) else KeyRing(keys)
        self.lock = lock or contextlib.nullcontext()
        self.rollback_partial_inserts = rollback_partial_inserts
        self.databases = set(databases) if databases else None
        self.collections = set(collections) if collections else None
        self.deny_system = deny_system
        self.deny_operators = deny_operators

    # -- plumbing ------------------------------------------------------------
    def _authorized(self, req):
        key = presented_key(req)
        if not key:
            raise ApiError(401, "no authentication methods were specified", "InvalidSession")
        name = self.keys.match(key)
        if name is None:
            raise ApiError(401, "invalid session: failed to authenticate with the given API key", "InvalidSession")
        return name

    def _formats(self, req):
        ctype = (req.header("Content-Type") or "application/json").split(";")[0].strip().lower()
        if ctype not in ("application/json", "application/ejson"):
            raise ApiError(415, f"unsupported Content-Type {ctype!r}; use application/json or application/ejson",
                           "InvalidParameter")
        accept = (req.header("Accept") or "").lower()
        if "application/ejson" in accept:
            return "application/ejson"
        if "application/json" in accept:
            return "application/json"
        return ctype

    def _reply(self, status, obj, out_type):
        opts = json_util.CANONICAL_JSON_OPTIONS if out_type == "application/ejson" else json_util.RELAXED_JSON_OPTIONS
        return Response(status, json_util.dumps(obj, json_options=opts).encode(), out_type)

    # -- dispatch ------------------------------------------------------------
    def handle(self, req, around=None):
        """-> (label, Response, key name or None).

        `around(action, run)` (dev server: fault injection) wraps the database call; `run()` returns
        the success Response, and `around` may return another Response instead.
        """
        m = ROUTE.match(req.path)
        if not m:
            return "<unknown-route>", error_response(404, f"no route for {req.path}", "NotFound"), None
        action, key_name = m.group(1), None
        try:
            if req.method != "POST":
                raise ApiError(405, "only POST is supported", "MethodNotAllowed")
            key_name = self._authorized(req)
            if action not in ACTIONS:
                raise ApiError(404, f"unknown action {action!r}", "ActionNotFound")
            out_type = self._formats(req)
            try:
                body = json_util.loads(req.body or b"{}", json_options=IN_OPTS)
            except (ValueError, TypeError, BSONError, UnicodeDecodeError) as e:
                raise _bad(f"malformed JSON/EJSON body: {e}") from None
            if not isinstance(body, dict):
                raise _bad("request body must be a JSON object")
            coll = self._collection(body)
            if self.deny_operators:
                op = denied_operator(body)
                if op:
                    raise ApiError(403, f"operator {op} is not allowed by this gateway", "Forbidden")
            op = getattr(self, "_" + action)

            def run():
                with self.lock:
                    result = op(coll, body)
                return self._reply(201 if action.startswith("insert") else 200, result, out_type)

            run.collection = body.get("collection")  # for a fault rule that names it
            return action, (around(action, run) if around else run()), key_name
        except ApiError as e:
            return action, error_response(e.status, str(e), e.code), key_name
        except DuplicateKeyError as e:
            return action, error_response(409, f"Duplicate key error: {e}", "DuplicateKey"), key_name
        except ConnectionFailure as e:  # incl. server selection timeout: the database is unreachable
            return action, error_response(503, f"database unavailable: {type(e).__name__}", "ServiceUnavailable"), \
                key_name
        except PyMongoError as e:
            if e.timeout:  # pymongo's client-side timeout or the server's maxTimeMS
                return action, error_response(504, f"database operation timed out: {type(e).__name__}", "Timeout"), \
                    key_name
            if isinstance(e, OperationFailure):
                return action, error_response(400, f"{type(e).__name__}: {e}", "InvalidParameter"), key_name
            return action, error_response(500, f"{type(e).__name__}: {e}", "InternalServerError"), key_name
        except (ValueError, TypeError, KeyError, NotImplementedError) as e:
            return action, error_response(400, f"{type(e).__name__}: {e}", "InvalidParameter"), key_name

    def _collection(self, body):
        for field in ("dataSource", "database", "collection"):
            if not isinstance(body.get(field), str) or not body[field]:
                raise _bad(f"invalid parameter: {field!r} must be a non-empty string")
        db, coll = body["database"], body["collection"]
        if self.databases is not None and db not in self.databases:
            raise ApiError(403, f"database {db!r} is not served by this gateway", "Forbidden")
        if self.collections is not None and coll not in self.collections:
            raise ApiError(403, f"collection {coll!r} is not served by this gateway", "Forbidden")
        if self.deny_system and (db in SYSTEM_DATABASES or coll.startswith("system.")):
            raise ApiError(403, f"system database/collection {db}.{coll} is not served", "Forbidden")
        return self.client[db][coll]

    # -- actions -------------------------------------------------------------
    @staticmethod
    def _doc(body, field, required=True):
        val = body.get(field)
        if val is None and not required:
            return {}
        if not isinstance(val, dict):
            raise _bad(f"invalid parameter: {field!r} must be an object")
        return val

    @staticmethod
    def _sort(body):
        sort = body.get("sort")
        if sort is None:
            return None
        if not isinstance(sort, dict) or not sort:
            raise _bad("invalid parameter: 'sort' must be a non-empty object")
        return list(sort.items())

    def _findOne(self, coll, body):
        kw = {"projection": body.get("projection") or None}
        sort = self._sort(body)
        if sort:
            kw["sort"] = sort
        return {"document": coll.find_one(self._doc(body, "filter", False), **kw)}

    def _find(self, coll, body):
        flt = self._doc(body, "filter", False)
        sort = self._sort(body)
        if self.emulated:
            # A page by a range of `_id` (a sender's index entries): the first `limit` matches in
            # `_id` order, found without sorting the whole range (stack/mongoindex.py).
            page = mongoindex.sorted_page(coll, flt, sort, body.get("limit"), body.get("skip"))
            if page is not None:
                flt = {"_id": {"$in": page}}
        cur = coll.find(flt, projection=body.get("projection") or None)
        if sort:
            cur = cur.sort(sort)
        if body.get("skip"):
            cur = cur.skip(int(body["skip"]))
        if body.get("limit"):
            cur = cur.limit(int(body["limit"]))
        return {"documents": list(cur)}

    def _insertOne(self, coll, body):
        return {"insertedId": coll.insert_one(self._doc(body, "document")).inserted_id}

    def _insertMany(self, coll, body):
        docs = body.get("documents")
        if not isinstance(docs, list) or not docs or not all(isinstance(d, dict) for d in docs):
            raise _bad("invalid parameter: 'documents' must be a non-empty array of objects")
        try:
            return {"insertedIds": coll.insert_many(docs).inserted_ids}
        except BulkWriteError as e:
            errors = e.details.get("writeErrors") or []
            if any(w.get("code") == 11000 for w in errors):
                if self.rollback_partial_inserts:  # mongomock dev mode: "nothing applied"
                    ids = [d["_id"] for d in docs[: errors[0].get("index", 0)] if "_id" in d]
                    coll.delete_many({"_id": {"$in": ids}})
                raise DuplicateKeyError(errors[0].get("errmsg", "E11000 duplicate key error"), 11000) from None
            raise

    def _update_result(self, res):
        out = {"matchedCount": res.matched_count, "modifiedCount": res.modified_count}
        if res.upserted_id is not None:
            out["upsertedId"] = res.upserted_id
        return out

    @property
    def emulated(self):
        """True over mongomock (whose quirks we correct); false over a real MongoDB."""
        return type(self.client).__module__.startswith("mongomock")

    def _updateOne(self, coll, body):
        return self._update_result(coll.update_one(self._doc(body, "filter", False), self._update(body),
                                                   upsert=bool(body.get("upsert"))))

    def _updateMany(self, coll, body):
        return self._update_result(coll.update_many(self._doc(body, "filter", False), self._update(body),
                                                    upsert=bool(body.get("upsert"))))

    def _update(self, body):
        upd = body.get("update")
        if isinstance(upd, dict) and upd and all(k.startswith("$") for k in upd):
            unknown = sorted(set(upd) - UPDATE_OPS)
            if unknown:  # mongod rejects these up front, even when nothing matches
                raise _bad(f"Unknown modifier: {unknown[0]}")
            if "$currentDate" in upd and self.emulated:
                upd = _current_date_ms(upd)
            return upd
        if isinstance(upd, list) and upd:
            return upd  # aggregation-pipeline update (real MongoDB only)
        raise _bad("invalid parameter: 'update' must be an object of update operators")

    def _replaceOne(self, coll, body):
        repl = self._doc(body, "replacement")
        if any(k.startswith("$") for k in repl):
            raise _bad("invalid parameter: 'replacement' must not contain update operators")
        return self._update_result(coll.replace_one(self._doc(body, "filter", False), repl,
                                                    upsert=bool(body.get("upsert"))))

    def _deleteOne(self, coll, body):
        return {"deletedCount": coll.delete_one(self._doc(body, "filter")).deleted_count}

    def _deleteMany(self, coll, body):
        return {"deletedCount": coll.delete_many(self._doc(body, "filter")).deleted_count}

    def _aggregate(self, coll, body):
        pipeline = body.get("pipeline")
        if not isinstance(pipeline, list):
            raise _bad("invalid parameter: 'pipeline' must be an array")
        return {"documents": list(coll.aggregate(pipeline))}

    def _createIndexes(self, coll, body):
        specs = body.get("indexes")
        if not isinstance(specs, list) or not specs:
            raise _bad("invalid parameter: 'indexes' must be a non-empty array")
        names = []
        for spec in specs:
            if not isinstance(spec, dict) or not isinstance(spec.get("key"), dict) or not spec["key"]:
                raise _bad("invalid parameter: each index needs a non-empty 'key' object")
            opts = {k: spec[k] for k in ("name", "unique", "expireAfterSeconds", "partialFilterExpression", "sparse")
                    if spec.get(k) is not None}
            names.append(coll.create_index(list(spec["key"].items()), **opts))
        return {"createdIndexes": names}

    def _listIndexes(self, coll, body):
        out = []
        for name, info in coll.index_information().items():
            entry = {"name": name, "key": dict(info["key"])}
            entry.update({k: v for k, v in info.items() if k not in ("key", "ns")})
            out.append(entry)
        return {"indexes": out}


def _background_ttl_only(mongomock):
    """Expire documents the way mongod does: in the background (`TtlMonitor`, every
    `--ttl-interval` seconds; mongod's monitor runs every 60 s), not on every read.

    mongomock 4.3 scans every document of a collection with a TTL index on *each* access
    (`CollectionStore._remove_expired_documents`): measured with py-spy under the 10 000-event
    queue fault test, 28 % of the stack's CPU, and the stack is that test's bottleneck (one core,
    the GIL). Deletion still happens, through the same filter mongod's monitor applies
    (`ttl.run_ttl_once`); the product never relies on an expired document being gone at once
    (its queries filter on `expireAt` themselves)."""
    mongomock.store.CollectionStore._remove_expired_documents = lambda self: None


class DataApiApp(App):
    """The dev stack's Data API server: `DataApi` + /__stats, /__faults, /__ttl (no auth on those)."""

    name = "data-api"

    def __init__(self, api_key, max_body, mongodb_uri=None, verbose=False):
        super().__init__(max_body, verbose)
        if mongodb_uri:
            self.client = pymongo.MongoClient(mongodb_uri)
            self.lock = contextlib.nullcontext()  # pymongo is thread-safe
            self.mode = "mongodb"
        else:
            import mongomock  # dev/test only: the production gateway does not need it installed
            import mongomock.store
            _background_ttl_only(mongomock)
            mongoindex.install(mongomock)
            self.client = mongomock.MongoClient()
            self.lock = threading.RLock()  # mongomock is not thread-safe
            self.mode = "mongomock"
        self.api = DataApi(self.client, [("dev", api_key)], lock=self.lock,
                           rollback_partial_inserts=self.mode == "mongomock")

    def error(self, status, message, code=None):
        return error_response(status, message, code)

    def admin(self, req):
        if req.path == "/__ttl/run" and req.method == "POST":
            return json_response(200, {"deleted": self.run_ttl()})
        return super().admin(req)

    def run_ttl(self):
        return run_ttl_once(self.client, self.lock)

    def _with_faults(self, action, run):
        # A rule matches the action ("updateOne") or the action on one collection
        # ("updateOne:notifications").
        names = {action.lower()}
        if getattr(run, "collection", None):
            names.add(f"{action.lower()}:{str(run.collection).lower()}")
        plan = self.faults.plan(names)
        self.apply_delay(plan)
        if plan.fail == "fail_before":
            return self.fault_response(plan)
        resp = run()
        if plan.fail == "fail_after":
            return self.fault_response(plan)
        return resp

    def handle(self, req):
        label, resp, _ = self.api.handle(req, self._with_faults)
        return label, resp
