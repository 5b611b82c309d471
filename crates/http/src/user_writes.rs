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

/// The user write routes (implemented for [`NotifyService`]); `owner` is the token's `sub`.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait UserWrites {
    /// `POST /v1/notifications/mark`.
    async fn post_mark(
        &self,
        owner: &str,
        body: &[u8],
        idempotency_key: Option<&str>,
        now_ms: i64,
    ) -> Flow;
    /// `POST /v1/notifications/bulk`.
    async fn post_bulk(
        &self,
        owner: &str,
        body: &[u8],
        idempotency_key: Option<&str>,
        now_ms: i64,
    ) -> Flow;
    /// `DELETE /v1/notifications/items/{itemKey}` (`item_key` percent-decoded).
    async fn delete_item(
        &self,
        owner: &str,
        item_key: &str,
        idempotency_key: Option<&str>,
        now_ms: i64,
    ) -> Flow;
}

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

impl<H: HttpClient> UserWrites for NotifyService<H> {
    async fn post_mark(&self, owner: &str, body: &[u8], key: Option<&str>, now_ms: i64) -> Flow {
        let op = async {
            let (m, flag) = match parse::parse_mark(body) {
                Ok(p) => p,
                Err(e) => return (Err(e), vec![]),
            };
            let target = m.item_key.as_deref().map_or(Target::All, Target::Item);
            let r = self.store().mark(owner, target, flag, m.value, now_ms);
            updated(owner, r.await)
        };
        guarded(self, idem::Scope::Mark(owner), body, key, op).await
    }

    async fn post_bulk(&self, owner: &str, body: &[u8], key: Option<&str>, now_ms: i64) -> Flow {
        let op = async {
            let (action, category) = match parse::parse_bulk(body) {
                Ok(p) => p,
                Err(e) => return (Err(e), vec![]),
            };
            let r = self
                .store()
                .bulk(owner, action, category.as_deref(), now_ms);
            updated(owner, r.await)
        };
        guarded(self, idem::Scope::Bulk(owner), body, key, op).await
    }

    async fn delete_item(
        &self,
        owner: &str,
        item_key: &str,
        key: Option<&str>,
        now_ms: i64,
    ) -> Flow {
        let op = async {
            match self.store().delete(owner, item_key, now_ms).await {
                Ok(true) => ok(owner, json!(Deleted { deleted: true }), true),
                Ok(false) => (Err(ApiError::from(NotifyError::ItemNotFound)), vec![]),
                Err(e) => (Err(e.into()), vec![]),
            }
        };
        // No body: the item key is what a reused key must match.
        guarded(
            self,
            idem::Scope::DeleteItem(owner),
            item_key.as_bytes(),
            key,
            op,
        )
        .await
    }
}
