//! The three Redis round trips: reserve before the write, then commit or release.

use std::sync::LazyLock;

use serde_json::Value;

use super::Slot;
use crate::backend::{BackendError, HttpClient, RedisRestClient, Script};

static RESERVE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("reserve.lua")));
static COMMIT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("commit.lua")));
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("release.lua")));
static RESERVE_MANY: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("reserve_many.lua")));
static SETTLE_MANY: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("settle_many.lua")));

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

/// [`reserve_unless_muted`] for a whole batch in ONE `EVALSHA`: one [`Reservation`] per slot,
/// in order. `mutes[i]` is the muted-set check of slot `i` (`None`: not checked).
///
/// # Errors
/// Backend failures; a malformed reply is [`BackendError::Decode`].
pub async fn reserve_many<H: HttpClient>(
    redis: &RedisRestClient<H>,
    slots: &[Slot],
    mutes: &[Option<MuteCheck<'_>>],
    lease_ms: u64,
) -> Result<Vec<Reservation>, BackendError> {
    if slots.is_empty() {
        return Ok(vec![]);
    }
    let mut keys: Vec<&str> = slots.iter().map(|s| s.key.as_str()).collect();
    let mut args: Vec<String> = vec![lease_ms.max(1).to_string(), slots.len().to_string()];
    for (i, slot) in slots.iter().enumerate() {
        args.push(slot.field.clone());
        args.push(slot.expire_at_ms.to_string());
        match mutes.get(i).and_then(Option::as_ref) {
            Some(m) => {
                // Each muted set is passed once, however many events of the batch refer to it.
                let at = match keys[slots.len()..].iter().position(|k| *k == m.key) {
                    Some(p) => slots.len() + p,
                    None => {
                        keys.push(m.key);
                        keys.len() - 1
                    }
                };
                args.push((at + 1).to_string());
                args.push(m.members.len().to_string());
                args.extend(m.members.iter().cloned());
            }
            None => {
                args.push("0".into());
                args.push("0".into());
            }
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let reply = redis.evalsha_or_eval(&RESERVE_MANY, &keys, &args).await?;
    let flat = reply
        .as_array()
        .filter(|a| a.len() == 2 * slots.len())
        .ok_or_else(|| BackendError::Decode(format!("dedup reserve_many: reply {reply}")))?;
    flat.chunks(2)
        .map(|pair| parse_reserve_reply(&Value::Array(pair.to_vec())))
        .collect()
}

/// What to do with one reservation after a batch's writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle<'a> {
    /// The write succeeded: mark the id done.
    Commit(&'a Slot),
    /// The write failed: free our lease (token from the reservation) so the retry proceeds.
    Release(&'a Slot, &'a str),
}

/// Commits and releases a batch's reservations in ONE `EVALSHA`; returns how many changed.
///
/// # Errors
/// Backend failures.
pub async fn settle_many<H: HttpClient>(
    redis: &RedisRestClient<H>,
    entries: &[Settle<'_>],
) -> Result<u64, BackendError> {
    if entries.is_empty() {
        return Ok(0);
    }
    let mut keys = Vec::with_capacity(entries.len());
    let mut args = vec![entries.len().to_string()];
    for e in entries {
        let (op, slot, token) = match e {
            Settle::Commit(s) => ("c", *s, ""),
            Settle::Release(s, t) => ("r", *s, *t),
        };
        keys.push(slot.key.as_str());
        args.extend([op.to_owned(), slot.field.clone(), token.to_owned()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let reply = redis.evalsha_or_eval(&SETTLE_MANY, &keys, &args).await?;
    Ok(reply.as_u64().unwrap_or(0))
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
