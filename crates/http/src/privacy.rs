//! The privacy routes over HTTP: erase an owner (`DELETE /v1/admin/owners/{owner}`), an
//! erasure's progress, and the exports. The flows are the core's (`egn_core::notify::privacy`,
//! `erasure`); this parses the query, picks the status and hands an unfinished job to the queue.

use super::{ApiError, ErrorCode};
use egn_core::backend::HttpClient;
use egn_core::notify::batch::EventQueue;
use egn_core::notify::erasure::{BadgeHubs, JobState, DEFAULT_BUDGET};
use egn_core::notify::privacy::EXPORT_PAGE_MAX;
use egn_core::notify::NotifyService;
use serde_json::{json, Value};

/// Parses an export's `?cursor=&limit=` (`limit` 1..=200, default 200).
///
/// # Errors
/// `invalid_parameter` (400).
pub fn parse_export_query(query: &str) -> Result<(Option<String>, u32), ApiError> {
    let cursor = super::query::param(query, "cursor").filter(|c| !c.is_empty());
    let limit = match super::query::param(query, "limit") {
        None => EXPORT_PAGE_MAX,
        Some(v) => v
            .parse()
            .ok()
            .filter(|n| (1..=EXPORT_PAGE_MAX).contains(n))
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidParameter,
                    format!("limit must be 1..={EXPORT_PAGE_MAX}"),
                )
            })?,
    };
    Ok((cursor, limit))
}

#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
/// `DELETE /v1/admin/owners/{owner}`: runs the erasure as far as one request's budget goes;
/// `200` when done, `202` while it runs (continued by the queue when one is bound, else by the
/// next `DELETE`). Returns the status and the job's view.
///
/// # Errors
/// Validation (422), backend and hub failures (502/503): progress so far is kept.
pub async fn delete_owner<H: HttpClient, B: BadgeHubs, Q: EventQueue>(
    svc: &NotifyService<H>,
    owner: &str,
    hubs: &B,
    queue: Option<&Q>,
    now_ms: i64,
) -> Result<(u16, Value), ApiError> {
    // One subrequest of the budget is the continuation's.
    let view = svc
        .erase_owner(owner, hubs, DEFAULT_BUDGET - 1, now_ms)
        .await?;
    // A lost continuation leaves the job running: the next DELETE (or GET, to see) finds it.
    let _ = svc.schedule_continuation(&view, queue, now_ms).await;
    let status = if view.state == JobState::Done {
        200
    } else {
        202
    };
    Ok((status, json!(view)))
}

/// `POST /v1/admin/senders/{senderId}/erasure`: runs the sender's erasure as far as one
/// request's budget goes; `200` when done, `202` while it runs (continued by the queue when one
/// is bound, else by the next `POST`).
///
/// # Errors
/// Validation (422), backend failures (502/503): progress so far is kept.
pub async fn erase_sender<H: HttpClient, Q: EventQueue>(
    svc: &NotifyService<H>,
    sender_id: &str,
    queue: Option<&Q>,
    now_ms: i64,
) -> Result<(u16, Value), ApiError> {
    let view = svc
        .erase_sender(sender_id, DEFAULT_BUDGET - 1, now_ms)
        .await?;
    let _ = svc.schedule_continuation(&view, queue, now_ms).await;
    let status = if view.state == JobState::Done {
        200
    } else {
        202
    };
    Ok((status, json!(view)))
}

/// `GET /v1/admin/erasures/{id}`.
///
/// # Errors
/// `erasure_not_found` (404), backend failures.
pub async fn get_erasure<H: HttpClient>(
    svc: &NotifyService<H>,
    id: &str,
) -> Result<Value, ApiError> {
    Ok(json!(svc.erasure(id).await?))
}

/// `GET /v1/admin/owners/{owner}/export` and `GET /v1/notifications/export`.
///
/// # Errors
/// `invalid_parameter` (400), validation (422), backend failures.
pub async fn get_export<H: HttpClient>(
    svc: &NotifyService<H>,
    owner: &str,
    query: &str,
) -> Result<Value, ApiError> {
    let (cursor, limit) = parse_export_query(query)?;
    Ok(json!(svc.export(owner, cursor.as_deref(), limit).await?))
}

/// The queue's continuation of a job (a message `{"erasure": id}`): one more run, then the
/// queue again while it is unfinished.
///
/// # Errors
/// Backend, hub or queue failures: the message is retried.
pub async fn resume_erasure<H: HttpClient, B: BadgeHubs, Q: EventQueue>(
    svc: &NotifyService<H>,
    id: &str,
    hubs: &B,
    queue: Option<&Q>,
    now_ms: i64,
) -> Result<(), ApiError> {
    let budget = DEFAULT_BUDGET - 1;
    if let Some(view) = svc.continue_erasure(id, hubs, budget, now_ms).await? {
        svc.schedule_continuation(&view, queue, now_ms).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_queries_are_checked() {
        assert_eq!(parse_export_query("").unwrap(), (None, EXPORT_PAGE_MAX));
        assert_eq!(
            parse_export_query("cursor=abc&limit=5").unwrap(),
            (Some("abc".into()), 5)
        );
        for bad in ["limit=0", "limit=201", "limit=x"] {
            assert_eq!(
                parse_export_query(bad).unwrap_err().code,
                ErrorCode::InvalidParameter
            );
        }
    }
}
