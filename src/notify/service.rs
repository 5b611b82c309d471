//! The service flows behind `POST /v1/notifications/events` and `/retractions`:
//! Idempotency-Key claim → dedup reservation → atomic upsert → the work to defer (dedup commit,
//! the idempotency record). The adapter runs the reply now and the deferred work after the
//! response (`waitUntil`); `cargo test` drives the same flow against the local stack.
//!
//! Redis is an optimisation here, never a dependency: when it is unset or down, or another request
//! holds the event's lease, the event is still written (the upsert's filter makes it idempotent on
//! its own) and an Idempotency-Key runs unguarded (only the replay flag is lost). The owner's
//! muted set is checked inside the same reservation script (see [`preferences`]).

use super::batch::{self, EventOutcome, EventQueue, QueuedMessage};
use super::dead_letters::{self, DeadLetter};
use super::preferences::{self, Preferences};
use super::{CreateOutcome, NotificationEvent, NotificationStore, NotifyError, RetractOutcome};
use crate::api::{idempotency as idem, notify as parse, ApiError, ErrorCode};
use crate::backend::{HttpClient, RedisRestClient, Script};
use crate::dedup::{self, DedupConfig, Reservation, Slot};
use serde_json::{json, Value};

/// What the caller answers.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// JSON body.
    pub body: Value,
    /// Answered from a stored Idempotency-Key result.
    pub replayed: bool,
    /// The owners whose inbox this changed (for the live badge).
    pub changed: Vec<String>,
}

/// Work that must not hold up the response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deferred {
    /// Mark the event id done (after a successful write).
    Commit(Slot),
    /// Keep a finished Idempotency-Key result for 24 h.
    StoreResult {
        /// Redis key.
        key: String,
        /// Serialized record.
        record: String,
    },
    /// Free an Idempotency-Key after a 5xx so the client's retry runs.
    FreeKey(String),
    /// Rewrite an owner's muted-set mirror from the stored preferences.
    PublishMutes(String, Preferences),
}

/// The notification service over the two backends.
pub struct NotifyService<H> {
    store: NotificationStore<H>,
    redis: Option<RedisRestClient<H>>,
    dedup: DedupConfig,
}

type Flow = (Result<Reply, ApiError>, Vec<Deferred>);

fn outcome_name(o: CreateOutcome) -> &'static str {
    match o {
        CreateOutcome::Created => "created",
        CreateOutcome::Merged => "merged",
        CreateOutcome::AlreadyApplied => "already_applied",
    }
}

impl<H: HttpClient> NotifyService<H> {
    /// A service; `redis` is optional (see the module docs).
    #[must_use]
    pub fn new(
        store: NotificationStore<H>,
        redis: Option<RedisRestClient<H>>,
        dedup: DedupConfig,
    ) -> Self {
        NotifyService {
            store,
            redis,
            dedup,
        }
    }

    /// The store (for the user routes).
    #[must_use]
    pub fn store(&self) -> &NotificationStore<H> {
        &self.store
    }

    /// Creates or merges a notification from an event body.
    pub async fn create(&self, body: &[u8], idempotency_key: Option<&str>, now_ms: i64) -> Flow {
        self.guarded(
            "events",
            body,
            idempotency_key,
            self.create_inner(body, now_ms),
        )
        .await
    }

    /// Removes a sender from an item.
    pub async fn retract(&self, body: &[u8], idempotency_key: Option<&str>, now_ms: i64) -> Flow {
        self.guarded(
            "retractions",
            body,
            idempotency_key,
            self.retract_inner(body, now_ms),
        )
        .await
    }

    /// The owner's preferences, with whether muting is enforced; refreshes the Redis mirror
    /// after the response (read repair).
    pub async fn preferences(&self, owner: &str) -> (Result<Value, ApiError>, Vec<Deferred>) {
        match preferences::load(self.store.api(), self.store.config(), owner).await {
            Ok(p) => {
                let body = self.preferences_body(&p);
                let repair = self
                    .redis
                    .as_ref()
                    .map(|_| Deferred::PublishMutes(owner.to_owned(), p));
                (Ok(body), repair.into_iter().collect())
            }
            Err(e) => (Err(ApiError::from(e)), vec![]),
        }
    }

