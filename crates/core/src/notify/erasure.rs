//! Erasing an owner: everything stored about a user as a recipient, in resumable steps.
//!
//! A job (`{_id: "owner:<digest>"}` in the erasures collection, see [`super::fence`] for the
//! digest) walks fixed steps; each step's cost in subrequests is known before it runs, so a run
//! never exceeds its budget (a Worker invocation has a subrequest limit). What is left is
//! continued by the next run: the queue's (the route enqueues a continuation) or the operator's
//! repeated `DELETE`. Every step is idempotent, so a run that dies between a step and the saved
//! progress repeats that step harmlessly.
//!
//! 1. **Fence** first ([`super::fence::raise`]): from here on nothing created before the erasure
//!    is written for the owner.
//! 2. **Items**: pages of `_id`s (live items and tombstones alike), their rosters and event
//!    counters in Redis, then a hard `deleteMany` (not the `deleted` flag).
//! 3. **Preferences**: the document and its Redis mirror.
//! 4. **Idempotency records** of the user's writes: the per-user index set the claim keeps
//!    ([`idempotency_index`]) and every record it names.
//! 5. **Dead letters** addressed to the owner (by their `owner` field, or for letters stored
//!    before it existed by the body's `"owner":"…"`).
//! 6. **Badge hub**: its Durable Object's storage cleared and its sockets closed, through the
//!    [`BadgeHubs`] port.
//! 7. **Sweep**: the items once more, [`SWEEP_AFTER_MS`] after the fence, for a write that had
//!    passed the fence check before the fence existed and landed after step 2 (only items whose
//!    newest event is at or before the fence: a new inbox started since stays).
//!
//! Events still on the queue cannot be taken off it; the fence drops them when they arrive.
//! When the job is done it forgets the owner's id (only the digest and the counts stay, until
//! the fence expires).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{fence, preferences, roster, NotificationStore, NotifyError};
use crate::backend::{ejson, FindOptions, HttpClient, RedisRestClient};

/// Items per page of the items steps (one `find` of ids, one Redis `DEL`, one `deleteMany`).
pub const ITEMS_PAGE: u32 = 500;
/// How long after the fence the final sweep runs: longer than any write that checked the fence
/// before it was raised can take to land (a request's backend deadlines are seconds).
pub const SWEEP_AFTER_MS: i64 = 60_000;
/// Subrequests one run spends at most by default (the free plan allows 50 per invocation).
pub const DEFAULT_BUDGET: u32 = 40;

/// Why the badge hub could not be reached or cleared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("badge hub: {0}")]
pub struct HubError(pub String);

/// The live badge's per-owner state (the adapter's Durable Object), behind a small port.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait BadgeHubs {
    /// Clears the owner's hub storage and closes its sockets; returns the sockets closed.
    ///
    /// # Errors
    /// The hub could not be reached (the step is retried by the next run).
    async fn erase(&self, owner: &str) -> Result<u32, HubError>;
}

/// The close code of a badge socket whose owner was erased (4000–4999 are the application's;
/// 4001 is an expired token).
pub const ERASED_CLOSE_CODE: u16 = 4003;
/// Its reason.
pub const ERASED_CLOSE_REASON: &str = "erased";

/// No badge hub is bound: nothing to clear.
pub struct NoHubs;

impl BadgeHubs for NoHubs {
    async fn erase(&self, _owner: &str) -> Result<u32, HubError> {
        Ok(0)
    }
}

/// The Redis set naming the idempotency records of one user's writes (kept by the claim script
/// of `egn_http::idempotency`): the erasure deletes what it names instead of scanning Redis.
#[must_use]
pub fn idempotency_index(owner: &str) -> String {
    format!("idem:user:owner:{}:{owner}", owner.len())
}

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Raising the fence.
    Fence,
    /// Deleting items and tombstones.
    Items,
    /// Deleting the preferences.
    Preferences,
    /// Deleting the idempotency records.
    Idempotency,
    /// Deleting the dead letters.
    DeadLetters,
    /// Clearing the badge hub.
    Badge,
    /// The final sweep of the items.
    Sweep,
    /// Finished.
    Done,
}

