//! The three Redis round trips: reserve before the write, then commit or release.

use std::sync::LazyLock;

use serde_json::Value;

use super::args::{self as layout, Argv};
use super::{HotConfig, Slot};
use crate::backend::{BackendError, HttpClient, RedisRestClient, Script};

/// The reserve scripts: the positions of their arguments (generated from the tables in
/// `args.rs`), the roster's functions, the lease's (shared by both), then the script.
static RESERVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        layout::lua_indexes("RESERVE_ARG", layout::RESERVE, 1)
            + &layout::lua_tail_indexes("RESERVE_TAIL", layout::RESERVE_TAIL)
            + concat!(
                include_str!("roster.lua"),
                include_str!("lease.lua"),
                include_str!("reserve.lua")
            ),
    )
});
static COMMIT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("commit.lua")));
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("release.lua")));
static RESERVE_MANY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        layout::lua_indexes("MANY_ARG", layout::RESERVE_MANY, 1)
            + &layout::lua_indexes("EVENT_ARG", layout::RESERVE_MANY_EVENT, 0)
            + concat!(
                include_str!("roster.lua"),
                include_str!("lease.lua"),
                include_str!("reserve_many.lua")
            ),
    )
});
static ROSTER_LEAVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("roster.lua"),
        include_str!("roster_leave.lua")
    ))
});
static SETTLE_MANY: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("settle_many.lua")));
static ROSTER_ERASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("roster.lua"),
        include_str!("roster_erase.lua")
    ))
});
static SEED: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("roster.lua"),
        include_str!("seed.lua")
    ))
});

/// Outcome of [`reserve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// First sighting (or a dead lease taken over): process it, then [`commit`] or [`release`].
    Reserved {
        /// Lease token; pass it to [`release`].
        token: String,
    },
    /// Already processed: skip.
    Duplicate,
    /// Another worker holds a live lease: answer "retry later" rather than double-process.
    InFlight,
    /// The recipient muted this kind of event (only from [`reserve_unless_muted`]).
    Muted,
    /// The sender was retracted from the item at or after this event (only with a
    /// [`RosterCheck`]): the id is marked done, there is nothing to write.
    Retracted,
    /// The item is taking a burst (only with a hot check): nothing was reserved; queue the
    /// event, whose consumer reserves it with the rest of its batch.
    Hot,
    /// The owner was erased after this event was created (only with a fence in the
    /// [`MuteCheck`]): nothing was reserved or joined; drop the event.
    Erased,
    /// The sender was erased after this event was created (only with a sender fence in the
    /// [`MuteCheck`]): nothing was reserved or joined; drop the event.
    SenderErased,
}

/// The item's sender roster and the sender to put on it, checked in the reservation's round
/// trip (see `roster.lua`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RosterCheck {
    /// Redis key of the item's roster.
    pub key: String,
    /// The sender's fingerprint (decimal int64).
    pub field: String,
    /// The event's time (ms): a retraction at or after it refuses the event.
    pub event_time_ms: i64,
}

/// How long a roster outlives its last change (see `roster.lua`): a roster whose senders all
/// fit its document can be rebuilt from it ([`seed_roster`]), so it needs to outlive only an
/// idle spell; any other must live as long as its item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RosterLife {
    /// The item's lifetime (its tombstone's included).
    pub full_ms: u64,
    /// A rebuildable roster's lifetime; 0 keeps every roster for `full_ms`.
    pub idle_ms: u64,
    /// Rebuildable while it has at most this many senders (the document's origins cap)…
    pub max_senders: u32,
    /// …and fewer retractions than the document lists (its retracted cap).
    pub max_retractions: u32,
    /// How long the writer whose call created a roster has to complete it before any other
    /// writer is told the roster is new (the reservation lease).
    pub grace_ms: u64,
}

impl RosterLife {
    /// The scripts' argument: `"full idle cap rcap grace"`.
    fn arg(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.full_ms.max(1),
            self.idle_ms,
            self.max_senders,
            self.max_retractions,
            self.grace_ms.max(1)
        )
    }
}

