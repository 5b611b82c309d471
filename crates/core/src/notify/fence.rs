//! The erasure fence: owner → erased-at. An event created before an owner's erasure that lands
//! after it (a queue retry, a dead-letter replay, a late batch) must not recreate the inbox, so
//! every write path looks the fence up first and drops (and counts) the events behind it; an
//! event created after it starts a new inbox, as a user who signs up again expects.
//!
//! * **Where**: a document `{_id: "fence:<digest>", erasedAt, expireAt, dropped}` in the
//!   erasures collection is the truth (a TTL index removes it at `expireAt`); with Redis a key
//!   `ef:<digest>` (value = erased-at, same expiry) mirrors it, so the lookup on the create path
//!   is one Redis command (one `MGET` for a whole batch), not a Data API read. Without Redis the
//!   lookup is one Data API `find`. `<digest>` is 128 bits of SHA-256 of the owner: the fence
//!   does not keep the owner's id in clear.
//! * **How long**: [`super::NotifyConfig::erasure_fence_ms`], at least the longest an old event
//!   can still arrive: the queue's retention (its retries happen inside it) plus the dead-letter
//!   retention (a letter older than that is gone, so it cannot be replayed).
//! * **Behind** means created at or before the erasure's millisecond: an event of that very
//!   millisecond cannot be ordered against it, and dropping it is the side that keeps the promise.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{NotificationStore, NotifyError};
use crate::backend::{ejson, FindOptions, HttpClient, RedisRestClient};

/// 128 bits of SHA-256 of an owner id, in hex: how the fence and the erasure job name an owner.
#[must_use]
pub fn digest(owner: &str) -> String {
    crate::ip::hex(&Sha256::digest(owner.as_bytes())[..16])
}

/// The fence document's `_id`.
#[must_use]
pub fn doc_id(owner: &str) -> String {
    format!("fence:{}", digest(owner))
}

/// The Redis mirror's key.
#[must_use]
pub fn redis_key(owner: &str) -> String {
    format!("ef:{}", digest(owner))
}

/// Whether an event created at `created_ms` is behind the fence `erased_at`.
#[must_use]
pub fn behind(erased_at: Option<i64>, created_ms: i64) -> bool {
    erased_at.is_some_and(|at| created_ms <= at)
}

/// Raises an owner's fence to `erased_at_ms` (never lowers the document's) until
/// `erased_at_ms + erasure_fence_ms`: the document, then the mirror (2 calls with Redis).
///
/// # Errors
/// Backend failures (the erasure step is retried; both writes are idempotent).
pub async fn raise<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    owner: &str,
    erased_at_ms: i64,
) -> Result<(), NotifyError> {
    raise_named(
        store,
        redis,
        &doc_id(owner),
        &redis_key(owner),
        erased_at_ms,
    )
    .await
}

/// [`raise`] for any fence, by its document id and Redis key (the sender's: `notify::senders`).
pub(crate) async fn raise_named<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    doc_id: &str,
    redis_key: &str,
    erased_at_ms: i64,
) -> Result<(), NotifyError> {
    let cfg = store.config();
    let until = erased_at_ms + cfg.erasure_fence_ms;
    store
        .api()
        .update_one(
            &cfg.collections().erasures,
            &json!({ "_id": doc_id }),
            &json!({ "$max": { "erasedAt": erased_at_ms, "expireAt": ejson::date(until) } }),
            true,
        )
        .await?;
    if let Some(r) = redis {
        let (at, until) = (erased_at_ms.to_string(), until.to_string());
        r.command(&["SET", redis_key, &at, "PXAT", &until]).await?;
    }
    Ok(())
}

/// Each owner's fence (erased-at, ms) or `None`, in order: one Redis `MGET`, or without Redis
/// one Data API `find`.
///
/// # Errors
/// Backend failures (the caller fails the write: it is retried, never written unchecked).
pub async fn lookup<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    owners: &[&str],
    now_ms: i64,
) -> Result<Vec<Option<i64>>, NotifyError> {
    let fences: Vec<(String, String)> = owners.iter().map(|o| (doc_id(o), redis_key(o))).collect();
    lookup_named(store, redis, &fences, now_ms).await
}

