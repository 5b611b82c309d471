//! The service flows behind `POST /v1/notifications/events` and `/retractions`:
//! Idempotency-Key claim → dedup reservation → atomic upsert → the work to defer (dedup commit,
//! the idempotency record). The adapter runs the reply now and the deferred work after the
//! response (`waitUntil`); `cargo test` drives the same flow against the local stack.
//!
//! Redis is an optimisation here, never a dependency: when it is unset or down, or another request
//! holds the event's lease, the event is still written (the upsert's filter makes it idempotent on
//! its own) and an Idempotency-Key runs unguarded (only the replay flag is lost). The owner's
//! muted set is checked inside the same reservation script (see [`preferences`]).

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
    /// The owner whose inbox this changed (for the live badge).
    pub changed: Option<String>,
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
            Err(e) => (Err(parse::notify_error(e)), vec![]),
        }
    }

    /// Replaces the owner's preferences: the document first (the truth), then the mirror. If
    /// the mirror write fails the answer is 503 and a retry (same body) converges; until then
    /// the next GET repairs it.
    ///
    /// # Errors
    /// `invalid_json` (400), validation (422), backend failures (502/503).
    pub async fn set_preferences(&self, owner: &str, body: &[u8]) -> Result<Value, ApiError> {
        let p: Preferences = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(ErrorCode::InvalidJson, format!("preferences: {e}"))
        })?;
        let p = p
            .normalized(self.store.config())
            .map_err(parse::notify_error)?;
        preferences::save(self.store.api(), self.store.config(), owner, &p).await?;
        if let Some(r) = &self.redis {
            preferences::publish(r, owner, &p).await.map_err(|e| {
                ApiError::unavailable(
                    e.code(),
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

    async fn create_inner(&self, body: &[u8], now_ms: i64) -> Flow {
        let run = async {
            let raw = parse::parse_event(body)?;
            let ev = NotificationEvent::new(raw, self.store.config(), now_ms)
                .map_err(parse::notify_error)?;
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
                            changed: None,
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
                            changed: None,
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
                    let changed =
                        (outcome != CreateOutcome::AlreadyApplied).then(|| ev.owner().to_owned());
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
                    Err(parse::notify_error(e))
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
                .map_err(parse::notify_error)?;
            let status = match outcome {
                RetractOutcome::Updated => "updated",
                RetractOutcome::Deleted => "deleted",
                RetractOutcome::NotFound => "not_found",
            };
            Ok::<_, ApiError>(Reply {
                status: 200,
                body: json!({"status": status}),
                replayed: false,
                changed: (outcome != RetractOutcome::NotFound).then_some(r.owner),
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
                            changed: None,
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

impl From<NotifyError> for ApiError {
    fn from(e: NotifyError) -> Self {
        parse::notify_error(e)
    }
}