/// The roster's count after a reservation put its sender on the item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// `changes · 2^24 + senders`: the larger of two tallies is the newer.
    pub packed: i64,
    /// This call added the sender (the roster changed).
    pub added: bool,
    /// The roster is new (it may lack senders the item's document holds) and this call is to
    /// complete it: its sender's call created it, or the creator did not finish within
    /// [`RosterLife::grace_ms`]. Once the event is written, [`seed_roster`] completes it, or,
    /// when the write inserted the item, the commit says it is complete ([`commit`],
    /// [`Settle::Complete`]).
    pub fresh: bool,
    /// While the roster is new, its generation: a write that inserts the item stores it, so
    /// whoever completes the roster can tell a document born of it (see `roster.lua`).
    pub generation: Option<i64>,
    /// The sender was already on the item with this very event time: most likely this event's
    /// earlier attempt joined it and its write failed, so the caller writes again what an added
    /// sender writes (the senders' index entry, `notify::senders`).
    pub rejoined: bool,
}

impl Tally {
    /// Whether the create writes the sender's index entry: the sender joined the item now, or
    /// again with the same event (see [`Tally::rejoined`]).
    #[must_use]
    pub fn indexes(&self) -> bool {
        self.added || self.rejoined
    }
}

/// What [`seed_roster`] merges into a new roster: the item's document, in the roster's terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RosterSeed {
    /// Fingerprint and value per sender (`roster.lua`'s encoding: event time + 1 for an origin,
    /// −(retraction time + 1) for a retracted sender).
    pub senders: Vec<(String, i64)>,
    /// The version of the tally the document stores (0: none).
    pub version: i64,
    /// Senders the document counts but no longer holds (its origins cap dropped them).
    pub uncounted: i64,
    /// Retractions the document lists.
    pub retractions: usize,
}

/// A reservation and, when a roster was checked and the event goes ahead, its tally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// What to do with the event.
    pub reservation: Reservation,
    /// The roster's count (`Reserved` and `InFlight` with a roster only).
    pub tally: Option<Tally>,
}

/// What taking a sender off a roster did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Departure {
    /// The roster's tally after it (see [`Tally::packed`]).
    pub tally: i64,
    /// When the retraction counts from: max(now, the sender's newest event time).
    pub at_ms: i64,
    /// The roster is new (see [`Tally::fresh`]): seed it once the document is written.
    pub fresh: bool,
    /// See [`Tally::generation`].
    pub generation: Option<i64>,
}

/// The recipient's muted set and the members that would mute this event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MuteCheck<'a> {
    /// Redis key of the owner's muted set.
    pub key: &'a str,
    /// Members that mute the event (its category and type).
    pub members: &'a [String],
    /// The owner's erasure fence key and the event's time: an event at or before the fence
    /// answers [`Reservation::Erased`] (see `notify::fence`).
    pub fence: Option<(&'a str, i64)>,
    /// The sender's erasure fence key (with `fence`, whose event time it is compared with): an
    /// event at or before it answers [`Reservation::SenderErased`] (see `notify::senders`).
    pub sender_fence: Option<&'a str>,
}

/// Reserves `slot` for `lease_ms` in one EVALSHA round trip.
///
/// # Errors
/// Backend failures; a malformed script reply is [`BackendError::Decode`].
pub async fn reserve<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slot: &Slot,
    lease_ms: u64,
) -> Result<Reservation, BackendError> {
    let (keys, args) = reserve_command(slot, lease_ms);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let reply = redis.evalsha_or_eval(&RESERVE, &keys, &args).await?;
    parse_reserve_reply(&reply)
}

/// The keys and arguments [`reserve`] sends with the script [`scripts`] returns first, for a
/// tool that sends it over RESP itself (the memory benchmark): the layout `args.rs` documents.
#[must_use]
pub fn reserve_command(slot: &Slot, lease_ms: u64) -> (Vec<&str>, Vec<String>) {
    let mut args = Argv::new(layout::RESERVE);
    args.push("field", &slot.field);
    args.push("lease_ms", lease_ms.max(1).to_string());
    args.push("expire_at", slot.expire_at_ms.to_string());
    (vec![&slot.key], args.into_values())
}

