//! The rules wired to a [`DataApiClient`]; the create flow with dedup is in [`super::service`].
//! Still platform-free: the worker adapter passes a `worker::Fetch`-backed client.

use serde_json::{json, Value};

use super::document::field;
use super::{
    query, rules, CreateOutcome, CreateStep, ListParams, NotificationEvent, NotifyConfig,
    NotifyError, RetractOutcome,
};
use crate::backend::{DataApiClient, HttpClient};
use crate::dedup::{Departure, Tally};

/// What a create behind the retraction guard did ([`NotificationStore::create_guarded`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardedCreate {
    /// Written, merged, or already applied.
    Done(CreateOutcome),
    /// Nothing written: the item's retracted list is full of retractions at or after this
    /// event, so it cannot vouch that this sender is not one of those it dropped.
    Unvouched,
}

/// One list page.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Stored documents (normalized EJSON); render with [`super::view`].
    pub items: Vec<Value>,
    /// Cursor for the next page, if there is one.
    pub next_cursor: Option<String>,
    /// The inbox's badge counts, read in the same call (when asked for).
    pub counts: Option<Counts>,
    /// Change-feed position that this page is a snapshot of (pass it to `changes`).
    pub sync: String,
    /// The origins cap the items were written with (how exact a count without Redis is).
    pub origins_cap: u32,
}

/// Badge counts over the live, unarchived inbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Counts {
    /// Items not read.
    pub unread: u64,
    /// Items not seen: the badge ("mark all seen" clears it while items stay unread).
    pub unseen: u64,
}

/// One page of the change feed.
#[derive(Debug, Clone, PartialEq)]
pub struct Changes {
    /// Changed documents, oldest change first; tombstones have `deleted: true`.
    pub items: Vec<Value>,
    /// Where the next call resumes.
    pub sync: String,
    /// More changes are ready now (call again at once with `sync`).
    pub has_more: bool,
    /// The origins cap the items were written with (how exact a count without Redis is).
    pub origins_cap: u32,
}

