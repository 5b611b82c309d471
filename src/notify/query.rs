//! Read, flag, delete and housekeeping queries, each one Data API call with paging in the query.

use base64::Engine as _;
use serde_json::{json, Value};

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

fn live(owner: &str, now_ms: i64) -> Value {
    // TTL deletion runs about once a minute: expired items must be filtered in the query too.
    json!({ "owner": owner, "expireAt": { "$gt": ejson::date(now_ms) } })
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
    let mut p = json!({ "origins": { "$slice": list_origins.max(1) } });
    for f in [
        "itemKey",
        "serviceType",
        "categoryType",
        "notificationType",
        "templateType",
        "createdTime",
        "expireAt",
        "revision",
        "originsCount",
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

/// Aggregation counting unread, unarchived, live items (optionally one category).
#[must_use]
pub fn unread_count_pipeline(owner: &str, category: Option<&str>, now_ms: i64) -> Value {
    let mut m = live(owner, now_ms);
    m["read"] = false.into();
    m["archived"] = false.into();
    if let Some(c) = category {
        m["categoryType"] = c.into();
    }
    json!([{ "$match": m }, { "$count": "unread" }])
}

/// Items whose revision is above `revision` (created or merged since), oldest change first.
#[must_use]
pub fn changed_since(owner: &str, revision: i64, limit: u32, now_ms: i64) -> FindQuery {
    let mut filter = live(owner, now_ms);
    filter["revision"] = json!({ "$gt": revision });
    FindQuery {
        filter,
        options: FindOptions {
            sort: Some(json!({ "revision": 1, "_id": 1 })),
            limit: Some(limit.clamp(1, MAX_PAGE)),
            ..FindOptions::default()
        },
    }
}

/// A per-item flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// Sets `flag` to `value` on one or all items. "All" only touches items that differ, so the
/// write volume is the number of actual changes. Revision is not bumped: flags don't reorder.
#[must_use]
pub fn mark(owner: &str, target: Target<'_>, flag: Flag, value: bool) -> MarkQuery {
    let f = flag.field();
    let (many, filter) = match target {
        Target::Item(key) => (false, json!({ "owner": owner, "itemKey": key })),
        Target::All => (true, json!({ "owner": owner, f: { "$ne": value } })),
    };
    MarkQuery {
        many,
        filter,
        update: json!({ "$set": { f: value } }),
    }
}

/// `deleteOne` filter for an item.
#[must_use]
pub fn delete_one(owner: &str, item_key: &str) -> Value {
    json!({ "owner": owner, "itemKey": item_key })
}

/// Index specs for `createIndexes`: every query above is served by one of them.
///
/// `(owner, revision)` serves list pages, `changed_since` and trimming; `(owner, categoryType,
/// revision)` serves per-inbox lists (the seed's `createdTime` variants would not serve our sort).
#[must_use]
pub fn indexes() -> Vec<Value> {
    vec![
        json!({ "key": { "owner": 1, "itemKey": 1 }, "name": "owner_itemKey", "unique": true }),
        json!({ "key": { "owner": 1, "revision": -1 }, "name": "owner_revision" }),
        json!({ "key": { "owner": 1, "categoryType": 1, "revision": -1 }, "name": "owner_category_revision" }),
        json!({ "key": { "expireAt": 1 }, "name": "expireAt_ttl", "expireAfterSeconds": 0 }),
    ]
}

/// Housekeeping 1/2 for the nightly trim: the newest item *beyond* `keep` (its revision is the
/// cutoff). Real time never trims (seeds §1 lesson 2: it stalls reads behind write locks).
#[must_use]
pub fn trim_owner_cutoff(owner: &str, keep: u32) -> FindQuery {
    FindQuery {
        filter: json!({ "owner": owner }),
        options: FindOptions {
            projection: Some(json!({ "revision": 1 })),
            sort: Some(json!({ "revision": -1, "_id": -1 })),
            limit: Some(1),
            skip: Some(keep),
        },
    }
}

/// Housekeeping 2/2: `deleteMany` filter removing the cutoff item and everything older.
#[must_use]
pub fn trim_owner_delete(owner: &str, cutoff_revision: i64) -> Value {
    json!({ "owner": owner, "revision": { "$lte": cutoff_revision } })
}

/// Owners holding more than `max` items (nightly; a full scan, so run it off-peak).
#[must_use]
pub fn owners_over_cap(max: u32, batch: u32) -> Value {
    json!([
        { "$group": { "_id": "$owner", "n": { "$sum": 1 } } },
        { "$match": { "n": { "$gt": max } } },
        { "$limit": batch.max(1) },
    ])
}

/// A bounded batch of expired ids (`deleteMany` has no limit, so pick ids first).
#[must_use]
pub fn expired_batch(now_ms: i64, batch: u32) -> FindQuery {
    FindQuery {
        filter: json!({ "expireAt": { "$lte": ejson::date(now_ms) } }),
        options: FindOptions {
            projection: Some(json!({ "_id": 1 })),
            limit: Some(batch.max(1)),
            ..FindOptions::default()
        },
    }
}

/// `deleteMany` filter for a batch from [`expired_batch`] (re-checks expiry: an item may have
/// been merged, and so extended, in between).
#[must_use]
pub fn expired_delete(ids: &[Value], now_ms: i64) -> Value {
    json!({ "_id": { "$in": ids }, "expireAt": { "$lte": ejson::date(now_ms) } })
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
    fn mark_all_touches_only_items_that_change() {
        let m = mark("u", Target::All, Flag::Read, true);
        assert!(m.many);
        assert_eq!(m.filter, json!({"owner": "u", "read": {"$ne": true}}));
        assert_eq!(m.update, json!({"$set": {"read": true}}));
        let one = mark("u", Target::Item("k"), Flag::Archived, false);
        assert!(!one.many);
        assert_eq!(one.filter, json!({"owner": "u", "itemKey": "k"}));
    }

    #[test]
    fn index_keys_keep_their_order() {
        let specs = indexes();
        assert_eq!(
            specs[2]["key"].to_string(),
            r#"{"owner":1,"categoryType":1,"revision":-1}"#
        );
        assert_eq!(specs[3]["expireAfterSeconds"], 0);
    }
}