/// The keys and arguments [`reserve_unless_muted`] sends, for the same tools as
/// [`reserve_command`].
#[must_use]
pub fn admission_command<'k>(
    slot: &'k Slot,
    lease_ms: u64,
    mute: &MuteCheck<'k>,
    roster: Option<(&'k RosterCheck, &RosterLife)>,
    hot: Option<(&'k str, &HotConfig)>,
) -> (Vec<&'k str>, Vec<String>) {
    let (keys, args) = reserve_args(slot, lease_ms, mute, roster, hot);
    (keys, args.into_values())
}

/// [`reserve`], first checking the recipient's muted set and then, when `roster` is given,
/// putting the sender on the item's roster, in the same EVALSHA round trip. `hot` (the item's
/// counter key and the rule; used only with a roster) counts the item's events first and
/// answers [`Reservation::Hot`] past the limit (see `reserve.lua`).
///
/// # Errors
/// Backend failures; a malformed script reply is [`BackendError::Decode`].
pub async fn reserve_unless_muted<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slot: &Slot,
    lease_ms: u64,
    mute: &MuteCheck<'_>,
    roster: Option<(&RosterCheck, &RosterLife)>,
    hot: Option<(&str, &HotConfig)>,
) -> Result<Admission, BackendError> {
    let (keys, args) = reserve_args(slot, lease_ms, mute, roster, hot);
    let reply = redis
        .evalsha_or_eval(&RESERVE, &keys, &args.values())
        .await?;
    parse_admission(&reply)
}

/// The keys and arguments of [`reserve_unless_muted`] (`args.rs` documents them).
fn reserve_args<'k>(
    slot: &'k Slot,
    lease_ms: u64,
    mute: &MuteCheck<'k>,
    roster: Option<(&'k RosterCheck, &RosterLife)>,
    hot: Option<(&'k str, &HotConfig)>,
) -> (Vec<&'k str>, Argv) {
    let mut keys: Vec<&str> = vec![&slot.key, mute.key];
    let mut args = Argv::new(layout::RESERVE);
    args.push("field", &slot.field);
    args.push("lease_ms", lease_ms.max(1).to_string());
    args.push("expire_at", slot.expire_at_ms.to_string());
    args.push("mute_count", mute.members.len().to_string());
    for member in mute.members {
        args.push("member", member);
    }
    if let Some((r, life)) = roster {
        keys.push(&r.key);
        args.push("fingerprint", &r.field);
        args.push("event_time", r.event_time_ms.to_string());
        args.push("life", life.arg());
        if let Some((key, h)) = hot {
            keys.push(key);
            args.push("hot_limit", h.limit.to_string());
            args.push("hot_window_ms", h.window_ms.max(1).to_string());
            args.push("hot_cooldown_ms", h.cooldown_ms.max(1).to_string());
        }
    }
    if let Some((key, t)) = mute.fence {
        keys.push(key);
        args.record(layout::RESERVE_TAIL);
        match mute.sender_fence {
            Some(s) => {
                keys.push(s);
                args.push("fence_kind", "fences");
            }
            None => args.push("fence_kind", "fence"),
        }
        args.push("fence_time", t.to_string());
    }
    (keys, args)
}

/// Takes a sender off an item's roster (a retraction) in one EVALSHA.
///
/// # Errors
/// Backend failures; a malformed script reply is [`BackendError::Decode`].
pub async fn roster_leave<H: HttpClient>(
    redis: &RedisRestClient<H>,
    key: &str,
    field: &str,
    now_ms: i64,
    life: &RosterLife,
) -> Result<Departure, BackendError> {
    match roster_leave_unless_fenced(redis, key, field, now_ms, life, None, None).await? {
        Leave::Left(d) => Ok(d),
        _ => Err(BackendError::Decode(
            "roster leave: fenced without a fence".into(),
        )),
    }
}

/// What [`roster_leave_unless_fenced`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leave {
    /// The sender left the roster.
    Left(Departure),
    /// The owner's fence stands and the roster does not exist: nothing changed.
    OwnerFenced,
    /// The sender's fence stands and the sender is not on the roster: nothing changed.
    SenderFenced,
}

