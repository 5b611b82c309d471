//! Merge and retract as single atomic Data API operations (no read-modify-write, no lock).

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::document::field;
use super::document::{Retracted, StoredOrigin};
use super::{NotificationEvent, NotifyConfig};
use crate::backend::{ejson, BackendError, UpdateResult};

/// Deterministic id of the (owner, itemKey) item: base64url of 96 bits of SHA-256.
///
/// Deterministic so a racing second insert collides on `_id` as well as on the unique index,
/// and so the id needs no random source in wasm.
#[must_use]
pub fn notification_id(owner: &str, item_key: &str) -> String {
    let mut h = Sha256::new();
    h.update(owner.as_bytes());
    h.update([0u8]);
    h.update(item_key.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&h.finalize()[..12])
}

/// Revision of a write: `now_ms · 1024 + freshness`, freshness = `1023 − min(age, 1023)` with
/// `age = now_ms − event time` (ms, clamped at 0 for a clock slightly ahead).
///
/// Taken from the *write* clock, not the event time, so a late event still sorts above everything
/// a client has seen (list order and `changed_since` stay monotonic). Within one millisecond of
/// the write clock (a queue batch is written with one clock; a Worker's clock does not advance
/// while a request computes), the low bits order writes by their event's freshness, so the newer
/// event lists on top instead of in hash order. Equal revisions are ordered by `_id` everywhere
/// (list pages, trimming). Stays below 2^53 until the year 2248, so JavaScript clients read it
/// exactly.
#[must_use]
pub fn revision(now_ms: i64, event_time_ms: i64) -> i64 {
    let age = now_ms.saturating_sub(event_time_ms).clamp(0, 1023);
    now_ms.saturating_mul(1024).saturating_add(1023 - age)
}

/// The create/merge: one `updateOne` with `upsert: true` → `(filter, update)`.
///
/// * The filter excludes documents that already hold this sender, so a repeat cannot double
///   count. On a miss the upsert tries to insert and the unique (owner, itemKey) index (and the
///   deterministic `_id`) refuse it: see [`classify_create_result`].
/// * Origins are kept newest-first **by event time** (`$sort {t:-1}` then `$slice cap`), so
///   out-of-order delivery still keeps the newest `cap`; `originsCount` counts every sender.
/// * `createdTime`/`expireAt` only move forward (`$max`); flags reset so the item resurfaces.
/// * A tombstone (deleted item) is revived by the same update: its origins are empty and its
///   count 0, so the push and the increment start it afresh.
#[must_use]
pub fn create_upsert(ev: &NotificationEvent, cfg: &NotifyConfig, now_ms: i64) -> (Value, Value) {
    // A sender retracted at or after this event's time stays out: a create delayed past its
    // retraction (the worker timed out, the request landed later) must not bring it back.
    let filter = json!({
        "owner": ev.owner, "itemKey": ev.item_key, (field::ORIGIN_SENDER): { "$ne": ev.sender.id },
        "$nor": [{ (field::RETRACTED): { "$elemMatch": { "s": ev.sender.id, "t": { "$gte": ev.created_time_msec } } } }],
    });
    let mut set = json!({
        "revision": revision(now_ms, ev.created_time_msec),
        "read": false, "seen": false, "archived": false, "deleted": false,
    });
    if let Some(l) = &ev.landing {
        set["landing"] = l.clone().into();
    }
    if !ev.message_arguments.is_empty() {
        set["messageArguments"] = json!(ev.message_arguments);
    }
    let update = json!({
        "$setOnInsert": {
            "_id": notification_id(&ev.owner, &ev.item_key),
            "serviceType": ev.service_type, "categoryType": ev.category_type,
            "notificationType": ev.notification_type, "templateType": ev.template_type,
        },
        "$push": { (field::ORIGINS): { "$each": [origin(ev)], "$sort": { "t": -1 }, "$slice": cfg.origins_cap.max(1) } },
        "$inc": { (field::ORIGINS_COUNT): 1 },
        "$max": {
            "createdTime": ejson::date(ev.created_time_msec),
            "expireAt": ejson::date(ev.created_time_msec.saturating_add(cfg.ttl_ms)),
            "purgeAt": ejson::date(
                ev.created_time_msec
                    .saturating_add(cfg.ttl_ms)
                    .saturating_add(cfg.tombstone_ttl_ms),
            ),
        },
        "$set": set,
        "$currentDate": { "sync": true },
    });
    (filter, update)
}

