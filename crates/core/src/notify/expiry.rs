//! Live-badge sockets end with their tokens. Each socket carries the moment its token expires
//! (`exp` plus the verifier's leeway); the hub closes it then with [`CLOSE_CODE`] /
//! [`CLOSE_REASON`], and the client reconnects with a fresh token. One alarm serves both the
//! badge's trailing push and the earliest expiry, so hibernated sockets are woken only when one
//! of them is due. Pure: the Durable Object adapter (`edge::hub`) only wires this.

/// WebSocket close code for an expired token (4000–4999: application codes).
pub const CLOSE_CODE: u16 = 4001;
/// Its close reason.
pub const CLOSE_REASON: &str = "token_expired";

/// When (ms since the epoch) a socket opened with a token whose `exp` is `exp_s` must close.
#[must_use]
pub fn deadline_ms(exp_s: f64, leeway_s: u32) -> f64 {
    (exp_s + f64::from(leeway_s)) * 1000.0
}

/// What the hub does at `now`.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Indexes of the sockets to close (their token has expired).
    pub close: Vec<usize>,
    /// Whether the scheduled badge push is due now.
    pub push: bool,
    /// When the next alarm must fire: the earliest of the remaining deadlines and a push still
    /// to come; `None` = no alarm needed.
    pub next_alarm: Option<f64>,
}

/// Plans an alarm (or a push, which checks expiry first): `deadlines[i]` is socket `i`'s
/// deadline (`None`: no expiry known, e.g. a socket from before this rule), `push_at` a pending
/// trailing push.
#[must_use]
pub fn plan(deadlines: &[Option<f64>], push_at: Option<f64>, now: f64) -> Plan {
    let close: Vec<usize> = deadlines
        .iter()
        .enumerate()
        .filter(|(_, d)| d.is_some_and(|d| d <= now))
        .map(|(i, _)| i)
        .collect();
    let push = push_at.is_some_and(|t| t <= now);
    let next_alarm = deadlines
        .iter()
        .flatten()
        .copied()
        .filter(|d| *d > now)
        .chain(push_at.filter(|t| *t > now))
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.min(d))));
    Plan {
        close,
        push,
        next_alarm,
    }
}

/// Whether an alarm already set at `current` (if any) must move to `wanted`: only when it would
/// fire later than needed (an earlier alarm re-plans when it fires).
#[must_use]
pub fn reschedule(current: Option<f64>, wanted: f64) -> bool {
    current.is_none_or(|c| wanted < c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_adds_the_leeway() {
        assert_eq!(deadline_ms(1_000.0, 60), 1_060_000.0);
        assert_eq!(deadline_ms(1_000.0, 0), 1_000_000.0);
    }

    #[test]
    fn due_sockets_close_and_the_alarm_moves_to_the_next_event() {
        let d = [Some(5_000.0), None, Some(9_000.0), Some(4_000.0)];
        let p = plan(&d, None, 5_000.0);
        assert_eq!(p.close, [0, 3]);
        assert!(!p.push);
        assert_eq!(p.next_alarm, Some(9_000.0));
        // A pending push earlier than the next expiry comes first.
        let p = plan(&d, Some(6_000.0), 5_000.0);
        assert_eq!(p.next_alarm, Some(6_000.0));
        // A due push is pushed now and not rescheduled.
        let p = plan(&d, Some(5_000.0), 5_000.0);
        assert!(p.push);
        assert_eq!(p.next_alarm, Some(9_000.0));
        // Nothing left: no alarm (hibernated sockets are not woken for nothing).
        let p = plan(&[None, Some(1.0)], None, 2.0);
        assert_eq!((p.close, p.next_alarm), (vec![1], None));
        assert_eq!(plan(&[], None, 0.0).next_alarm, None);
    }

    #[test]
    fn only_an_earlier_wish_moves_an_alarm() {
        assert!(reschedule(None, 10.0));
        assert!(reschedule(Some(20.0), 10.0));
        assert!(!reschedule(Some(5.0), 10.0));
        assert!(!reschedule(Some(10.0), 10.0));
    }
}
