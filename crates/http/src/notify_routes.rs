//! The notification write routes over HTTP: parse the body, run the core operation under the
//! Idempotency-Key guard, render the answer. The core (`egn_core::notify::service`) takes parsed
//! values and returns typed results; this is the only place they become statuses and JSON.

use super::idempotency as idem;
use super::notify as parse;
use super::notify_bodies::{
    CreatedWord, DeadLetters, EventResult, NewItem, OneEvent, OneEventWord, PreferencesBody,
    Processed, ProcessedWord, Queued, QueuedWord, ReplayResult, RetractResult, RetractWord,
};
use super::{ApiError, ErrorCode};
use egn_core::backend::{HttpClient, Script};
use egn_core::notify::batch::EventQueue;
use egn_core::notify::{
    CreateOutcome, Created, Deferred, EventsOutcome, NotifyError, NotifyService, Preferences,
    PreferencesView, RetractOutcome, Written,
};
use serde_json::{json, Value};

/// What the route answers.
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

/// A route's answer and the work to run after it.
pub type Flow = (Result<Reply, ApiError>, Vec<Deferred>);

fn created_reply(c: &Created) -> (u16, Value) {
    let one = |status, notification_id| {
        (
            200,
            json!(OneEvent {
                status,
                notification_id
            }),
        )
    };
    match c {
        Created::Muted => one(OneEventWord::Muted, None),
        Created::Erased => one(OneEventWord::Erased, None),
        Created::Duplicate => one(OneEventWord::Duplicate, None),
        Created::Applied {
            outcome,
            notification_id,
        } => {
            let id = Some(notification_id.clone());
            match outcome {
                CreateOutcome::Created => (
                    201,
                    json!(NewItem {
                        status: CreatedWord::Created,
                        notification_id: notification_id.clone(),
                    }),
                ),
                CreateOutcome::Merged => one(OneEventWord::Merged, id),
                CreateOutcome::AlreadyApplied => one(OneEventWord::AlreadyApplied, id),
            }
        }
    }
}

fn events_reply(o: &EventsOutcome) -> (u16, Value) {
    match o {
        EventsOutcome::One(c) => created_reply(c),
        EventsOutcome::Queued { accepted } => (
            202,
            json!(Queued {
                status: QueuedWord::Queued,
                accepted: *accepted,
            }),
        ),
        EventsOutcome::Processed(results) => {
            let results = results
                .iter()
                .map(|(status, id)| EventResult {
                    status: *status,
                    notification_id: id.clone(),
                })
                .collect();
            (
                200,
                json!(Processed {
                    status: ProcessedWord::Processed,
                    results,
                }),
            )
        }
    }
}

fn retract_reply(o: RetractOutcome) -> (u16, Value) {
    let status = match o {
        RetractOutcome::Updated => RetractWord::Updated,
        RetractOutcome::Deleted => RetractWord::Deleted,
        RetractOutcome::NotFound => RetractWord::NotFound,
    };
    (200, json!(RetractResult { status }))
}

/// The preferences body.
#[must_use]
pub fn preferences_body(v: &PreferencesView) -> Value {
    json!(PreferencesBody::from(v))
}

fn render<T>(r: Result<Written<T>, NotifyError>, to_reply: impl Fn(&T) -> (u16, Value)) -> Flow {
    match r {
        Ok(w) => {
            let (status, body) = to_reply(&w.value);
            let reply = Reply {
                status,
                body,
                replayed: false,
                changed: w.changed,
            };
            (Ok(reply), w.deferred)
        }
        Err(e) => (Err(ApiError::from(e)), vec![]),
    }
}

/// `POST /v1/notifications/events` with one event body (no queue).
pub async fn post_event<H: HttpClient>(
    svc: &NotifyService<H>,
    body: &[u8],
    key: Option<&str>,
    now_ms: i64,
) -> Flow {
    let op = async {
        match parse::parse_event(body) {
            Ok(raw) => render(svc.create(raw, now_ms).await, created_reply),
            Err(e) => (Err(e), vec![]),
        }
    };
    guarded(svc, idem::Scope::Events, body, key, op).await
}

/// `POST /v1/notifications/events` in any form (one event, `{"events"}`, fan-out).
pub async fn post_events<H: HttpClient, Q: EventQueue>(
    svc: &NotifyService<H>,
    body: &[u8],
    key: Option<&str>,
    now_ms: i64,
    queue: Option<&Q>,
) -> Flow {
    let op = async {
        match parse::parse_events_body(body) {
            Ok(input) => render(svc.create_events(input, now_ms, queue).await, events_reply),
            Err(e) => (Err(e), vec![]),
        }
    };
    guarded(svc, idem::Scope::Events, body, key, op).await
}

