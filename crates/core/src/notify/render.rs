//! Rendering stored documents: the one-line summary and the API view.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::document::StoredNotification;
use super::store::{Changes, Counts, Page};

use super::template::{self, Piece};
use crate::backend::ejson;

/// "Ana", "Ana and Ben", "Ana and 3 others": newest origin first, `originsCount` for the rest.
fn actor(doc: &StoredNotification) -> Option<String> {
    let (count, _) = senders(doc, None);
    let names: Vec<&str> = doc.origins.iter().map(|o| o.name.as_str()).collect();
    Some(match (names.as_slice(), count) {
        (_, c) if c <= 0 => return None,
        ([], c) => format!("{c} {}", if c == 1 { "person" } else { "people" }),
        ([first, ..], 1) => (*first).to_owned(),
        ([first, second, ..], 2) => format!("{first} and {second}"),
        ([first, ..], 2) => format!("{first} and 1 other"),
        ([first, ..], c) => format!("{first} and {} others", c - 1),
    })
}

/// Distinct senders on the item and whether that is exact: the roster's count when Redis keeps
/// one; else the document's own, exact while the cap has dropped no origin (past it, a
/// returning sender may have been counted twice: an upper bound). `cap`: the origins cap, when
/// known; else the stored origins tell (a list page reads only the first few).
fn senders(doc: &StoredNotification, cap: Option<u32>) -> (i64, bool) {
    let kept = cap.map_or(doc.origins.len(), |c| c as usize);
    match doc.tally {
        Some(t) => (super::roster::count(t), true),
        None => (
            doc.origins_count,
            doc.origins_count <= i64::try_from(kept).unwrap_or(i64::MAX),
        ),
    }
}

/// The item's one-line text, re-rendered after merges and retractions; `None` for an empty item.
///
/// One pass over pre-parsed pieces: a name or argument value is never read as a template itself,
/// so `{post}` in a sender's name stays literal and nested arguments cannot grow the text (found
/// by review while fuzzing, fuzz/regressions/body_parsing/). A document missing an argument
/// (stored before its template named it) gets the generic text rather than a hole.
#[must_use]
pub fn summary(doc: &Value) -> Option<String> {
    summary_of(&StoredNotification::read(doc))
}

fn summary_of(doc: &StoredNotification) -> Option<String> {
    let actor = actor(doc)?;
    let arg = |n: &str| doc.message_arguments.get(n).map(String::as_str);
    let (mut pieces, needs) = template::template(&doc.notification_type);
    if needs.iter().any(|n| arg(n).is_none()) {
        pieces = template::fallback();
    }
    let mut text = String::new();
    for p in pieces {
        match p {
            Piece::Text(t) => text.push_str(t),
            Piece::Actor => text.push_str(&actor),
            Piece::Arg(n) => text.push_str(arg(n).unwrap_or_default()),
        }
    }
    Some(text)
}

/// A sender on an item, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "Origin"))]
pub struct OriginView {
    /// The sender's id.
    pub sender_id: String,
    /// The sender's display name.
    pub name: String,
    /// The sender's avatar URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub avatar: Option<String>,
    /// Where this sender's event leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub landing: Option<String>,
    /// Event time, ms since the epoch.
    pub created_time_msec: i64,
}

