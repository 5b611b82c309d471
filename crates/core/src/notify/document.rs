//! The stored notification document as types: the short field names of an origin are serde
//! `rename`s (one struct writes and reads them), and a read document is deserialized once
//! instead of probed field by field. The update operators (`$push`, `$max`…) stay JSON in
//! [`super::rules`]: they name these fields, they are not documents.
//!
//! Reading is lenient the way the probing was: a field an older document lacks reads as its
//! default, so a document never fails to render.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::backend::ejson;

/// One sender on an item. Short names: an item holds up to the origins cap (100) of them, and a
/// big document shortens the oplog's retention (seeds §1, lesson 1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct StoredOrigin {
    /// The sender's id.
    #[serde(rename = "s", default)]
    pub sender_id: String,
    /// The sender's display name.
    #[serde(rename = "n", default)]
    pub name: String,
    /// The sender's avatar URL.
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub avatar: Option<String>,
    /// Event time, ms since the epoch: origins are kept newest first by it.
    #[serde(rename = "t", default)]
    pub created_time_msec: i64,
    /// Where this sender's event leads.
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub landing: Option<String>,
    /// The producer's event id.
    #[serde(rename = "e", default)]
    pub event_id: String,
}

/// A retracted sender, kept (capped) so that a create delayed past its retraction stays out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Retracted {
    /// The sender's id.
    #[serde(rename = "s", default)]
    pub sender_id: String,
    /// When it was retracted, ms since the epoch.
    #[serde(rename = "t", default)]
    pub at_msec: i64,
}

/// A stored notification (normalized EJSON: dates are `{"$date": ms}`), as the list, the change
/// feed and the badge read it. `_id` is the notification id (a hash of owner + itemKey).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct StoredNotification {
    /// The notification id.
    #[serde(rename = "_id")]
    pub id: String,
    /// Recipient.
    pub owner: String,
    /// Merge key within the owner's inbox.
    pub item_key: String,
    /// Producing service.
    pub service_type: String,
    /// Inbox category.
    pub category_type: String,
    /// Kind of activity; picks the summary template.
    pub notification_type: String,
    /// Client layout.
    pub template_type: String,
    /// The newest event's time.
    #[serde(deserialize_with = "date_ms")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "ejson::Date"))]
    pub created_time: Option<i64>,
    /// When the item leaves the inbox.
    #[serde(deserialize_with = "date_ms")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "ejson::Date"))]
    pub expire_at: Option<i64>,
    /// List order (a write clock, so a late event still lands on top).
    pub revision: i64,
    /// Distinct senders on the item, as the document counts them (`$inc` behind "not already
    /// here": exact until the origins cap drops a sender).
    pub origins_count: i64,
    /// The roster's tally when Redis counts the senders (see [`super::roster`]).
    #[serde(rename = "oc")]
    pub tally: Option<i64>,
    /// Newest first, at most the origins cap.
    pub origins: Vec<StoredOrigin>,
    /// Retracted senders (capped).
    #[serde(rename = "x")]
    pub retracted: Vec<Retracted>,
    /// The generation of the new roster the write that inserted the item saw (see
    /// [`super::roster::reseed`]).
    #[serde(rename = "rg")]
    pub roster_generation: Option<i64>,
    /// Read flag.
    pub read: bool,
    /// Seen flag (the badge).
    pub seen: bool,
    /// Archived flag.
    pub archived: bool,
    /// A tombstone: deleted, kept until `purgeAt` for other devices' change feeds.
    pub deleted: bool,
    /// Where a tap leads.
    pub landing: Option<String>,
    /// Template arguments.
    pub message_arguments: BTreeMap<String, String>,
}

impl StoredNotification {
    /// Reads a stored document; a field of an unexpected type reads as its default (a document
    /// always renders, as it did when fields were probed one by one).
    #[must_use]
    pub fn read(doc: &Value) -> Self {
        Self::deserialize(doc).unwrap_or_else(|_| Self::read_leniently(doc))
    }

    /// Field by field: one bad field does not cost the others.
    fn read_leniently(doc: &Value) -> Self {
        let Value::Object(map) = doc else {
            return Self::default();
        };
        let mut out = serde_json::Map::new();
        for (k, v) in map {
            let mut one = serde_json::Map::new();
            one.insert(k.clone(), v.clone());
            // Borrowed, as in `read`: one instance of the derived visitor, not two.
            if Self::deserialize(&Value::Object(one)).is_ok() {
                out.insert(k.clone(), v.clone());
            }
        }
        Self::deserialize(&Value::Object(out)).unwrap_or_default()
    }
}

