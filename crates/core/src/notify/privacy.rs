//! The privacy calls over the service: erase an owner (start, continue, progress) and export
//! everything stored about one. The steps are [`super::erasure`]'s; this is where they meet the
//! service's backends.

use serde::Serialize;
use serde_json::{json, Value};

use super::batch::EventQueue;
use super::dead_letters::{self, DeadLetterView};
use super::erasure::{self, BadgeHubs, ErasureView, Job, JobState, Step, Stores};
use super::senders::{self, SenderErasureView, SenderJob};
use super::{fence, NotifyError, NotifyService};
use crate::backend::{FindOptions, HttpClient};

/// Most items per export page.
pub const EXPORT_PAGE_MAX: u32 = 200;
/// Dead letters in an export (on its first page; they are few, and kept 14 days).
pub const EXPORT_DEAD_LETTERS_MAX: u32 = 100;

/// One page of an owner's export: everything stored about them as a recipient.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ExportPage {
    /// The owner.
    pub owner: String,
    /// Stored items and tombstones, as stored (dates as `{"$date": ms}`), by id.
    pub items: Vec<serde_json::Map<String, Value>>,
    /// The stored preferences document (first page only; `null` when none is stored or on
    /// later pages).
    pub preferences: Option<serde_json::Map<String, Value>>,
    /// Dead letters addressed to the owner (first page only).
    pub dead_letters: Vec<DeadLetterView>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Any erasure's progress: an owner's or a sender's (`GET /v1/admin/erasures/{id}` answers
/// either, told apart by the id's prefix, `owner:` or `sender:`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum AnyErasureView {
    /// An owner's erasure.
    Owner(ErasureView),
    /// A sender's erasure.
    Sender(SenderErasureView),
}

/// What the queue needs to know of a job's progress to continue it.
pub trait Progress {
    /// The job's id.
    fn job_id(&self) -> &str;
    /// Whether steps remain.
    fn running(&self) -> bool;
    /// When the next run can go on.
    fn continue_after(&self) -> Option<i64>;
}

impl Progress for ErasureView {
    fn job_id(&self) -> &str {
        &self.id
    }
    fn running(&self) -> bool {
        self.state == JobState::Running
    }
    fn continue_after(&self) -> Option<i64> {
        self.continue_after_msec
    }
}

impl Progress for SenderErasureView {
    fn job_id(&self) -> &str {
        &self.id
    }
    fn running(&self) -> bool {
        self.state == JobState::Running
    }
    fn continue_after(&self) -> Option<i64> {
        self.continue_after_msec
    }
}

impl Progress for AnyErasureView {
    fn job_id(&self) -> &str {
        match self {
            AnyErasureView::Owner(v) => v.job_id(),
            AnyErasureView::Sender(v) => v.job_id(),
        }
    }
    fn running(&self) -> bool {
        match self {
            AnyErasureView::Owner(v) => v.running(),
            AnyErasureView::Sender(v) => v.running(),
        }
    }
    fn continue_after(&self) -> Option<i64> {
        match self {
            AnyErasureView::Owner(v) => v.continue_after(),
            AnyErasureView::Sender(v) => v.continue_after(),
        }
    }
}

fn object(v: Value) -> Option<serde_json::Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

impl<H: HttpClient> NotifyService<H> {
    /// Starts an owner's erasure, or continues the one running, within `budget` subrequests.
    /// A finished erasure is started again (fenced at `now_ms`): whatever arrived since goes too.
    ///
    /// # Errors
    /// Validation of the owner, backend and hub failures (progress so far is kept).
    pub async fn erase_owner<B: BadgeHubs>(
        &self,
        owner: &str,
        hubs: &B,
        budget: u32,
        now_ms: i64,
    ) -> Result<ErasureView, NotifyError> {
        super::event::text("owner", owner, super::event::limits::ID)?;
        let mut job = match erasure::load(self.store(), &erasure::job_id(owner)).await? {
            Some(j) if j.step != Step::Done && j.owner.as_deref() == Some(owner) => j,
            _ => Job::start(owner, now_ms),
        };
        self.run_erasure(&mut job, hubs, budget.saturating_sub(1), now_ms)
            .await?;
        Ok(job.view(0))
    }

    /// Starts a sender's erasure (see [`senders`]), or continues the one running, within
    /// `budget` subrequests. A finished erasure is started again (fenced at `now_ms`).
    ///
    /// # Errors
    /// Validation of the sender id, backend failures (progress so far is kept).
    pub async fn erase_sender(
        &self,
        sender_id: &str,
        budget: u32,
        now_ms: i64,
    ) -> Result<SenderErasureView, NotifyError> {
        super::event::text("senderId", sender_id, super::event::limits::ID)?;
        let mut job = match senders::load(self.store(), &senders::job_id(sender_id)).await? {
            Some(j) if j.step != Step::Done && j.sender.as_deref() == Some(sender_id) => j,
            _ => SenderJob::start(sender_id, now_ms),
        };
        self.run_sender_erasure(&mut job, budget.saturating_sub(1), now_ms)
            .await?;
        Ok(job.view(0))
    }

    async fn run_sender_erasure(
        &self,
        job: &mut SenderJob,
        budget: u32,
        now_ms: i64,
    ) -> Result<bool, NotifyError> {
        senders::run(
            self.store(),
            self.redis(),
            self.dedup_lease_ms(),
            job,
            budget,
            now_ms,
        )
        .await
    }

