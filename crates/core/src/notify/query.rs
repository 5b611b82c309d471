//! Read, flag, delete and housekeeping queries, each one Data API call with paging in the query.

use base64::Engine as _;
use serde_json::{json, Value};

use super::document::field;
use super::{NotifyConfig, NotifyError};
use crate::backend::{ejson, FindOptions};

/// Largest page a client may ask for.
pub const MAX_PAGE: u32 = 100;

/// A `find` request: filter plus options.
#[derive(Debug, Clone, PartialEq)]
pub struct FindQuery {
    /// The filter.
    pub filter: Value,
    /// Sort, limit, skip, projection.
    pub options: FindOptions,
}

/// What a list page asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    /// Page size, clamped to `1..=`[`MAX_PAGE`] (0 = 20).
    pub limit: u32,
    /// Opaque cursor from the previous page.
    pub cursor: Option<String>,
    /// Only this `categoryType`.
    pub category: Option<String>,
    /// Only unread items.
    pub unread_only: bool,
    /// The archive instead of the inbox.
    pub archived: bool,
}

impl ListParams {
    /// The effective page size.
    #[must_use]
    pub fn page_size(&self) -> u32 {
        if self.limit == 0 {
            20
        } else {
            self.limit.min(MAX_PAGE)
        }
    }
}

/// Position after the last item of a page: (revision, `_id`), the list's sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// Revision of the last item shown.
    pub revision: i64,
    /// `_id` of the last item shown (tie-breaker).
    pub id: String,
}

/// Opaque cursor text: base64url of `[revision, id]`.
#[must_use]
pub fn encode_cursor(c: &Cursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json!([c.revision, c.id]).to_string())
}

/// Parses a cursor from [`encode_cursor`].
///
/// # Errors
/// [`NotifyError::InvalidCursor`] for anything else.
pub fn decode_cursor(s: &str) -> Result<Cursor, NotifyError> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| NotifyError::InvalidCursor)?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| NotifyError::InvalidCursor)?;
    match (
        v.get(0).and_then(Value::as_i64),
        v.get(1).and_then(Value::as_str),
        v.as_array().map(Vec::len),
    ) {
        (Some(revision), Some(id), Some(2)) => Ok(Cursor {
            revision,
            id: id.to_owned(),
        }),
        _ => Err(NotifyError::InvalidCursor),
    }
}

/// Items a user can see: theirs, not deleted, not expired.
fn live(owner: &str, now_ms: i64) -> Value {
    // TTL deletion is lazy (and now purges tombstones only), so expiry is filtered in the query.
    json!({ "owner": owner, "deleted": { "$ne": true }, "expireAt": { "$gt": ejson::date(now_ms) } })
}

/// The write that turns an item into a tombstone: what the change feed reports as deleted.
///
/// Keeps `_id`, the keys and the retracted-sender list (so a delayed create stays refused),
/// drops the rest, and lives `tombstone_ttl_ms` before the TTL index purges it (`purgeAt`).
/// `expireAt` moves to now so every live filter skips it even before `deleted` is read.
#[must_use]
pub fn tombstone_update(cfg: &NotifyConfig, now_ms: i64) -> Value {
    json!({
        "$set": {
            "deleted": true, (field::ORIGINS): [], (field::ORIGINS_COUNT): 0,
            "read": true, "seen": true, "archived": false,
            "expireAt": ejson::date(now_ms),
            "purgeAt": ejson::date(now_ms.saturating_add(cfg.tombstone_ttl_ms)),
        },
        "$unset": { "messageArguments": "", "landing": "" },
        "$currentDate": { "sync": true },
    })
}

/// Marks the document as changed for the feed: the database's clock at apply time.
fn touch(update: &mut Value) {
    update["$currentDate"] = json!({ "sync": true });
}

