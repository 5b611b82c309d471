//! Erasing a sender: its name out of everyone else's "Ana and 3 others", counts still exact.
//!
//! **Finding the items: a reverse index** in the Data API (`{NOTIFY_COLLECTION}_senders`), one
//! entry per (sender, item): `{_id: "<digest>:<notificationId>", s: <digest>, o: owner, k: itemKey,
//! t: newest event time, expireAt}`. Not a multikey index on `origins.s`: an item past the
//! origins cap can hold a sender only in its Redis roster (a 64-bit fingerprint), which no index
//! on the document sees and which cannot be queried by sender; the index sees every sender that
//! ever joined. The `_id` starts with the sender's digest, so the job pages a sender's entries
//! by a range of the primary key and the collection needs no index on `s`.
//!
//! **Written by the create path** only when the sender *joins* an item's roster (the reservation
//! already says so, [`crate::dedup::Tally::indexes`]), before the item's upsert, so a failed
//! index write fails the create before anything names the sender (the retry, whose reservation
//! finds the sender on the roster with the same event time, writes it again). A repeated sender
//! costs nothing. Without Redis there is no roster to say who is new: every written event
//! upserts its entry. A batch writes its new entries in one `insertMany` (one upsert each only
//! when one of them already exists). An entry has no TTL: it lives exactly as long as its item,
//! which other senders' events can extend without end. The housekeeping looks at it when the
//! item can first be gone (`checkAt`: `t` + the item's TTL + its tombstone's) and deletes it
//! only if the item is gone, else looks again at the item's `purgeAt` ([`collect_batch`]).
//!
//! **The job** (`{_id: "sender:<digest>"}` in the erasures collection, beside the owners'), in
//! budgeted steps like [`super::erasure`]'s:
//! 1. **Fence**: `sender-fence:<digest>` (document) and `sf:<digest>` (Redis) → erased-at. The
//!    create's reservation script checks it beside the owner's, so a late event of the sender
//!    created at or before the erasure is dropped and counted; one created after it is written.
//!    A retraction of a sender that is not on the item's roster changes nothing behind it (it
//!    would write the erased id into `x`).
//! 2. **Items**: pages of [`PAGE`] index entries; per page one `EVALSHA` takes the sender off
//!    the rosters ([`crate::dedup::roster_erase`]: count − 1, version + 1), four `updateMany`
//!    take its origins (event at or before the fence) and retractions out of the documents (an
//!    item whose only stored origin it was is tombstoned, as a retraction of its last sender
//!    does: [`page_updates`]), and one `$max` per item stores the roster's new tally.
//! 3. **Dead letters** carrying the sender (the body's `"sender":{"id":…}`) are **deleted**, not
//!    rewritten: a letter is a copy of an event that failed, and its replay would be dropped by
//!    the fence anyway.
//! 4. **Sweep**: the items once more, [`super::erasure::SWEEP_AFTER_MS`] after the fence (for a
//!    create that passed the fence check before it existed and landed after its page), now
//!    deleting the index entries, and the dead letters once more.
//!
//! Every step is idempotent (a repeated page finds the rosters already without the sender and
//! stores their current tally again), so a run that dies is repeated harmlessly. When done the
//! job forgets the sender's id.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::document::field;
use super::erasure::{JobState, Step, SWEEP_AFTER_MS};
use super::{fence, notification_id, roster, NotificationStore, NotifyConfig, NotifyError};
use crate::backend::{ejson, FindOptions, HttpClient, RedisRestClient};

/// Index entries per page of the items step: with Redis a page costs 1 `find`, 1 `EVALSHA`,
/// 4 `updateMany` and one tally per item (33 with the sweep's two deletes), inside
/// [`super::erasure::DEFAULT_BUDGET`] less the request's own calls.
pub const PAGE: u32 = 25;

/// The sender's digest (the owner fence's: 128 bits of SHA-256, in hex).
#[must_use]
pub fn digest(sender_id: &str) -> String {
    fence::digest(sender_id)
}

/// An index entry's `_id`: the sender's digest, then the item's id.
#[must_use]
pub fn entry_id(sender_id: &str, owner: &str, item_key: &str) -> String {
    format!("{}:{}", digest(sender_id), notification_id(owner, item_key))
}