    /// Replaces the owner's preferences: the document first (the truth), then the mirror. If
    /// the mirror write fails the answer is 503 and a retry (same body) converges; until then
    /// the next GET repairs it.
    ///
    /// # Errors
    /// `invalid_json` (400), validation (422), backend failures (502/503).
    pub async fn set_preferences(&self, owner: &str, body: &[u8]) -> Result<Value, ApiError> {
        let p: Preferences = serde_json::from_slice(body)
            .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("preferences: {e}")))?;
        let p = p.normalized(self.store.config()).map_err(ApiError::from)?;
        preferences::save(self.store.api(), self.store.config(), owner, &p).await?;
        if let Some(r) = &self.redis {
            preferences::publish(r, owner, &p).await.map_err(|e| {
                ApiError::new(
                    ErrorCode::from(&e),
                    format!("saved, but not yet in effect (retry the request): {e}"),
                )
            })?;
        }
        Ok(self.preferences_body(&p))
    }

    fn preferences_body(&self, p: &Preferences) -> Value {
        json!({
            "mutedCategories": p.muted_categories,
            "mutedTypes": p.muted_types,
            "enforced": self.redis.is_some(),
        })
    }

    /// `POST /v1/notifications/events` in any form (one event, `{"events"}`, fan-out). With a
    /// queue every valid body is enqueued (`202 queued`); without one, a single event takes
    /// [`Self::create`]'s path unchanged and a batch of at most [`batch::MAX_SYNC_EVENTS`] is
    /// written at once through [`batch::apply`]. Every event is validated before anything is
    /// written or enqueued.
    pub async fn create_events<Q: EventQueue>(
        &self,
        body: &[u8],
        idempotency_key: Option<&str>,
        now_ms: i64,
        queue: Option<&Q>,
    ) -> Flow {
        self.guarded(
            "events",
            body,
            idempotency_key,
            self.create_events_inner(body, now_ms, queue),
        )
        .await
    }

    async fn create_events_inner<Q: EventQueue>(
        &self,
        body: &[u8],
        now_ms: i64,
        queue: Option<&Q>,
    ) -> Flow {
        let raws = match parse::parse_events_body(body) {
            Err(e) => return (Err(e), vec![]),
            Ok(parse::EventsBody::One(raw)) if queue.is_none() => {
                return self.create_raw(raw, now_ms).await
            }
            Ok(parse::EventsBody::One(raw)) => vec![raw],
            Ok(parse::EventsBody::Many(v)) => v,
            Ok(parse::EventsBody::FanOut { template, owners }) => {
                batch::fan_out(&template, &owners)
            }
        };
        let events = match batch::validate_all(&raws, self.store.config(), now_ms) {
            Ok(e) => e,
            Err(bad) => return (Err(parse::invalid_events(&bad)), vec![]),
        };
        let reply = |status, body| Reply {
            status,
            body,
            replayed: false,
            changed: vec![],
        };
        if let Some(q) = queue {
            return match batch::enqueue(q, &raws).await {
                Ok(n) => (
                    Ok(reply(202, json!({ "status": "queued", "accepted": n }))),
                    vec![],
                ),
                Err(e) => (
                    Err(ApiError::new(ErrorCode::BackendUnavailable, e.to_string())),
                    vec![],
                ),
            };
        }
        if events.len() > batch::MAX_SYNC_EVENTS {
            return (
                Err(ApiError::new(
                    ErrorCode::NotConfigured,
                    format!(
                        "{} events: more than {} need the queue (NOTIFY_QUEUE), which is not configured",
                        events.len(),
                        batch::MAX_SYNC_EVENTS
                    ),
                )),
                vec![],
            );
        }
        let report = batch::apply(
            &self.store,
            self.redis.as_ref(),
            &self.dedup,
            &events,
            now_ms,
        )
        .await;
        if let Some(EventOutcome::Failed(why)) = report
            .outcomes
            .iter()
            .find(|o| matches!(o, EventOutcome::Failed(_)))
        {
            // What was written is committed: the client's retry of the whole body finds those
            // as duplicates and writes the rest.
            return (
                Err(ApiError::new(
                    ErrorCode::BackendUnavailable,
                    format!("batch partly written, retry it: {why}"),
                )),
                vec![],
            );
        }
        let results: Vec<Value> = report
            .outcomes
            .iter()
            .zip(&events)
            .map(|(o, ev)| match o {
                EventOutcome::Applied(_) => json!({
                    "status": o.name(),
                    "notificationId": super::notification_id(ev.owner(), ev.item_key()),
                }),
                _ => json!({ "status": o.name() }),
            })
            .collect();
        let mut done = reply(200, json!({ "status": "processed", "results": results }));
        done.changed = report.changed_owners;
        (Ok(done), vec![])
    }

    /// Writes valid events as one batch (see [`batch::apply`]).
    pub async fn apply_batch(
        &self,
        events: &[super::NotificationEvent],
        now_ms: i64,
    ) -> batch::BatchReport {
        batch::apply(
            &self.store,
            self.redis.as_ref(),
            &self.dedup,
            events,
            now_ms,
        )
        .await
    }

    /// The queue consumer: writes a batch of queued events (see [`batch::consume`]).
    pub async fn consume(
        &self,
        messages: &[QueuedMessage],
        queue: &str,
        now_ms: i64,
    ) -> batch::ConsumeReport {
        batch::consume(
            &self.store,
            self.redis.as_ref(),
            &self.dedup,
            messages,
            queue,
            now_ms,
        )
        .await
    }

    /// The dead-letter queue's consumer: keeps every message for inspection and replay; `true`
    /// per message that was kept (acknowledge those, redeliver the rest: storing is idempotent
    /// by message id).
    pub async fn store_dead_letters(
        &self,
        messages: &[QueuedMessage],
        queue: &str,
        now_ms: i64,
    ) -> Vec<bool> {
        let letters: Vec<DeadLetter> = messages
            .iter()
            .map(|m| DeadLetter {
                id: m.id.clone(),
                body: m.body.clone(),
                queue: queue.to_owned(),
                reason: "failed every delivery attempt".into(),
            })
            .collect();
        dead_letters::store(&self.store, &letters, now_ms)
            .await
            .iter()
            .map(Result::is_ok)
            .collect()
    }

    /// `GET /v1/admin/dead-letters`: the oldest letters, `{items, count}`.
    ///
    /// # Errors
    /// `invalid_parameter` (400), backend failures.
    pub async fn dead_letters(&self, query: &str) -> Result<Value, ApiError> {
        let limit = parse::parse_dead_letter_limit(query)?;
        let docs = dead_letters::list(&self.store, None, limit)
            .await
            .map_err(NotifyError::from)?;
        let items: Vec<Value> = docs.iter().map(dead_letters::view).collect();
        Ok(json!({ "count": items.len(), "items": items }))
    }

    /// `POST /v1/admin/dead-letters/replay`: sends letters back to the queue, then removes them
    /// (a replayed event that was in fact applied is answered by dedup and the upsert filter).
    ///
    /// # Errors
    /// 400 for a bad body, 503 `not_configured` without a queue, backend failures.
    pub async fn replay_dead_letters<Q: EventQueue>(
        &self,
        body: &[u8],
        queue: Option<&Q>,
    ) -> Result<Value, ApiError> {
        let r = parse::parse_replay(body)?;
        let q = queue.ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotConfigured,
                "the queue (NOTIFY_QUEUE) is not configured",
            )
        })?;
        let docs = dead_letters::list(
            &self.store,
            r.ids.as_deref(),
            r.limit.unwrap_or(super::MAX_PAGE),
        )
        .await
        .map_err(NotifyError::from)?;
        let (mut ids, mut bodies) = (Vec::new(), Vec::new());
        for d in &docs {
            if let (Some(id), Some(b)) = (
                d.get("_id").and_then(Value::as_str),
                d.get("body").and_then(Value::as_str),
            ) {
                ids.push(id.to_owned());
                bodies.push(b.to_owned());
            }
        }
        for chunk in batch::chunk_messages(bodies) {
            q.send_batch(&chunk)
                .await
                .map_err(|e| ApiError::new(ErrorCode::BackendUnavailable, e.to_string()))?;
        }
        let removed = dead_letters::remove(&self.store, &ids)
            .await
            .map_err(NotifyError::from)?;
        Ok(json!({ "replayed": ids.len(), "removed": removed }))
    }

    async fn create_inner(&self, body: &[u8], now_ms: i64) -> Flow {
        match parse::parse_event(body) {
            Ok(raw) => self.create_raw(raw, now_ms).await,
            Err(e) => (Err(e), vec![]),
        }
    }

    /// The create flow for an already parsed event (the events route parsed the body once).
    async fn create_raw(&self, raw: super::NewEvent, now_ms: i64) -> Flow {
        let run = async {
            let ev =
                NotificationEvent::new(raw, self.store.config(), now_ms).map_err(ApiError::from)?;
            let slot = dedup::slot(&self.dedup, ev.event_id(), ev.created_time_msec());
            let key = preferences::mute_key(ev.owner());
            let members = preferences::mute_members(ev.category_type(), &ev.notification_type);
            let mute = dedup::MuteCheck {
                key: &key,
                members: &members,
            };
            let reservation = match &self.redis {
                Some(r) => dedup::reserve_unless_muted(r, &slot, self.dedup.lease_ms, &mute)
                    .await
                    .ok(),
                None => None,
            };
            let token = match reservation {
                Some(Reservation::Muted) => {
                    return Ok((
                        Reply {
                            status: 200,
                            body: json!({"status": "muted"}),
                            replayed: false,
                            changed: vec![],
                        },
                        vec![],
                    ))
                }
                Some(Reservation::Duplicate) => {
                    return Ok((
                        Reply {
                            status: 200,
                            body: json!({"status": "duplicate"}),
                            replayed: false,
                            changed: vec![],
                        },
                        vec![],
                    ))
                }
                Some(Reservation::Reserved { token }) => Some(token),
                // In flight elsewhere or Redis unavailable: write anyway (idempotent upsert).
                Some(Reservation::InFlight) | None => None,
            };
            match self.store.create(&ev, now_ms).await {
                Ok(outcome) => {
                    let deferred = match token {
                        Some(_) => vec![Deferred::Commit(slot)],
                        None => vec![],
                    };
                    let status = if outcome == CreateOutcome::Created {
                        201
                    } else {
                        200
                    };
                    let body = json!({
                        "status": outcome_name(outcome),
                        "notificationId": super::notification_id(ev.owner(), ev.item_key()),
                    });
                    let changed: Vec<String> = (outcome != CreateOutcome::AlreadyApplied)
                        .then(|| ev.owner().to_owned())
                        .into_iter()
                        .collect();
                    Ok((
                        Reply {
                            status,
                            body,
                            replayed: false,
                            changed,
                        },
                        deferred,
                    ))
                }
                Err(e) => {
                    if let (Some(r), Some(t)) = (&self.redis, &token) {
                        // On the request path: the client's retry must not look like a duplicate.
                        // If this fails too, the lease expires and a retry proceeds then.
                        let _ = dedup::release(r, &slot, t).await;
                    }
                    Err(ApiError::from(e))
                }
            }
        };
        match run.await {
            Ok((reply, deferred)) => (Ok(reply), deferred),
            Err(e) => (Err(e), vec![]),
        }
    }

    async fn retract_inner(&self, body: &[u8], now_ms: i64) -> Flow {
        let run = async {
            let r = parse::parse_retraction(body)?;
            let outcome = self
                .store
                .retract(&r.owner, &r.item_key, &r.sender_id, now_ms)
                .await
                .map_err(ApiError::from)?;
            let status = match outcome {
                RetractOutcome::Updated => "updated",
                RetractOutcome::Deleted => "deleted",
                RetractOutcome::NotFound => "not_found",
            };
            Ok::<_, ApiError>(Reply {
                status: 200,
                body: json!({"status": status}),
                replayed: false,
                changed: (outcome != RetractOutcome::NotFound)
                    .then_some(r.owner)
                    .into_iter()
                    .collect(),
            })
        };
        (run.await, vec![])
    }

    /// Runs `op` under an Idempotency-Key (Stripe semantics): one Redis call to claim before,
    /// one deferred call to keep the result (or free the key after a 5xx).
    async fn guarded(
        &self,
        route: &str,
        body: &[u8],
        key: Option<&str>,
        op: impl std::future::Future<Output = Flow>,
    ) -> Flow {
        let (Some(key), Some(redis)) = (key, &self.redis) else {
            if let Some(k) = key {
                if let Err(e) = idem::validate_key(k) {
                    return (Err(e), vec![]);
                }
            }
            return op.await;
        };
        if let Err(e) = idem::validate_key(key) {
            return (Err(e), vec![]);
        }
        let hash = crate::ip::sha256_hex(body);
        let rkey = idem::redis_key(route, key);
        let script = Script::new(idem::CLAIM_LUA);
        let pending_ms = idem::PENDING_MS.to_string();
        let claimed = redis
            .evalsha_or_eval(&script, &[&rkey], &[&idem::pending(&hash), &pending_ms])
            .await
            .ok();
        if let Some(v) = &claimed {
            match idem::classify(v.as_str(), &hash) {
                Ok(idem::Claim::Replay { status, body }) => {
                    return (
                        Ok(Reply {
                            status,
                            body,
                            replayed: true,
                            changed: vec![],
                        }),
                        vec![],
                    )
                }
                Ok(idem::Claim::Fresh) => {}
                Err(e) => return (Err(e), vec![]),
            }
        }
        let (result, mut deferred) = op.await;
        if claimed.is_some() {
            deferred.push(match &result {
                Ok(r) => Deferred::StoreResult {
                    key: rkey,
                    record: idem::finished(&hash, r.status, &r.body),
                },
                Err(e) if e.status < 500 => Deferred::StoreResult {
                    key: rkey,
                    record: idem::finished(&hash, e.status, &e.body()),
                },
                Err(_) => Deferred::FreeKey(rkey),
            });
        }
        (result, deferred)
    }

    /// Runs deferred work; returns a line per failure for the log (nothing is retried: a lost
    /// commit lets the lease expire, a lost record only loses the replay flag).
    pub async fn run_deferred(&self, work: Vec<Deferred>) -> Vec<String> {
        let Some(redis) = &self.redis else {
            return vec![];
        };
        let mut failures = Vec::new();
        for w in work {
            let r = match &w {
                Deferred::Commit(slot) => dedup::commit(redis, slot).await.map(|_| ()),
                Deferred::StoreResult { key, record } => redis
                    .command(&[
                        "SET",
                        key.as_str(),
                        record,
                        "PX",
                        &idem::KEEP_MS.to_string(),
                    ])
                    .await
                    .map(|_| ()),
                Deferred::FreeKey(key) => redis.command(&["DEL", key.as_str()]).await.map(|_| ()),
                Deferred::PublishMutes(owner, p) => preferences::publish(redis, owner, p).await,
            };
            if let Err(e) = r {
                failures.push(format!("deferred {w:?} failed: {e}"));
            }
        }
        failures
    }
}