/// One list page, newest change first: `find` with filter + sort + limit (one round trip).
///
/// Sorted by `(revision, _id)` descending; the cursor resumes strictly below the last item, so
/// items inserted meanwhile (higher revisions) never shift later pages. An item merged meanwhile
/// moves to the top and is not repeated. Fetches `page_size + 1` to know if there is a next page.
/// Only the first [`NotifyConfig::list_origins`] origins are returned.
///
/// # Errors
/// [`NotifyError::InvalidCursor`].
pub fn list_query(
    owner: &str,
    p: &ListParams,
    cfg: &NotifyConfig,
    now_ms: i64,
) -> Result<FindQuery, NotifyError> {
    let mut filter = live(owner, now_ms);
    filter["archived"] = p.archived.into();
    if let Some(c) = &p.category {
        filter["categoryType"] = c.clone().into();
    }
    if p.unread_only {
        filter["read"] = false.into();
    }
    if let Some(text) = &p.cursor {
        let c = decode_cursor(text)?;
        filter["$or"] = json!([
            { "revision": { "$lt": c.revision } },
            { "revision": c.revision, "_id": { "$lt": c.id } },
        ]);
    }
    Ok(FindQuery {
        filter,
        options: FindOptions {
            projection: Some(list_projection(cfg.list_origins)),
            sort: Some(json!({ "revision": -1, "_id": -1 })),
            limit: Some(p.page_size() + 1),
            skip: None,
        },
    })
}

/// Inclusion projection for lists: every field [`super::view`] renders, origins sliced.
///
/// Explicit inclusion (not `{origins: {$slice}}` alone): MongoDB reads a lone `$slice` as
/// "all other fields too", mongomock as "only this field"; listing fields means the same on both
/// and keeps fields added later out of list payloads until they are wanted.
fn list_projection(list_origins: u32) -> Value {
    let mut p = json!({ (field::ORIGINS): { "$slice": list_origins.max(1) } });
    for f in [
        "itemKey",
        "serviceType",
        "categoryType",
        "notificationType",
        "templateType",
        "createdTime",
        "expireAt",
        "revision",
        field::ORIGINS_COUNT,
        field::TALLY,
        "read",
        "seen",
        "archived",
        "landing",
        "messageArguments",
    ] {
        p[f] = 1.into();
    }
    p
}

/// One list page plus the inbox's `unread`/`unseen` counts in one `aggregate` call (`$facet`).
///
/// The counts cover the whole live inbox (not archived), whatever the page's filters: they are
/// the badge. The page is [`list_query`]'s filter, sort, limit and projection.
///
/// # Errors
/// [`NotifyError::InvalidCursor`].
pub fn list_pipeline(
    owner: &str,
    p: &ListParams,
    cfg: &NotifyConfig,
    now_ms: i64,
) -> Result<Value, NotifyError> {
    let q = list_query(owner, p, cfg, now_ms)?;
    let mut page = q.filter;
    for k in ["owner", "deleted", "expireAt"] {
        page.as_object_mut().map(|m| m.remove(k));
    }
    let mut project = q.options.projection.unwrap_or_default();
    project[field::ORIGINS] = json!({ "$slice": ["$origins", cfg.list_origins.max(1)] });
    Ok(json!([
        { "$match": live(owner, now_ms) },
        { "$facet": {
            "items": [
                { "$match": page },
                { "$sort": q.options.sort },
                { "$limit": q.options.limit },
                { "$project": project },
            ],
            "unread": [{ "$match": { "read": false, "archived": false } }, { "$count": "n" }],
            "unseen": [{ "$match": { "seen": false, "archived": false } }, { "$count": "n" }],
        } },
    ]))
}

/// Aggregation counting unread and unseen, unarchived, live items (optionally one category).
#[must_use]
pub fn counts_pipeline(owner: &str, category: Option<&str>, now_ms: i64) -> Value {
    let mut m = live(owner, now_ms);
    m["archived"] = false.into();
    if let Some(c) = category {
        m["categoryType"] = c.into();
    }
    json!([
        { "$match": m },
        { "$facet": {
            "unread": [{ "$match": { "read": false } }, { "$count": "n" }],
            "unseen": [{ "$match": { "seen": false } }, { "$count": "n" }],
        } },
    ])
}