/// The sender fence's document id (in the erasures collection).
#[must_use]
pub fn fence_doc_id(sender_id: &str) -> String {
    format!("sender-fence:{}", digest(sender_id))
}

/// The sender fence's Redis key.
#[must_use]
pub fn fence_key(sender_id: &str) -> String {
    format!("sf:{}", digest(sender_id))
}

/// A sender's erasure job id (the same for every erasure of that sender).
#[must_use]
pub fn job_id(sender_id: &str) -> String {
    format!("sender:{}", digest(sender_id))
}

/// Whether a job id is a sender's.
#[must_use]
pub fn is_job_id(id: &str) -> bool {
    id.starts_with("sender:")
}

/// One (sender, item) pair to index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The sender's id.
    pub sender_id: &'a str,
    /// The item's owner.
    pub owner: &'a str,
    /// The item.
    pub item_key: &'a str,
    /// The sender's event time (ms).
    pub event_time_ms: i64,
}

impl Entry<'_> {
    /// The first time the entry's item can be gone, as of this event: its expiry and its
    /// tombstone's life. Not an expiry: [`collect_batch`] looks at the item then.
    fn check_at(&self, cfg: &NotifyConfig) -> i64 {
        self.event_time_ms
            .saturating_add(cfg.ttl_ms)
            .saturating_add(cfg.tombstone_ttl_ms)
    }

    /// The entry as inserted.
    #[must_use]
    pub fn document(&self, cfg: &NotifyConfig) -> Value {
        json!({
            "_id": entry_id(self.sender_id, self.owner, self.item_key),
            "s": digest(self.sender_id), "o": self.owner, "k": self.item_key,
            "t": self.event_time_ms, (CHECK_AT): ejson::date(self.check_at(cfg)),
        })
    }

    /// The entry's idempotent upsert → `(filter, update)`: a newer event moves `t` and the
    /// check forward, an older one changes nothing.
    #[must_use]
    pub fn upsert(&self, cfg: &NotifyConfig) -> (Value, Value) {
        (
            json!({ "_id": entry_id(self.sender_id, self.owner, self.item_key) }),
            json!({
                "$setOnInsert": { "s": digest(self.sender_id), "o": self.owner, "k": self.item_key },
                "$max": { "t": self.event_time_ms, (CHECK_AT): ejson::date(self.check_at(cfg)) },
            }),
        )
    }
}

/// An entry's field: when the housekeeping looks whether its item is gone ([`collect_batch`]).
/// Entries have no TTL: an item lives as long as events keep extending it, so no expiry fixed
/// when the entry is written can be sure to outlive the item.
pub const CHECK_AT: &str = "checkAt";

/// At most this many distinct new check times per batch of [`collect_batch`] (one
/// `updateMany` each), so its cost is known before it runs.
pub const RECHECK_GROUPS: usize = 4;

/// Subrequests one [`collect_batch`] costs at most: the due entries, their items, the
/// delete of the entries whose item is gone, one update per new check time.
#[must_use]
pub fn collect_cost() -> u32 {
    3 + RECHECK_GROUPS as u32
}

/// How long an entry whose item is still there (or due for the TTL monitor) waits at least
/// before the next look.
const RECHECK_MIN_MS: i64 = 24 * 3_600_000;

/// What [`collect_batch`] does to due entries: `gone` are the entries whose item no longer
/// exists (deleted); every other entry is looked at again at its item's `purgeAt` (at least
/// [`RECHECK_MIN_MS`] from now), in at most [`RECHECK_GROUPS`] groups: a time beyond the
/// groups' is brought *earlier* (a look too early costs a recheck; a look too late none: the
/// entry is never deleted while its item exists).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectPlan {
    /// Entries whose item is gone.
    pub gone: Vec<String>,
    /// `(check at, entries)`, earliest first.
    pub recheck: Vec<(i64, Vec<String>)>,
}

