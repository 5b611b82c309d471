//! Bursts: many events in one request or one queue batch, written with one upsert per
//! (owner, itemKey) group and one Redis round trip each for the reservations and their settling.
//!
//! The group upsert keeps every rule of the single create ([`super::create_upsert`]): its filter
//! excludes *any* of the group's senders already present (`$nin`) and any sender retracted at or
//! after its own event (`$nor`, one clause per sender), so it can neither double count nor bring
//! a retracted sender back. When that filter misses (a duplicate key: one of the senders is
//! there, one was retracted, or a concurrent insert won) the group falls back to the per-event
//! create, which sorts out each sender on its own — still correct, only more calls.

use std::collections::BTreeSet;

use futures_util::future::join_all;
use serde_json::{json, Value};

use super::document::field;
use super::rules::{self, origin};
use super::{fence, roster};
use super::{preferences, CreateOutcome, NewEvent, NotificationEvent, NotificationStore};
use super::{NotifyConfig, NotifyError};
use crate::backend::{ejson, BackendError, HttpClient, RedisRestClient};
use crate::dedup::{
    self, Admission, DedupConfig, MuteCheck, Reservation, RosterCheck, RosterLife, Settle, Tally,
};

/// Most events in one `{"events": [...]}` body.
pub const MAX_EVENTS: usize = 100;
/// Most owners of one fan-out body.
pub const MAX_FAN_OUT: usize = 10_000;
/// Most events written synchronously when no queue is configured (a larger fan-out needs one).
pub const MAX_SYNC_EVENTS: usize = 100;
/// Cloudflare Queues: messages per `sendBatch`.
pub const QUEUE_BATCH_MESSAGES: usize = 100;
/// Cloudflare Queues: bytes per `sendBatch` (256 KB), less room for per-message framing.
pub const QUEUE_BATCH_BYTES: usize = 256_000;
/// Cloudflare Queues bills each 64 KB of a message written, read or deleted as one operation;
/// events are packed into messages up to this size (64 KB read as 64 000 bytes, the smaller
/// reading, less [`MESSAGE_OVERHEAD`]).
pub const QUEUE_OPERATION_BYTES: usize = 64_000;
/// Most events in one packed message: with wrangler.toml's `max_batch_size = 100` an invocation
/// holds at most 1 000 events (the subrequest bound), while a backlog of single creates (a hot
/// item's) arrives 100 to a batch, coalesced into one upsert per item. A consumer applies at
/// most [`MAX_EVENTS`] events per round, so a message is never split across rounds.
pub const MAX_EVENTS_PER_MESSAGE: usize = 10;
const MESSAGE_OVERHEAD: usize = 100;
/// `{"events":[` … `],"attempts":4294967295}`.
const PACK_OVERHEAD: usize = 40;
/// Group upserts in flight at once (workerd's simultaneous-connection limit).
const WRITE_CONCURRENCY: usize = 6;

/// The per-owner event id of a fan-out: deterministic, so a retried fan-out de-duplicates.
/// `{eventId}:{owner}`, or, when that is over the id limit while the template's own id is
/// within it, `fanout:` and the SHA-256 of both: an owner near its own limit must not make
/// an event invalid (no schema can state a limit on the sum of two fields). A template id over
/// the limit keeps the long form, which validation refuses as before.
#[must_use]
pub fn fan_out_event_id(event_id: &str, owner: &str) -> String {
    let id = format!("{event_id}:{owner}");
    if id.len() <= super::limits::ID || event_id.len() >= super::limits::ID {
        return id;
    }
    let digest = crate::ip::sha256_hex(format!("{event_id}\0{owner}").as_bytes());
    format!("fanout:{digest}")
}

/// Expands a fan-out template into one raw event per owner.
#[must_use]
pub fn fan_out(template: &NewEvent, owners: &[String]) -> Vec<NewEvent> {
    owners
        .iter()
        .map(|o| NewEvent {
            owner: o.clone(),
            event_id: fan_out_event_id(&template.event_id, o),
            ..template.clone()
        })
        .collect()
}

/// Validates every event; on failure, every failing index with its error (nothing is written
/// or enqueued unless all pass).
///
/// # Errors
/// `(index, error)` for each invalid event, in order.
pub fn validate_all(
    raws: &[NewEvent],
    cfg: &NotifyConfig,
    now_ms: i64,
) -> Result<Vec<NotificationEvent>, Vec<(usize, NotifyError)>> {
    let mut ok = Vec::with_capacity(raws.len());
    let mut bad = Vec::new();
    for (i, raw) in raws.iter().enumerate() {
        match NotificationEvent::new(raw.clone(), cfg, now_ms) {
            Ok(ev) => ok.push(ev),
            Err(e) => bad.push((i, e)),
        }
    }
    if bad.is_empty() {
        Ok(ok)
    } else {
        Err(bad)
    }
}

/// Splits message bodies into `sendBatch` calls within the Queues limits (count and bytes).
#[must_use]
pub fn chunk_messages(bodies: Vec<String>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0;
    for b in bodies {
        let size = b.len() + MESSAGE_OVERHEAD;
        let full = out
            .last()
            .is_none_or(|c| c.len() >= QUEUE_BATCH_MESSAGES || bytes + size > QUEUE_BATCH_BYTES);
        if full {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        out.last_mut().expect("pushed above").push(b);
    }
    out
}

/// Packs event bodies (JSON texts) into queue messages of at most [`MAX_EVENTS_PER_MESSAGE`]
/// events and [`QUEUE_OPERATION_BYTES`] each, in order: `{"events":[…]}`, with `"attempts"`
/// when the events already failed that many deliveries (a remainder, see [`consume`]). A lone
/// event without attempts stays a plain event body, the one format of every message before
/// packing (so a consumer reads both). An event larger than the unit travels alone.
#[must_use]
pub fn pack_messages(bodies: Vec<String>, attempts: u32) -> Vec<String> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0;
    for b in bodies {
        let size = b.len() + 1;
        let full = groups.last().is_none_or(|g| {
            g.len() >= MAX_EVENTS_PER_MESSAGE
                || bytes + size + PACK_OVERHEAD + MESSAGE_OVERHEAD > QUEUE_OPERATION_BYTES
        });
        if full {
            groups.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        groups.last_mut().expect("pushed above").push(b);
    }
    groups
        .into_iter()
        .map(|mut g| {
            if g.len() == 1 && attempts == 0 {
                return g.pop().expect("one");
            }
            let tail = if attempts > 0 {
                format!(",\"attempts\":{attempts}")
            } else {
                String::new()
            };
            format!("{{\"events\":[{}]{tail}}}", g.join(","))
        })
        .collect()
}

#[derive(serde::Deserialize)]
struct PackIn<'a> {
    #[serde(borrow)]
    events: Vec<&'a serde_json::value::RawValue>,
    #[serde(default)]
    attempts: u32,
}