    /// Continues a job by id (the queue's continuation), an owner's or a sender's; `None` when
    /// there is no such job.
    ///
    /// # Errors
    /// Backend and hub failures.
    pub async fn continue_erasure<B: BadgeHubs>(
        &self,
        id: &str,
        hubs: &B,
        budget: u32,
        now_ms: i64,
    ) -> Result<Option<AnyErasureView>, NotifyError> {
        if senders::is_job_id(id) {
            let Some(mut job) = senders::load(self.store(), id).await? else {
                return Ok(None);
            };
            if job.step != Step::Done {
                self.run_sender_erasure(&mut job, budget.saturating_sub(1), now_ms)
                    .await?;
            }
            return Ok(Some(AnyErasureView::Sender(job.view(0))));
        }
        let Some(mut job) = erasure::load(self.store(), id).await? else {
            return Ok(None);
        };
        if job.step != Step::Done {
            self.run_erasure(&mut job, hubs, budget.saturating_sub(1), now_ms)
                .await?;
        }
        Ok(Some(AnyErasureView::Owner(job.view(0))))
    }

    /// After a run: a job still running is handed to the queue (after the sweep's wait when
    /// that is what it waits for). Without a queue the operator's next `DELETE` continues it.
    ///
    /// # Errors
    /// [`NotifyError::Queue`] when the continuation could not be sent (the next `DELETE`
    /// continues the job as well).
    pub async fn schedule_continuation<Q: EventQueue, P: Progress>(
        &self,
        view: &P,
        queue: Option<&Q>,
        now_ms: i64,
    ) -> Result<bool, NotifyError> {
        let Some(q) = queue.filter(|_| view.running()) else {
            return Ok(false);
        };
        let wait_ms = view.continue_after().map_or(0, |t| (t - now_ms).max(0));
        let delay_s = u32::try_from((wait_ms + 999) / 1000).unwrap_or(u32::MAX);
        q.send_batch(&[erasure::continuation(view.job_id())], delay_s)
            .await?;
        Ok(true)
    }

    async fn run_erasure<B: BadgeHubs>(
        &self,
        job: &mut Job,
        hubs: &B,
        budget: u32,
        now_ms: i64,
    ) -> Result<bool, NotifyError> {
        let stores = Stores {
            store: self.store(),
            redis: self.redis(),
            hubs,
        };
        erasure::run(&stores, job, budget, now_ms).await
    }

    /// A job's progress, with the late events its fence has dropped.
    ///
    /// # Errors
    /// [`NotifyError::ErasureNotFound`], backend failures.
    pub async fn erasure(&self, id: &str) -> Result<AnyErasureView, NotifyError> {
        if senders::is_job_id(id) {
            let job = senders::load(self.store(), id)
                .await?
                .ok_or(NotifyError::ErasureNotFound)?;
            let fence_id = format!("sender-fence:{}", job.digest());
            let dropped = fence::dropped_named(self.store(), &fence_id).await?;
            return Ok(AnyErasureView::Sender(job.view(dropped)));
        }
        let job = erasure::load(self.store(), id)
            .await?
            .ok_or(NotifyError::ErasureNotFound)?;
        let dropped = fence::dropped(self.store(), job.digest()).await?;
        Ok(AnyErasureView::Owner(job.view(dropped)))
    }

    /// One page of everything stored about `owner` (items by id after `cursor`; the first page
    /// also carries the preferences and the dead letters): 1 call, 3 on the first page.
    ///
    /// # Errors
    /// Validation, backend failures.
    pub async fn export(
        &self,
        owner: &str,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<ExportPage, NotifyError> {
        super::event::text("owner", owner, super::event::limits::ID)?;
        let cfg = self.store().config();
        let colls = cfg.collections();
        let api = self.store().api();
        let limit = limit.clamp(1, EXPORT_PAGE_MAX);
        let filter = match cursor {
            Some(c) => json!({ "owner": owner, "_id": { "$gt": c } }),
            None => json!({ "owner": owner }),
        };
        let mut docs = api
            .find(
                &colls.items,
                &filter,
                &FindOptions {
                    sort: Some(json!({ "_id": 1 })),
                    limit: Some(limit + 1),
                    ..FindOptions::default()
                },
            )
            .await?;
        let next_cursor = if docs.len() > limit as usize {
            docs.truncate(limit as usize);
            docs.last()
                .and_then(|d| d.get("_id")?.as_str().map(str::to_owned))
        } else {
            None
        };
        let (preferences, dead) = if cursor.is_none() {
            let p = api
                .find_one(&colls.preferences, &json!({ "_id": owner }), None, None)
                .await?;
            let letters = api
                .find(
                    &colls.dead_letters,
                    &erasure::dead_letters_of(owner),
                    &FindOptions {
                        sort: Some(json!({ "failedAt": 1, "_id": 1 })),
                        limit: Some(EXPORT_DEAD_LETTERS_MAX),
                        ..FindOptions::default()
                    },
                )
                .await?;
            (
                p.and_then(object),
                letters.iter().map(dead_letters::view).collect(),
            )
        } else {
            (None, vec![])
        };
        Ok(ExportPage {
            owner: owner.to_owned(),
            items: docs.into_iter().filter_map(object).collect(),
            preferences,
            dead_letters: dead,
            next_cursor,
        })
    }
}