/// [`roster_leave`], unless the owner's erasure `fence` (its Redis key) stands and the roster
/// does not exist, or the sender's `sender_fence` stands and the sender is not on the roster:
/// then nothing changed (see `roster_leave.lua`).
///
/// # Errors
/// Backend failures; a malformed script reply is [`BackendError::Decode`].
pub async fn roster_leave_unless_fenced<H: HttpClient>(
    redis: &RedisRestClient<H>,
    key: &str,
    field: &str,
    now_ms: i64,
    life: &RosterLife,
    fence: Option<&str>,
    sender_fence: Option<&str>,
) -> Result<Leave, BackendError> {
    let (now, life) = (now_ms.to_string(), life.arg());
    let mut keys = vec![key];
    // KEYS[3] is the sender's fence: an absent owner fence takes a key no one writes.
    match (fence, sender_fence) {
        (Some(f), Some(s)) => keys.extend([f, s]),
        (None, Some(s)) => keys.extend(["ef:-", s]),
        (Some(f), None) => keys.push(f),
        (None, None) => {}
    }
    let reply = redis
        .evalsha_or_eval(&ROSTER_LEAVE, &keys, &[field, &now, &life])
        .await?;
    match reply.get(0).and_then(Value::as_str) {
        Some("fenced") => return Ok(Leave::OwnerFenced),
        Some("sender_fenced") => return Ok(Leave::SenderFenced),
        _ => {}
    }
    let num = |i: usize| reply.get(i).and_then(reply_int);
    match (num(0), num(1)) {
        (Some(tally), Some(at_ms)) => Ok(Leave::Left(Departure {
            tally,
            at_ms,
            fresh: num(2) == Some(1),
            generation: num(3),
        })),
        _ => Err(BackendError::Decode(format!(
            "roster leave: unexpected reply {reply}"
        ))),
    }
}

/// Marks the id done (after the write succeeded). `Ok(false)`: the reservation had vanished.
/// `complete`: a new roster the write showed to be complete (it inserted the item), whose
/// [`Tally::fresh`] mark goes in the same round trip.
///
/// # Errors
/// Backend failures.
pub async fn commit<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slot: &Slot,
    complete: Option<&str>,
) -> Result<bool, BackendError> {
    let mut keys = vec![slot.key.as_str()];
    keys.extend(complete);
    let reply = redis
        .evalsha_or_eval(&COMMIT, &keys, &[&slot.field])
        .await?;
    Ok(reply.as_i64() == Some(1))
}

/// Drops our reservation (after the write failed) so a retry is not seen as a duplicate.
///
/// # Errors
/// Backend failures.
pub async fn release<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slot: &Slot,
    token: &str,
) -> Result<bool, BackendError> {
    let reply = redis
        .evalsha_or_eval(&RELEASE, &[&slot.key], &[&slot.field, token])
        .await?;
    Ok(reply.as_i64() == Some(1))
}

/// [`reserve_unless_muted`] for a whole batch in ONE `EVALSHA`: one [`Admission`] per slot,
/// in order. `mutes[i]` is the muted-set check of slot `i` and `rosters[i]` its roster
/// (`None`: not checked); `life` is how long a roster outlives its last change.
///
/// # Errors
/// Backend failures; a malformed reply is [`BackendError::Decode`].
pub async fn reserve_many<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slots: &[Slot],
    mutes: &[Option<MuteCheck<'_>>],
    rosters: &[Option<RosterCheck>],
    lease_ms: u64,
    life: &RosterLife,
) -> Result<Vec<Admission>, BackendError> {
    if slots.is_empty() {
        return Ok(vec![]);
    }
    let (keys, args) = reserve_many_args(slots, mutes, rosters, lease_ms, life);
    let reply = redis
        .evalsha_or_eval(&RESERVE_MANY, &keys, &args.values())
        .await?;
    let n = slots.len();
    let flat = reply
        .as_array()
        .filter(|a| a.len() == 6 * n)
        .ok_or_else(|| BackendError::Decode(format!("dedup reserve_many: reply {reply}")))?;
    flat.chunks(6)
        .map(|one| parse_admission(&Value::Array(one.to_vec())))
        .collect()
}