/// The events of one message body and the deliveries they failed before it: a packed message
/// (see [`pack_messages`]) or a single event (anything else, parsed later as one event).
#[must_use]
pub fn unpack(body: &str) -> (Vec<String>, u32) {
    match serde_json::from_str::<PackIn<'_>>(body) {
        Ok(p) => (
            p.events.iter().map(|e| e.get().to_owned()).collect(),
            p.attempts,
        ),
        Err(_) => (vec![body.to_owned()], 0),
    }
}

/// Why events could not be queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    /// The queue refused the batch or could not be reached (its message, for the log).
    #[error("queue send failed: {0}")]
    Send(String),
    /// An event could not be serialised (a bug: events are validated before this).
    #[error("event not serialisable: {0}")]
    Serialize(String),
}

/// Where queued events go (a Cloudflare Queue in the worker; a `Vec` in tests).
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait EventQueue {
    /// Sends one batch (≤ [`QUEUE_BATCH_MESSAGES`] bodies, ≤ [`QUEUE_BATCH_BYTES`]), delivered
    /// after `delay_seconds`.
    ///
    /// # Errors
    /// [`QueueError::Send`]: the queue refused or could not be reached.
    async fn send_batch(&self, bodies: &[String], delay_seconds: u32) -> Result<(), QueueError>;
}

/// Packs message bodies ([`pack_messages`]) and sends them in as few `sendBatch` calls as the
/// limits allow; returns how many messages went.
///
/// # Errors
/// The first failed call; earlier chunks stay sent (a retry is de-duplicated by event id).
pub async fn send_packed<Q: EventQueue>(
    queue: &Q,
    bodies: Vec<String>,
    attempts: u32,
    delay_seconds: u32,
) -> Result<usize, QueueError> {
    let messages = pack_messages(bodies, attempts);
    let n = messages.len();
    for chunk in chunk_messages(messages) {
        queue.send_batch(&chunk, delay_seconds).await?;
    }
    Ok(n)
}

/// Sends events packed into as few messages ([`pack_messages`]) and `sendBatch` calls as the
/// limits allow; returns how many events were accepted.
///
/// # Errors
/// The first failed call; earlier chunks stay sent (a retry is de-duplicated by event id).
pub async fn enqueue<Q: EventQueue>(queue: &Q, raws: &[NewEvent]) -> Result<usize, QueueError> {
    let bodies = raws
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| QueueError::Serialize(e.to_string()))?;
    let n = bodies.len();
    send_packed(queue, bodies, 0, 0).await?;
    Ok(n)
}

/// The upsert of one (owner, itemKey) group → `(filter, update)`; `events` share the item and
/// have distinct senders. Same cap, ordering and `$max`/`$currentDate` rules as one create.
#[must_use]
pub fn group_upsert(
    events: &[&NotificationEvent],
    cfg: &NotifyConfig,
    now_ms: i64,
) -> (Value, Value) {
    let first = events[0];
    let newest = events
        .iter()
        .copied()
        .max_by_key(|e| e.created_time_msec)
        .unwrap_or(first);
    let senders: Vec<&str> = events.iter().map(|e| e.sender.id.as_str()).collect();
    let retracted: Vec<Value> = events
        .iter()
        .map(|e| json!({ (field::RETRACTED): { "$elemMatch": { "s": e.sender.id, "t": { "$gte": e.created_time_msec } } } }))
        .collect();
    let filter = json!({
        "owner": first.owner, "itemKey": first.item_key,
        (field::ORIGIN_SENDER): { "$nin": senders }, "$nor": retracted,
    });
    // The single create's update for the newest event, widened to the whole group.
    let (_, mut update) = rules::create_upsert(newest, cfg, now_ms);
    let origins: Vec<Value> = events.iter().map(|e| origin(e)).collect();
    update["$push"][field::ORIGINS]["$each"] = Value::Array(origins);
    update["$inc"][field::ORIGINS_COUNT] = json!(events.len());
    let t = newest.created_time_msec;
    update["$max"] = json!({
        "createdTime": ejson::date(t),
        "expireAt": ejson::date(t.saturating_add(cfg.ttl_ms)),
        "purgeAt": ejson::date(t.saturating_add(cfg.ttl_ms).saturating_add(cfg.tombstone_ttl_ms)),
    });
    (filter, update)
}

/// What happened to one event of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventOutcome {
    /// Written: a new item, or merged into one, or already there (see [`CreateOutcome`]).
    Applied(CreateOutcome),
    /// Its id was already processed.
    Duplicate,
    /// The recipient muted this kind of event.
    Muted,
    /// The recipient was erased after this event was created: dropped (see [`fence`]).
    Erased,
    /// Not written (a backend failed): retry it.
    Failed(String),
}

/// An event's outcome short of failure: what the API answers per event (`status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Settled {
    // A new item.
    Created,
    // Merged into an existing item.
    Merged,
    // The sender was already on the item (also: retracted after this event).
    AlreadyApplied,
    // Its event id was already processed.
    Duplicate,
    // The recipient muted this kind of event.
    Muted,
    // The recipient was erased after this event was created: dropped.
    Erased,
}

impl From<CreateOutcome> for Settled {
    fn from(o: CreateOutcome) -> Self {
        match o {
            CreateOutcome::Created => Settled::Created,
            CreateOutcome::Merged => Settled::Merged,
            CreateOutcome::AlreadyApplied => Settled::AlreadyApplied,
        }
    }
}

impl EventOutcome {
    /// The outcome, unless it failed (then why).
    ///
    /// # Errors
    /// The failure's reason.
    pub fn settled(&self) -> Result<Settled, &str> {
        match self {
            EventOutcome::Applied(o) => Ok((*o).into()),
            EventOutcome::Duplicate => Ok(Settled::Duplicate),
            EventOutcome::Muted => Ok(Settled::Muted),
            EventOutcome::Erased => Ok(Settled::Erased),
            EventOutcome::Failed(why) => Err(why),
        }
    }