/// `POST /v1/notifications/retractions`.
pub async fn post_retraction<H: HttpClient>(
    svc: &NotifyService<H>,
    body: &[u8],
    key: Option<&str>,
    now_ms: i64,
) -> Flow {
    let op = async {
        match parse::parse_retraction(body) {
            Ok(r) => render(svc.retract(r, now_ms).await, |o| retract_reply(*o)),
            Err(e) => (Err(e), vec![]),
        }
    };
    guarded(svc, idem::Scope::Retractions, body, key, op).await
}

/// `GET /v1/me/preferences` (and the admin form): the body and the read repair.
pub async fn get_preferences<H: HttpClient>(
    svc: &NotifyService<H>,
    owner: &str,
) -> (Result<Value, ApiError>, Vec<Deferred>) {
    match svc.preferences(owner).await {
        Ok(w) => (Ok(preferences_body(&w.value)), w.deferred),
        Err(e) => (Err(e.into()), vec![]),
    }
}

/// `PUT /v1/me/preferences`.
///
/// # Errors
/// `invalid_json` (400), validation (422), backend failures (502/503).
pub async fn put_preferences<H: HttpClient>(
    svc: &NotifyService<H>,
    owner: &str,
    body: &[u8],
    now_ms: i64,
) -> Result<Value, ApiError> {
    let p: Preferences = serde_json::from_slice(body)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("preferences: {e}")))?;
    Ok(preferences_body(
        &svc.set_preferences(owner, p, now_ms).await?,
    ))
}

/// `GET /v1/admin/dead-letters`: the oldest letters, `{items, count}`.
///
/// # Errors
/// `invalid_parameter` (400), backend failures.
pub async fn get_dead_letters<H: HttpClient>(
    svc: &NotifyService<H>,
    query: &str,
) -> Result<Value, ApiError> {
    let limit = parse::parse_dead_letter_limit(query)?;
    let items = svc.dead_letters(limit).await?;
    Ok(json!(DeadLetters {
        count: items.len(),
        items
    }))
}

/// `POST /v1/admin/dead-letters/replay`.
///
/// # Errors
/// 400 for a bad body, 503 `not_configured` without a queue, backend failures.
pub async fn post_replay<H: HttpClient, Q: EventQueue>(
    svc: &NotifyService<H>,
    body: &[u8],
    queue: Option<&Q>,
) -> Result<Value, ApiError> {
    let r = parse::parse_replay(body)?;
    let limit = r.limit.unwrap_or(egn_core::notify::MAX_PAGE);
    let done = svc
        .replay_dead_letters(r.ids.as_deref(), limit, queue)
        .await?;
    Ok(json!(ReplayResult::from(done)))
}

/// Runs `op` under an Idempotency-Key (Stripe semantics): one Redis call to claim before,
/// one deferred call to keep the result (or free the key after a 5xx). `body` is what a reused
/// key must match (the request body, or what stands for it). Without Redis the key is still
/// validated and the request runs unguarded (only the replay flag is lost).
pub(crate) async fn guarded<H: HttpClient>(
    svc: &NotifyService<H>,
    scope: idem::Scope<'_>,
    body: &[u8],
    key: Option<&str>,
    op: impl std::future::Future<Output = Flow>,
) -> Flow {
    if let Some(Err(e)) = key.map(idem::validate_key) {
        return (Err(e), vec![]);
    }
    let (Some(key), Some(redis)) = (key, svc.redis()) else {
        return op.await;
    };
    let hash = egn_core::ip::sha256_hex(body);
    let rkey = scope.redis_key(key);
    let script = Script::new(idem::CLAIM_LUA);
    let pending_ms = idem::PENDING_MS.to_string();
    let keep_ms = idem::KEEP_MS.to_string();
    let index = scope.index_key();
    let mut keys = vec![rkey.as_str()];
    keys.extend(index.as_deref());
    let claimed = redis
        .evalsha_or_eval(
            &script,
            &keys,
            &[&idem::pending(&hash), &pending_ms, &keep_ms],
        )
        .await
        .ok();
    if let Some(v) = &claimed {
        match idem::classify(v.as_str(), &hash) {
            Ok(idem::Claim::Replay { status, body }) => {
                let reply = Reply {
                    status,
                    body,
                    replayed: true,
                    changed: vec![],
                };
                return (Ok(reply), vec![]);
            }
            Ok(idem::Claim::Fresh) => {}
            Err(e) => return (Err(e), vec![]),
        }
    }
    let (result, mut deferred) = op.await;
    if claimed.is_some() {
        let keep = |status, body: &Value| Deferred::StoreResult {
            key: rkey.clone(),
            record: idem::finished(&hash, status, body),
            keep_ms: idem::KEEP_MS,
        };
        deferred.push(match &result {
            Ok(r) => keep(r.status, &r.body),
            Err(e) if e.status() < 500 => keep(e.status(), &e.body()),
            Err(_) => Deferred::FreeKey(rkey.clone()),
        });
    }
    (result, deferred)
}