/// The keys and arguments of [`reserve_many`] (`args.rs` documents them).
fn reserve_many_args<'k>(
    slots: &'k [Slot],
    mutes: &[Option<MuteCheck<'k>>],
    rosters: &'k [Option<RosterCheck>],
    lease_ms: u64,
    life: &RosterLife,
) -> (Vec<&'k str>, Argv) {
    let mut keys: Vec<&str> = slots.iter().map(|s| s.key.as_str()).collect();
    let mut args = Argv::new(layout::RESERVE_MANY);
    args.push("lease_ms", lease_ms.max(1).to_string());
    args.push("count", slots.len().to_string());
    args.push("life", life.arg());
    // Each muted set and roster is passed once, however many events of the batch refer to it
    // (Lua indexes KEYS from 1).
    fn key_index<'k>(keys: &mut Vec<&'k str>, from: usize, k: &'k str) -> String {
        let at = match keys[from..].iter().position(|x| *x == k) {
            Some(p) => from + p,
            None => {
                keys.push(k);
                keys.len() - 1
            }
        };
        (at + 1).to_string()
    }
    let n = slots.len();
    for (i, slot) in slots.iter().enumerate() {
        args.record(layout::RESERVE_MANY_EVENT);
        args.push("field", &slot.field);
        args.push("expire_at", slot.expire_at_ms.to_string());
        let mute = mutes.get(i).and_then(Option::as_ref);
        match mute {
            Some(m) => {
                args.push("mute_key", key_index(&mut keys, n, m.key));
                args.push("mute_count", m.members.len().to_string());
                for member in m.members {
                    args.push("member", member);
                }
            }
            None => {
                args.push("mute_key", "0");
                args.push("mute_count", "0");
            }
        }
        let fence = mute.and_then(|m| m.fence);
        match rosters.get(i).and_then(Option::as_ref) {
            Some(r) => {
                args.push("roster_key", key_index(&mut keys, n, &r.key));
                args.push("fingerprint", &r.field);
                args.push("event_time", r.event_time_ms.to_string());
            }
            // The event time is the fence's to compare with, roster or not.
            None => {
                args.push("roster_key", "0");
                args.push("fingerprint", "");
                args.push("event_time", fence.map_or(0, |(_, t)| t).to_string());
            }
        }
        match fence {
            Some((key, _)) => args.push("fence_key", key_index(&mut keys, n, key)),
            None => args.push("fence_key", "0"),
        }
        match mute.and_then(|m| m.sender_fence.filter(|_| m.fence.is_some())) {
            Some(key) => args.push("sender_fence_key", key_index(&mut keys, n, key)),
            None => args.push("sender_fence_key", "0"),
        }
    }
    (keys, args)
}