    /// The status word of the API (`created`, `merged`, …, `failed`).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self.settled() {
            Ok(Settled::Created) => "created",
            Ok(Settled::Merged) => "merged",
            Ok(Settled::AlreadyApplied) => "already_applied",
            Ok(Settled::Duplicate) => "duplicate",
            Ok(Settled::Muted) => "muted",
            Ok(Settled::Erased) => "erased",
            Err(_) => "failed",
        }
    }

    fn changed(&self) -> bool {
        matches!(
            self,
            EventOutcome::Applied(CreateOutcome::Created | CreateOutcome::Merged)
        )
    }
}

/// The result of [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchReport {
    /// One outcome per event, in input order.
    pub outcomes: Vec<EventOutcome>,
    /// Owners whose inbox changed (sorted, distinct): the badge hook pokes these.
    pub changed_owners: Vec<String>,
    /// New rosters whose rebuild failed: their marks stay, and a later writer completes them.
    pub unfinished_rosters: usize,
}

/// Groups pending events by (owner, itemKey) in first-seen order; a sender seen twice in one
/// group is already applied by its first event (what the single create would answer).
fn group(
    events: &[NotificationEvent],
    pending: impl Iterator<Item = usize>,
    outcomes: &mut [Option<EventOutcome>],
) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut at: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for i in pending {
        let e = &events[i];
        let g = *at.entry((e.owner(), e.item_key())).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        if groups[g]
            .iter()
            .any(|&j| events[j].sender.id == e.sender.id)
        {
            outcomes[i] = Some(EventOutcome::Applied(CreateOutcome::AlreadyApplied));
        } else {
            groups[g].push(i);
        }
    }
    groups
}

/// One group upsert: `Ok` with each event's outcome, `Err(None)` when its filter missed (a
/// sender is present or retracted, an insert raced, or the `guard` held: see
/// [`rules::with_retraction_guard`]), `Err(Some(why))` when the backend failed.
async fn upsert_group<H: HttpClient>(
    store: &NotificationStore<H>,
    events: &[NotificationEvent],
    idx: &[usize],
    tally: Option<Tally>,
    guard: bool,
    now_ms: i64,
) -> Result<Vec<(usize, EventOutcome)>, Option<String>> {
    let evs: Vec<&NotificationEvent> = idx.iter().map(|&i| &events[i]).collect();
    let (mut filter, mut update) = group_upsert(&evs, store.config(), now_ms);
    if guard {
        // The guard at the group's oldest event holds for every event in it.
        let oldest = evs.iter().map(|e| e.created_time_msec).min().unwrap_or(0);
        rules::with_retraction_guard(&mut filter, oldest, store.config());
    }
    rules::with_tally(&mut update, tally.map(|t| t.packed));
    rules::with_generation(&mut update, tally.and_then(|t| t.generation));
    let r = store
        .api()
        .update_one(&store.config().collection, &filter, &update, true)
        .await;
    match r {
        Ok(r) if r.upserted_id.is_some() || r.matched > 0 => {
            let first = if r.upserted_id.is_some() {
                CreateOutcome::Created
            } else {
                CreateOutcome::Merged
            };
            Ok(idx
                .iter()
                .enumerate()
                .map(|(k, &i)| {
                    let o = if k == 0 { first } else { CreateOutcome::Merged };
                    (i, EventOutcome::Applied(o))
                })
                .collect())
        }
        Err(BackendError::DuplicateKey { .. }) => Err(None),
        Ok(r) => Err(Some(format!(
            "group upsert neither matched nor inserted: {r:?}"
        ))),
        Err(e) => Err(Some(e.to_string())),
    }
}

/// Splits a group whose upsert missed by the stored item: events whose sender is stored or was
/// retracted at or after the event are already applied (what their own create would answer);
/// the rest still need writing.
fn split_by_stored(
    doc: &Value,
    events: &[NotificationEvent],
    idx: &[usize],
) -> (Vec<usize>, Vec<usize>) {
    idx.iter().partition(|&&i| {
        let e = &events[i];
        rules::holds_sender(doc, &e.sender.id, e.created_time_msec)
    })
}

/// The tally a group's writes store: the newest its reservations saw (any tally is a true
/// count at its version, and `$max` keeps the newest), marked `added` when one of them put its
/// sender on the roster.
fn group_tally(tallies: &[Option<Tally>], idx: &[usize]) -> Option<Tally> {
    let group: Vec<Tally> = idx.iter().filter_map(|&i| tallies[i]).collect();
    let packed = group.iter().map(|t| t.packed).max()?;
    Some(Tally {
        packed,
        added: group.iter().any(|t| t.added),
        fresh: group.iter().any(|t| t.fresh),
        generation: group.iter().find_map(|t| t.generation),
        rejoined: group.iter().any(|t| t.rejoined),
    })
}

/// After a group's write, when its item's roster is new (see [`roster`]): a write that
/// inserted the item shows the roster complete; otherwise the roster is completed from the
/// document now. Either way its key comes back for the settle, which drops the mark; a failed
/// rebuild (`Err`) keeps the mark for the next writer once its grace has passed. Failed events
/// do not hold this up: the roster already has their senders.
async fn complete_roster<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: &RedisRestClient<H>,
    life: &RosterLife,
    tally: Tally,
    event: &NotificationEvent,
    out: &[(usize, EventOutcome)],
) -> Result<String, NotifyError> {
    let (owner, item_key) = (event.owner(), event.item_key());
    let created = out
        .iter()
        .any(|(_, o)| *o == EventOutcome::Applied(CreateOutcome::Created));
    if !created {
        roster::reseed(store, redis, life, tally.generation, owner, item_key).await?;
    }
    Ok(roster::key(owner, item_key))
}

/// Every event of `idx` failed with `why`.
fn failed(idx: &[usize], why: &str) -> Vec<(usize, EventOutcome)> {
    idx.iter()
        .map(|&i| (i, EventOutcome::Failed(why.to_owned())))
        .collect()
}