/// What a job removed so far, per store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    /// Live items (Data API, the items collection).
    pub items: u64,
    /// Tombstones (Data API, the items collection).
    pub tombstones: u64,
    /// Rosters and event counters of those items (Redis).
    pub redis_keys: u64,
    /// The preferences document (0 or 1) and its Redis mirror (0 or 1).
    pub preferences: u64,
    /// Idempotency records of the user's writes (Redis).
    pub idempotency_records: u64,
    /// Dead letters addressed to the owner (Data API, the dead-letter collection).
    pub dead_letters: u64,
    /// Badge sockets closed (the hub's storage is cleared too).
    pub badge_sockets: u64,
    /// Entries of the senders' index that pointed at the owner's items (Data API).
    #[serde(default)]
    pub sender_index: u64,
}

/// An erasure job as stored (and, without the owner, as shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// `owner:<digest>`.
    #[serde(rename = "_id")]
    pub id: String,
    /// The owner while the job runs; dropped when it is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The step to run next.
    pub step: Step,
    /// The fence: events created at or before it are dropped.
    pub erased_at: i64,
    /// Counts so far.
    pub removed: Removed,
    /// When the last run ended.
    pub updated_at: i64,
}

/// `GET /v1/admin/erasures/{id}`: a job's progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ErasureView {
    /// The job's id (what `GET /v1/admin/erasures/{id}` takes).
    pub id: String,
    /// `running` until every step is done.
    pub state: JobState,
    /// The step to run next (`done` when finished).
    pub step: Step,
    /// The fence, ms since the epoch: events created at or before it are dropped.
    pub erased_at_msec: i64,
    /// What was removed, per store.
    pub removed: Removed,
    /// Late events dropped behind the fence so far (shown by `GET`; 0 in a `DELETE` answer).
    pub late_events_dropped: u64,
    /// When a running job can go on (the final sweep waits [`SWEEP_AFTER_MS`] after the fence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continue_after_msec: Option<i64>,
}

/// A job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Steps remain: the queue (or another `DELETE`) continues it.
    Running,
    /// Everything is erased.
    Done,
}

impl Job {
    /// A new job for `owner`, fenced at `now_ms`.
    #[must_use]
    pub fn start(owner: &str, now_ms: i64) -> Self {
        Job {
            id: job_id(owner),
            owner: Some(owner.to_owned()),
            step: Step::Fence,
            erased_at: now_ms,
            removed: Removed::default(),
            updated_at: now_ms,
        }
    }

    /// Its API view.
    #[must_use]
    pub fn view(&self, late_events_dropped: u64) -> ErasureView {
        let done = self.step == Step::Done;
        ErasureView {
            id: self.id.clone(),
            state: if done {
                JobState::Done
            } else {
                JobState::Running
            },
            step: self.step,
            erased_at_msec: self.erased_at,
            removed: self.removed,
            late_events_dropped,
            continue_after_msec: (self.step == Step::Sweep)
                .then_some(self.erased_at + SWEEP_AFTER_MS),
        }
    }

    /// The owner's digest (the fence's name).
    #[must_use]
    pub fn digest(&self) -> &str {
        self.id.strip_prefix("owner:").unwrap_or(&self.id)
    }
}

/// The id of an owner's erasure job (the same for every erasure of that owner: a repeated
/// `DELETE` continues or repeats it).
#[must_use]
pub fn job_id(owner: &str) -> String {
    format!("owner:{}", fence::digest(owner))
}

/// The body of a queue message that continues a job (the consumer tells it from an event).
#[must_use]
pub fn continuation(job_id: &str) -> String {
    json!({ "erasure": job_id }).to_string()
}

/// The job a queue message continues, if it is a continuation.
#[must_use]
pub fn continued(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let o = v.as_object()?;
    (o.len() == 1)
        .then(|| o.get("erasure")?.as_str().map(str::to_owned))
        .flatten()
}

