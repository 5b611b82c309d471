//! The rules wired to a [`DataApiClient`]; the create flow with dedup is in [`super::service`].
//! Still platform-free: the worker adapter passes a `worker::Fetch`-backed client.

use serde_json::Value;

use super::{
    query, rules, CreateOutcome, CreateStep, ListParams, NotificationEvent, NotifyConfig,
    NotifyError, RetractOutcome,
};
use crate::backend::{DataApiClient, HttpClient};

/// One list page.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Stored documents (normalized EJSON); render with [`super::view`].
    pub items: Vec<Value>,
    /// Cursor for the next page, if there is one.
    pub next_cursor: Option<String>,
}

/// The notification center over one Data API collection.
#[derive(Debug, Clone)]
pub struct NotificationStore<H> {
    api: DataApiClient<H>,
    cfg: NotifyConfig,
}

impl<H: HttpClient> NotificationStore<H> {
    /// Wraps a Data API client.
    pub fn new(api: DataApiClient<H>, cfg: NotifyConfig) -> Self {
        Self { api, cfg }
    }

    /// The configuration.
    pub fn config(&self) -> &NotifyConfig {
        &self.cfg
    }

    /// The underlying client.
    pub fn api(&self) -> &DataApiClient<H> {
        &self.api
    }

    /// Creates the indexes (idempotent; run at deploy or from a cron, not per request).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn ensure_indexes(&self) -> Result<Vec<String>, NotifyError> {
        Ok(self
            .api
            .create_indexes(&self.cfg.collection, &query::indexes())
            .await?)
    }

    /// Create or merge: 1 call; 2 when the sender was already present or a racing insert won.
    ///
    /// # Errors
    /// Backend failures (a duplicate key is an outcome, not an error).
    pub async fn create(
        &self,
        ev: &NotificationEvent,
        now_ms: i64,
    ) -> Result<CreateOutcome, NotifyError> {
        let (filter, update) = rules::create_upsert(ev, &self.cfg, now_ms);
        for attempt in 0.. {
            let r = self
                .api
                .update_one(&self.cfg.collection, &filter, &update, true)
                .await;
            match rules::classify_create_result(r, attempt) {
                CreateStep::Done(o) => return Ok(o),
                CreateStep::Retry => {}
                CreateStep::Fail(e) => return Err(e.into()),
            }
        }
        unreachable!("classify_create_result finishes by the second attempt")
    }

    /// Removes a sender's origin; deletes the item when none is left (see [`rules::retract_update`]).
    ///
    /// # Errors
    /// Validation of the keys, backend failures.
    pub async fn retract(
        &self,
        owner: &str,
        item_key: &str,
        sender_id: &str,
    ) -> Result<RetractOutcome, NotifyError> {
        check_keys(owner, Some(item_key))?;
        super::event::text("sender.id", sender_id, super::event::limits::ID)?;
        let coll = &self.cfg.collection;
        let (filter, update) = rules::retract_update(owner, item_key, sender_id);
        let delete = rules::retract_delete(owner, item_key, sender_id);
        // Two rounds: a concurrent create can flip the count guard between our two calls.
        for _ in 0..2 {
            if self
                .api
                .update_one(coll, &filter, &update, false)
                .await?
                .matched
                > 0
            {
                return Ok(RetractOutcome::Updated);
            }
            if self.api.delete_one(coll, &delete).await? > 0 {
                return Ok(RetractOutcome::Deleted);
            }
        }
        Ok(RetractOutcome::NotFound)
    }

    /// One page (one call).
    ///
    /// # Errors
    /// Invalid cursor, backend failures.
    pub async fn list(
        &self,
        owner: &str,
        params: &ListParams,
        now_ms: i64,
    ) -> Result<Page, NotifyError> {
        check_keys(owner, None)?;
        let q = query::list_query(owner, params, &self.cfg, now_ms)?;
        let mut items = self
            .api
            .find(&self.cfg.collection, &q.filter, &q.options)
            .await?;
        let size = params.page_size() as usize;
        let next_cursor = if items.len() > size {
            items.truncate(size);
            items.last().and_then(|d| {
                let revision = d.get("revision")?.as_i64()?;
                let id = d.get("_id")?.as_str()?.to_owned();
                Some(query::encode_cursor(&query::Cursor { revision, id }))
            })
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    /// Unread, unarchived, live items (one call).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn unread_count(
        &self,
        owner: &str,
        category: Option<&str>,
        now_ms: i64,
    ) -> Result<u64, NotifyError> {
        check_keys(owner, None)?;
        let docs = self
            .api
            .aggregate(
                &self.cfg.collection,
                &query::unread_count_pipeline(owner, category, now_ms),
            )
            .await?;
        Ok(docs
            .first()
            .and_then(|d| d.get("unread"))
            .and_then(Value::as_u64)
            .unwrap_or(0))
    }

    /// Items created or merged after `revision` (one call).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn changed_since(
        &self,
        owner: &str,
        revision: i64,
        limit: u32,
        now_ms: i64,
    ) -> Result<Vec<Value>, NotifyError> {
        check_keys(owner, None)?;
        let q = query::changed_since(owner, revision, limit, now_ms);
        Ok(self
            .api
            .find(&self.cfg.collection, &q.filter, &q.options)
            .await?)
    }

    /// Sets a flag on one item or all; returns how many items changed (one call).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn mark(
        &self,
        owner: &str,
        target: query::Target<'_>,
        flag: query::Flag,
        value: bool,
    ) -> Result<u64, NotifyError> {
        check_keys(
            owner,
            if let query::Target::Item(k) = target {
                Some(k)
            } else {
                None
            },
        )?;
        let m = query::mark(owner, target, flag, value);
        let coll = &self.cfg.collection;
        let r = if m.many {
            self.api
                .update_many(coll, &m.filter, &m.update, false)
                .await?
        } else {
            self.api
                .update_one(coll, &m.filter, &m.update, false)
                .await?
        };
        Ok(r.modified)
    }

    /// Deletes an item; `true` if it existed (one call).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn delete(&self, owner: &str, item_key: &str) -> Result<bool, NotifyError> {
        check_keys(owner, Some(item_key))?;
        Ok(self
            .api
            .delete_one(&self.cfg.collection, &query::delete_one(owner, item_key))
            .await?
            > 0)
    }

    /// Nightly: keeps the owner's newest `keep` items; returns how many were deleted (≤ 2 calls).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn trim_owner(&self, owner: &str, keep: u32) -> Result<u64, NotifyError> {
        let q = query::trim_owner_cutoff(owner, keep);
        let coll = &self.cfg.collection;
        let Some(cut) = self
            .api
            .find(coll, &q.filter, &q.options)
            .await?
            .into_iter()
            .next()
        else {
            return Ok(0);
        };
        let Some(rev) = cut.get("revision").and_then(Value::as_i64) else {
            return Ok(0);
        };
        Ok(self
            .api
            .delete_many(coll, &query::trim_owner_delete(owner, rev))
            .await?)
    }

    /// Deletes up to `batch` expired items (2 calls); call until it returns 0.
    ///
    /// # Errors
    /// Backend failures.
    pub async fn delete_expired_batch(&self, now_ms: i64, batch: u32) -> Result<u64, NotifyError> {
        let q = query::expired_batch(now_ms, batch);
        let coll = &self.cfg.collection;
        let ids: Vec<Value> = self
            .api
            .find(coll, &q.filter, &q.options)
            .await?
            .into_iter()
            .filter_map(|d| d.get("_id").cloned())
            .collect();
        if ids.is_empty() {
            return Ok(0);
        }
        Ok(self
            .api
            .delete_many(coll, &query::expired_delete(&ids, now_ms))
            .await?)
    }
}