/// A group whose item's retracted list cannot vouch for its senders (full of retractions at
/// or after their events): the roster decides for all of them at once, one `HMGET` before the
/// write and one after, as [`roster::create_checked`] does for one event.
async fn write_unvouched<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: &RedisRestClient<H>,
    events: &[NotificationEvent],
    idx: &[usize],
    tally: Option<Tally>,
    now_ms: i64,
) -> Vec<(usize, EventOutcome)> {
    let evs: Vec<&NotificationEvent> = idx.iter().map(|&i| &events[i]).collect();
    let before = match roster::retracted_since(redis, &evs).await {
        Ok(b) => b,
        Err(e) => return failed(idx, &e.to_string()),
    };
    let refused = EventOutcome::Applied(CreateOutcome::AlreadyApplied);
    let mut out = Vec::with_capacity(idx.len());
    let mut todo = Vec::with_capacity(idx.len());
    for (&i, at) in idx.iter().zip(&before) {
        if at.is_some() {
            out.push((i, refused.clone()));
        } else {
            todo.push(i);
        }
    }
    let written = if todo.len() > 1 {
        match upsert_group(store, events, &todo, tally, false, now_ms).await {
            Ok(done) => done,
            Err(Some(why)) => {
                out.extend(failed(&todo, &why));
                return out;
            }
            Err(None) => create_each(store, None, events, &todo, tally, now_ms).await,
        }
    } else {
        create_each(store, None, events, &todo, tally, now_ms).await
    };
    let applied: Vec<&NotificationEvent> = written
        .iter()
        .filter(|(_, o)| matches!(o, EventOutcome::Applied(_)))
        .map(|&(i, _)| &events[i])
        .collect();
    match roster::undo_retracted(store, redis, &applied).await {
        Ok(undone) => {
            let mut undone = undone.into_iter();
            out.extend(written.into_iter().map(|(i, o)| match o {
                EventOutcome::Applied(_) if undone.next() == Some(true) => (i, refused.clone()),
                o => (i, o),
            }));
        }
        Err(e) => {
            let why = e.to_string();
            out.extend(
                written
                    .into_iter()
                    .map(|(i, _)| (i, EventOutcome::Failed(why.clone()))),
            );
        }
    }
    out
}

/// One create per event ([`roster::create_checked`]; without `redis`, no retraction guard).
async fn create_each<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    events: &[NotificationEvent],
    idx: &[usize],
    tally: Option<Tally>,
    now_ms: i64,
) -> Vec<(usize, EventOutcome)> {
    let mut out = Vec::with_capacity(idx.len());
    for &i in idx {
        let o = match roster::create_checked(store, redis, &events[i], tally, now_ms).await {
            Ok(o) => EventOutcome::Applied(o),
            Err(e) => EventOutcome::Failed(e.to_string()),
        };
        out.push((i, o));
    }
    out
}

async fn write_group<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    events: &[NotificationEvent],
    idx: &[usize],
    tally: Option<Tally>,
    now_ms: i64,
) -> Vec<(usize, EventOutcome)> {
    // While the senders are on a roster, the writes carry the retraction guard.
    let roster = redis.filter(|_| tally.is_some());
    let guard = roster.is_some();
    let mut rest: Vec<usize> = idx.to_vec();
    let mut out = Vec::with_capacity(idx.len());
    if idx.len() > 1 {
        match upsert_group(store, events, idx, tally, guard, now_ms).await {
            Ok(done) => return done,
            Err(Some(why)) => return failed(idx, &why),
            Err(None) => {}
        }
        // Missed: read which senders the item holds (1 call), then upsert the others as one
        // group again (a redelivered batch whose write was applied costs 2 calls, not one per
        // event). Anything else that moved in between falls back to the per-event create.
        let e = &events[idx[0]];
        match store.senders_of(&e.owner, &e.item_key).await {
            Ok(Some(d)) => {
                let (applied, todo) = split_by_stored(&d, events, idx);
                out.extend(
                    applied
                        .into_iter()
                        .map(|i| (i, EventOutcome::Applied(CreateOutcome::AlreadyApplied))),
                );
                rest = todo;
                let oldest = rest.iter().map(|&i| events[i].created_time_msec).min();
                if let (Some(r), Some(t)) = (roster, oldest) {
                    if !rules::retractions_complete(&d, t, store.config()) {
                        out.extend(write_unvouched(store, r, events, &rest, tally, now_ms).await);
                        return out;
                    }
                }
            }
            Ok(None) => {}
            Err(e) => return failed(idx, &e.to_string()),
        }
        if rest.len() > 1 {
            match upsert_group(store, events, &rest, tally, guard, now_ms).await {
                Ok(done) => {
                    out.extend(done);
                    return out;
                }
                Err(Some(why)) => {
                    out.extend(failed(&rest, &why));
                    return out;
                }
                Err(None) => {}
            }
        }
    }
    if rest.is_empty() {
        // Every sender was already there: the tally may still be news (see
        // `NotificationStore::create_counted`).
        if let Some(t) = tally.filter(|t| t.added) {
            let e = &events[idx[0]];
            if let Err(err) = store.store_tally(e.owner(), e.item_key(), t.packed).await {
                return failed(idx, &err.to_string());
            }
        }
    }
    out.extend(create_each(store, redis, events, &rest, tally, now_ms).await);
    out
}

