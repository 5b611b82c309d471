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
//!   the item, `v` = changes. It lives [`ttl_ms`] past its last change, like the item.
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

use super::{notification_id, NotificationEvent, NotifyConfig};
use crate::dedup::RosterCheck;

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

/// How long a roster outlives its last change: the item's lifetime and its tombstone's.
#[must_use]
pub fn ttl_ms(cfg: &NotifyConfig) -> u64 {
    u64::try_from(cfg.ttl_ms.saturating_add(cfg.tombstone_ttl_ms)).unwrap_or(u64::MAX)
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
    fn fields_are_canonical_and_keys_follow_the_item() {
        let f = field("ana");
        assert_eq!(f.parse::<i64>().unwrap().to_string(), f);
        assert_ne!(field("ana"), field("ben"));
        assert_eq!(key("u1", "k"), format!("rs:{}", notification_id("u1", "k")));
    }
}