fn count(facet: &Value, name: &str) -> u64 {
    facet
        .get(name)
        .and_then(|a| a.get(0))
        .and_then(|d| d.get("n"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

fn sync_of(doc: &Value) -> Option<query::Cursor> {
    Some(query::Cursor {
        revision: doc.get("sync").and_then(crate::backend::ejson::date_ms)?,
        id: doc.get("_id")?.as_str()?.to_owned(),
    })
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

    /// `/healthz`'s probe: one `find` of at most one document, matching nothing in particular.
    ///
    /// # Errors
    /// Backend failures (read by [`crate::backend::data_api::probe_problem`]).
    pub async fn probe(&self) -> Result<Value, crate::backend::BackendError> {
        let mut fields = serde_json::Map::new();
        fields.insert("filter".into(), json!({ "_id": "healthz-probe" }));
        fields.insert("limit".into(), json!(1));
        self.api.action("find", &self.cfg.collection, fields).await
    }

    /// Creates the indexes (idempotent; run at deploy or from a cron, not per request).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn ensure_indexes(&self) -> Result<Vec<String>, NotifyError> {
        let colls = self.cfg.collections();
        let mut names = self
            .api
            .create_indexes(&colls.items, &query::indexes())
            .await?;
        // Dead letters and erasure jobs/fences expire by their own `expireAt`; dead letters are
        // also found by owner (an erasure, an export).
        let ttl =
            json!({ "key": { "expireAt": 1 }, "name": "expireAt_ttl", "expireAfterSeconds": 0 });
        let by_owner = json!({ "key": { "owner": 1 }, "name": "owner" });
        names.extend(
            self.api
                .create_indexes(&colls.dead_letters, &[ttl.clone(), by_owner])
                .await?,
        );
        names.extend(
            self.api
                .create_indexes(&colls.erasures, std::slice::from_ref(&ttl))
                .await?,
        );
        // The senders' index: found by the `_id` prefix (a sender's erasure), by owner (an
        // owner's) or by its check time (the housekeeping, which deletes an entry once its item
        // is gone: `senders::collect_batch`). The TTL index serves only entries written before
        // that (they carry `expireAt`).
        let by_o = json!({ "key": { "o": 1 }, "name": "o" });
        let by_check = json!({ "key": { (super::senders::CHECK_AT): 1 }, "name": "checkAt" });
        names.extend(
            self.api
                .create_indexes(&colls.senders, &[ttl, by_o, by_check])
                .await?,
        );
        Ok(names)
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
        self.create_counted(ev, None, now_ms).await
    }

    /// [`Self::create`], storing the roster's tally with the write (see [`super::roster`]).
    /// When the sender's origin is already there (or the document refuses it) but this
    /// reservation is the one that put it on the roster, one more call stores the tally.
    ///
    /// # Errors
    /// Backend failures.
    pub async fn create_counted(
        &self,
        ev: &NotificationEvent,
        tally: Option<Tally>,
        now_ms: i64,
    ) -> Result<CreateOutcome, NotifyError> {
        let (filter, mut update) = rules::create_upsert(ev, &self.cfg, now_ms);
        rules::with_tally(&mut update, tally.map(|t| t.packed));
        rules::with_generation(&mut update, tally.and_then(|t| t.generation));
        let o = self.upsert_create(&filter, &update).await?;
        if o == CreateOutcome::AlreadyApplied {
            self.store_added_tally(ev, tally).await?;
        }
        Ok(o)
    }

    /// [`Self::create_counted`] behind [`rules::with_retraction_guard`], for a create whose
    /// sender is on the item's roster: [`GuardedCreate::Unvouched`] when the document's
    /// retracted list cannot say whether the sender was retracted after this event (then
    /// [`super::roster::create_checked`] asks the roster). A miss costs a read, not a second
    /// upsert, unless the read shows a concurrent insert (then both).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn create_guarded(
        &self,
        ev: &NotificationEvent,
        tally: Tally,
        now_ms: i64,
    ) -> Result<GuardedCreate, NotifyError> {
        let (mut filter, mut update) = rules::create_upsert(ev, &self.cfg, now_ms);
        rules::with_retraction_guard(&mut filter, ev.created_time_msec, &self.cfg);
        rules::with_tally(&mut update, Some(tally.packed));
        rules::with_generation(&mut update, tally.generation);
        for _ in 0..2 {
            let r = self
                .api
                .update_one(&self.cfg.collection, &filter, &update, true)
                .await;
            match rules::classify_create_result(r, 0) {
                CreateStep::Done(o) => return Ok(GuardedCreate::Done(o)),
                CreateStep::Retry => {}
                CreateStep::Fail(e) => return Err(e.into()),
            }
            // Missed: the sender is stored, or retracted at or after the event, or the guard
            // held, or a concurrent insert won (then the write goes once more).
            let Some(doc) = self.senders_of(&ev.owner, &ev.item_key).await? else {
                break;
            };
            if rules::holds_sender(&doc, &ev.sender.id, ev.created_time_msec) {
                self.store_added_tally(ev, Some(tally)).await?;
                return Ok(GuardedCreate::Done(CreateOutcome::AlreadyApplied));
            }
            if !rules::retractions_complete(&doc, ev.created_time_msec, &self.cfg) {
                break;
            }
        }
        Ok(GuardedCreate::Unvouched)
    }

    /// The item's stored senders and retracted list (`origins.s`, `x`: what
    /// [`rules::holds_sender`] and [`rules::retractions_complete`] read), one `findOne`.
    ///
    /// # Errors
    /// Backend failures.
    pub async fn senders_of(
        &self,
        owner: &str,
        item_key: &str,
    ) -> Result<Option<Value>, NotifyError> {
        let filter = json!({ "owner": owner, "itemKey": item_key });
        let projection = json!({ (field::ORIGIN_SENDER): 1, (field::RETRACTED): 1 });
        let doc = self
            .api
            .find_one(&self.cfg.collection, &filter, Some(&projection), None)
            .await?;
        Ok(doc)
    }

    /// The create's upsert, sent again once on an ambiguous duplicate key
    /// ([`rules::classify_create_result`]).
    async fn upsert_create(
        &self,
        filter: &Value,
        update: &Value,
    ) -> Result<CreateOutcome, NotifyError> {
        for attempt in 0.. {
            let r = self
                .api
                .update_one(&self.cfg.collection, filter, update, true)
                .await;
            match rules::classify_create_result(r, attempt) {
                CreateStep::Done(o) => return Ok(o),
                CreateStep::Retry => {}
                CreateStep::Fail(e) => return Err(e.into()),
            }
        }
        unreachable!("classify_create_result finishes by the second attempt")
    }

    /// The sender's origin is already there (or the document refuses it) but this reservation
    /// put it on the roster: one more call stores the tally.
    async fn store_added_tally(
        &self,
        ev: &NotificationEvent,
        tally: Option<Tally>,
    ) -> Result<(), NotifyError> {
        if let Some(t) = tally.filter(|t| t.added) {
            self.store_tally(&ev.owner, &ev.item_key, t.packed).await?;
        }
        Ok(())
    }

    /// Stores a roster tally on an existing item (`$max`, no upsert).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn store_tally(
        &self,
        owner: &str,
        item_key: &str,
        packed: i64,
    ) -> Result<(), NotifyError> {
        let filter = json!({ "owner": owner, "itemKey": item_key });
        let mut update = json!({ "$currentDate": { "sync": true } });
        rules::with_tally(&mut update, Some(packed));
        self.api
            .update_one(&self.cfg.collection, &filter, &update, false)
            .await?;
        Ok(())
    }

    /// Removes a sender's origin; tombstones the item when no stored origin is left; always
    /// remembers the retraction (see [`rules::retract_update`]). 1 call for a merged item, 2 for
    /// its last sender, 3 when the sender is not there.
    ///
    /// # Errors
    /// Validation of the keys, backend failures.
    pub async fn retract(
        &self,
        owner: &str,
        item_key: &str,
        sender_id: &str,
        now_ms: i64,
    ) -> Result<RetractOutcome, NotifyError> {
        self.retract_counted(owner, item_key, sender_id, None, now_ms)
            .await
    }

    /// [`Self::retract`] after the sender left the item's roster: the retraction counts from
    /// `left.at_ms` and each step stores the roster's tally (see [`super::roster`]).
    ///
    /// # Errors
    /// Validation of the keys, backend failures.
    pub async fn retract_counted(
        &self,
        owner: &str,
        item_key: &str,
        sender_id: &str,
        left: Option<Departure>,
        now_ms: i64,
    ) -> Result<RetractOutcome, NotifyError> {
        check_keys(owner, Some(item_key))?;
        super::event::text("sender.id", sender_id, super::event::limits::ID)?;
        let (coll, cfg) = (&self.cfg.collection, &self.cfg);
        let at = left.map_or(now_ms, |l| l.at_ms.max(now_ms));
        let tally = left.map(|l| l.tally);
        let (f1, mut u1) = rules::retract_update(owner, item_key, sender_id, cfg, at);
        let (f2, mut u2) = rules::retract_delete(owner, item_key, sender_id, cfg, at);
        let (f3, mut u3) = rules::retract_record(owner, item_key, sender_id, cfg, at);
        for u in [&mut u1, &mut u2, &mut u3] {
            rules::with_tally(u, tally);
        }
        // Only the record step can insert the item (a tombstone).
        rules::with_generation(&mut u3, left.and_then(|l| l.generation));
        // Rounds: a concurrent create can flip a guard between two calls; each round re-reads.
        for _ in 0..3 {
            if self.api.update_one(coll, &f1, &u1, false).await?.matched > 0 {
                return Ok(RetractOutcome::Updated);
            }
            if self.api.update_one(coll, &f2, &u2, false).await?.matched > 0 {
                return Ok(RetractOutcome::Deleted);
            }
            match self.api.update_one(coll, &f3, &u3, true).await {
                Ok(_) => return Ok(RetractOutcome::NotFound),
                // The sender arrived between step 2 and 3: go round again.
                Err(crate::backend::BackendError::DuplicateKey { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(RetractOutcome::NotFound)
    }

    /// Takes back the origin `ev`'s own write added, as a retraction at `at` would remove it
    /// (steps 1 and 2 of [`Self::retract_counted`], narrowed by [`rules::only_event`]); `false`
    /// when that origin is not there. The retraction itself recorded the sender in `x`.
    ///
    /// # Errors
    /// Backend failures.
    pub async fn take_back(&self, ev: &NotificationEvent, at: i64) -> Result<bool, NotifyError> {
        let (owner, item_key, sender) = (ev.owner(), ev.item_key(), ev.sender.id.as_str());
        let mut steps = [
            rules::retract_update(owner, item_key, sender, &self.cfg, at),
            rules::retract_delete(owner, item_key, sender, &self.cfg, at),
        ];
        for step in &mut steps {
            rules::only_event(step, sender, ev.event_id());
            let (filter, update) = &*step;
            if self
                .api
                .update_one(&self.cfg.collection, filter, update, false)
                .await?
                .matched
                > 0
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// One page, with the badge counts when `with_counts` (one call either way: `aggregate`
    /// with `$facet`, or a plain `find`).
    ///
    /// # Errors
    /// Invalid cursor, backend failures.
    pub async fn list(
        &self,
        owner: &str,
        params: &ListParams,
        with_counts: bool,
        now_ms: i64,
    ) -> Result<Page, NotifyError> {
        check_keys(owner, None)?;
        let coll = &self.cfg.collection;
        let (sync, _) = query::next_sync(None, None, now_ms, self.cfg.sync_settle_ms);
        let (mut items, counts) = if with_counts {
            let pipeline = query::list_pipeline(owner, params, &self.cfg, now_ms)?;
            let mut facet = self
                .api
                .aggregate(coll, &pipeline)
                .await?
                .into_iter()
                .next()
                .unwrap_or_default();
            let counts = Counts {
                unread: count(&facet, "unread"),
                unseen: count(&facet, "unseen"),
            };
            let items = match facet.get_mut("items").map(Value::take) {
                Some(Value::Array(a)) => a,
                _ => vec![],
            };
            (items, Some(counts))
        } else {
            let q = query::list_query(owner, params, &self.cfg, now_ms)?;
            (self.api.find(coll, &q.filter, &q.options).await?, None)
        };
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
        Ok(Page {
            items,
            next_cursor,
            counts,
            sync: query::encode_cursor(&sync),
            origins_cap: self.cfg.origins_cap,
        })
    }

    /// Badge counts, optionally for one category (one call).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn counts(
        &self,
        owner: &str,
        category: Option<&str>,
        now_ms: i64,
    ) -> Result<Counts, NotifyError> {
        check_keys(owner, None)?;
        let facet = self
            .api
            .aggregate(
                &self.cfg.collection,
                &query::counts_pipeline(owner, category, now_ms),
            )
            .await?
            .into_iter()
            .next()
            .unwrap_or_default();
        Ok(Counts {
            unread: count(&facet, "unread"),
            unseen: count(&facet, "unseen"),
        })
    }

    /// Everything that changed after `since` (a position from a list or an earlier call; `None`
    /// for the whole feed), tombstones included (one call).
    ///
    /// # Errors
    /// Invalid position, backend failures.
    pub async fn changes(
        &self,
        owner: &str,
        since: Option<&str>,
        limit: u32,
        now_ms: i64,
    ) -> Result<Changes, NotifyError> {
        check_keys(owner, None)?;
        let from = since.map(query::decode_cursor).transpose()?;
        let q = query::changes(owner, from.as_ref(), limit);
        let mut items = self
            .api
            .find(&self.cfg.collection, &q.filter, &q.options)
            .await?;
        let full = items.len() > limit.clamp(1, super::MAX_PAGE) as usize;
        if full {
            items.pop();
        }
        let last = items.last().and_then(sync_of);
        let (pos, held) = query::next_sync(
            last.as_ref(),
            from.as_ref(),
            now_ms,
            self.cfg.sync_settle_ms,
        );
        Ok(Changes {
            items,
            sync: query::encode_cursor(&pos),
            // A held-back position would hand out the same page again: wait for the next poll.
            has_more: full && !held,
            origins_cap: self.cfg.origins_cap,
        })
    }

    /// Whether the owner has the item (live or tombstoned; one call).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn exists(&self, owner: &str, item_key: &str) -> Result<bool, NotifyError> {
        check_keys(owner, Some(item_key))?;
        Ok(self
            .api
            .find_one(
                &self.cfg.collection,
                &json!({ "owner": owner, "itemKey": item_key }),
                Some(&json!({ "_id": 1 })),
                None,
            )
            .await?
            .is_some())
    }

    /// Whether the owner's item holds an origin of the sender (one call).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn holds_origin(
        &self,
        owner: &str,
        item_key: &str,
        sender_id: &str,
    ) -> Result<bool, NotifyError> {
        check_keys(owner, Some(item_key))?;
        Ok(self
            .api
            .find_one(
                &self.cfg.collection,
                &json!({ "owner": owner, "itemKey": item_key, (field::ORIGIN_SENDER): sender_id }),
                Some(&json!({ "_id": 1 })),
                None,
            )
            .await?
            .is_some())
    }

    /// Sets a flag on one item or all; returns how many items changed (one call).
    ///
    /// # Errors
    /// [`NotifyError::ItemNotFound`] when the one item is not the owner's live item; backend
    /// failures.
    pub async fn mark(
        &self,
        owner: &str,
        target: query::Target<'_>,
        flag: query::Flag,
        value: bool,
        now_ms: i64,
    ) -> Result<u64, NotifyError> {
        check_keys(
            owner,
            if let query::Target::Item(k) = target {
                Some(k)
            } else {
                None
            },
        )?;
        let m = query::mark(owner, target, flag, value, now_ms);
        let coll = &self.cfg.collection;
        if m.many {
            return Ok(self
                .api
                .update_many(coll, &m.filter, &m.update, false)
                .await?
                .modified);
        }
        let r = self
            .api
            .update_one(coll, &m.filter, &m.update, false)
            .await?;
        // `matched`, not `modified`: a mark that finds the flag already set still stamps `sync`
        // and is no miss, while no match means the item is gone and the client must reconcile.
        if r.matched == 0 {
            return Err(NotifyError::ItemNotFound);
        }
        Ok(r.modified)
    }

    /// Deletes an item, leaving a tombstone for other devices; `true` if it existed (one call).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn delete(
        &self,
        owner: &str,
        item_key: &str,
        now_ms: i64,
    ) -> Result<bool, NotifyError> {
        check_keys(owner, Some(item_key))?;
        let update = query::tombstone_update(&self.cfg, now_ms);
        Ok(self
            .api
            .update_one(
                &self.cfg.collection,
                &query::delete_one(owner, item_key),
                &update,
                false,
            )
            .await?
            .matched
            > 0)
    }

    /// A bulk action over the live inbox or one category; returns the items changed (one call).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn bulk(
        &self,
        owner: &str,
        action: query::Bulk,
        category: Option<&str>,
        now_ms: i64,
    ) -> Result<u64, NotifyError> {
        check_keys(owner, None)?;
        let (filter, update) = query::bulk(owner, action, category, &self.cfg, now_ms);
        Ok(self
            .api
            .update_many(&self.cfg.collection, &filter, &update, false)
            .await?
            .modified)
    }

    /// Nightly: keeps the owner's newest `keep` items, tombstoning the rest; returns how many
    /// (≤ 2 calls).
    ///
    /// # Errors
    /// Backend failures.
    pub async fn trim_owner(
        &self,
        owner: &str,
        keep: u32,
        now_ms: i64,
    ) -> Result<u64, NotifyError> {
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
        let (Some(revision), Some(id)) = (
            cut.get("revision").and_then(Value::as_i64),
            cut.get("_id").and_then(Value::as_str),
        ) else {
            return Ok(0);
        };
        let cutoff = query::Cursor {
            revision,
            id: id.to_owned(),
        };
        let update = query::tombstone_update(&self.cfg, now_ms);
        Ok(self
            .api
            .update_many(
                coll,
                &query::trim_owner_delete(owner, &cutoff),
                &update,
                false,
            )
            .await?
            .modified)
    }

    /// Tombstones up to `batch` expired items (2 calls); call until it returns 0.
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
        let update = query::tombstone_update(&self.cfg, now_ms);
        Ok(self
            .api
            .update_many(coll, &query::expired_delete(&ids, now_ms), &update, false)
            .await?
            .modified)
    }
}

