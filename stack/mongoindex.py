"""Equality indexes for the dev stack's mongomock, so a call's cost does not grow with the
collection (dev/test only; a real MongoDB has its own indexes and never loads this).

mongomock 4.3 answers every filter by scanning the whole collection (`Collection._iter_documents`
runs `filter_applies` on each document), and checks a unique index on every insert the same way:
at 100 000 items a `find` by `_id` took 1.3 s, and filling 100 000 items was quadratic. This
narrows the scan to *candidates* that are a superset of the matches, then applies the same
`filter_applies` to them in the same order (insertion order), so every answer is exactly the
scan's (`stack/tests/test_mongoindex.py` checks it against the scanning path):

* `_id`: a string or integer equality, or `$in` of them: the store's own dict (keyed by `_id`).
* `_id` ranges (`$gt`/`$gte`/`$lt`/`$lte` with string bounds), when every `_id` is a string: a
  sorted list of the ids, rebuilt when the set of ids changed ([`sorted_page`] also answers a
  `find` sorted by `_id` with a limit by walking it, stopping at the limit).
* `FIELDS` (`owner`, `o`, `itemKey`, `k`): string equality or `$in` of strings: a map value →
  ids, kept on every insert, delete, in-place update and rollback. A document whose field is
  not a string (an array, a number, a document) is a candidate of every such filter.
* `$and`: the intersection of its indexable parts.

And a cursor slices its result once, not once per document it yields.

Anything else scans as before.
"""
import bisect

FIELDS = ("owner", "o", "itemKey", "k")
_RANGE_OPS = {"$gt", "$gte", "$lt", "$lte"}


class _Index:
    """One collection's: value → ids per field, id → its values, insertion order, sorted ids."""

    def __init__(self):
        self.eq = {f: {} for f in FIELDS}
        self.other = {f: set() for f in FIELDS}  # ids whose field is there but not a string
        self.keys = {}  # id -> {field: value or _OTHER}
        self.seq = {}  # id -> insertion number (the OrderedDict's order)
        self.next = 0
        self.sorted_ids = None  # rebuilt lazily after the set of ids changed
        self.all_str = True

    def add(self, key, doc, new):
        if new:
            self.seq[key] = self.next
            self.next += 1
            self.sorted_ids = None
            if not isinstance(key, str):
                self.all_str = False
        entry = {}
        for f in FIELDS:
            if f not in doc:
                continue
            v = doc[f]
            if type(v) is str:
                self.eq[f].setdefault(v, set()).add(key)
                entry[f] = v
            else:
                self.other[f].add(key)
                entry[f] = _OTHER
        self.keys[key] = entry

    def remove(self, key, gone):
        for f, v in self.keys.pop(key, {}).items():
            if v is _OTHER:
                self.other[f].discard(key)
            else:
                ids = self.eq[f].get(v)
                if ids is not None:
                    ids.discard(key)
                    if not ids:
                        del self.eq[f][v]
        if gone:
            self.seq.pop(key, None)
            self.sorted_ids = None

    def ordered(self, store):
        if self.sorted_ids is None:
            self.all_str = all(isinstance(k, str) for k in store._documents)
            self.sorted_ids = sorted(store._documents) if self.all_str else []
        return self.sorted_ids


_OTHER = object()


def _index(store):
    idx = store.__dict__.get("_eq_index")
    if idx is None:
        idx = store.__dict__["_eq_index"] = _Index()
        for key, doc in store._documents.items():
            idx.add(key, doc, True)
    return idx


def _strings(v):
    """The strings an equality or `$in` on a field asks for, or None when it is something else."""
    if type(v) is str:
        return [v]
    if isinstance(v, dict) and len(v) == 1:
        (op, arg), = v.items()
        if op == "$eq" and type(arg) is str:
            return [arg]
        if op == "$in" and isinstance(arg, (list, tuple)) and all(type(a) is str for a in arg):
            return list(arg)
    return None


def _ids(v):
    """The `_id`s an equality or `$in` on `_id` asks for (strings or integers), else None."""
    ok = lambda a: type(a) in (str, int)  # noqa: E731 - not bool, not float: exact dict lookups
    if ok(v):
        return [v]
    if isinstance(v, dict) and len(v) == 1:
        (op, arg), = v.items()
        if op == "$eq" and ok(arg):
            return [arg]
        if op == "$in" and isinstance(arg, (list, tuple)) and all(ok(a) for a in arg):
            return list(arg)
    return None


def id_range(v):
    """`(lo, lo_inclusive, hi, hi_inclusive)` of a string range on `_id` (None: unbounded), or
    None when `v` is not only such a range."""
    if not isinstance(v, dict) or not v or set(v) - _RANGE_OPS:
        return None
    if not all(type(a) is str for a in v.values()):
        return None
    lo = hi = None
    lo_inc = hi_inc = False
    for op, a in v.items():
        if op in ("$gt", "$gte"):
            if lo is not None:
                return None
            lo, lo_inc = a, op == "$gte"
        else:
            if hi is not None:
                return None
            hi, hi_inc = a, op == "$lte"
    return lo, lo_inc, hi, hi_inc