/// Loads a job.
///
/// # Errors
/// Backend failures; an unreadable job is a decode failure.
pub async fn load<H: HttpClient>(
    store: &NotificationStore<H>,
    id: &str,
) -> Result<Option<Job>, NotifyError> {
    load_as(store, id, "erasure job").await
}

/// Loads a job document of the erasures' collection (either kind) as `T`, without its TTL
/// field; `what` names it in a decode failure.
pub(super) async fn load_as<H: HttpClient, T: serde::de::DeserializeOwned>(
    store: &NotificationStore<H>,
    id: &str,
    what: &str,
) -> Result<Option<T>, NotifyError> {
    let doc = store
        .api()
        .find_one(
            &store.config().collections().erasures,
            &json!({ "_id": id }),
            None,
            None,
        )
        .await?;
    doc.map(|mut d| {
        if let Some(o) = d.as_object_mut() {
            o.remove("expireAt");
        }
        serde_json::from_value(d).map_err(|e| {
            NotifyError::Backend(crate::backend::BackendError::Decode(format!("{what}: {e}")))
        })
    })
    .transpose()
}

async fn save<H: HttpClient>(store: &NotificationStore<H>, job: &Job) -> Result<(), NotifyError> {
    let absent: &[&str] = if job.owner.is_none() { &["owner"] } else { &[] };
    save_as(store, &job.id, job.erased_at, job, absent, "erasure job").await
}

/// Upserts a job document of the erasures' collection (either kind, as [`load_as`] reads it):
/// `job` under `$set` with its TTL field, its `absent` optional fields under `$unset`; `what`
/// names it in an encode failure.
pub(super) async fn save_as<H: HttpClient, T: Serialize>(
    store: &NotificationStore<H>,
    id: &str,
    erased_at: i64,
    job: &T,
    absent: &[&str],
    what: &str,
) -> Result<(), NotifyError> {
    let cfg = store.config();
    let mut doc = serde_json::to_value(job).map_err(|e| {
        NotifyError::Backend(crate::backend::BackendError::Decode(format!("{what}: {e}")))
    })?;
    // Kept as long as the fence, so progress and counts stay readable while it holds.
    doc["expireAt"] = ejson::date(erased_at + cfg.erasure_fence_ms);
    if let Some(o) = doc.as_object_mut() {
        o.remove("_id");
    }
    let mut update = json!({ "$set": doc });
    if !absent.is_empty() {
        let unset: serde_json::Map<String, Value> =
            absent.iter().map(|f| (f.to_string(), json!(""))).collect();
        update["$unset"] = Value::Object(unset);
    }
    store
        .api()
        .update_one(
            &cfg.collections().erasures,
            &json!({ "_id": id }),
            &update,
            true,
        )
        .await?;
    Ok(())
}

/// The backends a run uses.
pub struct Stores<'a, H, B> {
    /// The Data API side.
    pub store: &'a NotificationStore<H>,
    /// Redis, when configured.
    pub redis: Option<&'a RedisRestClient<H>>,
    /// The badge hubs.
    pub hubs: &'a B,
}

/// Subrequests a step costs at most (the saved progress is counted apart).
fn cost(step: Step, redis: bool) -> u32 {
    let r = u32::from(redis);
    match step {
        Step::Fence => 1 + r,
        Step::Items => 2 + r,
        // The sweep's last page also deletes the owner's entries in the senders' index.
        Step::Sweep => 3 + r,
        Step::Preferences => 1 + r,
        Step::Idempotency => 2 * r,
        Step::DeadLetters => 2,
        Step::Badge => 1,
        Step::Done => 0,
    }
}

/// Runs the job's steps within `budget` subrequests (one of them saves the progress); returns
/// whether it is done. Stops early at the sweep until [`SWEEP_AFTER_MS`] have passed.
///
/// # Errors
/// Backend or hub failures: what was done before stays done (the next run repeats the step).
pub async fn run<H: HttpClient, B: BadgeHubs>(
    s: &Stores<'_, H, B>,
    job: &mut Job,
    budget: u32,
    now_ms: i64,
) -> Result<bool, NotifyError> {
    let Some(owner) = job.owner.clone() else {
        job.step = Step::Done;
        return Ok(true);
    };
    let mut left = budget.saturating_sub(1);
    let result = steps(s, job, &owner, &mut left, now_ms).await;
    job.updated_at = now_ms;
    if job.step == Step::Done {
        job.owner = None;
    }
    save(s.store, job).await?;
    result.map(|()| job.step == Step::Done)
}