/// The change feed after a sync position, oldest change first, tombstones included.
///
/// Every write stamps `sync` with the database's clock at apply time (`$currentDate`), so a
/// request that lands late still sorts after what a client has already read; `(sync, _id)`
/// breaks ties within a millisecond. Fetches `limit + 1` to know if more follow.
#[must_use]
pub fn changes(owner: &str, after: Option<&Cursor>, limit: u32) -> FindQuery {
    let mut filter = json!({ "owner": owner });
    if let Some(c) = after {
        filter["$or"] = json!([
            { "sync": { "$gt": ejson::date(c.revision) } },
            { "sync": ejson::date(c.revision), "_id": { "$gt": c.id } },
        ]);
    } else {
        filter["sync"] = json!({ "$exists": true });
    }
    FindQuery {
        filter,
        options: FindOptions {
            sort: Some(json!({ "sync": 1, "_id": 1 })),
            limit: Some(limit.clamp(1, MAX_PAGE) + 1),
            ..FindOptions::default()
        },
    }
}

/// The shortest settle window [`next_sync`] applies, whatever is configured.
pub const MIN_SETTLE_MS: i64 = 1;

/// Where the next `changes` call resumes: after the last item read, but never later than
/// `now - settle` — a write whose stamp is older than that but not yet visible (clock skew
/// between the worker and the database, commit order) is then read again rather than missed.
/// Clients apply the feed idempotently (replace by `itemKey`), so a repeat is harmless.
/// Returns the position and whether it was held back.
#[must_use]
pub fn next_sync(
    last: Option<&Cursor>,
    from: Option<&Cursor>,
    now_ms: i64,
    settle_ms: i64,
) -> (Cursor, bool) {
    // At least one millisecond: a write stamped in the current millisecond may still land after
    // this read (stamps have millisecond precision), so a position inside it could skip that write
    // when its `_id` sorts below the last one read. With a zero window that happened in tests.
    let hold = Cursor {
        revision: now_ms.saturating_sub(settle_ms.max(MIN_SETTLE_MS)),
        id: String::new(),
    };
    let key = |c: &Cursor| (c.revision, c.id.clone());
    match last.or(from) {
        Some(c) if key(c) <= key(&hold) => (c.clone(), false),
        // Never move a client backwards from where it already was.
        _ => match from {
            Some(f) if key(f) > key(&hold) => (f.clone(), true),
            _ => (hold, true),
        },
    }
}

/// A per-item flag (`read`, `seen`, `archived` on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Flag {
    /// Opened.
    Read,
    /// Shown in a list (badge cleared).
    Seen,
    /// Moved out of the inbox.
    Archived,
}

impl Flag {
    /// Document field name.
    #[must_use]
    pub fn field(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Seen => "seen",
            Self::Archived => "archived",
        }
    }
}

/// Which items a mark applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// One item.
    Item(&'a str),
    /// Every item of the owner.
    All,
}

/// A flag update: `updateOne` or `updateMany` (`many`).
#[derive(Debug, Clone, PartialEq)]
pub struct MarkQuery {
    /// Use `updateMany`.
    pub many: bool,
    /// The filter.
    pub filter: Value,
    /// The `$set`.
    pub update: Value,
}

/// Sets `flag` to `value` on one or all live items. "All" only touches items that differ, so
/// the write volume is the number of actual changes. Revision (the list order) is not bumped;
/// `sync` is, so other devices learn of it.
#[must_use]
pub fn mark(owner: &str, target: Target<'_>, flag: Flag, value: bool, now_ms: i64) -> MarkQuery {
    let f = flag.field();
    let (many, filter) = match target {
        Target::Item(key) => (
            false,
            json!({ "owner": owner, "itemKey": key, "deleted": { "$ne": true } }),
        ),
        Target::All => {
            let mut m = live(owner, now_ms);
            m[f] = json!({ "$ne": value });
            (true, m)
        }
    };
    let mut update = json!({ "$set": { f: value } });
    touch(&mut update);
    MarkQuery {
        many,
        filter,
        update,
    }
}