/// Plans [`collect_batch`]: `due` are the entries' ids, `purge_at` the items that still exist
/// (by `notificationId`) with their `purgeAt` (`None`: not stored).
#[must_use]
pub fn collect_plan(
    due: &[String],
    purge_at: &std::collections::BTreeMap<String, Option<i64>>,
    cfg: &NotifyConfig,
    now_ms: i64,
) -> CollectPlan {
    let mut plan = CollectPlan::default();
    let mut at: std::collections::BTreeMap<i64, Vec<String>> = std::collections::BTreeMap::new();
    for id in due {
        let item = id.split_once(':').map_or("", |(_, n)| n);
        match purge_at.get(item) {
            None => plan.gone.push(id.clone()),
            Some(p) => {
                let want = p
                    .unwrap_or_else(|| {
                        now_ms
                            .saturating_add(cfg.ttl_ms)
                            .saturating_add(cfg.tombstone_ttl_ms)
                    })
                    .max(now_ms.saturating_add(RECHECK_MIN_MS));
                at.entry(want).or_default().push(id.clone());
            }
        }
    }
    for (t, ids) in at {
        if plan.recheck.len() < RECHECK_GROUPS {
            plan.recheck.push((t, ids));
        } else if let Some(last) = plan.recheck.last_mut() {
            last.1.extend(ids);
        }
    }
    plan
}

/// What the entries' collection did in one housekeeping run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Collected {
    /// Entries deleted: their item was gone.
    pub dropped: u64,
    /// Entries looked at whose item is still there: checked again later.
    pub kept: u64,
    /// Subrequests spent.
    pub calls: u32,
}

/// One batch of the senders' index entries whose check time has come ([`CHECK_AT`]): an entry
/// whose item no longer exists is deleted, the others are checked again when their item can
/// be gone ([`collect_plan`]). This is how entries end, instead of a TTL: an entry lives
/// exactly as long as its item, whichever later events extended the item (an expiry fixed by
/// the sender's own event would end before an item that other senders kept alive, and the
/// sender's erasure would miss it). Costs nothing on the create path; at most
/// [`collect_cost`] calls per `batch` due entries. If the housekeeping does not run, entries
/// wait (storage), none is lost.
///
/// # Errors
/// Backend failures (what was done stays done).
pub async fn collect_batch<H: HttpClient>(
    store: &NotificationStore<H>,
    now_ms: i64,
    batch: u32,
) -> Result<(Collected, bool), NotifyError> {
    let cfg = store.config();
    let colls = cfg.collections();
    let due_filter = json!({ (CHECK_AT): { "$lte": ejson::date(now_ms) } });
    let due: Vec<String> = store
        .api()
        .find(
            &colls.senders,
            &due_filter,
            &FindOptions {
                projection: Some(json!({ "_id": 1 })),
                sort: Some(json!({ (CHECK_AT): 1 })),
                limit: Some(batch.max(1)),
                ..FindOptions::default()
            },
        )
        .await?
        .iter()
        .filter_map(|d| d.get("_id")?.as_str().map(str::to_owned))
        .collect();
    let mut done = Collected {
        calls: 1,
        ..Collected::default()
    };
    if due.is_empty() {
        return Ok((done, true));
    }
    let items: Vec<&str> = due
        .iter()
        .filter_map(|id| id.split_once(':').map(|(_, n)| n))
        .collect();
    let found = store
        .api()
        .find(
            &colls.items,
            &json!({ "_id": { "$in": items } }),
            &FindOptions {
                projection: Some(json!({ "purgeAt": 1 })),
                ..FindOptions::default()
            },
        )
        .await?;
    done.calls += 1;
    let purge_at = found
        .iter()
        .filter_map(|d| {
            let id = d.get("_id")?.as_str()?.to_owned();
            Some((id, d.get("purgeAt").and_then(ejson::date_ms)))
        })
        .collect();
    let plan = collect_plan(&due, &purge_at, cfg, now_ms);
    if !plan.gone.is_empty() {
        // Only entries still due: one a create refreshed since (its sender came back to a
        // recreated item) stays.
        let mut f = due_filter.clone();
        f["_id"] = json!({ "$in": plan.gone });
        done.dropped += store.api().delete_many(&colls.senders, &f).await?;
        done.calls += 1;
    }
    for (at, ids) in &plan.recheck {
        store
            .api()
            .update_many(
                &colls.senders,
                &json!({ "_id": { "$in": ids } }),
                &json!({ "$max": { (CHECK_AT): ejson::date(*at) } }),
                false,
            )
            .await?;
        done.calls += 1;
        done.kept += ids.len() as u64;
    }
    Ok((done, due.len() < batch.max(1) as usize))
}