/// An inbox item, as the list and the change feed show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "Notification"))]
pub struct NotificationView {
    /// The notification id.
    pub notification_id: String,
    /// Merge key within the owner's inbox.
    pub item_key: String,
    /// Producing service.
    pub service_type: String,
    /// Inbox category.
    pub category_type: String,
    /// Kind of activity.
    pub notification_type: String,
    /// Client layout.
    pub template_type: String,
    /// The newest event's time, ms since the epoch.
    pub created_time_msec: i64,
    /// When the item leaves the inbox, ms since the epoch.
    pub expire_at_msec: i64,
    /// List order.
    pub revision: i64,
    /// Distinct senders on the item (retracted ones excluded), whether or not their origin is
    /// still among `origins`.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(range(min = 0)))]
    pub origins_count: i64,
    /// `originsCount` is exact. False only without Redis once the origins cap dropped a sender:
    /// then it is an upper bound (a returning sender may count twice).
    pub origins_count_exact: bool,
    /// Newest first; the first few
    pub origins: Vec<OriginView>,
    /// Read flag.
    pub read: bool,
    /// Seen flag (the badge).
    pub seen: bool,
    /// Archived flag.
    pub archived: bool,
    /// Where a tap leads.
    pub landing: Option<String>,
    /// Template arguments.
    pub message_arguments: BTreeMap<String, String>,
    /// "Ana and 3 others liked your post"
    pub summary: Option<String>,
}

/// The API shape of a stored (normalized) document: long names, dates as epoch ms, a summary.
/// The document must hold all its origins (a list page's are sliced: [`PageView::of`]).
#[must_use]
pub fn view(doc: &Value) -> NotificationView {
    view_capped(doc, None)
}

fn view_capped(doc: &Value, cap: Option<u32>) -> NotificationView {
    let d = StoredNotification::read(doc);
    let (origins_count, origins_count_exact) = senders(&d, cap);
    NotificationView {
        summary: summary_of(&d),
        origins: d
            .origins
            .into_iter()
            .map(|o| OriginView {
                sender_id: o.sender_id,
                name: o.name,
                avatar: o.avatar,
                landing: o.landing,
                created_time_msec: o.created_time_msec,
            })
            .collect(),
        notification_id: d.id,
        item_key: d.item_key,
        service_type: d.service_type,
        category_type: d.category_type,
        notification_type: d.notification_type,
        template_type: d.template_type,
        created_time_msec: d.created_time.unwrap_or_default(),
        expire_at_msec: d.expire_at.unwrap_or_default(),
        revision: d.revision,
        origins_count,
        origins_count_exact,
        read: d.read,
        seen: d.seen,
        archived: d.archived,
        landing: d.landing,
        message_arguments: d.message_arguments,
    }
}

/// A deleted, trimmed or expired item in the change feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(target_arch = "wasm32"), schemars(deny_unknown_fields))]
pub struct Tombstone {
    /// The item that is gone.
    pub item_key: String,
    /// Always `true`.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(transform = super::schema::always_true))]
    pub deleted: bool,
}

/// A change-feed entry: an item, or the tombstone of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(untagged)]
// `oneOf`: no value is both (a tombstone has exactly its two fields), and generators make a
// tagged union of it.
#[cfg_attr(not(target_arch = "wasm32"), schemars(transform = super::schema::one_of))]
pub enum ChangeEntry {
    /// A created, merged, retracted or flagged item.
    Item(Box<NotificationView>),
    /// A deleted, trimmed or expired item.
    Gone(Tombstone),
}

/// A change-feed entry: the item's view, or `{itemKey, deleted: true}` for a tombstone or an
/// item past its expiry (which the cron has not turned into a tombstone yet).
#[must_use]
pub fn change_view(doc: &Value, now_ms: i64) -> ChangeEntry {
    change_view_capped(doc, now_ms, None)
}

fn change_view_capped(doc: &Value, now_ms: i64, cap: Option<u32>) -> ChangeEntry {
    let gone = doc.get("deleted").and_then(Value::as_bool) == Some(true)
        || doc
            .get("expireAt")
            .and_then(ejson::date_ms)
            .is_some_and(|t| t <= now_ms);
    if gone {
        ChangeEntry::Gone(Tombstone {
            item_key: doc
                .get("itemKey")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            deleted: true,
        })
    } else {
        ChangeEntry::Item(Box::new(view_capped(doc, cap)))
    }
}

/// `GET /v1/notifications`: one page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "Page"))]
pub struct PageView {
    /// Newest first.
    pub items: Vec<NotificationView>,
    /// Pass back as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
    /// The badge over the whole unarchived inbox (unless `counts=false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "Counts"))]
    pub counts: Option<Counts>,
    /// Change-feed position of this snapshot.
    pub sync: String,
}