/// A bulk action over the live inbox (optionally one category); each is one `updateMany`.
/// On the wire: `read`, `seen`, `archiveRead`, `delete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Bulk {
    /// Mark every item read.
    Read,
    /// Mark every item seen (clears the badge; items stay unread).
    Seen,
    /// Archive every read item.
    ArchiveRead,
    /// Delete everything (tombstones, so other devices learn of it).
    Delete,
}

/// `(filter, update)` for an `updateMany` doing `action`.
#[must_use]
pub fn bulk(
    owner: &str,
    action: Bulk,
    category: Option<&str>,
    cfg: &NotifyConfig,
    now_ms: i64,
) -> (Value, Value) {
    let mut filter = live(owner, now_ms);
    if let Some(c) = category {
        filter["categoryType"] = c.into();
    }
    let mut update = match action {
        Bulk::Read => {
            filter["read"] = json!({ "$ne": true });
            json!({ "$set": { "read": true } })
        }
        Bulk::Seen => {
            filter["seen"] = json!({ "$ne": true });
            json!({ "$set": { "seen": true } })
        }
        Bulk::ArchiveRead => {
            filter["read"] = true.into();
            filter["archived"] = json!({ "$ne": true });
            json!({ "$set": { "archived": true } })
        }
        Bulk::Delete => return (filter, tombstone_update(cfg, now_ms)),
    };
    touch(&mut update);
    (filter, update)
}

/// `updateOne` filter deleting an item (with [`tombstone_update`]).
#[must_use]
pub fn delete_one(owner: &str, item_key: &str) -> Value {
    json!({ "owner": owner, "itemKey": item_key, "deleted": { "$ne": true } })
}

/// Index specs for `createIndexes`: every query above is served by one of them.
///
/// `(owner, revision)` serves list pages and trimming; `(owner, categoryType, revision)` per-inbox
/// lists (the seed's `createdTime` variants would not serve our sort); `(owner, sync)` the change
/// feed. The TTL index is on `purgeAt` (expiry + the tombstone's life), not `expireAt`: an expired
/// item must outlive its expiry long enough to be reported as deleted.
#[must_use]
pub fn indexes() -> Vec<Value> {
    vec![
        json!({ "key": { "owner": 1, "itemKey": 1 }, "name": "owner_itemKey", "unique": true }),
        json!({ "key": { "owner": 1, "revision": -1 }, "name": "owner_revision" }),
        json!({ "key": { "owner": 1, "categoryType": 1, "revision": -1 }, "name": "owner_category_revision" }),
        json!({ "key": { "owner": 1, "sync": 1 }, "name": "owner_sync" }),
        json!({ "key": { "purgeAt": 1 }, "name": "purgeAt_ttl", "expireAfterSeconds": 0 }),
    ]
}

/// Housekeeping 1/2 for the nightly trim: the newest item *beyond* `keep` (its revision is the
/// cutoff). Real time never trims (seeds §1 lesson 2: it stalls reads behind write locks).
#[must_use]
pub fn trim_owner_cutoff(owner: &str, keep: u32) -> FindQuery {
    FindQuery {
        filter: json!({ "owner": owner, "deleted": { "$ne": true } }),
        options: FindOptions {
            projection: Some(json!({ "revision": 1, "_id": 1 })),
            sort: Some(json!({ "revision": -1, "_id": -1 })),
            limit: Some(1),
            skip: Some(keep),
        },
    }
}