/// The retracted list `x` keeps the newest `retracted_cap` retractions (by time), so past that
/// many the `$nor` clause of a create can no longer see every retraction: a create delayed while
/// `cap` others of the same item landed after its sender's would bring the sender back. This
/// clause lets a write through only while the list is provably complete from `event_time_ms`
/// on: it is not full, or its oldest kept entry is older than the event. (An entry at or after
/// the event could only have been dropped while `cap` entries at or after it were kept, and
/// drops take the oldest, so the oldest kept would still be at or after the event.) When it
/// misses, the roster decides instead ([`super::roster::create_checked`]).
pub fn with_retraction_guard(filter: &mut Value, event_time_ms: i64, cfg: &NotifyConfig) {
    let last = format!("{}.{}", field::RETRACTED, cfg.retracted_cap.max(1) - 1);
    filter["$or"] = json!([
        { (last.as_str()): { "$exists": false } },
        { (format!("{last}.t")): { "$lt": event_time_ms } },
    ]);
}

/// Whether [`with_retraction_guard`] at `event_time_ms` holds on `doc` (its `x` as stored:
/// newest first).
#[must_use]
pub fn retractions_complete(doc: &Value, event_time_ms: i64, cfg: &NotifyConfig) -> bool {
    let last = usize::try_from(cfg.retracted_cap.max(1) - 1).unwrap_or(usize::MAX);
    doc.get(field::RETRACTED)
        .and_then(Value::as_array)
        .and_then(|x| x.get(last))
        .is_none_or(|e| {
            e.get("t")
                .and_then(Value::as_i64)
                .is_some_and(|t| t < event_time_ms)
        })
}

/// Whether `doc` (its `origins.s` and `x`) already holds what a create of `sender_id` at
/// `event_time_ms` would do: the sender is stored, or was retracted at or after the event.
#[must_use]
pub fn holds_sender(doc: &Value, sender_id: &str, event_time_ms: i64) -> bool {
    let list = |f: &str| doc.get(f).and_then(Value::as_array).into_iter().flatten();
    let s = |v: &Value| v.get("s").and_then(Value::as_str) == Some(sender_id);
    list(field::ORIGINS).any(s)
        || list(field::RETRACTED).any(|x| {
            s(x) && x
                .get("t")
                .and_then(Value::as_i64)
                .is_some_and(|t| t >= event_time_ms)
        })
}

/// Stores a roster tally with the write (`$max`: the newest tally wins, see [`super::roster`]).
pub fn with_tally(update: &mut Value, tally: Option<i64>) {
    if let Some(t) = tally {
        update["$max"][field::TALLY] = json!(t);
    }
}

/// A write made while its item's roster is new (see [`super::roster`]): it stores the roster's
/// generation if it inserts the item, and pushes its origin without the cap's `$slice`, so no
/// sender leaves the document before the roster is completed from it (the next capped write
/// trims the array).
pub fn with_generation(update: &mut Value, generation: Option<i64>) {
    if let Some(g) = generation {
        update["$setOnInsert"][field::ROSTER_GENERATION] = json!(g);
        // `get_mut`, not indexing: an update without an origins push (a retraction's record)
        // must not gain one.
        let push = update
            .get_mut("$push")
            .and_then(|p| p.get_mut(field::ORIGINS));
        if let Some(push) = push.and_then(Value::as_object_mut) {
            push.remove("$slice");
        }
    }
}

/// The compact origin an event adds to its item.
pub(super) fn origin(ev: &NotificationEvent) -> Value {
    json!(StoredOrigin {
        sender_id: ev.sender.id.clone(),
        name: ev.sender.name.clone(),
        avatar: ev.sender.avatar.clone(),
        created_time_msec: ev.created_time_msec,
        landing: ev.landing.clone(),
        event_id: ev.event_id.clone(),
    })
}

/// What a create did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    /// A new item was inserted.
    Created,
    /// The sender was merged into an existing item.
    Merged,
    /// This sender was already in the item: nothing changed (idempotent repeat).
    AlreadyApplied,
}

/// Next step after one create attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateStep {
    /// Finished.
    Done(CreateOutcome),
    /// Send the same upsert once more.
    Retry,
    /// Give up with this error.
    Fail(BackendError),
}