/// Writes a batch of valid events: ONE `EVALSHA` reserves every id (reads the owners' muted
/// sets and puts the senders on their items' rosters), one upsert per (owner, itemKey) group
/// (groups run concurrently), ONE `EVALSHA` commits what was written and releases what was not.
/// Without Redis the events are still written (the upserts are idempotent on their own); with
/// Redis down none is (they fail, to be retried: the count is the roster's).
pub async fn apply<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    dedup_cfg: &DedupConfig,
    events: &[NotificationEvent],
    now_ms: i64,
) -> BatchReport {
    let n = events.len();
    let slots: Vec<dedup::Slot> = events
        .iter()
        .map(|e| dedup::slot(dedup_cfg, e.event_id(), e.created_time_msec()))
        .collect();
    let life = roster::life(store.config(), dedup_cfg.lease_ms);
    let admissions = match admit(store, redis, dedup_cfg, &life, events, &slots, now_ms).await {
        Ok(a) => a,
        // The count is the roster's: without the reservation nothing is written, and every
        // event is retried (a failed event of a queue message goes out again).
        Err(e) => {
            return BatchReport {
                outcomes: vec![EventOutcome::Failed(e.to_string()); n],
                changed_owners: vec![],
                unfinished_rosters: 0,
            }
        }
    };
    let reservations: Vec<Option<Reservation>> = admissions
        .iter()
        .map(|a| a.as_ref().map(|a| a.reservation.clone()))
        .collect();
    let tallies: Vec<Option<Tally>> = admissions
        .iter()
        .map(|a| a.as_ref().and_then(|a| a.tally))
        .collect();
    let mut outcomes: Vec<Option<EventOutcome>> =
        reservations.iter().map(decided_by_reservation).collect();
    index_senders(store, redis.is_some(), events, &tallies, &mut outcomes).await;
    let (complete, unfinished_rosters) =
        write_pending(store, redis, &life, events, &tallies, &mut outcomes, now_ms).await;
    let outcomes: Vec<EventOutcome> = outcomes
        .into_iter()
        .map(|o| o.unwrap_or(EventOutcome::Failed("not processed".into())))
        .collect();
    if let Some(r) = redis {
        let settle: Vec<Settle<'_>> = reservations
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Some(Reservation::Reserved { token }) => Some(match outcomes[i] {
                    EventOutcome::Failed(_) => Settle::Release(&slots[i], token.as_str()),
                    _ => Settle::Commit(&slots[i]),
                }),
                _ => None,
            })
            .chain(complete.iter().map(|k| Settle::Complete(k)))
            .collect();
        // A lost settle only lets the leases run out: a retry then proceeds, and the upsert's
        // filter keeps it from double counting.
        let _ = dedup::settle_many(r, &settle).await;
    }
    count_erased(store, events, &outcomes, &reservations).await;
    let changed: BTreeSet<&str> = outcomes
        .iter()
        .zip(events)
        .filter(|(o, _)| o.changed())
        .map(|(_, e)| e.owner())
        .collect();
    BatchReport {
        changed_owners: changed.into_iter().map(String::from).collect(),
        outcomes,
        unfinished_rosters,
    }
}

/// Why [`admit`] let no event of the batch through (each is then retried).
#[derive(Debug)]
enum AdmitError {
    /// The reservation round trip failed.
    Reservation(BackendError),
    /// Without Redis: the erasure fences could not be read.
    FenceLookup(NotifyError),
}

impl std::fmt::Display for AdmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Reservation(e) => write!(f, "reservation failed: {e}"),
            Self::FenceLookup(e) => write!(f, "erasure fence lookup failed: {e}"),
        }
    }
}

/// Every event's admission: with Redis ONE `EVALSHA` (fences, muted sets, leases, rosters);
/// without it `None` (write it) unless a fence read from the Data API (one `find` for the
/// batch) says the owner or the sender was erased after it.
async fn admit<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    dedup_cfg: &DedupConfig,
    life: &RosterLife,
    events: &[NotificationEvent],
    slots: &[dedup::Slot],
    now_ms: i64,
) -> Result<Vec<Option<Admission>>, AdmitError> {
    let Some(r) = redis else {
        return fenced_without_redis(store, events, now_ms)
            .await
            .map_err(AdmitError::FenceLookup);
    };
    let keys: Vec<String> = events
        .iter()
        .map(|e| preferences::mute_key(e.owner()))
        .collect();
    let members: Vec<[String; 2]> = events
        .iter()
        .map(|e| preferences::mute_members(e.category_type(), &e.notification_type))
        .collect();
    let fences: Vec<String> = events.iter().map(|e| fence::redis_key(e.owner())).collect();
    let sender_fences: Vec<String> = events
        .iter()
        .map(|e| super::senders::fence_key(&e.sender.id))
        .collect();
    let mutes: Vec<Option<MuteCheck<'_>>> = (0..events.len())
        .map(|i| {
            Some(MuteCheck {
                key: &keys[i],
                members: &members[i],
                fence: Some((&fences[i], events[i].created_time_msec())),
                sender_fence: Some(&sender_fences[i]),
            })
        })
        .collect();
    let rosters: Vec<Option<RosterCheck>> = events.iter().map(|e| Some(roster::check(e))).collect();
    let admissions = dedup::reserve_many(r, slots, &mutes, &rosters, dedup_cfg.lease_ms, life)
        .await
        .map_err(AdmitError::Reservation)?;
    Ok(admissions.into_iter().map(Some).collect())
}

/// The outcome a reservation settles before any write (`None`: write the event). Reserved, in
/// flight elsewhere, or no Redis: write (the upsert is idempotent).
fn decided_by_reservation(r: &Option<Reservation>) -> Option<EventOutcome> {
    match r {
        Some(Reservation::Muted) => Some(EventOutcome::Muted),
        Some(Reservation::Erased | Reservation::SenderErased) => Some(EventOutcome::Erased),
        Some(Reservation::Duplicate) => Some(EventOutcome::Duplicate),
        Some(Reservation::Retracted) => Some(EventOutcome::Applied(CreateOutcome::AlreadyApplied)),
        _ => None,
    }
}

/// The senders' index entries of the events to write whose sender joined its item (without
/// Redis: all), in one call before any item names them; if it fails, so do those events.
async fn index_senders<H: HttpClient>(
    store: &NotificationStore<H>,
    with_redis: bool,
    events: &[NotificationEvent],
    tallies: &[Option<Tally>],
    outcomes: &mut [Option<EventOutcome>],
) {
    let indexed: Vec<usize> = (0..events.len())
        .filter(|&i| outcomes[i].is_none())
        .filter(|&i| !with_redis || tallies[i].is_some_and(|t| t.indexes()))
        .collect();
    let entries: Vec<super::senders::Entry<'_>> = indexed
        .iter()
        .map(|&i| super::senders::Entry {
            sender_id: &events[i].sender.id,
            owner: events[i].owner(),
            item_key: events[i].item_key(),
            event_time_ms: events[i].created_time_msec(),
        })
        .collect();
    let written = super::senders::index_each(store, &entries).await;
    for (&i, r) in indexed.iter().zip(written) {
        if let Err(e) = r {
            outcomes[i] = Some(EventOutcome::Failed(format!("senders' index: {e}")));
        }
    }
}

