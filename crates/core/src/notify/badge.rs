//! The live badge: what a connected client is pushed, and when (platform-free; the Durable
//! Object in `edge::hub` holds the sockets and calls these).
//!
//! The socket is a hint channel: the list and the change feed stay the truth. A push says
//! "this is your badge now, and the feed position it goes with"; a missed push is repaired by
//! the next connect, which always starts with a fresh badge.

use serde::Serialize;
use serde_json::Value;
use std::cell::Cell;

use super::Counts;

/// WebSocket subprotocol the server speaks (answered in `Sec-WebSocket-Protocol`).
pub const PROTOCOL: &str = "inbox.v1";
/// Prefix of the subprotocol entry that carries the user's token (browsers cannot set headers
/// on a WebSocket): `new WebSocket(url, ["inbox.v1", "auth." + jwt])`.
pub const TOKEN_PREFIX: &str = "auth.";
/// At most one push per this window; changes inside it are coalesced into the next push.
pub const COALESCE_MS: f64 = 250.0;
/// Reconnect advice sent with every push: exponential backoff from `base` to `max`, full jitter.
pub const RECONNECT: (u32, u32) = (1_000, 30_000);

/// The token in a `Sec-WebSocket-Protocol` request header, if one of its entries carries it.
#[must_use]
pub fn token_from_protocols(header: &str) -> Option<&str> {
    header
        .split(',')
        .map(str::trim)
        .find_map(|p| p.strip_prefix(TOKEN_PREFIX))
        .filter(|t| !t.is_empty())
}

/// True when the client offered our protocol (so the server can answer with it).
#[must_use]
pub fn offers_protocol(header: &str) -> bool {
    header.split(',').map(str::trim).any(|p| p == PROTOCOL)
}

/// What the stream pushes on connect and after each change to the inbox (the OpenAPI component
/// `BadgeMessage`: the SDKs' badge types are checked against it, as every body is).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct BadgeMessage {
    /// Always `badge`; a client ignores a message of another type (the protocol may grow).
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// Items not read.
    pub unread: u64,
    /// Items not seen: the badge.
    pub unseen: u64,
    /// The change-feed position these counts go with (compare before applying: pushes may
    /// arrive after a newer page).
    pub sync: String,
    /// How to reconnect when the socket drops.
    pub reconnect: ReconnectHint,
}

/// The type of a pushed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(inline))]
#[serde(rename_all = "lowercase")]
pub enum MessageType {
    // No doc comment on the variant: schemars would render a `oneOf` of one instead of `enum`.
    Badge,
}

/// Reconnect advice sent with every push: exponential backoff from `baseMs` to `maxMs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReconnectHint {
    /// The first delay, ms.
    pub base_ms: u32,
    /// The longest delay, ms.
    pub max_ms: u32,
    /// How the delay is randomised.
    pub jitter: Jitter,
}

/// How a reconnect delay is randomised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(inline))]
#[serde(rename_all = "lowercase")]
pub enum Jitter {
    // A delay drawn uniformly from zero to the backoff (no doc comment: see `MessageType`).
    Full,
}

impl BadgeMessage {
    /// The badge for `counts` at feed position `sync`, with the server's reconnect advice.
    #[must_use]
    pub fn new(counts: Counts, sync: &str) -> Self {
        Self {
            kind: MessageType::Badge,
            unread: counts.unread,
            unseen: counts.unseen,
            sync: sync.to_owned(),
            reconnect: ReconnectHint {
                base_ms: RECONNECT.0,
                max_ms: RECONNECT.1,
                jitter: Jitter::Full,
            },
        }
    }
}

/// The pushed message as JSON.
#[must_use]
pub fn message(counts: Counts, sync: &str) -> Value {
    serde_json::to_value(BadgeMessage::new(counts, sync))
        .expect("a badge is plain fields: its encoding cannot fail")
}

/// What to do when told the inbox changed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Poke {
    /// Nobody is listening: nothing to compute.
    Idle,
    /// Push now (leading edge).
    PushNow,
    /// A push went out less than a window ago: push when the window ends (trailing edge), so a
    /// burst costs one push per window and the last change is never left out.
    PushIn(f64),
    /// A trailing push is already scheduled; it will include this change.
    AlreadyScheduled,
}