/// What to do with one reservation after a batch's writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle<'a> {
    /// The write succeeded: mark the id done.
    Commit(&'a Slot),
    /// The write failed: free our lease (token from the reservation) so the retry proceeds.
    Release(&'a Slot, &'a str),
    /// A new roster (by its key) its write showed to be complete: drop its [`Tally::fresh`]
    /// mark.
    Complete(&'a str),
}

/// Commits and releases a batch's reservations in ONE `EVALSHA`; returns how many changed.
///
/// # Errors
/// Backend failures.
pub async fn settle_many<H: HttpClient>(
    redis: &RedisRestClient<H>,
    entries: &[Settle<'_>],
) -> Result<u64, BackendError> {
    if entries.is_empty() {
        return Ok(0);
    }
    let mut keys = Vec::with_capacity(entries.len());
    let mut args = vec![entries.len().to_string()];
    for e in entries {
        let (op, key, field, token) = match e {
            Settle::Commit(s) => ("c", s.key.as_str(), s.field.as_str(), ""),
            Settle::Release(s, t) => ("r", s.key.as_str(), s.field.as_str(), *t),
            Settle::Complete(k) => ("s", *k, "", ""),
        };
        keys.push(key);
        args.extend([op, field, token].map(str::to_owned));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let reply = redis.evalsha_or_eval(&SETTLE_MANY, &keys, &args).await?;
    Ok(reply.as_u64().unwrap_or(0))
}

/// Decodes a reserve script's `{status, token[, tally, added, fresh, generation]}` reply (an
/// empty tally or generation: none).
///
/// # Errors
/// [`BackendError::Decode`] for anything else.
pub fn parse_admission(reply: &Value) -> Result<Admission, BackendError> {
    let reservation = parse_reserve_reply(reply)?;
    let tally = match reply.get(2) {
        None => None,
        Some(Value::String(t)) if t.is_empty() => None,
        Some(t) => {
            let packed = reply_int(t)
                .ok_or_else(|| BackendError::Decode(format!("dedup reserve: tally {reply}")))?;
            let flag = |i: usize| reply.get(i).and_then(reply_int) == Some(1);
            Some(Tally {
                packed,
                added: flag(3),
                fresh: flag(4),
                generation: reply.get(5).and_then(reply_int),
                rejoined: reply.get(3).and_then(reply_int) == Some(2),
            })
        }
    };
    Ok(Admission { reservation, tally })
}

/// Completes a new roster of `generation` (see [`Tally::generation`]; `None`: whatever its mark
/// holds) from its item's document in one `EVALSHA` (see `seed.lua`) and returns the tally to
/// store on the document (its version is above every tally stored so far). The roster keeps
/// its mark: drop it once the tally is stored ([`commit`], [`Settle::Complete`]).
///
/// # Errors
/// Backend failures; a malformed reply is [`BackendError::Decode`].
pub async fn seed_roster<H: HttpClient>(
    redis: &RedisRestClient<H>,
    key: &str,
    life: &RosterLife,
    generation: Option<i64>,
    seed: &RosterSeed,
) -> Result<i64, BackendError> {
    let mut args = vec![
        life.arg(),
        generation.map(|g| g.to_string()).unwrap_or_default(),
        seed.version.max(0).to_string(),
        seed.uncounted.max(0).to_string(),
        seed.retractions.to_string(),
        seed.senders.len().to_string(),
    ];
    for (field, value) in &seed.senders {
        args.extend([field.clone(), value.to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let reply = redis.evalsha_or_eval(&SEED, &[key], &args).await?;
    reply_int(&reply).ok_or_else(|| BackendError::Decode(format!("roster seed: reply {reply}")))
}

/// An integer a script returned: a Lua number arrives as an integer, a `string.format`ted one
/// (past 2^53-safe Lua arithmetic) as its decimal text.
fn reply_int(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str()?.parse().ok())
}

/// Decodes the reserve script's `{status, token}` reply.
///
/// # Errors
/// [`BackendError::Decode`] for anything else.
pub fn parse_reserve_reply(reply: &Value) -> Result<Reservation, BackendError> {
    let status = reply.get(0).and_then(Value::as_str);
    let token = reply.get(1).and_then(Value::as_str).unwrap_or_default();
    match status {
        Some("reserved") if !token.is_empty() => Ok(Reservation::Reserved {
            token: token.to_owned(),
        }),
        Some("duplicate") => Ok(Reservation::Duplicate),
        Some("in_flight") => Ok(Reservation::InFlight),
        Some("muted") => Ok(Reservation::Muted),
        Some("retracted") => Ok(Reservation::Retracted),
        Some("hot") => Ok(Reservation::Hot),
        Some("erased") => Ok(Reservation::Erased),
        Some("sender_erased") => Ok(Reservation::SenderErased),
        _ => Err(BackendError::Decode(format!(
            "dedup reserve: unexpected reply {reply}"
        ))),
    }
}

/// A sender's erasure over one page of items' rosters in one `EVALSHA` (see `roster_erase.lua`):
/// the sender's field leaves each roster where its time is at or before `erased_at_ms`; per key,
/// the roster's tally to store (`None`: no roster) and whether this call dropped its count.
///
/// # Errors
/// Backend failures; a malformed reply is [`BackendError::Decode`].
pub async fn roster_erase<H: HttpClient>(
    redis: &RedisRestClient<H>,
    keys: &[String],
    field: &str,
    erased_at_ms: i64,
    life: &RosterLife,
) -> Result<Vec<Option<RosterErased>>, BackendError> {
    if keys.is_empty() {
        return Ok(vec![]);
    }
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let (at, life) = (erased_at_ms.to_string(), life.arg());
    let reply = redis
        .evalsha_or_eval(&ROSTER_ERASE, &keys, &[field, &at, &life])
        .await?;
    let out = reply
        .as_array()
        .filter(|a| a.len() == 2 * keys.len())
        .ok_or_else(|| BackendError::Decode(format!("roster erase: reply {reply}")))?;
    out.chunks(2)
        .map(|p| match &p[0] {
            Value::String(s) if s.is_empty() => Ok(None),
            v => reply_int(v)
                .map(|packed| {
                    Some(RosterErased {
                        packed,
                        removed: reply_int(&p[1]) == Some(1),
                    })
                })
                .ok_or_else(|| BackendError::Decode(format!("roster erase: reply {reply}"))),
        })
        .collect()
}

/// One roster after [`roster_erase`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RosterErased {
    /// Its tally (see [`Tally::packed`]).
    pub packed: i64,
    /// This call took the sender off its count.
    pub removed: bool,
}

/// Lua sources, for tools that load them over RESP (the memory benchmark).
#[must_use]
pub fn scripts() -> [&'static Script; 3] {
    [&RESERVE, &COMMIT, &RELEASE]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slot(k: &str, f: &str) -> Slot {
        Slot {
            key: k.into(),
            field: f.into(),
            expire_at_ms: 90,
        }
    }

    const LIFE: RosterLife = RosterLife {
        full_ms: 1,
        idle_ms: 2,
        max_senders: 3,
        max_retractions: 4,
        grace_ms: 5,
    };

    /// The layout the scripts read, pinned as a list: a change of the tables in `args.rs`
    /// shows here as a change of the wire, not only of a name.
    #[test]
    fn reserve_arguments_keep_their_layout() {
        let members = ["c:social".to_owned(), "t:like".to_owned()];
        let mute = MuteCheck {
            key: "np:u",
            members: &members,
            fence: Some(("ef:u", 70)),
            sender_fence: Some("sf:s"),
        };
        let roster = RosterCheck {
            key: "rs:n".into(),
            field: "fp".into(),
            event_time_ms: 60,
        };
        let hot = HotConfig {
            limit: 4,
            window_ms: 0,
            cooldown_ms: 8,
        };
        let s = slot("dd:1:2", "f");
        let (keys, args) = reserve_args(&s, 0, &mute, Some((&roster, &LIFE)), Some(("hc:n", &hot)));
        assert_eq!(keys, ["dd:1:2", "np:u", "rs:n", "hc:n", "ef:u", "sf:s"]);
        assert_eq!(
            args.values(),
            [
                "f",
                "1",
                "90",
                "2",
                "c:social",
                "t:like",
                "fp",
                "60",
                "1 2 3 4 5",
                "4",
                "1",
                "8",
                "fences",
                "70"
            ]
        );
        let bare = MuteCheck {
            key: "np:u",
            members: &[],
            fence: None,
            sender_fence: Some("sf:s"),
        };
        let (keys, args) = reserve_args(&s, 5, &bare, None, Some(("hc:n", &hot)));
        assert_eq!(
            (keys, args.values()),
            (vec!["dd:1:2", "np:u"], vec!["f", "5", "90", "0"])
        );
    }

    #[test]
    fn reserve_many_arguments_keep_their_layout() {
        let members = ["t:like".to_owned()];
        let mute = MuteCheck {
            key: "np:u",
            members: &members,
            fence: Some(("ef:u", 70)),
            sender_fence: Some("sf:s"),
        };
        let slots = [slot("dd:a", "f1"), slot("dd:b", "f2"), slot("dd:a", "f3")];
        let rosters = [
            Some(RosterCheck {
                key: "rs:n".into(),
                field: "fp".into(),
                event_time_ms: 60,
            }),
            None,
            None,
        ];
        let mutes = [Some(mute.clone()), Some(mute), None];
        let (keys, args) = reserve_many_args(&slots, &mutes, &rosters, 9, &LIFE);
        // The second event's muted set and fences are passed once, by index.
        assert_eq!(
            keys,
            ["dd:a", "dd:b", "dd:a", "np:u", "rs:n", "ef:u", "sf:s"]
        );
        assert_eq!(
            args.values(),
            [
                "9",
                "3",
                "1 2 3 4 5",
                "f1",
                "90",
                "4",
                "1",
                "t:like",
                "5",
                "fp",
                "60",
                "6",
                "7",
                "f2",
                "90",
                "4",
                "1",
                "t:like",
                "0",
                "",
                "70",
                "6",
                "7",
                "f3",
                "90",
                "0",
                "0",
                "0",
                "",
                "0",
                "0",
                "0",
            ]
        );
    }

    #[test]
    fn reserve_replies_decode() {
        assert_eq!(
            parse_reserve_reply(&json!(["reserved", "17"])).unwrap(),
            Reservation::Reserved { token: "17".into() }
        );
        assert_eq!(
            parse_reserve_reply(&json!(["duplicate", ""])).unwrap(),
            Reservation::Duplicate
        );
        assert_eq!(
            parse_reserve_reply(&json!(["in_flight", "9"])).unwrap(),
            Reservation::InFlight
        );
        assert!(parse_reserve_reply(&json!("OK")).is_err());
    }
}