/// Writes the events still without an outcome, one upsert per (owner, itemKey) group, a few
/// groups at a time, and completes the new rosters their writes were told to. Returns the
/// completed rosters' keys (to settle) and how many could not be completed.
async fn write_pending<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    life: &RosterLife,
    events: &[NotificationEvent],
    tallies: &[Option<Tally>],
    outcomes: &mut [Option<EventOutcome>],
    now_ms: i64,
) -> (Vec<String>, usize) {
    let pending: Vec<usize> = (0..events.len())
        .filter(|&i| outcomes[i].is_none())
        .collect();
    let groups = group(events, pending.into_iter(), outcomes);
    // A few groups at a time: workerd holds at most 6 connections open per invocation, and a
    // request waiting for one would spend its backend timeout in that wait.
    let mut complete: Vec<String> = Vec::new();
    let mut unfinished_rosters = 0;
    for run in groups.chunks(WRITE_CONCURRENCY) {
        let written = join_all(run.iter().map(|g| async {
            let tally = group_tally(tallies, g);
            let out = write_group(store, redis, events, g, tally, now_ms).await;
            let done = match (redis, tally.filter(|t| t.fresh)) {
                (Some(r), Some(t)) => {
                    Some(complete_roster(store, r, life, t, &events[g[0]], &out).await)
                }
                _ => None,
            };
            (out, done)
        }))
        .await;
        for (out, done) in written {
            for (i, o) in out {
                outcomes[i] = Some(o);
            }
            match done {
                Some(Ok(key)) => complete.push(key),
                Some(Err(_)) => unfinished_rosters += 1,
                None => {}
            }
        }
    }
    (complete, unfinished_rosters)
}

/// Without Redis: each event's admission is `None` (write it), or an `Erased` (`SenderErased`)
/// reservation when its owner's (sender's) fence is at or after it; one `find` for the batch.
async fn fenced_without_redis<H: HttpClient>(
    store: &NotificationStore<H>,
    events: &[NotificationEvent],
    now_ms: i64,
) -> Result<Vec<Option<Admission>>, NotifyError> {
    let ids: Vec<String> = events
        .iter()
        .flat_map(|e| {
            [
                fence::doc_id(e.owner()),
                super::senders::fence_doc_id(&e.sender.id),
            ]
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let at = fence::lookup_docs(store, &ids, now_ms).await?;
    let fence_of = |id: String| ids.iter().position(|x| *x == id).and_then(|k| at[k]);
    Ok(events
        .iter()
        .map(|e| {
            let t = e.created_time_msec();
            let reservation = if fence::behind(fence_of(fence::doc_id(e.owner())), t) {
                Reservation::Erased
            } else if fence::behind(fence_of(super::senders::fence_doc_id(&e.sender.id)), t) {
                Reservation::SenderErased
            } else {
                return None;
            };
            Some(Admission {
                reservation,
                tally: None,
            })
        })
        .collect())
}

/// Counts the events dropped behind each owner's fence (one call per such owner; rare). A lost
/// count loses only the figure, never an erasure.
async fn count_erased<H: HttpClient>(
    store: &NotificationStore<H>,
    events: &[NotificationEvent],
    outcomes: &[EventOutcome],
    reservations: &[Option<Reservation>],
) {
    // By fence document: the owner's, or the sender's for an event its sender's fence dropped.
    let mut per_fence: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for ((o, e), r) in outcomes.iter().zip(events).zip(reservations) {
        if *o == EventOutcome::Erased {
            let id = if *r == Some(Reservation::SenderErased) {
                super::senders::fence_doc_id(&e.sender.id)
            } else {
                fence::doc_id(e.owner())
            };
            *per_fence.entry(id).or_default() += 1;
        }
    }
    for (id, n) in per_fence {
        let _ = fence::count_dropped_named(store, &id, n).await;
    }
}

/// One queue message: its id, its body and how often it has been delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedMessage {
    /// The queue's message id.
    pub id: String,
    /// The body as sent: an event's JSON, or several packed ([`pack_messages`]).
    pub body: String,
    /// Deliveries of this message so far, this one included (≥ 1).
    pub attempts: u32,
}

/// What the consumer does with one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Done (written, duplicate, muted, kept as a dead letter because it can never succeed, or
    /// its failed events re-sent as a new message).
    Ack,
    /// A backend failed: deliver it again after this many seconds (the backoff over every
    /// delivery its events had, a remainder's earlier ones included).
    Retry {
        /// The delay.
        delay_seconds: u32,
    },
}

/// The result of [`consume`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumeReport {
    /// One per message, in order.
    pub dispositions: Vec<Disposition>,
    /// Owners whose inbox changed.
    pub changed_owners: Vec<String>,
    /// Events the messages carried (a packed message carries many).
    pub events: usize,
    /// Events that could not be read as a valid event (stored as dead letters).
    pub invalid: usize,
    /// Messages of which only some events failed, whose failed events went out again as one
    /// new message (with the deliveries they had, and the backoff's delay).
    pub requeued: usize,
    /// See [`BatchReport::unfinished_rosters`].
    pub unfinished_rosters: usize,
}

/// The dead-letter id of event `pos` of a message with `n` events: the message id for a lone
/// event (as before packing), `{id}:{pos}` within a packed message.
#[must_use]
pub fn letter_id(message_id: &str, pos: usize, n: usize) -> String {
    if n == 1 {
        message_id.to_owned()
    } else {
        format!("{message_id}:{pos}")
    }
}

/// How the consumer backs off: `base · 2^(attempts-1)` seconds, capped (see
/// [`retry_delay_seconds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Seconds before the first redelivery.
    pub base: u32,
    /// The most seconds between deliveries.
    pub cap: u32,
}

