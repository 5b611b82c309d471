//! The three Redis round trips: reserve before the write, then commit or release.

use std::sync::LazyLock;

use serde_json::Value;

use super::Slot;
use crate::backend::{BackendError, HttpClient, RedisRestClient, Script};

static RESERVE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("reserve.lua")));
static COMMIT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("commit.lua")));
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("release.lua")));

/// Outcome of [`reserve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// First sighting (or a dead lease taken over): process it, then [`commit`] or [`release`].
    Reserved {
        /// Lease token; pass it to [`release`].
        token: String,
    },
    /// Already processed: skip.
    Duplicate,
    /// Another worker holds a live lease: answer "retry later" rather than double-process.
    InFlight,
    /// The recipient muted this kind of event (only from [`reserve_unless_muted`]).
    Muted,
}

/// The recipient's muted set and the members that would mute this event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MuteCheck<'a> {
    /// Redis key of the owner's muted set.
    pub key: &'a str,
    /// Members that mute the event (its category and type).
    pub members: &'a [String],
}

/// Reserves `slot` for `lease_ms` in one EVALSHA round trip.
///
/// # Errors
/// Backend failures; a malformed script reply is [`BackendError::Decode`].
pub async fn reserve<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slot: &Slot,
    lease_ms: u64,
) -> Result<Reservation, BackendError> {
    let lease = lease_ms.max(1).to_string();
    let at = slot.expire_at_ms.to_string();
    let reply = redis
        .evalsha_or_eval(&RESERVE, &[&slot.key], &[&slot.field, &lease, &at])
        .await?;
    parse_reserve_reply(&reply)
}

/// [`reserve`], first checking the recipient's muted set in the same EVALSHA round trip.
///
/// # Errors
/// Backend failures; a malformed script reply is [`BackendError::Decode`].
pub async fn reserve_unless_muted<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slot: &Slot,
    lease_ms: u64,
    mute: &MuteCheck<'_>,
) -> Result<Reservation, BackendError> {
    let lease = lease_ms.max(1).to_string();
    let at = slot.expire_at_ms.to_string();
    let mut args: Vec<&str> = vec![&slot.field, &lease, &at];
    args.extend(mute.members.iter().map(String::as_str));
    let reply = redis
        .evalsha_or_eval(&RESERVE, &[slot.key.as_str(), mute.key], &args)
        .await?;
    parse_reserve_reply(&reply)
}

/// Marks the id done (after the write succeeded). `Ok(false)`: the reservation had vanished.
///
/// # Errors
/// Backend failures.
pub async fn commit<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slot: &Slot,
) -> Result<bool, BackendError> {
    let reply = redis
        .evalsha_or_eval(&COMMIT, &[&slot.key], &[&slot.field])
        .await?;
    Ok(reply.as_i64() == Some(1))
}

/// Drops our reservation (after the write failed) so a retry is not seen as a duplicate.
///
/// # Errors
/// Backend failures.
pub async fn release<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slot: &Slot,
    token: &str,
) -> Result<bool, BackendError> {
    let reply = redis
        .evalsha_or_eval(&RELEASE, &[&slot.key], &[&slot.field, token])
        .await?;
    Ok(reply.as_i64() == Some(1))
}

/// Decodes the reserve script's `{status, token}` reply.
///
/// # Errors
/// [`BackendError::Decode`] for anything else.
pub fn parse_reserve_reply(reply: &Value) -> Result<Reservation, BackendError> {
    let status = reply.get(0).and_then(Value::as_str);
    let token = reply.get(1).and_then(Value::as_str).unwrap_or_default();
    match status {
        Some("reserved") if !token.is_empty() => Ok(Reservation::Reserved {
            token: token.to_owned(),
        }),
        Some("duplicate") => Ok(Reservation::Duplicate),
        Some("in_flight") => Ok(Reservation::InFlight),
        Some("muted") => Ok(Reservation::Muted),
        _ => Err(BackendError::Decode(format!(
            "dedup reserve: unexpected reply {reply}"
        ))),
    }
}

/// Lua sources, for tools that load them over RESP (the memory benchmark).
#[must_use]
pub fn scripts() -> [&'static Script; 3] {
    [&RESERVE, &COMMIT, &RELEASE]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reserve_replies_decode() {
        assert_eq!(
            parse_reserve_reply(&json!(["reserved", "17"])).unwrap(),
            Reservation::Reserved { token: "17".into() }
        );
        assert_eq!(
            parse_reserve_reply(&json!(["duplicate", ""])).unwrap(),
            Reservation::Duplicate
        );
        assert_eq!(
            parse_reserve_reply(&json!(["in_flight", "9"])).unwrap(),
            Reservation::InFlight
        );
        assert!(parse_reserve_reply(&json!("OK")).is_err());
    }
}
