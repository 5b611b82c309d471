//! `Idempotency-Key` for the service POSTs and the user writes, Stripe-style: the same key with
//! the same body replays the first result (flagged), with a different body is refused (422),
//! and while the first request is still running answers 409. Only completed 2xx/4xx results are
//! kept; a 5xx frees the key so the retry runs. Records live in Redis; this module is the
//! platform-free part.

use super::error::ApiError;
use crate::ErrorCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Claims the key when absent (value = pending marker, short expiry) or returns what is there.
/// A user's record is also named in the user's index set (KEYS[2], kept `ARGV[3]` ms after its
/// newest record), so erasing the user deletes their records without scanning Redis.
pub const CLAIM_LUA: &str = r#"
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if KEYS[2] then
  redis.call('SADD', KEYS[2], KEYS[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
return false
"#;

/// How long a finished result is replayable (24 h, as Stripe).
pub const KEEP_MS: u64 = 24 * 3_600_000;
/// How long a claim blocks others if its holder dies before finishing.
pub const PENDING_MS: u64 = 30_000;

/// What is stored under a key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// SHA-256 of the request body.
    pub h: String,
    /// Response status; absent while pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s: Option<u16>,
    /// Response body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<Value>,
}

/// Outcome of a claim.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// First use: run the request, then store its result.
    Fresh,
    /// Finished before with the same body: answer this again.
    Replay {
        /// Original status.
        status: u16,
        /// Original body.
        body: Value,
    },
}

/// Checks a client's key: 1–255 visible ASCII characters.
///
/// # Errors
/// `invalid_idempotency_key` (400).
pub fn validate_key(key: &str) -> Result<(), ApiError> {
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::new(
            ErrorCode::InvalidIdempotencyKey,
            "Idempotency-Key must be 1-255 visible ASCII characters",
        ));
    }
    Ok(())
}

/// The key space of a record: one per route, and for the user writes one per user as well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    /// `POST /v1/notifications/events` (service).
    Events,
    /// `POST /v1/notifications/retractions` (service).
    Retractions,
    /// `POST /v1/notifications/mark` of the user with this `sub`.
    Mark(&'a str),
    /// `POST /v1/notifications/bulk` of the user with this `sub`.
    Bulk(&'a str),
    /// `DELETE /v1/notifications/items/{itemKey}` of the user with this `sub`.
    DeleteItem(&'a str),
}

impl Scope<'_> {
    /// The user's index set of records (`egn_core::notify::erasure::idempotency_index`), for
    /// the user scopes; the service routes' records name no user.
    #[must_use]
    pub fn index_key(self) -> Option<String> {
        match self {
            Scope::Events | Scope::Retractions => None,
            Scope::Mark(sub) | Scope::Bulk(sub) | Scope::DeleteItem(sub) => {
                Some(egn_core::notify::erasure::idempotency_index(sub))
            }
        }
    }

    /// The Redis key for a client key. Service keys keep their original form
    /// (`idem:{route}:{key}`, so records stored before user scopes existed stay valid); user
    /// keys live under `idem:user:`, which no service route is named, and carry the `sub`
    /// length-prefixed, so no (`sub`, key) pair can spell another's (`sub` may contain `:`).
    #[must_use]
    pub fn redis_key(self, key: &str) -> String {
        let user = |route: &str, sub: &str| format!("idem:user:{route}:{}:{sub}:{key}", sub.len());
        match self {
            Scope::Events => format!("idem:events:{key}"),
            Scope::Retractions => format!("idem:retractions:{key}"),
            Scope::Mark(sub) => user("mark", sub),
            Scope::Bulk(sub) => user("bulk", sub),
            Scope::DeleteItem(sub) => user("delete", sub),
        }
    }
}

/// Interprets the claim script's reply (`null` = claimed, else the stored record).
///
/// # Errors
/// `idempotency_key_reused` (422) for another body, `idempotency_in_flight` (409) while the
/// first request runs.
pub fn classify(existing: Option<&str>, body_hash: &str) -> Result<Claim, ApiError> {
    let Some(text) = existing else {
        return Ok(Claim::Fresh);
    };
    // An unreadable record is treated as foreign: refuse rather than run twice.
    let r: Record = serde_json::from_str(text).map_err(|_| {
        ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            "Idempotency-Key holds an unreadable record",
        )
    })?;
    if r.h != body_hash {
        return Err(ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            "Idempotency-Key was used with a different body",
        ));
    }
    match (r.s, r.b) {
        (Some(status), Some(body)) => Ok(Claim::Replay { status, body }),
        _ => Err(ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                ErrorCode::IdempotencyInFlight,
                "a request with this Idempotency-Key is in progress",
            )
        }),
    }
}

/// The pending marker written by the claim.
pub fn pending(body_hash: &str) -> String {
    serde_json::to_string(&Record {
        h: body_hash.into(),
        s: None,
        b: None,
    })
    .unwrap_or_default()
}

/// The finished record.
pub fn finished(body_hash: &str, status: u16, body: &Value) -> String {
    serde_json::to_string(&Record {
        h: body_hash.into(),
        s: Some(status),
        b: Some(body.clone()),
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashSet;

    #[test]
    fn stripe_semantics() {
        assert_eq!(classify(None, "h1").unwrap(), Claim::Fresh);
        assert_eq!(
            classify(Some(&pending("h1")), "h1").unwrap_err().status(),
            409
        );
        let done = finished("h1", 201, &json!({"status": "created"}));
        assert_eq!(
            classify(Some(&done), "h1").unwrap(),
            Claim::Replay {
                status: 201,
                body: json!({"status": "created"})
            }
        );
        assert_eq!(
            classify(Some(&done), "h2").unwrap_err().code,
            "idempotency_key_reused"
        );
        assert!(validate_key("abc-123").is_ok());
        assert!(
            validate_key("").is_err()
                && validate_key("a b").is_err()
                && validate_key(&"x".repeat(256)).is_err()
        );
    }

    #[test]
    fn keys_are_scoped_per_route_and_per_user() {
        // Two users with equal keys, a `sub` whose `:` could shift into the key, and a client
        // key that spells a user route: every pair lands on its own record.
        let subs = ["ana", "bo", "a:b", "a", ""];
        let keys = ["k", "b:k", "user:mark:3:ana:k", "1:a:k"];
        let mut seen = HashSet::new();
        let mut n = 0;
        for key in keys {
            for scope in [Scope::Events, Scope::Retractions] {
                let k = scope.redis_key(key);
                assert!(!k.starts_with("idem:user:"), "{k}");
                seen.insert(k);
                n += 1;
            }
            for sub in subs {
                for scope in [Scope::Mark(sub), Scope::Bulk(sub), Scope::DeleteItem(sub)] {
                    assert!(scope.redis_key(key).starts_with("idem:user:"));
                    seen.insert(scope.redis_key(key));
                    n += 1;
                }
            }
        }
        assert_eq!(seen.len(), n, "no two scopes share a record");
        // The service keys' form is unchanged (records stored by earlier versions still replay).
        assert_eq!(Scope::Events.redis_key("k-1"), "idem:events:k-1");
        assert_eq!(Scope::Mark("a:b").redis_key("c"), "idem:user:mark:3:a:b:c");
    }
}