async fn steps<H: HttpClient, B: BadgeHubs>(
    s: &Stores<'_, H, B>,
    job: &mut Job,
    owner: &str,
    left: &mut u32,
    now_ms: i64,
) -> Result<(), NotifyError> {
    let cfg = s.store.config();
    let colls = cfg.collections();
    while job.step != Step::Done {
        let c = cost(job.step, s.redis.is_some());
        if c > *left {
            return Ok(());
        }
        *left -= c;
        match job.step {
            Step::Fence => {
                fence::raise(s.store, s.redis, owner, job.erased_at).await?;
                job.step = Step::Items;
            }
            Step::Items | Step::Sweep => {
                if job.step == Step::Sweep && now_ms < job.erased_at + SWEEP_AFTER_MS {
                    *left += c;
                    return Ok(());
                }
                // The sweep takes only what the fence should have stopped: an item whose newest
                // event is at or before it. A new inbox's items (events after it) stay.
                let before = (job.step == Step::Sweep).then_some(job.erased_at);
                let found = delete_items_page(s, owner, before, &mut job.removed).await?;
                if found < u64::from(ITEMS_PAGE) {
                    job.step = if job.step == Step::Items {
                        Step::Preferences
                    } else {
                        // Entries written by a create that passed the fence check before it.
                        job.removed.sender_index +=
                            delete_sender_index(s, owner, job.erased_at).await?;
                        Step::Done
                    };
                }
            }
            Step::Preferences => {
                job.removed.preferences += s
                    .store
                    .api()
                    .delete_one(&colls.preferences, &json!({ "_id": owner }))
                    .await?;
                if let Some(r) = s.redis {
                    job.removed.preferences +=
                        count(&r.command(&["DEL", &preferences::mute_key(owner)]).await?);
                }
                job.step = Step::Idempotency;
            }
            Step::Idempotency => {
                if let Some(r) = s.redis {
                    let index = idempotency_index(owner);
                    let names = r.command(&["SMEMBERS", &index]).await?;
                    let mut del = vec!["DEL".to_owned()];
                    del.extend(
                        names
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|v| v.as_str().map(str::to_owned)),
                    );
                    let named = del.len() - 1;
                    del.push(index);
                    let gone = count(&r.command(&del).await?);
                    // The index itself is not a record.
                    job.removed.idempotency_records += gone.min(named as u64);
                }
                job.step = Step::DeadLetters;
            }
            Step::DeadLetters => {
                job.removed.dead_letters += s
                    .store
                    .api()
                    .delete_many(&colls.dead_letters, &dead_letters_of(owner))
                    .await?;
                job.removed.sender_index += delete_sender_index(s, owner, job.erased_at).await?;
                job.step = Step::Badge;
            }
            Step::Badge => {
                job.removed.badge_sockets += u64::from(
                    s.hubs
                        .erase(owner)
                        .await
                        .map_err(|e| NotifyError::Hub(e.0))?,
                );
                job.step = Step::Sweep;
            }
            Step::Done => {}
        }
    }
    Ok(())
}