/// An EJSON date (`{"$date": …}` in any of its forms) as ms; absent or unreadable is `None`.
/// The stored document's names that filters, updates and projections spell out (outside
/// serde): written once, beside the structs whose serde names they are (a test checks both
/// agree).
pub mod field {
    /// [`super::StoredNotification::origins_count`].
    pub const ORIGINS_COUNT: &str = "originsCount";
    /// [`super::StoredOrigin::sender_id`] inside `origins` (a dotted path).
    pub const ORIGIN_SENDER: &str = "origins.s";
    /// [`super::StoredOrigin::created_time_msec`] inside `origins` (a dotted path).
    pub const ORIGIN_TIME: &str = "origins.t";
    /// [`super::StoredNotification::origins`].
    pub const ORIGINS: &str = "origins";
    /// The second entry of `origins` (a dotted path): `{$exists: false}` = at most one sender.
    pub const SECOND_ORIGIN: &str = "origins.1";
    /// [`super::StoredNotification::retracted`].
    pub const RETRACTED: &str = "x";
    /// [`super::Retracted::sender_id`] inside `x` (a dotted path).
    pub const RETRACTED_SENDER: &str = "x.s";
    /// [`super::StoredNotification::tally`].
    pub const TALLY: &str = "oc";
    /// [`super::StoredNotification::roster_generation`].
    pub const ROSTER_GENERATION: &str = "rg";
}

fn date_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(ejson::date_ms(&Value::deserialize(d)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_names_round_trip() {
        let o = StoredOrigin {
            sender_id: "s1".into(),
            name: "Ana".into(),
            avatar: None,
            created_time_msec: 5,
            landing: Some("app://p".into()),
            event_id: "e1".into(),
        };
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(
            v,
            json!({"s": "s1", "n": "Ana", "t": 5, "l": "app://p", "e": "e1"})
        );
        assert_eq!(serde_json::from_value::<StoredOrigin>(v).unwrap(), o);
    }

    #[test]
    fn reads_dates_and_defaults_missing_fields() {
        let d = StoredNotification::read(&json!({
            "_id": "n1", "createdTime": {"$date": 7}, "expireAt": {"$date": "1970-01-01T00:00:00.009Z"},
            "origins": [{"s": "a", "n": "A", "t": 1, "e": "x"}], "x": [{"s": "b", "t": 2}],
        }));
        assert_eq!(d.id, "n1");
        assert_eq!((d.created_time, d.expire_at), (Some(7), Some(9)));
        assert_eq!(d.origins[0].sender_id, "a");
        assert_eq!(d.retracted[0].at_msec, 2);
        assert!(!d.read && !d.deleted && d.landing.is_none());
    }

    #[test]
    fn the_spelled_out_names_are_the_serde_names() {
        let (sender, time) = (
            field::ORIGIN_SENDER.strip_prefix("origins.").unwrap(),
            field::ORIGIN_TIME.strip_prefix("origins.").unwrap(),
        );
        let mut doc = json!({ "origins": [{ sender: "s9", time: 4 }] });
        doc[field::ORIGINS_COUNT] = json!(7);
        doc[field::RETRACTED] = json!([{ sender: "s8", time: 3 }]);
        doc[field::TALLY] = json!(8);
        doc[field::ROSTER_GENERATION] = json!(9);
        let d = StoredNotification::read(&doc);
        assert_eq!(d.origins_count, 7);
        assert_eq!((d.tally, d.roster_generation), (Some(8), Some(9)));
        assert_eq!(d.retracted[0].sender_id, "s8");
        assert_eq!(format!("{}.1", field::ORIGINS), field::SECOND_ORIGIN);
        assert_eq!(
            format!("{}.{sender}", field::RETRACTED),
            field::RETRACTED_SENDER
        );
        assert_eq!(
            (
                d.origins[0].sender_id.as_str(),
                d.origins[0].created_time_msec
            ),
            ("s9", 4)
        );
    }

    #[test]
    fn one_bad_field_costs_only_itself() {
        let d = StoredNotification::read(
            &json!({"_id": "n1", "read": "yes", (field::ORIGINS_COUNT): 3}),
        );
        assert_eq!((d.id.as_str(), d.read, d.origins_count), ("n1", false, 3));
        assert_eq!(
            StoredNotification::read(&json!([1])),
            StoredNotification::default()
        );
    }
}
