//! Exact sender counts at any size: each item's senders live in a Redis roster, checked and
//! changed inside the reservation the create already makes (`dedup/roster.lua`), and the
//! document carries the roster's *tally* (`oc`).
//!
//! Why not the document alone: it keeps the newest `origins_cap` origins (big documents shorten
//! oplog retention, seeds §1), so a sender the cap dropped passes "not already here" and was
//! counted again; and a retraction of such a sender could not find it to uncount it.
//!
//! * **Roster** `rs:{notificationId}`, one hash: field = 64 bits of SHA-256 of the sender id
//!   (decimal int64; two of 100 000 senders collide with probability ≈ 3·10⁻¹⁰), value = the
//!   sender's newest event time + 1, or −(retraction time + 1) once retracted; `n` = senders on
//!   the item, `v` = changes.
//! * **Lifetime** ([`life`]): a roster with no more senders than the origins cap (and fewer
//!   retractions than the retracted cap) can be rebuilt from its document, which holds every
//!   one of them, so it expires after `NOTIFY_ROSTER_IDLE_MINUTES` without a change; a larger one
//!   lives as long as its item. Most items are small and quiet after their first day, so Redis
//!   holds the rosters of the active items, not of the whole retention.
//! * **Rebuilding** ([`reseed`]): the script marks a roster it creates as new (`f`); the writer
//!   of the event that found it so either learns from its upsert that the item is new too (the
//!   commit drops the mark) or reads the document's origins and retractions and merges them into
//!   the roster (`seed.lua`), storing a tally whose version is above every earlier one.
//! * **Tally** `v · 2^24 + n`: every write of the item carries the tally its reservation saw and
//!   stores it with `$max`, so whatever order concurrent or retried writes land in, the document
//!   ends with the newest count. A sender joins the roster at reservation time; if its write then
//!   fails, the client's retry (the API answers 503, retryable) writes it, and the count already
//!   included it.
//! * **Retraction** takes the sender off the roster first and counts from max(now, its newest
//!   event time), so a create the roster saw earlier is refused by the document's `x` list too.
//!
//! Without Redis the document's own `originsCount` (`$inc` behind "not already here") is the
//! count: exact until the cap drops an origin, an upper bound after, and the API says which
//! (`originsCountExact`).

use sha2::{Digest, Sha256};

use serde_json::json;

use super::document::field;
use super::document::StoredNotification;
use super::{
    notification_id, CreateOutcome, GuardedCreate, NotificationEvent, NotificationStore,
    NotifyConfig, NotifyError,
};
use crate::backend::{BackendError, HttpClient, RedisRestClient};
use crate::dedup::{self, RosterCheck, RosterLife, RosterSeed};

/// Counts saturate below this (2^24 − 1 senders per item); the rest of a tally is the version.
pub const SPAN: i64 = 1 << 24;

/// The Redis key of an item's roster.
#[must_use]
pub fn key(owner: &str, item_key: &str) -> String {
    format!("rs:{}", notification_id(owner, item_key))
}

/// The Redis key of an item's event counter (burst detection, see [`crate::dedup::HotConfig`]).
#[must_use]
pub fn hot_key(owner: &str, item_key: &str) -> String {
    format!("hc:{}", notification_id(owner, item_key))
}

/// A sender's roster field: 64 bits of SHA-256 of its id, as a canonical decimal int64 (which
/// a small hash stores as an 8-byte integer).
#[must_use]
pub fn field(sender_id: &str) -> String {
    let d = Sha256::digest(sender_id.as_bytes());
    i64::from_be_bytes(d[..8].try_into().expect("8 bytes")).to_string()
}

/// The roster check of an event's reservation: its item's roster, its sender, its time.
#[must_use]
pub fn check(ev: &NotificationEvent) -> RosterCheck {
    RosterCheck {
        key: key(ev.owner(), ev.item_key()),
        field: field(&ev.sender.id),
        event_time_ms: ev.created_time_msec(),
    }
}

/// How long a roster outlives its last change: the item's lifetime and its tombstone's, or
/// `roster_idle_ms` while the document can rebuild it (see the module docs); `lease_ms` (the
/// reservation's) is how long its creator has to complete a new one.
#[must_use]
pub fn life(cfg: &NotifyConfig, lease_ms: u64) -> RosterLife {
    let ms = |v: i64| u64::try_from(v).unwrap_or(0);
    RosterLife {
        full_ms: ms(cfg.ttl_ms.saturating_add(cfg.tombstone_ttl_ms)),
        idle_ms: ms(cfg.roster_idle_ms),
        max_senders: cfg.origins_cap,
        max_retractions: cfg.retracted_cap,
        grace_ms: lease_ms,
    }
}