impl PageView {
    /// Renders a page the store read.
    #[must_use]
    pub fn of(page: &Page) -> Self {
        Self {
            items: page
                .items
                .iter()
                .map(|d| view_capped(d, Some(page.origins_cap)))
                .collect(),
            next_cursor: page.next_cursor.clone(),
            counts: page.counts,
            sync: page.sync.clone(),
        }
    }
}

/// `GET /v1/notifications/changes`: one page of the change feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "ChangesPage"))]
pub struct ChangesView {
    /// Oldest change first.
    pub items: Vec<ChangeEntry>,
    /// Where the next call resumes.
    pub sync: String,
    /// More changes are ready now: call again at once with `sync`.
    pub has_more: bool,
}

impl ChangesView {
    /// Renders a change-feed page the store read at `now_ms`.
    #[must_use]
    pub fn of(page: &Changes, now_ms: i64) -> Self {
        Self {
            items: page
                .items
                .iter()
                .map(|d| change_view_capped(d, now_ms, Some(page.origins_cap)))
                .collect(),
            sync: page.sync.clone(),
            has_more: page.has_more,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::document::field;
    use serde_json::json;

    fn doc(kind: &str, count: i64, names: &[&str]) -> Value {
        let origins: Vec<Value> = names
            .iter()
            .map(|n| json!({"s": n, "n": n, "t": 1}))
            .collect();
        json!({"notificationType": kind, (field::ORIGINS_COUNT): count, "origins": origins})
    }

    #[test]
    fn summaries_follow_count_and_newest_origin() {
        assert_eq!(
            summary(&doc("like", 1, &["Ana"])).unwrap(),
            "Ana liked your post"
        );
        assert_eq!(
            summary(&doc("like", 2, &["Ana", "Ben"])).unwrap(),
            "Ana and Ben liked your post"
        );
        assert_eq!(
            summary(&doc("comment", 4, &["Ana", "Ben", "Cy"])).unwrap(),
            "Ana and 3 others commented on your post"
        );
        assert_eq!(
            summary(&doc("like", 2, &["Ana"])).unwrap(),
            "Ana and 1 other liked your post"
        );
        assert_eq!(
            summary(&doc("odd", 1, &["Ana"])).unwrap(),
            "Ana sent you a notification"
        );
        assert_eq!(
            summary(&doc("like", 5, &[])).unwrap(),
            "5 people liked your post"
        );
        assert_eq!(summary(&doc("like", 0, &[])), None);
        let mut d = doc("like", 1, &["{post} {actor}"]);
        d["messageArguments"] = json!({"post": "x"});
        assert_eq!(summary(&d).unwrap(), "{post} {actor} liked your post");
        let mut r = doc("reply", 1, &["Ana"]);
        r["messageArguments"] = json!({"excerpt": "{actor}!"});
        assert_eq!(summary(&r).unwrap(), "Ana replied: {actor}!");
        r["messageArguments"] = json!({});
        assert_eq!(summary(&r).unwrap(), "Ana sent you a notification");
    }

    #[test]
    fn view_expands_short_names_and_dates() {
        let d = json!({"_id": "n1", "origins": [{"s": "s1", "n": "Ana", "a": "https://x/a.png", "t": 5, "e": "e1"}],
            (field::ORIGINS_COUNT): 1, "notificationType": "like", "createdTime": {"$date": 5}, "messageArguments": {"post": "Hi"}});
        let v = serde_json::to_value(view(&d)).unwrap();
        assert_eq!(v["notificationId"], "n1");
        assert_eq!(v["createdTimeMsec"], 5);
        assert_eq!(
            v[field::ORIGINS][0],
            json!({"senderId": "s1", "name": "Ana", "avatar": "https://x/a.png", "createdTimeMsec": 5})
        );
        assert_eq!(v["summary"], "Ana liked your post");
    }
}