/// Writes index entries: one upsert for one entry, else one `insertMany`; when that fails (one
/// of them already exists, a sender back on an item whose roster had expired; or the call
/// failed) one upsert each, so a failure fails only its own entries' events, not the batch's.
///
/// # Errors
/// Backend failures (the caller fails the events: nothing naming them is written yet).
pub async fn index<H: HttpClient>(
    store: &NotificationStore<H>,
    entries: &[Entry<'_>],
) -> Result<(), NotifyError> {
    match index_each(store, entries)
        .await
        .into_iter()
        .find_map(Result::err)
    {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// [`index`], with a result per entry of `entries`, in order (two events of one sender on one
/// item share their entry, written once: the newest).
pub async fn index_each<H: HttpClient>(
    store: &NotificationStore<H>,
    entries: &[Entry<'_>],
) -> Vec<Result<(), NotifyError>> {
    let cfg = store.config();
    let coll = cfg.collections().senders;
    let ids: Vec<String> = entries
        .iter()
        .map(|e| entry_id(e.sender_id, e.owner, e.item_key))
        .collect();
    let mut newest: std::collections::BTreeMap<&str, &Entry<'_>> =
        std::collections::BTreeMap::new();
    for (id, e) in ids.iter().zip(entries) {
        match newest.get(id.as_str()) {
            Some(had) if had.event_time_ms >= e.event_time_ms => {}
            _ => {
                newest.insert(id, e);
            }
        }
    }
    let mut written: std::collections::BTreeMap<&str, Result<(), NotifyError>> =
        std::collections::BTreeMap::new();
    let many = newest.len() >= 2 && {
        let mut fields = Map::new();
        fields.insert(
            "documents".into(),
            Value::Array(newest.values().map(|e| e.document(cfg)).collect()),
        );
        store
            .api()
            .action("insertMany", &coll, fields)
            .await
            .is_ok()
    };
    for (id, e) in &newest {
        let r = if many {
            Ok(())
        } else {
            let (f, u) = e.upsert(cfg);
            store
                .api()
                .update_one(&coll, &f, &u, true)
                .await
                .map(|_| ())
                .map_err(NotifyError::from)
        };
        written.insert(id, r);
    }
    ids.iter()
        .map(|id| match written.get(id.as_str()) {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(e.clone()),
            None => Ok(()),
        })
        .collect()
}

/// What a sender's erasure changed so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Scrubbed {
    /// Items that kept other senders and lost this one's origin or retraction (Data API).
    pub items: u64,
    /// Items removed (tombstoned, as a retraction of the last sender does): it was their only
    /// stored sender.
    pub items_removed: u64,
    /// Items whose exact sender count dropped by one (the sender left their Redis roster). A
    /// figure of progress: a page repeated after a failed Redis call finds its rosters already
    /// without the sender and does not count them again, so it can be low; the counts are exact.
    pub counts_dropped: u64,
    /// Dead letters carrying the sender, deleted.
    pub dead_letters: u64,
    /// The sender's index entries, deleted at the end.
    pub index_entries: u64,
}

/// A sender's erasure job as stored (and, without the sender, as shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SenderJob {
    /// `sender:<digest>`.
    #[serde(rename = "_id")]
    pub id: String,
    /// The sender while the job runs; dropped when it is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    /// The step to run next: `fence`, `items`, `dead_letters`, `sweep` or `done`.
    pub step: Step,
    /// The fence: the sender's events created at or before it are dropped.
    pub erased_at: i64,
    /// The last index entry done in the current pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Counts so far.
    pub scrubbed: Scrubbed,
    /// When the last run ended.
    pub updated_at: i64,
}

/// `POST /v1/admin/senders/{senderId}/erasure` and `GET /v1/admin/erasures/{id}` of a sender's
/// erasure: its progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SenderErasureView {
    /// The job's id (`sender:` + a digest; what `GET /v1/admin/erasures/{id}` takes).
    pub id: String,
    /// `running` until every step is done.
    pub state: JobState,
    /// The step to run next: `fence`, `items`, `dead_letters`, `sweep`, then `done`.
    pub step: Step,
    /// The fence, ms since the epoch: the sender's events created at or before it are dropped.
    pub erased_at_msec: i64,
    /// What was changed, per store.
    pub scrubbed: Scrubbed,
    /// The sender's late events dropped behind the fence so far (shown by `GET`; 0 in a `POST`
    /// answer).
    pub late_events_dropped: u64,
    /// When a running job can go on (the sweep waits a minute after the fence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continue_after_msec: Option<i64>,
}

impl SenderJob {
    /// A new job for `sender_id`, fenced at `now_ms`.
    #[must_use]
    pub fn start(sender_id: &str, now_ms: i64) -> Self {
        SenderJob {
            id: job_id(sender_id),
            sender: Some(sender_id.to_owned()),
            step: Step::Fence,
            erased_at: now_ms,
            cursor: None,
            scrubbed: Scrubbed::default(),
            updated_at: now_ms,
        }
    }

    /// Its API view.
    #[must_use]
    pub fn view(&self, late_events_dropped: u64) -> SenderErasureView {
        SenderErasureView {
            id: self.id.clone(),
            state: if self.step == Step::Done {
                JobState::Done
            } else {
                JobState::Running
            },
            step: self.step,
            erased_at_msec: self.erased_at,
            scrubbed: self.scrubbed,
            late_events_dropped,
            continue_after_msec: (self.step == Step::Sweep && self.cursor.is_none())
                .then_some(self.erased_at + SWEEP_AFTER_MS),
        }
    }

    /// The sender's digest (the fence's name).
    #[must_use]
    pub fn digest(&self) -> &str {
        self.id.strip_prefix("sender:").unwrap_or(&self.id)
    }
}

/// Subrequests a step costs at most (the saved progress is counted apart).
#[must_use]
pub fn cost(step: Step, redis: bool) -> u32 {
    let r = u32::from(redis);
    match step {
        Step::Fence => 1 + r,
        // find, roster erase, 4 × updateMany, a tally per item; the sweep deletes the entries
        // and the dead letters again.
        Step::Items => 5 + r + r * PAGE,
        Step::Sweep => 7 + r + r * PAGE,
        Step::DeadLetters => 1,
        _ => 0,
    }
}

/// The dead letters carrying a sender: by the body's `"sender":{"id":…}` (the queued event's
/// JSON, whose sender object starts with its id).
#[must_use]
pub fn dead_letters_of(sender_id: &str) -> Value {
    let quoted = serde_json::to_string(sender_id).unwrap_or_default();
    let pattern = format!(
        r#""sender"\s*:\s*\{{\s*"id"\s*:\s*{}"#,
        super::erasure::regex_escape(&quoted)
    );
    json!({ "body": { "$regex": pattern } })
}

/// The document updates of a page (`updateMany` over its item ids), run in this order:
/// 1. the sender's origin (an event at or before the fence) and retractions leave the items that
///    hold another origin too (count −1 without Redis);
/// 2. an item whose only stored origin is the sender's is tombstoned, as a retraction of its
///    last sender does;
/// 3. step 1 again: for an item that held only the sender at step 1 and gained another sender
///    before step 2 (which then left it alone);
/// 4. the retractions of the items that hold only those.
///
/// Each keeps a retraction's guard ("another origin is left" / "none is"), so with a racing
/// retraction of the other sender, whichever lands first, the item ends tombstoned.
#[must_use]
pub fn page_updates(
    ids: &[String],
    sender_id: &str,
    erased_at: i64,
    cfg: &NotifyConfig,
    now_ms: i64,
) -> [(Value, Value); 4] {
    let origin = json!({ "s": sender_id, "t": { "$lte": erased_at } });
    let mut last = super::query::tombstone_update(cfg, now_ms);
    last["$pull"] = json!({ (field::RETRACTED): { "s": sender_id } });
    let others = (
        json!({ "_id": { "$in": ids }, (field::ORIGINS): { "$elemMatch": origin },
                (field::SECOND_ORIGIN): { "$exists": true } }),
        json!({
            "$pull": { (field::ORIGINS): origin, (field::RETRACTED): { "s": sender_id } },
            "$inc": { (field::ORIGINS_COUNT): -1 },
            "$currentDate": { "sync": true },
        }),
    );
    [
        others.clone(),
        (
            json!({ "_id": { "$in": ids }, "deleted": { "$ne": true },
                    (field::ORIGINS): { "$elemMatch": origin }, (field::SECOND_ORIGIN): { "$exists": false } }),
            last,
        ),
        others,
        (
            json!({ "_id": { "$in": ids }, (field::RETRACTED_SENDER): sender_id }),
            json!({ "$pull": { (field::RETRACTED): { "s": sender_id } }, "$currentDate": { "sync": true } }),
        ),
    ]
}

/// The filter of one page of a sender's index entries after `cursor`.
#[must_use]
pub fn page_filter(digest: &str, cursor: Option<&str>) -> Value {
    let from = cursor.map_or_else(|| format!("{digest}:"), str::to_owned);
    json!({ "_id": { "$gt": from, "$lt": format!("{digest};") } })
}

/// Loads a sender's job.
///
/// # Errors
/// Backend failures; an unreadable job is a decode failure.
pub async fn load<H: HttpClient>(
    store: &NotificationStore<H>,
    id: &str,
) -> Result<Option<SenderJob>, NotifyError> {
    super::erasure::load_as(store, id, "sender erasure job").await
}

async fn save<H: HttpClient>(
    store: &NotificationStore<H>,
    job: &SenderJob,
) -> Result<(), NotifyError> {
    let absent: Vec<&str> = [
        ("sender", job.sender.is_none()),
        ("cursor", job.cursor.is_none()),
    ]
    .into_iter()
    .filter_map(|(field, none)| none.then_some(field))
    .collect();
    let what = "sender erasure job";
    super::erasure::save_as(store, &job.id, job.erased_at, job, &absent, what).await
}

/// Runs the job's steps within `budget` subrequests (one saves the progress); returns whether
/// it is done. Stops at the sweep until [`SWEEP_AFTER_MS`] have passed since the fence.
///
/// # Errors
/// Backend failures: what was done stays done (the next run repeats the step).
pub async fn run<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    lease_ms: u64,
    job: &mut SenderJob,
    budget: u32,
    now_ms: i64,
) -> Result<bool, NotifyError> {
    let Some(sender) = job.sender.clone() else {
        job.step = Step::Done;
        return Ok(true);
    };
    let mut left = budget.saturating_sub(1);
    let result = steps(store, redis, lease_ms, job, &sender, &mut left, now_ms).await;
    job.updated_at = now_ms;
    if job.step == Step::Done {
        job.sender = None;
        job.cursor = None;
    }
    save(store, job).await?;
    result.map(|()| job.step == Step::Done)
}