/// Leading- and trailing-edge throttle: `last_push` is when the last push went out (if this
/// instance remembers one), `scheduled` whether an alarm is pending.
#[must_use]
pub fn on_poke(sockets: usize, now: f64, last_push: Option<f64>, scheduled: bool) -> Poke {
    if sockets == 0 {
        return Poke::Idle;
    }
    if scheduled {
        return Poke::AlreadyScheduled;
    }
    match last_push {
        Some(t) if now - t < COALESCE_MS => Poke::PushIn((t + COALESCE_MS - now).max(1.0)),
        _ => Poke::PushNow,
    }
}

/// Orders badge reads that may finish out of order: each read takes a ticket when it starts,
/// and may be sent only if no read that started later has been sent already. The Data API can
/// answer two reads out of order (CI once saw a socket get 23 after 30 in the burst test); with
/// this, the last badge a socket gets is never older than one it had. Single-threaded, as a
/// Durable Object is.
#[derive(Debug, Default)]
pub struct BadgeSequencer {
    started: Cell<u64>,
    sent: Cell<u64>,
}

/// The start-order number of one badge read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket(u64);

impl BadgeSequencer {
    /// A ticket for a read that starts now.
    #[must_use]
    pub fn start(&self) -> Ticket {
        let t = self.started.get() + 1;
        self.started.set(t);
        Ticket(t)
    }

    /// Whether the read behind `t`, just finished, may be sent; if so it is recorded as sent.
    /// False when a read that started after it has been sent already (its answer is stale).
    #[must_use]
    pub fn admit(&self, t: Ticket) -> bool {
        if self.sent.get() > t.0 {
            return false;
        }
        self.sent.set(t.0);
        true
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_read_that_finishes_after_a_later_one_was_sent_is_dropped() {
        let s = BadgeSequencer::default();
        let (slow, fast) = (s.start(), s.start());
        assert!(s.admit(fast), "the later read answered first: sent");
        assert!(
            !s.admit(slow),
            "the earlier read's answer is older than what was sent"
        );
        assert!(
            s.admit(s.start()),
            "a read started afterwards goes out again"
        );
    }

    #[test]
    fn reads_that_finish_in_start_order_are_all_sent() {
        let s = BadgeSequencer::default();
        let (a, b) = (s.start(), s.start());
        assert!(s.admit(a));
        assert!(s.admit(b));
    }

    use super::*;

    #[test]
    fn tokens_come_from_the_protocol_list() {
        assert_eq!(
            token_from_protocols("inbox.v1, auth.aaa.bbb.ccc"),
            Some("aaa.bbb.ccc")
        );
        assert_eq!(token_from_protocols("inbox.v1"), None);
        assert_eq!(token_from_protocols("auth."), None);
        assert!(offers_protocol("auth.x, inbox.v1"));
        assert!(!offers_protocol("inbox.v2"));
    }

    #[test]
    fn bursts_cost_one_push_per_window_and_keep_the_last_change() {
        assert_eq!(on_poke(0, 0.0, None, false), Poke::Idle);
        assert_eq!(on_poke(2, 1000.0, None, false), Poke::PushNow);
        assert_eq!(on_poke(2, 1000.0, Some(900.0), false), Poke::PushIn(150.0));
        assert_eq!(
            on_poke(2, 1000.0, Some(900.0), true),
            Poke::AlreadyScheduled
        );
        assert_eq!(on_poke(1, 1000.0, Some(700.0), false), Poke::PushNow);
    }

    #[test]
    fn the_message_keeps_its_wire_shape_and_order() {
        let m = message(
            Counts {
                unread: 3,
                unseen: 1,
            },
            "s",
        );
        assert_eq!(
            m.to_string(),
            r#"{"type":"badge","unread":3,"unseen":1,"sync":"s","reconnect":{"baseMs":1000,"maxMs":30000,"jitter":"full"}}"#
        );
    }
}