/// The queue consumer's core. Each message is unpacked into its events ([`unpack`]); each event
/// is parsed and validated, the valid ones are [`apply`]-ed in rounds of at most [`MAX_EVENTS`]
/// (whole messages per round), and the ones that can never succeed (config changed since they
/// were accepted) are kept as dead letters right away rather than retried.
///
/// A message is acknowledged when every event of it is done. When every event failed (or it
/// has one event, or no `requeue` queue is given), it is retried whole: the queue redelivers it
/// with backoff and moves it to the dead-letter queue after its retries, exactly as a message
/// of one event always was. When only some failed, those are sent again as one new message
/// carrying the deliveries they had, delayed by the backoff, and the original is acknowledged
/// (if that send fails, the original is retried whole; what was written is de-duplicated). The
/// remainder is strictly smaller each time, so it ends as a fully failing message, which the
/// queue's own retries and dead-letter queue handle: no event gets fewer attempts than before.
#[allow(clippy::too_many_arguments)]
pub async fn consume<H: HttpClient, Q: EventQueue>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    dedup_cfg: &DedupConfig,
    messages: &[QueuedMessage],
    queue: &str,
    now_ms: i64,
    backoff: Backoff,
    requeue: Option<&Q>,
) -> ConsumeReport {
    // Per message: its event bodies, and the deliveries they failed before this message.
    let unpacked: Vec<(Vec<String>, u32)> = messages.iter().map(|m| unpack(&m.body)).collect();
    let mut failed: Vec<Vec<usize>> = vec![Vec::new(); messages.len()];
    let mut letters_lost = vec![false; messages.len()];
    let mut dead = Vec::new();
    let mut changed: BTreeSet<String> = BTreeSet::new();
    let mut invalid = 0;
    let mut unfinished_rosters = 0;
    let mut round: Vec<(usize, usize, NotificationEvent)> = Vec::new();
    let mut round_messages = 0;
    let mut i = 0;
    while i < messages.len() || !round.is_empty() {
        let next = unpacked.get(i).map(|(evs, _)| evs.len());
        // Close the round before a message that would take it past MAX_EVENTS, and at the end.
        let close = match next {
            None => true,
            Some(n) => round_messages > 0 && round.len() + n > MAX_EVENTS,
        };
        if close {
            let evs: Vec<NotificationEvent> = round.iter().map(|(_, _, e)| e.clone()).collect();
            let report = apply(store, redis, dedup_cfg, &evs, now_ms).await;
            for ((m, pos, _), o) in round.iter().zip(&report.outcomes) {
                if matches!(o, EventOutcome::Failed(_)) {
                    failed[*m].push(*pos);
                }
            }
            changed.extend(report.changed_owners);
            unfinished_rosters += report.unfinished_rosters;
            round.clear();
            round_messages = 0;
            if next.is_none() {
                break;
            }
        }
        let (bodies, _) = &unpacked[i];
        for (pos, body) in bodies.iter().enumerate() {
            let parsed = serde_json::from_str::<NewEvent>(body)
                .map_err(|e| format!("not an event: {e}"))
                .and_then(|raw| {
                    NotificationEvent::new(raw, store.config(), now_ms).map_err(|e| e.to_string())
                });
            match parsed {
                Ok(ev) => round.push((i, pos, ev)),
                Err(reason) => dead.push((i, pos, reason)),
            }
        }
        round_messages += 1;
        i += 1;
    }
    invalid += dead.len();
    let letters: Vec<super::dead_letters::DeadLetter> = dead
        .iter()
        .map(|(m, pos, reason)| super::dead_letters::DeadLetter {
            id: letter_id(&messages[*m].id, *pos, unpacked[*m].0.len()),
            body: unpacked[*m].0[*pos].clone(),
            queue: queue.to_owned(),
            reason: reason.clone(),
        })
        .collect();
    let kept = super::dead_letters::store(store, &letters, now_ms).await;
    for ((m, _, _), r) in dead.iter().zip(kept) {
        if r.is_err() {
            letters_lost[*m] = true;
        }
    }
    let mut dispositions = Vec::with_capacity(messages.len());
    let mut requeued = 0;
    for (k, m) in messages.iter().enumerate() {
        let (bodies, before) = &unpacked[k];
        let f = &failed[k];
        let attempts = before.saturating_add(m.attempts.max(1));
        let delay = retry_delay_seconds(attempts, backoff.base, backoff.cap);
        let retry = Disposition::Retry {
            delay_seconds: delay,
        };
        let d = if f.is_empty() && !letters_lost[k] {
            Disposition::Ack
        } else if letters_lost[k] || f.len() == bodies.len() - dead_count(&dead, k) {
            retry
        } else if let Some(q) = requeue {
            // Some events were written: send only the failed ones again.
            let rest: Vec<String> = f.iter().map(|&p| bodies[p].clone()).collect();
            match send_packed(q, rest, attempts, delay).await {
                Ok(_) => {
                    requeued += 1;
                    Disposition::Ack
                }
                Err(_) => retry,
            }
        } else {
            retry
        };
        dispositions.push(d);
    }
    ConsumeReport {
        dispositions,
        changed_owners: changed.into_iter().collect(),
        events: unpacked.iter().map(|(evs, _)| evs.len()).sum(),
        invalid,
        requeued,
        unfinished_rosters,
    }
}

fn dead_count(dead: &[(usize, usize, String)], message: usize) -> usize {
    dead.iter().filter(|(m, _, _)| *m == message).count()
}