/// The document's senders in the roster's terms: its origins, then the retracted senders it
/// lists that are not origins (each at its newest retraction).
#[must_use]
pub fn seed_of(doc: &StoredNotification) -> RosterSeed {
    let mut senders: Vec<(String, i64)> = doc
        .origins
        .iter()
        .map(|o| (field(&o.sender_id), o.created_time_msec.saturating_add(1)))
        .collect();
    let mut retracted: Vec<&super::document::Retracted> = doc.retracted.iter().collect();
    retracted.sort_by_key(|x| std::cmp::Reverse(x.at_msec));
    for x in retracted {
        let f = field(&x.sender_id);
        if !senders.iter().any(|(s, _)| *s == f) {
            senders.push((f, -(x.at_msec.saturating_add(1))));
        }
    }
    let held = i64::try_from(doc.origins.len()).unwrap_or(i64::MAX);
    RosterSeed {
        senders,
        version: doc.tally.map_or(0, |t| t.div_euclid(SPAN)),
        uncounted: (doc.origins_count - held).max(0),
        retractions: doc.retracted.len(),
    }
}

/// Creates or merges an event whose sender the reservation put on (or found on) the roster,
/// without trusting the document's capped retracted list past what it can vouch for.
///
/// The write carries [`super::rules::with_retraction_guard`]: the common case, one upsert as
/// before. When the item's list is full of retractions at or after this event, the document
/// cannot tell whether this sender's was among those it dropped, so the roster (which keeps
/// every retraction while the item has that many) decides: retracted at or after the event →
/// refused; else the write goes without the guard and [`undo_retracted`] asks again. Without
/// Redis or a tally (no roster) this is [`NotificationStore::create_counted`].
///
/// # Errors
/// Backend failures (the event is retried: its reservation was not committed).
pub async fn create_checked<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    ev: &NotificationEvent,
    tally: Option<dedup::Tally>,
    now_ms: i64,
) -> Result<CreateOutcome, NotifyError> {
    let (Some(redis), Some(t)) = (redis, tally) else {
        return store.create_counted(ev, tally, now_ms).await;
    };
    if let GuardedCreate::Done(o) = store.create_guarded(ev, t, now_ms).await? {
        return Ok(o);
    }
    if retracted_since(redis, &[ev]).await?[0].is_some() {
        return Ok(CreateOutcome::AlreadyApplied);
    }
    let o = store.create_counted(ev, tally, now_ms).await?;
    if undo_retracted(store, redis, &[ev]).await?[0] {
        return Ok(CreateOutcome::AlreadyApplied);
    }
    Ok(o)
}

/// For events of one item: when the roster says each one's sender was retracted at or after
/// the event (one `HMGET`; `roster.lua` has the values).
///
/// # Errors
/// Backend failures.
pub async fn retracted_since<H: HttpClient>(
    redis: &RedisRestClient<H>,
    evs: &[&NotificationEvent],
) -> Result<Vec<Option<i64>>, NotifyError> {
    let Some(first) = evs.first() else {
        return Ok(vec![]);
    };
    let mut cmd = vec!["HMGET".to_owned(), key(first.owner(), first.item_key())];
    cmd.extend(evs.iter().map(|e| field(&e.sender.id)));
    let reply = redis.command(&cmd).await?;
    let values = reply
        .as_array()
        .filter(|v| v.len() == evs.len())
        .ok_or_else(|| BackendError::Decode(format!("HMGET: expected {} values", evs.len())))?;
    Ok(evs
        .iter()
        .zip(values)
        .map(|(ev, v)| {
            let v = match v {
                serde_json::Value::String(s) => s.parse::<i64>().ok(),
                other => other.as_i64(),
            };
            v.filter(|&v| v < 0)
                .map(|v| -(v.saturating_add(1)))
                .filter(|&at| at >= ev.created_time_msec())
        })
        .collect())
}