/// The owner's entries in the senders' index ([`super::senders`]) of events at or before the
/// fence: they name the owner and an item key. A new inbox's entries stay.
async fn delete_sender_index<H: HttpClient, B: BadgeHubs>(
    s: &Stores<'_, H, B>,
    owner: &str,
    erased_at: i64,
) -> Result<u64, NotifyError> {
    Ok(s.store
        .api()
        .delete_many(
            &s.store.config().collections().senders,
            &json!({ "o": owner, "t": { "$lte": erased_at } }),
        )
        .await?)
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// One page of the owner's items (only those whose newest event is at or before `before`, when
/// given): ids, their Redis keys, the documents. Returns the ids found.
async fn delete_items_page<H: HttpClient, B: BadgeHubs>(
    s: &Stores<'_, H, B>,
    owner: &str,
    before: Option<i64>,
    removed: &mut Removed,
) -> Result<u64, NotifyError> {
    let coll = &s.store.config().collection;
    let filter = match before {
        Some(at) => json!({ "owner": owner, "createdTime": { "$lte": ejson::date(at) } }),
        None => json!({ "owner": owner }),
    };
    let docs = s
        .store
        .api()
        .find(
            coll,
            &filter,
            &FindOptions {
                projection: Some(json!({ "_id": 1, "deleted": 1, "itemKey": 1 })),
                limit: Some(ITEMS_PAGE),
                ..FindOptions::default()
            },
        )
        .await?;
    if docs.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Value> = docs.iter().filter_map(|d| d.get("_id").cloned()).collect();
    if let Some(r) = s.redis {
        let mut del = vec!["DEL".to_owned()];
        for d in &docs {
            if let Some(k) = d.get("itemKey").and_then(Value::as_str) {
                del.push(roster::key(owner, k));
                del.push(roster::hot_key(owner, k));
            }
        }
        if del.len() > 1 {
            removed.redis_keys += count(&r.command(&del).await?);
        }
    }
    s.store
        .api()
        .delete_many(coll, &json!({ "_id": { "$in": ids } }))
        .await?;
    let tombstones = docs
        .iter()
        .filter(|d| d.get("deleted").and_then(Value::as_bool) == Some(true))
        .count() as u64;
    removed.tombstones += tombstones;
    removed.items += docs.len() as u64 - tombstones;
    Ok(docs.len() as u64)
}

/// The dead letters addressed to an owner: by the `owner` field letters are stored with, or
/// (letters stored before it existed) by the body's `"owner":"…"`.
#[must_use]
pub fn dead_letters_of(owner: &str) -> Value {
    let quoted = serde_json::to_string(owner).unwrap_or_default();
    let pattern = format!(r#""owner"\s*:\s*{}"#, regex_escape(&quoted));
    json!({ "$or": [ { "owner": owner }, { "body": { "$regex": pattern } } ] })
}

pub(crate) fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if "\\.^$|?*+()[]{}/-".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continuation_is_told_from_an_event() {
        let body = continuation("owner:abc");
        assert_eq!(continued(&body).as_deref(), Some("owner:abc"));
        assert_eq!(continued(r#"{"owner":"a","eventId":"e"}"#), None);
        assert_eq!(continued(r#"{"erasure":"x","owner":"a"}"#), None);
        assert_eq!(continued("not json"), None);
    }

    #[test]
    fn the_dead_letter_filter_escapes_the_owner() {
        let f = dead_letters_of("a.b*");
        let p = f["$or"][1]["body"]["$regex"].as_str().unwrap();
        assert_eq!(p, r#""owner"\s*:\s*"a\.b\*""#);
        assert_eq!(f["$or"][0]["owner"], "a.b*");
    }

    #[test]
    fn the_index_cannot_be_a_record_key_and_names_the_owner_unambiguously() {
        // Records are idem:user:{mark|bulk|delete}:{len}:{sub}:{key}; no route is "owner".
        assert_eq!(idempotency_index("a:b"), "idem:user:owner:3:a:b");
    }

    #[test]
    fn a_job_forgets_its_owner_and_shows_its_sweep() {
        let mut j = Job::start("ana", 1_000);
        assert_eq!(j.id, format!("owner:{}", fence::digest("ana")));
        j.step = Step::Sweep;
        assert_eq!(j.view(0).continue_after_msec, Some(1_000 + SWEEP_AFTER_MS));
        assert_eq!(j.view(0).state, JobState::Running);
        j.step = Step::Done;
        j.owner = None;
        let stored = serde_json::to_value(&j).unwrap();
        assert!(!stored.to_string().contains("ana"));
        assert_eq!(j.view(2).state, JobState::Done);
    }
}
