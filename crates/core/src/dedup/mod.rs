//! Idempotent consumption: remember event ids in compact, time-bucketed Redis hashes.
//!
//! Improves on seeds §3 (one hash per window): ids of one window are spread over `buckets`
//! small hashes so each stays in Redis' compact *listpack* encoding (≤ 512 fields by default;
//! past that a hash converts to a hashtable for good and costs ~2.5× more).
//!
//! * **Bucket by the event's own time**, so a redelivery that arrives a window later still lands
//!   in the same key.
//! * **Key** `dd:{window_index}:{sub}`, `sub = fp_hi mod buckets`; **field** = `fp_lo` as a
//!   decimal `i64`, which listpack stores as an 8-byte integer (10 bytes with its header and
//!   back-length) — smaller than any text encoding of 64 bits that JSON/REST can carry. The two
//!   halves come from one SHA-256 of the id, so a false "duplicate" needs a 64-bit field collision
//!   inside one bucket (≈ fields/2^64 per event): log2(buckets) + 64 bits in all.
//! * **Value** `1` = done (a 1-byte listpack int) or a pending lease expiry in ms.
//!
//! Sizing ([`buckets_for`]): with `n` ids expected per window, `buckets = ceil(n / 400)`. Bucket
//! loads are ~Poisson(400): σ ≈ 20, and the fullest of `b` buckets sits near
//! 400 + 20·√(2 ln b) ≈ 485 for b = 9,000 — under 512 with room (measured fullest: 475).
//!
//! Measured (`bench/rust/examples/dedup_memory.rs`, figures in BENCHMARKS.md "Dedup memory on
//! redis-server"): this layout takes a tenth of the memory of a String per id, with no bucket
//! converted. The price is server time: one reserve runs a Lua script (and a create's
//! admission also checks the muted set and joins the item's roster), so on loopback, where the
//! server's time is most of a round trip, it is slower than a bare `SET NX`, and far slower
//! pipelined. A worker calls Redis over the network, one call per create either way.

mod args;
mod store;

pub use store::{
    admission_command, commit, parse_admission, parse_reserve_reply, release, reserve,
    reserve_command, reserve_many, reserve_unless_muted, roster_erase, roster_leave,
    roster_leave_unless_fenced, scripts, seed_roster, settle_many, Admission, Departure, Leave,
    MuteCheck, Reservation, RosterCheck, RosterErased, RosterLife, RosterSeed, Settle, Tally,
};

use sha2::{Digest, Sha256};

/// Fields per hash the sizing aims at (listpack limit is 512; see the module docs).
pub const TARGET_FIELDS_PER_HASH: u64 = 400;

/// Sub-buckets per window so each hash holds ~[`TARGET_FIELDS_PER_HASH`] ids.
#[must_use]
pub fn buckets_for(expected_per_window: u64) -> u32 {
    let b = expected_per_window.div_ceil(TARGET_FIELDS_PER_HASH).max(1);
    u32::try_from(b).unwrap_or(u32::MAX)
}

/// How ids are bucketed and how long they are remembered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupConfig {
    /// Key prefix (`dd`).
    pub prefix: String,
    /// Width of an event-time window in ms (seed: 10 min).
    pub window_ms: u64,
    /// How long after its window ends an id is still remembered (the redelivery horizon).
    pub retention_ms: u64,
    /// How long a reservation blocks others before it is presumed dead (crashed writer).
    pub lease_ms: u64,
    /// Hashes per window, from [`buckets_for`].
    pub buckets: u32,
    /// When a single create goes through the queue instead of straight to the document.
    pub hot: HotConfig,
}

/// Burst detection for single creates with a queue bound: an item that takes more than `limit`
/// events in `window_ms` is hot, and stays hot until `cooldown_ms` pass without an event; a hot
/// item's events are queued (and coalesced: the consumer writes a batch's events for one item in
/// one upsert), every other event is written at once. `limit` 0 queues every single create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotConfig {
    /// Events one window admits directly.
    pub limit: u32,
    /// Width of the counting window.
    pub window_ms: u64,
    /// How long a hot item stays hot after its last event.
    pub cooldown_ms: u64,
}

impl Default for HotConfig {
    fn default() -> Self {
        Self {
            limit: 4,
            window_ms: 1_000,
            cooldown_ms: 10_000,
        }
    }
}