/// [`lookup`] for any fences, by (document id, Redis key) (the sender's: `notify::senders`).
pub(crate) async fn lookup_named<H: HttpClient>(
    store: &NotificationStore<H>,
    redis: Option<&RedisRestClient<H>>,
    fences: &[(String, String)],
    now_ms: i64,
) -> Result<Vec<Option<i64>>, NotifyError> {
    if fences.is_empty() {
        return Ok(vec![]);
    }
    if let Some(r) = redis {
        let mut cmd = vec!["MGET".to_owned()];
        cmd.extend(fences.iter().map(|(_, key)| key.clone()));
        let reply = r.command(&cmd).await?;
        let values = reply.as_array().cloned().unwrap_or_default();
        return Ok((0..fences.len())
            .map(|i| {
                values
                    .get(i)
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse().ok())
            })
            .collect());
    }
    let ids: Vec<String> = fences.iter().map(|(id, _)| id.clone()).collect();
    lookup_docs(store, &ids, now_ms).await
}

/// Without Redis: each fence document's erased-at (by `_id`) or `None`, in order, in one `find`.
pub(crate) async fn lookup_docs<H: HttpClient>(
    store: &NotificationStore<H>,
    ids: &[String],
    now_ms: i64,
) -> Result<Vec<Option<i64>>, NotifyError> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let docs = store
        .api()
        .find(
            &store.config().collections().erasures,
            &json!({ "_id": { "$in": ids }, "expireAt": { "$gt": ejson::date(now_ms) } }),
            &FindOptions {
                projection: Some(json!({ "erasedAt": 1 })),
                ..FindOptions::default()
            },
        )
        .await?;
    Ok(ids
        .iter()
        .map(|id| {
            docs.iter()
                .find(|d| d.get("_id").and_then(Value::as_str) == Some(id))
                .and_then(|d| d.get("erasedAt").and_then(Value::as_i64))
        })
        .collect())
}

/// Counts `n` events dropped behind an owner's fence (on its document: rare, one call).
///
/// # Errors
/// Backend failures.
pub async fn count_dropped<H: HttpClient>(
    store: &NotificationStore<H>,
    owner: &str,
    n: u64,
) -> Result<(), NotifyError> {
    count_dropped_named(store, &doc_id(owner), n).await
}

/// [`count_dropped`] by the fence document's id.
pub(crate) async fn count_dropped_named<H: HttpClient>(
    store: &NotificationStore<H>,
    doc_id: &str,
    n: u64,
) -> Result<(), NotifyError> {
    store
        .api()
        .update_one(
            &store.config().collections().erasures,
            &json!({ "_id": doc_id }),
            &json!({ "$inc": { "dropped": n } }),
            false,
        )
        .await?;
    Ok(())
}

/// How many late events an owner's fence has dropped (0 without a fence).
///
/// # Errors
/// Backend failures.
pub async fn dropped<H: HttpClient>(
    store: &NotificationStore<H>,
    owner_digest: &str,
) -> Result<u64, NotifyError> {
    dropped_named(store, &format!("fence:{owner_digest}")).await
}

/// [`dropped`] by the fence document's id.
pub(crate) async fn dropped_named<H: HttpClient>(
    store: &NotificationStore<H>,
    doc_id: &str,
) -> Result<u64, NotifyError> {
    let doc = store
        .api()
        .find_one(
            &store.config().collections().erasures,
            &json!({ "_id": doc_id }),
            None,
            None,
        )
        .await?;
    Ok(doc
        .and_then(|d| d.get("dropped").and_then(Value::as_u64))
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_names_no_owner_in_clear_and_keeps_its_millisecond() {
        assert_eq!(digest("ana").len(), 32);
        assert!(!doc_id("ana").contains("ana") && !redis_key("ana").contains("ana"));
        assert_ne!(digest("ana"), digest("anb"));
        assert!(behind(Some(100), 99) && behind(Some(100), 100));
        assert!(!behind(Some(100), 101) && !behind(None, 0));
    }
}