/// Housekeeping 2/2: `updateMany` filter tombstoning the cutoff item and everything older.
///
/// "Older" is the list's own order, `(revision, _id)`: two items written in the same millisecond
/// can share a revision, and a filter on the revision alone would also trim the kept one that
/// ties with the cutoff (it ranks above it by `_id`).
#[must_use]
pub fn trim_owner_delete(owner: &str, cutoff: &Cursor) -> Value {
    json!({ "owner": owner, "deleted": { "$ne": true }, "$or": [
        { "revision": { "$lt": cutoff.revision } },
        { "revision": cutoff.revision, "_id": { "$lte": cutoff.id } },
    ] })
}

/// Owners holding more than `max` items (nightly; a full scan, so run it off-peak).
#[must_use]
pub fn owners_over_cap(max: u32, batch: u32) -> Value {
    json!([
        { "$match": { "deleted": { "$ne": true } } },
        { "$group": { "_id": "$owner", "n": { "$sum": 1 } } },
        { "$match": { "n": { "$gt": max } } },
        { "$limit": batch.max(1) },
    ])
}

/// A bounded batch of expired ids (`deleteMany` has no limit, so pick ids first).
#[must_use]
pub fn expired_batch(now_ms: i64, batch: u32) -> FindQuery {
    FindQuery {
        filter: json!({ "deleted": { "$ne": true }, "expireAt": { "$lte": ejson::date(now_ms) } }),
        options: FindOptions {
            projection: Some(json!({ "_id": 1 })),
            limit: Some(batch.max(1)),
            ..FindOptions::default()
        },
    }
}