/// What one housekeeping run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Housekeeping {
    /// Items tombstoned from owners over the cap.
    pub trimmed: u64,
    /// Expired items tombstoned.
    pub expired: u64,
    /// Data API calls spent.
    pub calls: u32,
    /// Work was left for the next run because the budget ran out.
    pub budget_exhausted: bool,
    /// The senders' index entries whose item was gone, deleted
    /// ([`super::senders::collect_batch`]).
    pub index_entries_dropped: u64,
    /// The senders' index entries looked at whose item is still there (checked again later).
    pub index_entries_kept: u64,
    /// Owners whose inbox was trimmed (their live badge needs a push).
    #[serde(skip)]
    pub trimmed_owners: Vec<String>,
}

impl<H: HttpClient> NotificationStore<H> {
    /// One cron run within `budget` Data API calls (a Worker invocation has a subrequest limit:
    /// 50 on the free plan): trims owners over `keep` items, then deletes expired items in
    /// batches of `batch`, then collects the senders' index entries of items that are gone
    /// ([`super::senders::collect_batch`]). Each step's cost is known before it starts, so the
    /// budget is never exceeded; what is left waits for the next run.
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
            let n = self.trim_owner(owner, keep, now_ms).await?;
            r.trimmed += n;
            if n > 0 {
                r.trimmed_owners.push(owner.to_owned());
            }
            r.calls += 2;
        }
        loop {
            if r.calls + 2 > budget {
                r.budget_exhausted = true;
                return Ok(r);
            }
            let n = self.delete_expired_batch(now_ms, batch).await?;
            r.calls += if n == 0 { 1 } else { 2 };
            r.expired += n;
            if n < u64::from(batch) {
                break;
            }
        }
        loop {
            if r.calls + super::senders::collect_cost() > budget {
                r.budget_exhausted = true;
                return Ok(r);
            }
            let (c, last) = super::senders::collect_batch(self, now_ms, batch).await?;
            r.calls += c.calls;
            r.index_entries_dropped += c.dropped;
            r.index_entries_kept += c.kept;
            if last {
                return Ok(r);
            }
        }
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
