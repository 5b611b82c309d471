//! Dead letters: queued events that failed every attempt (or can never succeed), kept in the
//! Data API collection `{collection}_dead` for an operator to inspect and replay, for
//! [`super::NotifyConfig::dead_letter_retention_ms`] (a TTL index on `expireAt`; the erasure
//! fence outlasts it). Each letter names its event's `owner`, so an erasure finds them.

use serde_json::{json, Value};

use super::NotificationStore;
use std::collections::BTreeMap;

use crate::backend::{ejson, BackendError, FindOptions, HttpClient, RedisRestClient};

/// One dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The queue's message id (redelivery of the same dead letter stores it once).
    pub id: String,
    /// The message body as sent (an event's JSON).
    pub body: String,
    /// The queue it came from.
    pub queue: String,
    /// Why it is here.
    pub reason: String,
}

/// The dead-letter collection ([`super::Collections::dead_letters`]).
#[must_use]
pub fn collection(cfg: &super::NotifyConfig) -> String {
    cfg.collections().dead_letters
}

/// Stores letters, one idempotent upsert each (dead letters are rare); one result per letter,
/// so a caller acknowledges what was kept and redelivers only the rest.
pub async fn store<H: HttpClient>(
    s: &NotificationStore<H>,
    letters: &[DeadLetter],
    now_ms: i64,
) -> Vec<Result<(), BackendError>> {
    let coll = collection(s.config());
    let mut out = Vec::with_capacity(letters.len());
    for l in letters {
        let r = s
            .api()
            .update_one(
                &coll,
                &json!({ "_id": l.id }),
                &json!({ "$setOnInsert": {
                    "body": l.body, "queue": l.queue, "reason": l.reason,
                    "owner": owner_of(&l.body),
                    "failedAt": ejson::date(now_ms),
                    "expireAt": ejson::date(now_ms + s.config().dead_letter_retention_ms),
                } }),
                true,
            )
            .await;
        out.push(r.map(|_| ()));
    }
    out
}

/// Which letters' events are behind their owner's or their sender's erasure fence (created at
/// or before it): one fence lookup for all (a Redis `MGET`, or one Data API `find`), and one
/// call per fence that dropped any, to count them. A body that is not an event is behind no
/// fence; a failed lookup answers none (the letters are stored: a letter kept beats one lost).
pub async fn behind_fences<H: HttpClient>(
    s: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    letters: &[DeadLetter],
    now_ms: i64,
) -> Vec<bool> {
    // Per letter: its creation time and the fences it is checked against (owner's first, as
    // the create path counts a drop), as indices into one lookup.
    let mut fences: Vec<(String, String)> = Vec::new();
    let checks: Vec<Option<(i64, std::ops::Range<usize>)>> = letters
        .iter()
        .map(|l| {
            let (owner, sender, created) = fenced_fields(&l.body)?;
            let start = fences.len();
            fences.push((
                super::fence::doc_id(&owner),
                super::fence::redis_key(&owner),
            ));
            if let Some(sender) = sender {
                fences.push((
                    super::senders::fence_doc_id(&sender),
                    super::senders::fence_key(&sender),
                ));
            }
            Some((created, start..fences.len()))
        })
        .collect();
    let Ok(at) = super::fence::lookup_named(s, redis, &fences, now_ms).await else {
        return vec![false; letters.len()];
    };
    let mut dropped: BTreeMap<&str, u64> = BTreeMap::new();
    let behind = checks
        .into_iter()
        .map(|c| {
            let Some((created, range)) = c else {
                return false;
            };
            let hit = range
                .into_iter()
                .find(|&i| super::fence::behind(at.get(i).copied().flatten(), created));
            if let Some(i) = hit {
                *dropped.entry(fences[i].0.as_str()).or_default() += 1;
            }
            hit.is_some()
        })
        .collect();
    for (doc, n) in dropped {
        // A lost count loses only the figure.
        let _ = super::fence::count_dropped_named(s, doc, n).await;
    }
    behind
}

/// A letter's event's owner, sender id (if any) and creation time, when its body is an event.
fn fenced_fields(body: &str) -> Option<(String, Option<String>, i64)> {
    let v: Value = serde_json::from_str(body).ok()?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    Some((
        text(v.get("owner"))?,
        text(v.get("sender").and_then(|s| s.get("id"))),
        v.get("createdTimeMsec").and_then(Value::as_i64)?,
    ))
}

/// The `owner` of a letter's event (`null` when the body is not an event).
fn owner_of(body: &str) -> Value {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("owner").filter(|o| o.is_string()).cloned())
        .unwrap_or(Value::Null)
}

/// The oldest `limit` letters (of `ids` when given), as stored.
///
/// # Errors
/// Backend failures.
pub async fn list<H: HttpClient>(
    s: &NotificationStore<H>,
    ids: Option<&[String]>,
    limit: u32,
) -> Result<Vec<Value>, BackendError> {
    let filter = match ids {
        Some(ids) => json!({ "_id": { "$in": ids } }),
        None => json!({}),
    };
    let opts = FindOptions {
        sort: Some(json!({ "failedAt": 1, "_id": 1 })),
        limit: Some(limit),
        ..FindOptions::default()
    };
    s.api().find(&collection(s.config()), &filter, &opts).await
}

/// Removes letters by id (after they were replayed); returns how many went.
///
/// # Errors
/// Backend failures.
pub async fn remove<H: HttpClient>(
    s: &NotificationStore<H>,
    ids: &[String],
) -> Result<u64, BackendError> {
    s.api()
        .delete_many(&collection(s.config()), &json!({ "_id": { "$in": ids } }))
        .await
}

/// A stored letter as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeadLetterView {
    /// The queue's message id.
    pub id: String,
    /// The queue it came from.
    pub queue: Option<String>,
    /// Why it is here.
    pub reason: Option<String>,
    /// When the consumer gave up on it, ms since the epoch.
    pub failed_at_msec: Option<i64>,
    /// The queued event (its JSON), or the raw body when it is not JSON
    pub event: Value,
}

/// The API view of a stored letter (`event` is the parsed body, or the raw text when it is not
/// JSON).
#[must_use]
pub fn view(doc: &Value) -> DeadLetterView {
    let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
    let body = doc.get("body").and_then(Value::as_str).unwrap_or_default();
    DeadLetterView {
        id: text("_id").unwrap_or_default(),
        queue: text("queue"),
        reason: text("reason"),
        failed_at_msec: doc.get("failedAt").and_then(ejson::date_ms),
        event: serde_json::from_str::<Value>(body)
            .unwrap_or_else(|_| Value::String(body.to_owned())),
    }
}