def _range_ids(idx, store, rng):
    ids = idx.ordered(store)
    if not idx.all_str:
        return None
    lo, lo_inc, hi, hi_inc = rng
    i = 0 if lo is None else (bisect.bisect_left if lo_inc else bisect.bisect_right)(ids, lo)
    j = len(ids) if hi is None else (bisect.bisect_right if hi_inc else bisect.bisect_left)(ids, hi)
    return i, j, ids


def candidates(store, flt):
    """A set of ids holding every match of `flt`, or None (scan)."""
    if not isinstance(flt, dict):
        return None
    idx = _index(store)
    found = None

    def narrow(s):
        nonlocal found
        found = set(s) if found is None else found & set(s)

    for k, v in flt.items():
        if k == "_id":
            ids = _ids(v)
            if ids is not None:
                narrow(i for i in ids if i in store._documents)
                continue
            rng = id_range(v)
            if rng is not None:
                r = _range_ids(idx, store, rng)
                if r is not None:
                    i, j, ids = r
                    narrow(ids[i:j])
        elif k in FIELDS:
            vals = _strings(v)
            if vals is not None:
                s = set(idx.other[k])
                for val in vals:
                    s |= idx.eq[k].get(val, set())
                narrow(s)
        elif k == "$and" and isinstance(v, list):
            for part in v:
                c = candidates(store, part)
                if c is not None:
                    narrow(c)
    return found


def sorted_page(coll, flt, sort, limit, skip):
    """The `_id`s of a `find` sorted by `_id` ascending with a limit and a string range on `_id`,
    by walking the sorted ids from the range's start and stopping at the limit; None when the
    query is not that shape (the caller then runs it as it is)."""
    from mongomock.filtering import filter_applies

    if sort != [("_id", 1)] or type(limit) is not int or limit <= 0 or skip or not isinstance(flt, dict):
        return None
    rng = id_range(flt.get("_id"))
    if rng is None:
        return None
    store = coll._store
    if not getattr(type(store), "_eq_index_installed", False):
        return None  # an index nobody keeps would go stale
    idx = _index(store)
    r = _range_ids(idx, store, rng)
    if r is None:
        return None
    i, j, ids = r
    out = []
    for key in ids[i:j]:
        if filter_applies(flt, store._documents[key]):
            out.append(key)
            if len(out) >= limit:
                break
    return out


def install(mongomock):
    """Patches mongomock's store and collection (idempotent)."""
    import mongomock.collection
    import mongomock.store
    from mongomock.filtering import filter_applies

    Store = mongomock.store.CollectionStore
    if getattr(Store, "_eq_index_installed", False):
        return
    Store._eq_index_installed = True
    set_item, del_item, drop = Store.__setitem__, Store.__delitem__, Store.drop

    def __setitem__(self, key, val):
        new = key not in self._documents
        set_item(self, key, val)
        idx = _index(self)
        idx.remove(key, False)
        idx.add(key, val, new)

    def __delitem__(self, key):
        del_item(self, key)
        _index(self).remove(key, True)

    def drop_(self):
        drop(self)
        self.__dict__.pop("_eq_index", None)

    Store.__setitem__, Store.__delitem__, Store.drop = __setitem__, __delitem__, drop_

    Coll = mongomock.collection.Collection
    scan = Coll._iter_documents
    apply_doc, apply_pipeline = Coll._apply_update_document, Coll._apply_update_pipeline

    def _reindex(self, doc):
        key = doc.get("_id") if isinstance(doc, dict) else None
        store = self._store
        if key is not None and store._documents.get(key) is doc:
            idx = _index(store)
            idx.remove(key, False)
            idx.add(key, doc, False)

    def _apply_update_document(self, existing_document, *args, **kwargs):
        try:
            return apply_doc(self, existing_document, *args, **kwargs)
        finally:
            _reindex(self, existing_document)

    def _apply_update_pipeline(self, existing_document, *args, **kwargs):
        try:
            return apply_pipeline(self, existing_document, *args, **kwargs)
        finally:
            _reindex(self, existing_document)

    def _iter_documents(self, filter):
        store = self._store
        ids = candidates(store, filter)
        if ids is None or store.is_empty:
            return scan(self, filter)
        seq = _index(store).seq
        docs = store._documents
        ordered = sorted((i for i in ids if i in docs), key=seq.__getitem__)
        return (docs[i] for i in ordered if filter_applies(filter, docs[i]))

    # A cursor sliced its whole result list again for every document it yielded (quadratic:
    # 38 s to read 60 000 documents; an `aggregate` reads its collection through one): slice once.
    Cursor = mongomock.collection.Cursor
    compute = Cursor._compute_results

    def _compute_results(self, with_limit_and_skip=False):
        results = compute(self, False)
        if not with_limit_and_skip:
            return results
        cached = self.__dict__.get("_sliced")
        if cached is None or cached[0] is not results or cached[1:3] != (self._skip, self._limit):
            part = results[self._skip:]
            if self._limit:
                part = part[:abs(self._limit)]
            cached = self.__dict__["_sliced"] = (results, self._skip, self._limit, part)
        return cached[3]

    Cursor._compute_results = _compute_results
    Coll._apply_update_document = _apply_update_document
    Coll._apply_update_pipeline = _apply_update_pipeline
    Coll._iter_documents = _iter_documents
    Coll._scan_documents = scan  # the scanning path, for the tests
