//! The user's writes over HTTP (`mark`, `bulk`, `DELETE` an item): parse, run under the
//! Idempotency-Key guard in the user's own key space, render. A phone resends a write whose
//! answer it never saw; the key makes the resend answer what the first attempt answered (a
//! resent delete gets its first 200, not a 404), once per user: the record's key holds the
//! token's `sub` (see [`idem::Scope`]), so two users' equal keys never meet.
//!
//! A write aimed at one item the owner does not have answers 404 `item_not_found`, so a device
//! still showing it learns at once that it must reconcile.

use super::idempotency as idem;
use super::notify as parse;
use super::notify_bodies::{Deleted, Updated};
use super::notify_routes::{guarded, Flow, Reply};
use super::ApiError;
use egn_core::backend::HttpClient;
use egn_core::notify::{NotifyError, NotifyService, Target};
use serde_json::{json, Value};

/// A 200 whose badge moved when `changed`.
fn ok(owner: &str, body: Value, changed: bool) -> Flow {
    let reply = Reply {
        status: 200,
        body,
        replayed: false,
        changed: if changed {
            vec![owner.to_owned()]
        } else {
            vec![]
        },
    };
    (Ok(reply), vec![])
}

fn updated(owner: &str, r: Result<u64, NotifyError>) -> Flow {
    match r {
        Ok(n) => ok(owner, json!(Updated { updated: n }), n > 0),
        Err(e) => (Err(e.into()), vec![]),
    }
}

/// `POST /v1/notifications/mark`.
pub async fn post_mark<H: HttpClient>(
    svc: &NotifyService<H>,
    owner: &str,
    body: &[u8],
    key: Option<&str>,
    now_ms: i64,
) -> Flow {
    let op = async {
        let (m, flag) = match parse::parse_mark(body) {
            Ok(p) => p,
            Err(e) => return (Err(e), vec![]),
        };
        let target = m.item_key.as_deref().map_or(Target::All, Target::Item);
        let r = svc.store().mark(owner, target, flag, m.value, now_ms);
        updated(owner, r.await)
    };
    guarded(svc, idem::Scope::Mark(owner), body, key, op).await
}

/// `POST /v1/notifications/bulk`.
pub async fn post_bulk<H: HttpClient>(
    svc: &NotifyService<H>,
    owner: &str,
    body: &[u8],
    key: Option<&str>,
    now_ms: i64,
) -> Flow {
    let op = async {
        let (action, category) = match parse::parse_bulk(body) {
            Ok(p) => p,
            Err(e) => return (Err(e), vec![]),
        };
        let r = svc.store().bulk(owner, action, category.as_deref(), now_ms);
        updated(owner, r.await)
    };
    guarded(svc, idem::Scope::Bulk(owner), body, key, op).await
}

/// `DELETE /v1/notifications/items/{itemKey}` (`item_key` percent-decoded).
pub async fn delete_item<H: HttpClient>(
    svc: &NotifyService<H>,
    owner: &str,
    item_key: &str,
    key: Option<&str>,
    now_ms: i64,
) -> Flow {
    let op = async {
        match svc.store().delete(owner, item_key, now_ms).await {
            Ok(true) => ok(owner, json!(Deleted { deleted: true }), true),
            Ok(false) => (Err(ApiError::from(NotifyError::ItemNotFound)), vec![]),
            Err(e) => (Err(e.into()), vec![]),
        }
    };
    // No body: the item key is what a reused key must match.
    guarded(
        svc,
        idem::Scope::DeleteItem(owner),
        item_key.as_bytes(),
        key,
        op,
    )
    .await
}