/// Interprets an upsert result; `attempt` counts from 0.
///
/// A duplicate key is ambiguous on the first attempt: either this sender is already present (the
/// filter missed an existing item) or a concurrent create inserted the item first and *our*
/// origin is still missing. Retrying once settles it: the item now exists, so the filter either
/// matches (merge) or misses again because the sender is there — then it really is
/// [`CreateOutcome::AlreadyApplied`].
#[must_use]
pub fn classify_create_result(
    result: Result<UpdateResult, BackendError>,
    attempt: u32,
) -> CreateStep {
    match result {
        Ok(r) if r.upserted_id.is_some() => CreateStep::Done(CreateOutcome::Created),
        Ok(r) if r.matched > 0 => CreateStep::Done(CreateOutcome::Merged),
        Ok(r) => CreateStep::Fail(BackendError::Decode(format!(
            "upsert neither matched nor inserted: {r:?}"
        ))),
        Err(BackendError::DuplicateKey { .. }) if attempt == 0 => CreateStep::Retry,
        Err(BackendError::DuplicateKey { .. }) => CreateStep::Done(CreateOutcome::AlreadyApplied),
        Err(e) => CreateStep::Fail(e),
    }
}

/// What a retraction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetractOutcome {
    /// The origin was removed; the item remains (re-render its summary).
    Updated,
    /// The sender was the last one stored: the item was deleted (a tombstone).
    Deleted,
    /// The sender is not in the item (already retracted, not yet arrived, or dropped by the
    /// cap); the retraction is remembered so a late create of it is refused.
    NotFound,
}

fn push_retracted(sender_id: &str, now_ms: i64, cfg: &NotifyConfig) -> Value {
    json!({ (field::RETRACTED): { "$each": [Retracted { sender_id: sender_id.to_owned(), at_msec: now_ms }], "$sort": { "t": -1 }, "$slice": cfg.retracted_cap.max(1) } })
}

/// Retract step 1: pull the sender when other senders remain *in the array* → `updateOne`.
///
/// The Data API has no findAndModify, so the branch is picked by guards rather than by reading
/// the result: `origins.1` exists means at least two origins are stored, so pulling one never
/// leaves an empty array. (`originsCount` can be larger than the array once the cap dropped older
/// senders; guarding on it would leave `origins: []` with a count no retraction could remove.)
/// The sender goes on the retracted list either way, so a delayed create stays refused.
#[must_use]
pub fn retract_update(
    owner: &str,
    item_key: &str,
    sender_id: &str,
    cfg: &NotifyConfig,
    now_ms: i64,
) -> (Value, Value) {
    (
        json!({ "owner": owner, "itemKey": item_key, "deleted": { "$ne": true },
                (field::ORIGIN_SENDER): sender_id, (field::SECOND_ORIGIN): { "$exists": true } }),
        json!({
            "$pull": { (field::ORIGINS): { "s": sender_id } },
            "$inc": { (field::ORIGINS_COUNT): -1 },
            "$push": push_retracted(sender_id, now_ms, cfg),
            "$currentDate": { "sync": true },
        }),
    )
}

/// Narrows retract step 1 or 2 to the origin one event's write added (`e`: its event id), so
/// taking that write back ([`super::roster::undo_retracted`]) cannot pull a newer event of the
/// same sender that landed meanwhile.
pub fn only_event(step: &mut (Value, Value), sender_id: &str, event_id: &str) {
    let origin = json!({ "s": sender_id, "e": event_id });
    if let Some(f) = step.0.as_object_mut() {
        f.remove(field::ORIGIN_SENDER);
        f.insert(field::ORIGINS.into(), json!({ "$elemMatch": origin }));
    }
    if let Some(p) = step
        .1
        .get_mut("$pull")
        .and_then(|p| p.get_mut(field::ORIGINS))
    {
        *p = origin;
    }
}

/// Retract step 2: the sender is the only stored origin → tombstone the item (`updateOne`).
///
/// Even when `originsCount` says older senders existed: with none left in the array the item
/// cannot be rendered ("Ana and 3 others" with no Ana), so it goes.
#[must_use]
pub fn retract_delete(
    owner: &str,
    item_key: &str,
    sender_id: &str,
    cfg: &NotifyConfig,
    now_ms: i64,
) -> (Value, Value) {
    let mut update = super::query::tombstone_update(cfg, now_ms);
    update["$push"] = push_retracted(sender_id, now_ms, cfg);
    (
        json!({ "owner": owner, "itemKey": item_key, "deleted": { "$ne": true },
                (field::ORIGIN_SENDER): sender_id, (field::SECOND_ORIGIN): { "$exists": false } }),
        update,
    )
}