async fn steps<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    lease_ms: u64,
    job: &mut SenderJob,
    sender: &str,
    left: &mut u32,
    now_ms: i64,
) -> Result<(), NotifyError> {
    let colls = store.config().collections();
    while job.step != Step::Done {
        let c = cost(job.step, redis.is_some());
        if c > *left {
            return Ok(());
        }
        *left -= c;
        match job.step {
            Step::Fence => {
                fence::raise_named(
                    store,
                    redis,
                    &fence_doc_id(sender),
                    &fence_key(sender),
                    job.erased_at,
                )
                .await?;
                job.step = Step::Items;
            }
            Step::Items | Step::Sweep => {
                let sweep = job.step == Step::Sweep;
                if sweep && now_ms < job.erased_at + SWEEP_AFTER_MS {
                    *left += c;
                    return Ok(());
                }
                let (n, last) = scrub_page(store, redis, lease_ms, job, sender, now_ms).await?;
                job.cursor = last;
                if n < u64::from(PAGE) {
                    job.cursor = None;
                    if sweep {
                        job.scrubbed.dead_letters += store
                            .api()
                            .delete_many(&colls.dead_letters, &dead_letters_of(sender))
                            .await?;
                        job.step = Step::Done;
                    } else {
                        job.step = Step::DeadLetters;
                    }
                }
            }
            Step::DeadLetters => {
                job.scrubbed.dead_letters += store
                    .api()
                    .delete_many(&colls.dead_letters, &dead_letters_of(sender))
                    .await?;
                job.step = Step::Sweep;
            }
            _ => job.step = Step::Done,
        }
    }
    Ok(())
}