impl DedupConfig {
    /// A config for `expected_per_window` ids per `window_ms` (retention = one window, lease 30 s).
    #[must_use]
    pub fn for_rate(expected_per_window: u64, window_ms: u64) -> Self {
        Self {
            prefix: "dd".into(),
            window_ms: window_ms.max(1),
            retention_ms: window_ms,
            lease_ms: 30_000,
            buckets: buckets_for(expected_per_window),
            hot: HotConfig::default(),
        }
    }
}

impl Default for DedupConfig {
    /// The seed workload: 6 k events/s, 10-minute windows.
    fn default() -> Self {
        Self::for_rate(6_000 * 600, 600_000)
    }
}

/// Where one event id lives in Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// Hash key `prefix:{window}:{sub}`.
    pub key: String,
    /// Field: the low fingerprint half as a decimal `i64`.
    pub field: String,
    /// When the whole hash may go (unix ms): window end + retention.
    pub expire_at_ms: i64,
}

/// The 128-bit fingerprint of an id: (`hi` picks the bucket, `lo` is the field).
#[must_use]
pub fn fingerprint(event_id: &str) -> (u64, i64) {
    let d = Sha256::digest(event_id.as_bytes());
    let hi = u64::from_be_bytes(d[0..8].try_into().expect("8 bytes"));
    let lo = i64::from_be_bytes(d[8..16].try_into().expect("8 bytes"));
    (hi, lo)
}

/// Computes the key, field and expiry for an event (pure; no I/O).
#[must_use]
pub fn slot(cfg: &DedupConfig, event_id: &str, event_time_ms: i64) -> Slot {
    let (hi, lo) = fingerprint(event_id);
    let window_ms = i64::try_from(cfg.window_ms.max(1)).unwrap_or(i64::MAX);
    let window = event_time_ms.div_euclid(window_ms);
    let sub = hi % u64::from(cfg.buckets.max(1));
    let retention = i64::try_from(cfg.retention_ms).unwrap_or(i64::MAX);
    let expire_at_ms = window
        .saturating_add(1)
        .saturating_mul(window_ms)
        .saturating_add(retention);
    // `lo.to_string()` is canonical (no leading zeros / "+"), so Redis stores it as an integer.
    Slot {
        key: format!("{}:{window}:{sub}", cfg.prefix),
        field: lo.to_string(),
        expire_at_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_keeps_hashes_near_400_fields() {
        assert_eq!(buckets_for(3_600_000), 9_000);
        assert_eq!(buckets_for(1), 1);
        assert_eq!(buckets_for(0), 1);
        assert_eq!(buckets_for(401), 2);
    }

    #[test]
    fn slot_buckets_by_event_time_not_arrival() {
        let cfg = DedupConfig::default();
        let a = slot(&cfg, "evt-1", 1_700_000_000_000);
        // Same window (10 min), later instant: same key and field.
        let b = slot(&cfg, "evt-1", 1_700_000_000_000 + 60_000);
        assert_eq!(a, b);
        let window = 1_700_000_000_000_i64 / 600_000;
        assert!(a.key.starts_with(&format!("dd:{window}:")));
        assert_eq!(a.expire_at_ms, (window + 1) * 600_000 + 600_000);
        // Next window: different key, same field.
        let c = slot(&cfg, "evt-1", (window + 1) * 600_000);
        assert_ne!(a.key, c.key);
        assert_eq!(a.field, c.field);
    }

    #[test]
    fn fields_are_canonical_int64_and_buckets_in_range() {
        let cfg = DedupConfig::for_rate(4_000, 600_000);
        assert_eq!(cfg.buckets, 10);
        for i in 0..2_000 {
            let s = slot(&cfg, &format!("id-{i}"), 0);
            let sub: u32 = s.key.rsplit(':').next().unwrap().parse().unwrap();
            assert!(sub < 10);
            let f: i64 = s.field.parse().unwrap();
            assert_eq!(f.to_string(), s.field);
        }
    }

    #[test]
    fn negative_event_times_floor_to_their_window() {
        let cfg = DedupConfig::for_rate(1, 1_000);
        assert!(slot(&cfg, "x", -1).key.starts_with("dd:-1:"));
    }

    #[test]
    fn bucket_load_stays_under_listpack_limit() {
        // 90 buckets × ~400 ids: the fullest must stay well under 512.
        let cfg = DedupConfig::for_rate(36_000, 600_000);
        let mut load = vec![0u32; cfg.buckets as usize];
        for i in 0..36_000 {
            let (hi, _) = fingerprint(&format!("evt-{i}"));
            load[(hi % u64::from(cfg.buckets)) as usize] += 1;
        }
        let max = *load.iter().max().unwrap();
        assert!(max < 480, "fullest bucket {max}");
    }
}