/// After writes made without the retraction guard: asks the roster again and takes back the
/// origin each event wrote whose sender it now says was retracted at or after the event (a retraction's
/// roster step precedes its document step, so one the question does not see removes the
/// origin itself; one it sees may have landed before the write). `true` for each one undone.
///
/// # Errors
/// Backend failures.
pub async fn undo_retracted<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: &RedisRestClient<H>,
    evs: &[&NotificationEvent],
) -> Result<Vec<bool>, NotifyError> {
    let after = retracted_since(redis, evs).await?;
    for (ev, at) in evs.iter().zip(&after) {
        if let Some(at) = at {
            // Only this event's origin, at the roster's time (not this late writer's): a newer
            // event of the sender stays welcome.
            store.take_back(ev, *at).await?;
        }
    }
    Ok(after.iter().map(Option::is_some).collect())
}

/// Completes an item's new roster from its document (one read, one `EVALSHA`) and stores the
/// tally it gives: called by the writer whose event found the roster new, after its write, when
/// the write did not insert the item (see the module docs); the caller then drops the mark
/// ([`dedup::commit`], [`dedup::Settle::Complete`]). A document another writer inserted
/// under this roster (it stores the roster's `generation`) holds no sender the roster lacks, so
/// nothing is merged: its count, which the origins cap may already have cut, would count twice
/// senders the roster has. Idempotent: a second run finds nothing to add and only raises the
/// version by one.
///
/// # Errors
/// Backend failures (the roster keeps its mark, so its sender's next call, or anyone's once the
/// grace has passed, runs this again).
pub async fn reseed<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: &RedisRestClient<H>,
    life: &RosterLife,
    generation: Option<i64>,
    owner: &str,
    item_key: &str,
) -> Result<(), NotifyError> {
    let cfg = store.config();
    let doc = store
        .api()
        .find_one(
            &cfg.collection,
            &json!({ "owner": owner, "itemKey": item_key }),
            Some(&json!({ (field::ORIGIN_SENDER): 1, (field::ORIGIN_TIME): 1, (field::RETRACTED): 1, (field::TALLY): 1, (field::ORIGINS_COUNT): 1, (field::ROSTER_GENERATION): 1 })),
            None,
        )
        .await?;
    let seed = doc.map_or_else(RosterSeed::default, |d| {
        let doc = StoredNotification::read(&d);
        let seed = seed_of(&doc);
        if generation.is_some() && doc.roster_generation == generation {
            RosterSeed {
                senders: vec![],
                uncounted: 0,
                ..seed
            }
        } else {
            seed
        }
    });
    let tally = dedup::seed_roster(redis, &key(owner, item_key), life, generation, &seed).await?;
    store.store_tally(owner, item_key, tally).await
}

/// The sender count a tally holds.
#[must_use]
pub fn count(tally: i64) -> i64 {
    tally.rem_euclid(SPAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_order_by_version_then_hold_the_count() {
        let t = |v: i64, n: i64| v * SPAN + n;
        assert_eq!(count(t(7, 123_456)), 123_456);
        // A later change with fewer senders (a retraction) still wins `$max`.
        assert!(t(8, 3) > t(7, SPAN - 1));
        assert!(t(1 << 28, SPAN - 1) < 1 << 53, "fits a JSON number exactly");
    }

    #[test]
    fn a_seed_holds_origins_then_retracted_senders_that_are_not_back() {
        use crate::notify::document::{Retracted, StoredOrigin};
        let origin = |s: &str, t: i64| StoredOrigin {
            sender_id: s.into(),
            created_time_msec: t,
            ..StoredOrigin::default()
        };
        let gone = |s: &str, t: i64| Retracted {
            sender_id: s.into(),
            at_msec: t,
        };
        let doc = StoredNotification {
            origins: vec![origin("ana", 30), origin("ben", 20)],
            // ben came back after his retraction; cy was retracted twice (the newer counts).
            retracted: vec![gone("ben", 10), gone("cy", 5), gone("cy", 15)],
            origins_count: 5,
            tally: Some(7 * SPAN + 2),
            ..StoredNotification::default()
        };
        let seed = seed_of(&doc);
        assert_eq!(
            seed.senders,
            vec![(field("ana"), 31), (field("ben"), 21), (field("cy"), -16)]
        );
        assert_eq!((seed.version, seed.uncounted, seed.retractions), (7, 3, 3));
        assert_eq!(
            seed_of(&StoredNotification::default()),
            RosterSeed::default()
        );
    }

    #[test]
    fn fields_are_canonical_and_keys_follow_the_item() {
        let f = field("ana");
        assert_eq!(f.parse::<i64>().unwrap().to_string(), f);
        assert_ne!(field("ana"), field("ben"));
        assert_eq!(key("u1", "k"), format!("rs:{}", notification_id("u1", "k")));
    }
}