/// Retract step 3: the sender is not stored (not yet arrived, already gone, or dropped by the
/// cap) → remember the retraction, creating a tombstone if there is no item (`updateOne`, upsert).
///
/// This is what closes the delayed-create race: a create for this sender with an event time up
/// to now finds it on the list and is refused, even if it lands after the retraction.
#[must_use]
pub fn retract_record(
    owner: &str,
    item_key: &str,
    sender_id: &str,
    cfg: &NotifyConfig,
    now_ms: i64,
) -> (Value, Value) {
    (
        json!({ "owner": owner, "itemKey": item_key, (field::ORIGIN_SENDER): { "$ne": sender_id } }),
        json!({
            "$push": push_retracted(sender_id, now_ms, cfg),
            "$setOnInsert": {
                "_id": notification_id(owner, item_key),
                "deleted": true, (field::ORIGINS): [], (field::ORIGINS_COUNT): 0,
                "read": true, "seen": true, "archived": false,
                "expireAt": ejson::date(now_ms),
                "purgeAt": ejson::date(now_ms.saturating_add(cfg.tombstone_ttl_ms)),
            },
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::event::tests::{raw, NOW};

    fn ev(sender: &str) -> NotificationEvent {
        NotificationEvent::new(
            raw("u1", "post:1", sender, &format!("e-{sender}")),
            &NotifyConfig::default(),
            NOW,
        )
        .unwrap()
    }

    #[test]
    fn a_new_rosters_generation_lifts_the_cap_only_where_origins_are_pushed() {
        let cfg = NotifyConfig::default();
        let (_, mut create) = create_upsert(&ev("s1"), &cfg, NOW);
        with_generation(&mut create, Some(7));
        assert_eq!(create["$setOnInsert"][field::ROSTER_GENERATION], json!(7));
        assert!(create["$push"][field::ORIGINS].get("$slice").is_none());
        assert!(create["$push"][field::ORIGINS].get("$each").is_some());
        // A retraction's record pushes only `x`: it must not gain an `origins: null` push
        // (which would store a null origin; found by the fault test).
        let (_, mut record) = retract_record("u1", "post:1", "s1", &cfg, NOW);
        let before = record["$push"].clone();
        with_generation(&mut record, Some(7));
        assert_eq!(record["$push"], before);
        let (_, mut plain) = create_upsert(&ev("s1"), &cfg, NOW);
        with_generation(&mut plain, None);
        assert_eq!(
            plain["$push"][field::ORIGINS]["$slice"],
            json!(cfg.origins_cap)
        );
    }

    #[test]
    fn upsert_excludes_present_sender_and_pushes_compact_origin() {
        let cfg = NotifyConfig {
            origins_cap: 3,
            ..NotifyConfig::default()
        };
        let (filter, update) = create_upsert(&ev("s1"), &cfg, NOW + 5);
        assert_eq!(filter[field::ORIGIN_SENDER], json!({"$ne": "s1"}));
        assert_eq!(
            filter["$nor"][0][field::RETRACTED]["$elemMatch"],
            json!({"s": "s1", "t": {"$gte": NOW}})
        );
        let push = &update["$push"][field::ORIGINS];
        assert_eq!(push["$slice"], 3);
        assert_eq!(push["$sort"], json!({"t": -1}));
        assert_eq!(
            push["$each"][0],
            json!({"s": "s1", "n": "Name s1", "t": NOW, "l": "app://post/1", "e": "e-s1"})
        );
        assert_eq!(update["$inc"], json!({(field::ORIGINS_COUNT): 1}));
        assert_eq!(
            update["$setOnInsert"]["_id"],
            notification_id("u1", "post:1")
        );
        assert_eq!(update["$max"]["createdTime"], ejson::date(NOW));
        assert_eq!(update["$set"]["read"], false);
        // Fields set by different operators must not overlap (MongoDB rejects conflicts).
        let mut seen = std::collections::HashSet::new();
        for (_, fields) in update.as_object().unwrap() {
            for k in fields.as_object().unwrap().keys() {
                assert!(seen.insert(k.clone()), "field {k} set twice");
            }
        }
    }

    #[test]
    fn revision_grows_with_the_write_clock_then_event_freshness_and_fits_a_js_number() {
        // The write clock decides first, whatever the event times.
        assert!(revision(NOW + 1, NOW - 5_000) > revision(NOW, NOW));
        assert!(revision(NOW, NOW + 60_000) < (1_i64 << 53));
        assert_eq!(revision(NOW, NOW - 7) >> 10, NOW);
        // Within one write millisecond, the fresher event ranks higher; ages past ~1 s tie.
        assert!(revision(NOW, NOW - 1) > revision(NOW, NOW - 2));
        assert_eq!(revision(NOW, NOW + 3), revision(NOW, NOW));
        assert_eq!(revision(NOW, NOW - 2_000), revision(NOW, NOW - 1_023));
    }

    #[test]
    fn ids_are_stable_and_separate_owner_from_key() {
        // Stored as `_id`, so it must never change between releases. Expected value computed
        // outside Rust: base64url(sha256(b"u1\0k")[:12]) with Python's hashlib.
        assert_eq!(notification_id("u1", "k"), "nZZ4mjQP_bZX6TWl");
        assert_ne!(notification_id("u1", "k"), notification_id("u", "1k"));
        assert_eq!(notification_id("u1", "k").len(), 16);
    }

    #[test]
    fn classify_retries_a_duplicate_once() {
        let dup = || {
            Err(BackendError::DuplicateKey {
                message: String::new(),
            })
        };
        assert_eq!(classify_create_result(dup(), 0), CreateStep::Retry);
        assert_eq!(
            classify_create_result(dup(), 1),
            CreateStep::Done(CreateOutcome::AlreadyApplied)
        );
        let ins = UpdateResult {
            matched: 0,
            modified: 0,
            upserted_id: Some(json!("x")),
        };
        assert_eq!(
            classify_create_result(Ok(ins), 0),
            CreateStep::Done(CreateOutcome::Created)
        );
        let merged = UpdateResult {
            matched: 1,
            modified: 1,
            upserted_id: None,
        };
        assert_eq!(
            classify_create_result(Ok(merged), 1),
            CreateStep::Done(CreateOutcome::Merged)
        );
        let down = BackendError::Unavailable {
            status: Some(503),
            timed_out: false,
            message: String::new(),
        };
        assert_eq!(
            classify_create_result(Err(down.clone()), 0),
            CreateStep::Fail(down)
        );
    }

    #[test]
    fn only_event_narrows_a_retraction_to_one_events_origin() {
        let cfg = NotifyConfig::default();
        let mut step = retract_update("u", "k", "s", &cfg, 9);
        only_event(&mut step, "s", "e1");
        let origin = json!({ "s": "s", "e": "e1" });
        assert_eq!(step.0[field::ORIGINS], json!({ "$elemMatch": origin }));
        assert!(step.0.get(field::ORIGIN_SENDER).is_none());
        assert_eq!(step.1["$pull"][field::ORIGINS], origin);
        let mut step = retract_delete("u", "k", "s", &cfg, 9);
        only_event(&mut step, "s", "e1");
        assert_eq!(step.0[field::ORIGINS], json!({ "$elemMatch": origin }));
        assert!(step.1.get("$pull").is_none());
    }

    #[test]
    fn retract_guards_are_complementary() {
        let cfg = NotifyConfig {
            retracted_cap: 4,
            ..NotifyConfig::default()
        };
        let (f1, u1) = retract_update("u", "k", "s", &cfg, 9);
        let (f2, u2) = retract_delete("u", "k", "s", &cfg, 9);
        assert_eq!(f1[field::SECOND_ORIGIN], json!({"$exists": true}));
        assert_eq!(f2[field::SECOND_ORIGIN], json!({"$exists": false}));
        assert_eq!(u1["$pull"], json!({"origins": {"s": "s"}}));
        assert_eq!(u2["$set"]["deleted"], true);
        for u in [&u1, &u2] {
            assert_eq!(u["$push"][field::RETRACTED]["$slice"], 4);
            assert_eq!(
                u["$push"][field::RETRACTED]["$each"][0],
                json!({"s": "s", "t": 9})
            );
        }
        let (f3, u3) = retract_record("u", "k", "s", &cfg, 9);
        assert_eq!(f3[field::ORIGIN_SENDER], json!({"$ne": "s"}));
        assert_eq!(u3["$setOnInsert"]["deleted"], true);
    }
}