/// What one housekeeping run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Housekeeping {
    /// Items deleted from owners over the cap.
    pub trimmed: u64,
    /// Expired items deleted.
    pub expired: u64,
    /// Data API calls spent.
    pub calls: u32,
    /// Work was left for the next run because the budget ran out.
    pub budget_exhausted: bool,
}

impl<H: HttpClient> NotificationStore<H> {
    /// One cron run within `budget` Data API calls (a Worker invocation has a subrequest limit:
    /// 50 on the free plan): trims owners over `keep` items, then deletes expired items in
    /// batches of `batch`. Each step's cost is known before it starts, so the budget is never
    /// exceeded; what is left waits for the next run.
    ///
    /// # Errors
    /// Backend failures (what was done before them stays done).
    pub async fn housekeeping(
        &self,
        keep: u32,
        budget: u32,
        batch: u32,
        now_ms: i64,
    ) -> Result<Housekeeping, NotifyError> {
        let mut r = Housekeeping::default();
        let coll = self.cfg.collection.clone();
        if budget < 1 {
            r.budget_exhausted = true;
            return Ok(r);
        }
        // 1 call to list owners over the cap; each trim then costs at most 2.
        let owners = (budget - 1) / 2;
        let over = self
            .api
            .aggregate(&coll, &query::owners_over_cap(keep, owners.max(1)))
            .await?;
        r.calls += 1;
        for owner in over
            .iter()
            .filter_map(|d| d.get("_id").and_then(Value::as_str))
        {
            if r.calls + 2 > budget {
                r.budget_exhausted = true;
                return Ok(r);
            }
            r.trimmed += self.trim_owner(owner, keep).await?;
            r.calls += 2;
        }
        while r.calls + 2 <= budget {
            let n = self.delete_expired_batch(now_ms, batch).await?;
            r.calls += if n == 0 { 1 } else { 2 };
            r.expired += n;
            if n < u64::from(batch) {
                return Ok(r);
            }
        }
        r.budget_exhausted = true;
        Ok(r)
    }
}

fn check_keys(owner: &str, item_key: Option<&str>) -> Result<(), NotifyError> {
    use super::event::{limits, text};
    text("owner", owner, limits::ID)?;
    if let Some(k) = item_key {
        text("itemKey", k, limits::ITEM_KEY)?;
    }
    Ok(())
}