/// `updateMany` filter tombstoning a batch from [`expired_batch`] (re-checks expiry: an item
/// may have been merged, and so extended, in between).
#[must_use]
pub fn expired_delete(ids: &[Value], now_ms: i64) -> Value {
    json!({ "_id": { "$in": ids }, "deleted": { "$ne": true }, "expireAt": { "$lte": ejson::date(now_ms) } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_rejects_garbage() {
        let c = Cursor {
            revision: 1_740_000_000_000_123,
            id: "abc_-1".into(),
        };
        assert_eq!(decode_cursor(&encode_cursor(&c)).unwrap(), c);
        for bad in ["", "!!", "W10", "WzEsMiwzXQ"] {
            assert_eq!(decode_cursor(bad), Err(NotifyError::InvalidCursor), "{bad}");
        }
    }

    #[test]
    fn list_filters_in_the_query_and_pages_by_revision() {
        let cfg = NotifyConfig::default();
        let cur = encode_cursor(&Cursor {
            revision: 9,
            id: "x".into(),
        });
        let p = ListParams {
            limit: 500,
            cursor: Some(cur),
            category: Some("social".into()),
            unread_only: true,
            archived: false,
        };
        let q = list_query("u1", &p, &cfg, 1000).unwrap();
        assert_eq!(q.filter["owner"], "u1");
        assert_eq!(q.filter["expireAt"], json!({"$gt": ejson::date(1000)}));
        assert_eq!(q.filter["read"], false);
        assert_eq!(q.filter["categoryType"], "social");
        assert_eq!(q.filter["$or"][0], json!({"revision": {"$lt": 9}}));
        assert_eq!(q.options.limit, Some(MAX_PAGE + 1));
        // Key order matters for a sort spec; serde_json's preserve_order keeps it.
        assert_eq!(
            q.options.sort.unwrap().to_string(),
            r#"{"revision":-1,"_id":-1}"#
        );
        assert_eq!(ListParams::default().page_size(), 20);
    }

    #[test]
    fn sync_positions_hold_back_inside_the_settle_window() {
        let c = |revision, id: &str| Cursor {
            revision,
            id: id.into(),
        };
        // Old enough: resume right after the last item read.
        assert_eq!(
            next_sync(Some(&c(100, "b")), None, 1000, 500),
            (c(100, "b"), false)
        );
        // Too recent: resume at now - settle, so a late-visible write is re-read, not missed.
        assert_eq!(
            next_sync(Some(&c(900, "b")), Some(&c(100, "a")), 1000, 500),
            (c(500, ""), true)
        );
        // Nothing read: stay, or start at now - settle.
        assert_eq!(
            next_sync(None, Some(&c(100, "a")), 1000, 500),
            (c(100, "a"), false)
        );
        assert_eq!(next_sync(None, None, 1000, 500), (c(500, ""), true));
        // Never backwards.
        assert_eq!(
            next_sync(Some(&c(950, "x")), Some(&c(700, "a")), 1000, 500),
            (c(700, "a"), true)
        );
        // A zero window still holds back the current millisecond: an item read at (1000, "m")
        // does not move the position into it, since a write stamped 1000 with a lower `_id`
        // may land after this read.
        assert_eq!(
            next_sync(Some(&c(1000, "m")), None, 1000, 0),
            (c(999, ""), true)
        );
        assert_eq!(
            next_sync(Some(&c(999, "m")), None, 1000, 0),
            (c(999, ""), true)
        );
        assert_eq!(
            next_sync(Some(&c(998, "m")), None, 1000, 0),
            (c(998, "m"), false)
        );
        let q = changes("u", Some(&c(5, "i")), 10);
        assert_eq!(q.filter["$or"][1]["_id"], json!({"$gt": "i"}));
        assert_eq!(q.options.limit, Some(11));
    }

    #[test]
    fn trimming_follows_the_list_order_when_revisions_tie() {
        let cut = Cursor {
            revision: 7,
            id: "m".into(),
        };
        let f = trim_owner_delete("u", &cut);
        // Same revision: only the cutoff and those below it by `_id` (as the list ranks them).
        assert_eq!(f["$or"][0], json!({"revision": {"$lt": 7}}));
        assert_eq!(f["$or"][1], json!({"revision": 7, "_id": {"$lte": "m"}}));
        assert_eq!(
            trim_owner_cutoff("u", 5).options.sort.unwrap().to_string(),
            r#"{"revision":-1,"_id":-1}"#
        );
    }

    #[test]
    fn bulk_actions_are_one_update_over_the_live_inbox() {
        let cfg = NotifyConfig::default();
        let (f, u) = bulk("u", Bulk::ArchiveRead, Some("social"), &cfg, 9);
        assert_eq!(
            (f["read"].clone(), f["categoryType"].clone()),
            (json!(true), json!("social"))
        );
        assert_eq!(u["$set"], json!({"archived": true}));
        let (f, u) = bulk("u", Bulk::Delete, None, &cfg, 9);
        assert_eq!(f["deleted"], json!({"$ne": true}));
        assert_eq!(u["$set"]["deleted"], true);
        assert_eq!(u["$set"]["purgeAt"], ejson::date(9 + cfg.tombstone_ttl_ms));
        for a in [Bulk::Read, Bulk::Seen, Bulk::ArchiveRead, Bulk::Delete] {
            assert_eq!(
                bulk("u", a, None, &cfg, 9).1["$currentDate"],
                json!({"sync": true})
            );
        }
    }

    #[test]
    fn mark_all_touches_only_items_that_change() {
        let m = mark("u", Target::All, Flag::Read, true, 7);
        assert!(m.many);
        assert_eq!(m.filter["read"], json!({"$ne": true}));
        assert_eq!(m.filter["deleted"], json!({"$ne": true}));
        assert_eq!(m.update["$set"], json!({"read": true}));
        assert_eq!(m.update["$currentDate"], json!({"sync": true}));
        let one = mark("u", Target::Item("k"), Flag::Archived, false, 7);
        assert!(!one.many);
        assert_eq!(one.filter["itemKey"], "k");
    }

    #[test]
    fn index_keys_keep_their_order() {
        let specs = indexes();
        assert_eq!(
            specs[2]["key"].to_string(),
            r#"{"owner":1,"categoryType":1,"revision":-1}"#
        );
        assert_eq!(specs[4]["key"], json!({"purgeAt": 1}));
        assert_eq!(specs[4]["expireAfterSeconds"], 0);
    }
}