/// One page of the sender's index entries after the job's cursor: rosters, documents, tallies
/// (and in the sweep the entries themselves). Returns the entries found and the last one's id.
async fn scrub_page<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    lease_ms: u64,
    job: &mut SenderJob,
    sender: &str,
    now_ms: i64,
) -> Result<(u64, Option<String>), NotifyError> {
    let cfg = store.config();
    let colls = cfg.collections();
    let entries = store
        .api()
        .find(
            &colls.senders,
            &page_filter(job.digest(), job.cursor.as_deref()),
            &FindOptions {
                projection: Some(json!({ "o": 1, "k": 1 })),
                sort: Some(json!({ "_id": 1 })),
                limit: Some(PAGE),
                ..FindOptions::default()
            },
        )
        .await?;
    let last = entries
        .last()
        .and_then(|d| d.get("_id")?.as_str().map(str::to_owned));
    let items: Vec<(&str, &str)> = entries
        .iter()
        .filter_map(|d| Some((d.get("o")?.as_str()?, d.get("k")?.as_str()?)))
        .collect();
    if items.is_empty() {
        return Ok((entries.len() as u64, last));
    }
    // The rosters first: a create racing this page either joined before (its count is taken
    // off here) or is refused by the fence; the documents then lose what the rosters lost.
    let tallies = match redis {
        Some(r) => {
            let keys: Vec<String> = items.iter().map(|(o, k)| roster::key(o, k)).collect();
            let life = roster::life(cfg, lease_ms);
            crate::dedup::roster_erase(r, &keys, &roster::field(sender), job.erased_at, &life)
                .await?
        }
        None => vec![],
    };
    let ids: Vec<String> = items.iter().map(|(o, k)| notification_id(o, k)).collect();
    for (i, (f, u)) in page_updates(&ids, sender, job.erased_at, cfg, now_ms)
        .iter()
        .enumerate()
    {
        let r = store.api().update_many(&colls.items, f, u, false).await?;
        if i == 1 {
            job.scrubbed.items_removed += r.modified;
        } else {
            job.scrubbed.items += r.modified;
        }
    }
    for (t, (o, k)) in tallies.iter().zip(&items) {
        if let Some(t) = t {
            if t.removed {
                job.scrubbed.counts_dropped += 1;
            }
            store.store_tally(o, k, t.packed).await?;
        }
    }
    if job.step == Step::Sweep {
        let mine: Vec<String> = entries
            .iter()
            .filter_map(|d| d.get("_id")?.as_str().map(str::to_owned))
            .collect();
        job.scrubbed.index_entries += store
            .api()
            .delete_many(
                &colls.senders,
                &json!({ "_id": { "$in": mine }, "t": { "$lte": job.erased_at } }),
            )
            .await?;
    }
    Ok((entries.len() as u64, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_hold_no_sender_in_clear_and_entries_page_by_their_prefix() {
        let d = digest("ana");
        for s in [
            entry_id("ana", "u1", "k"),
            fence_doc_id("ana"),
            fence_key("ana"),
            job_id("ana"),
        ] {
            assert!(!s.contains("ana") && s.contains(&d), "{s}");
        }
        assert!(is_job_id(&job_id("ana")) && !is_job_id("owner:x"));
        let id = entry_id("ana", "u1", "k");
        let f = page_filter(&d, None);
        let (lo, hi) = (
            f["_id"]["$gt"].as_str().unwrap(),
            f["_id"]["$lt"].as_str().unwrap(),
        );
        assert!(lo < id.as_str() && id.as_str() < hi);
        // Another sender's entries are outside the range whatever its digest.
        let other = entry_id("bo", "u1", "k");
        assert!(!(lo < other.as_str() && other.as_str() < hi));
        assert_eq!(page_filter(&d, Some(&id))["_id"]["$gt"], json!(id));
    }

    #[test]
    fn an_entry_is_collected_only_once_its_item_is_gone() {
        let cfg = NotifyConfig::default();
        let day = 24 * 3_600_000;
        let now = 100 * day;
        let id = |n: &str| format!("{}:{n}", digest("ana"));
        let due: Vec<String> = ["gone", "long", "soon", "bare", "a", "b", "c", "d"]
            .iter()
            .map(|n| id(n))
            .collect();
        let mut purge = std::collections::BTreeMap::new();
        // Kept alive by later events far beyond the entry's own first check.
        purge.insert("long".to_owned(), Some(now + 30 * day));
        // Past its purgeAt but not yet removed by the TTL monitor: looked at again tomorrow.
        purge.insert("soon".to_owned(), Some(now - 5));
        purge.insert("bare".to_owned(), None);
        for (i, n) in ["a", "b", "c", "d"].iter().enumerate() {
            purge.insert((*n).to_owned(), Some(now + (40 + i as i64) * day));
        }
        let plan = collect_plan(&due, &purge, &cfg, now);
        assert_eq!(plan.gone, [id("gone")]);
        let times: Vec<i64> = plan.recheck.iter().map(|(t, _)| *t).collect();
        assert_eq!(
            times,
            [now + day, now + 30 * day, now + 37 * day, now + 40 * day],
            "earliest first, at most RECHECK_GROUPS"
        );
        assert_eq!(plan.recheck[0].1, [id("soon")]);
        assert_eq!(
            plan.recheck[2].1,
            [id("bare")],
            "no purgeAt: the TTL's and the tombstone's"
        );
        // The later items are looked at earlier than their purgeAt, never later.
        assert_eq!(plan.recheck[3].1, [id("a"), id("b"), id("c"), id("d")]);
        let kept: usize = plan.recheck.iter().map(|(_, v)| v.len()).sum();
        assert_eq!(kept + plan.gone.len(), due.len());
        assert_eq!(collect_cost(), 3 + RECHECK_GROUPS as u32);
    }

    #[test]
    fn an_entry_is_checked_when_the_item_of_its_newest_event_can_be_gone() {
        let cfg = NotifyConfig::default();
        let e = Entry {
            sender_id: "ana",
            owner: "u1",
            item_key: "k",
            event_time_ms: 1_000,
        };
        let doc = e.document(&cfg);
        assert_eq!(doc["o"], "u1");
        assert_eq!(doc["t"], 1_000);
        let want = ejson::date(1_000 + cfg.ttl_ms + cfg.tombstone_ttl_ms);
        assert_eq!(doc[CHECK_AT], want);
        assert!(doc.get("expireAt").is_none(), "no TTL: {doc}");
        let (f, u) = e.upsert(&cfg);
        assert_eq!(f["_id"], doc["_id"]);
        assert_eq!(u["$max"][CHECK_AT], want);
        assert_eq!(u["$setOnInsert"]["s"], doc["s"]);
    }

    #[test]
    fn a_page_tombstones_sole_items_and_pulls_only_the_fenced_origins() {
        let cfg = NotifyConfig::default();
        let ids = vec!["a".to_owned()];
        let [others, last, again, retracted] = page_updates(&ids, "ana", 500, &cfg, 900);
        assert_eq!(others, again);
        assert_eq!(others.0[field::SECOND_ORIGIN], json!({ "$exists": true }));
        assert_eq!(last.0[field::SECOND_ORIGIN], json!({ "$exists": false }));
        assert_eq!(last.1["$set"]["deleted"], json!(true));
        assert_eq!(last.1["$pull"][field::RETRACTED], json!({ "s": "ana" }));
        // An origin of an event after the fence (the sender came back) stays.
        assert_eq!(
            others.1["$pull"][field::ORIGINS],
            json!({ "s": "ana", "t": { "$lte": 500 } })
        );
        assert_eq!(others.1["$inc"][field::ORIGINS_COUNT], json!(-1));
        assert_eq!(retracted.0[field::RETRACTED_SENDER], "ana");
        assert!(retracted.1.get("$inc").is_none());
    }

    #[test]
    fn the_dead_letter_filter_matches_the_queued_body() {
        let f = dead_letters_of("a.b");
        let p = f["body"]["$regex"].as_str().unwrap();
        assert_eq!(p, r#""sender"\s*:\s*\{\s*"id"\s*:\s*"a\.b""#);
    }

    #[test]
    fn a_page_fits_the_default_budget_and_a_done_job_forgets_the_sender() {
        use super::super::erasure::DEFAULT_BUDGET;
        // The route keeps one call for the continuation, the job's load and save one each.
        for s in [Step::Fence, Step::Items, Step::DeadLetters, Step::Sweep] {
            assert!(cost(s, true) + 3 <= DEFAULT_BUDGET, "{s:?}");
        }
        let mut j = SenderJob::start("ana", 1_000);
        j.step = Step::Sweep;
        assert_eq!(j.view(0).continue_after_msec, Some(1_000 + SWEEP_AFTER_MS));
        j.cursor = Some("x".into());
        assert_eq!(j.view(0).continue_after_msec, None, "a sweep under way");
        j.step = Step::Done;
        j.sender = None;
        j.cursor = None;
        assert!(!serde_json::to_string(&j).unwrap().contains("ana"));
        assert_eq!(j.view(3).state, JobState::Done);
        assert_eq!(j.view(3).late_events_dropped, 3);
    }
}