/// Delay before redelivering a message on its `attempts`-th failure: `base · 2^(attempts-1)`,
/// capped (the queue moves it to the dead-letter queue after the configured attempts).
#[must_use]
pub fn retry_delay_seconds(attempts: u32, base: u32, cap: u32) -> u32 {
    let exp = attempts.saturating_sub(1).min(20);
    base.saturating_mul(1 << exp).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fan_out_ids_fit_the_id_limit_whatever_the_owner() {
        assert_eq!(fan_out_event_id("e1", "u1"), "e1:u1");
        let owner = "ü".repeat(64); // 128 bytes, the owner limit
        let long = fan_out_event_id("e1", &owner);
        assert!(long.starts_with("fanout:") && long.len() <= super::super::limits::ID);
        assert_eq!(long, fan_out_event_id("e1", &owner), "deterministic");
        assert_ne!(long, fan_out_event_id("e2", &owner));
        assert_ne!(long, fan_out_event_id("e1", &"ü".repeat(63)));
        // A template id over the limit is not hidden by the digest: validation refuses it.
        let over = "x".repeat(128);
        assert_eq!(fan_out_event_id(&over, "u"), format!("{over}:u"));
    }
    use crate::notify::event::tests::{raw, NOW};

    fn ev(owner: &str, item: &str, sender: &str, t: i64) -> NotificationEvent {
        let mut r = raw(owner, item, sender, &format!("e-{owner}-{item}-{sender}"));
        r.created_time_msec = t;
        NotificationEvent::new(r, &NotifyConfig::default(), NOW).unwrap()
    }

    #[test]
    fn group_upsert_excludes_every_sender_and_each_retraction() {
        let cfg = NotifyConfig {
            origins_cap: 3,
            ..NotifyConfig::default()
        };
        let (a, b) = (ev("u", "k", "s1", NOW - 10), ev("u", "k", "s2", NOW - 5));
        let (filter, update) = group_upsert(&[&a, &b], &cfg, NOW);
        assert_eq!(filter[field::ORIGIN_SENDER], json!({"$nin": ["s1", "s2"]}));
        assert_eq!(
            filter["$nor"],
            json!([
                {"x": {"$elemMatch": {"s": "s1", "t": {"$gte": NOW - 10}}}},
                {"x": {"$elemMatch": {"s": "s2", "t": {"$gte": NOW - 5}}}},
            ])
        );
        let push = &update["$push"][field::ORIGINS];
        assert_eq!(push["$slice"], 3);
        assert_eq!(push["$sort"], json!({"t": -1}));
        assert_eq!(push["$each"].as_array().unwrap().len(), 2);
        assert_eq!(push["$each"][1]["s"], "s2");
        assert_eq!(update["$inc"], json!({(field::ORIGINS_COUNT): 2}));
        // Times come from the newest event, whichever order the batch had.
        assert_eq!(update["$max"]["createdTime"], ejson::date(NOW - 5));
        let (_, swapped) = group_upsert(&[&b, &a], &cfg, NOW);
        assert_eq!(swapped["$max"], update["$max"]);
        assert_eq!(update["$currentDate"], json!({"sync": true}));
        assert_eq!(update["$set"]["read"], false);
    }

    #[test]
    fn grouping_keeps_first_seen_order_and_one_origin_per_sender() {
        let evs = vec![
            ev("u", "k", "s1", NOW),
            ev("u", "j", "s1", NOW),
            ev("u", "k", "s2", NOW),
            ev("u", "k", "s1", NOW - 1),
            ev("v", "k", "s1", NOW),
        ];
        let mut outcomes = vec![None; evs.len()];
        let groups = group(&evs, 0..evs.len(), &mut outcomes);
        assert_eq!(groups, vec![vec![0, 2], vec![1], vec![4]]);
        assert_eq!(
            outcomes[3],
            Some(EventOutcome::Applied(CreateOutcome::AlreadyApplied))
        );
    }

    #[test]
    fn chunks_respect_count_and_bytes() {
        let small: Vec<String> = (0..250).map(|i| format!("{i:>10}")).collect();
        let c = chunk_messages(small);
        assert_eq!(
            c.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![100, 100, 50]
        );
        let big: Vec<String> = (0..10).map(|_| "x".repeat(60_000)).collect();
        let c = chunk_messages(big);
        for chunk in &c {
            let bytes: usize = chunk.iter().map(|b| b.len() + MESSAGE_OVERHEAD).sum();
            assert!(bytes <= QUEUE_BATCH_BYTES, "{bytes}");
        }
        assert_eq!(c.iter().map(Vec::len).sum::<usize>(), 10);
        assert_eq!(c.len(), 3);
        assert!(chunk_messages(vec![]).is_empty());
    }

    #[test]
    fn packing_fills_the_operation_unit_and_unpacks_to_the_same_bodies() {
        let body = |i: usize| {
            serde_json::to_string(&raw("u", "k", &format!("s{i}"), &format!("e{i}"))).unwrap()
        };
        // A lone event stays a plain event body (the format before packing).
        assert_eq!(pack_messages(vec![body(0)], 0), vec![body(0)]);
        assert_eq!(unpack(&body(0)), (vec![body(0)], 0));
        // Ten events are one message; they come back unchanged, in order.
        let ten: Vec<String> = (0..10).map(body).collect();
        let packed = pack_messages(ten.clone(), 0);
        assert_eq!(packed.len(), 1);
        assert!(packed[0].len() + MESSAGE_OVERHEAD <= QUEUE_OPERATION_BYTES);
        assert_eq!(unpack(&packed[0]), (ten, 0));
        // Past MAX_EVENTS_PER_MESSAGE or the unit, a new message starts.
        let many: Vec<String> = (0..25).map(body).collect();
        let packed = pack_messages(many.clone(), 0);
        assert_eq!(packed.len(), 3);
        let back: Vec<String> = packed.iter().flat_map(|m| unpack(m).0).collect();
        assert_eq!(back, many);
        let big: Vec<String> = (0..10)
            .map(|i| format!("{{\"x\":\"{}\",\"i\":{i}}}", "y".repeat(20_000)))
            .collect();
        let packed = pack_messages(big.clone(), 0);
        for m in &packed {
            assert!(
                m.len() + MESSAGE_OVERHEAD <= QUEUE_OPERATION_BYTES,
                "{}",
                m.len()
            );
        }
        assert_eq!(packed.len(), 4); // 3 + 3 + 3 + 1
        assert_eq!(
            packed.iter().flat_map(|m| unpack(m).0).collect::<Vec<_>>(),
            big
        );
        // An event larger than the unit travels alone.
        let huge = format!("{{\"x\":\"{}\"}}", "z".repeat(70_000));
        assert_eq!(
            pack_messages(vec![body(1), huge.clone(), body(2)], 0).len(),
            3
        );
        // A remainder carries the deliveries it failed, even alone.
        let rest = pack_messages(vec![body(3)], 2);
        assert_eq!(unpack(&rest[0]), (vec![body(3)], 2));
        assert!(pack_messages(vec![], 0).is_empty());
        // Anything that is not a pack is one (possibly invalid) event, parsed later.
        assert_eq!(
            unpack("{\"owner\":1}"),
            (vec!["{\"owner\":1}".to_owned()], 0)
        );
        assert_eq!(unpack("not json"), (vec!["not json".to_owned()], 0));
    }

    #[test]
    fn letter_ids_keep_a_lone_event_on_its_message_id() {
        assert_eq!(letter_id("m1", 0, 1), "m1");
        assert_eq!(letter_id("m1", 7, 100), "m1:7");
    }

    #[test]
    fn fan_out_ids_are_per_owner_and_stable() {
        let t = raw("", "post:1", "s", "like-9");
        let evs = fan_out(&t, &["a".into(), "b".into()]);
        assert_eq!(
            evs.iter()
                .map(|e| (e.owner.as_str(), e.event_id.as_str()))
                .collect::<Vec<_>>(),
            vec![("a", "like-9:a"), ("b", "like-9:b")]
        );
        assert_eq!(evs[0].item_key, "post:1");
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let d: Vec<u32> = (1..=6).map(|a| retry_delay_seconds(a, 2, 30)).collect();
        assert_eq!(d, vec![2, 4, 8, 16, 30, 30]);
        assert_eq!(retry_delay_seconds(0, 2, 30), 2);
        assert_eq!(retry_delay_seconds(u32::MAX, 2, 30), 30);
    }
}
