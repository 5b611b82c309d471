//! What the queue consumer does with each delivered message, platform-free: acknowledge it, or
//! deliver it again after a backoff. The worker's consumer (`src/edge/queue.rs`) implements
//! [`Delivered`] over the runtime's `Message` and reads the batch; what to write is
//! [`super::batch`]'s, and these rules settle the messages afterwards.

use super::batch::{retry_delay_seconds, Backoff, ConsumeReport, Disposition};
use serde_json::{json, Value};

/// A queue whose name ends so is a dead-letter queue: its messages are kept, not written.
pub const DEAD_LETTER_SUFFIX: &str = "-dlq";

/// The backoff of a message nothing could be done with yet (no valid configuration, a failed
/// erasure continuation): its own, not `QUEUE_RETRY_*`, which may be what does not parse.
pub const UNHANDLED: Backoff = Backoff { base: 2, cap: 60 };

/// One delivered message.
pub trait Delivered {
    /// Deliveries so far, this one included (≥ 1).
    fn attempts(&self) -> u32;
    /// Done with it.
    fn ack(&self);
    /// Deliver it again after `delay_seconds`.
    fn retry(&self, delay_seconds: u32);
}

/// Whether `queue` is a dead-letter queue.
#[must_use]
pub fn is_dead_letter_queue(queue: &str) -> bool {
    queue.ends_with(DEAD_LETTER_SUFFIX)
}

/// Delivers `m` again after `backoff`'s delay for the deliveries it had.
pub fn retry_later(m: &impl Delivered, backoff: Backoff) {
    m.retry(retry_delay_seconds(m.attempts(), backoff.base, backoff.cap));
}

/// Nothing can be written (the configuration does not parse): every message goes back to the
/// queue, which redelivers it and, past its retries, dead-letters it.
pub fn retry_all(msgs: &[impl Delivered]) {
    for m in msgs {
        retry_later(m, UNHANDLED);
    }
}

/// Dead letters after storing: a kept one is acknowledged, one that was not is delivered again.
/// Returns how many were kept.
pub fn settle_dead_letters(msgs: &[impl Delivered], kept: &[bool], backoff: Backoff) -> usize {
    for (m, ok) in msgs.iter().zip(kept) {
        if *ok {
            m.ack();
        } else {
            retry_later(m, backoff);
        }
    }
    kept.iter().filter(|k| **k).count()
}

/// The consumer's dispositions, one per message. Returns how many were retried.
pub fn settle(msgs: &[impl Delivered], dispositions: &[Disposition]) -> usize {
    let mut retried = 0;
    for (m, d) in msgs.iter().zip(dispositions) {
        match d {
            Disposition::Ack => m.ack(),
            Disposition::Retry { delay_seconds } => {
                retried += 1;
                m.retry(*delay_seconds);
            }
        }
    }
    retried
}

/// The log line of one consumed batch of the events queue.
#[must_use]
pub fn batch_log(queue: &str, messages: usize, report: &ConsumeReport, retried: usize) -> Value {
    json!({
        "queue": queue, "messages": messages, "events": report.events, "retried": retried,
        "requeued": report.requeued,
        "invalid": report.invalid, "owners_changed": report.changed_owners.len(),
        "rosters_unfinished": report.unfinished_rosters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A message that remembers what was done with it.
    #[derive(Default)]
    struct Msg {
        attempts: u32,
        acked: Cell<bool>,
        retried: Cell<Option<u32>>,
    }

    impl Delivered for Msg {
        fn attempts(&self) -> u32 {
            self.attempts
        }
        fn ack(&self) {
            assert!(!self.acked.replace(true), "acked twice");
        }
        fn retry(&self, delay_seconds: u32) {
            assert!(self.retried.replace(Some(delay_seconds)).is_none());
        }
    }

    fn delivered(attempts: u32) -> Msg {
        Msg {
            attempts,
            ..Msg::default()
        }
    }

    fn outcome(m: &Msg) -> (bool, Option<u32>) {
        (m.acked.get(), m.retried.get())
    }

    #[test]
    fn only_a_name_ending_in_dlq_is_a_dead_letter_queue() {
        assert!(is_dead_letter_queue("notify-events-dlq"));
        assert!(!is_dead_letter_queue("notify-events"));
        assert!(!is_dead_letter_queue("dlq-notify"));
    }

    #[test]
    fn without_a_configuration_every_message_returns_on_the_unhandled_backoff() {
        let msgs = [delivered(1), delivered(3), delivered(10)];
        retry_all(&msgs);
        let delays: Vec<_> = msgs.iter().map(outcome).collect();
        assert_eq!(
            delays,
            [(false, Some(2)), (false, Some(8)), (false, Some(60))]
        );
    }

    #[test]
    fn a_kept_dead_letter_is_acknowledged_and_a_lost_one_returns() {
        let msgs = [delivered(1), delivered(2), delivered(1)];
        let backoff = Backoff { base: 5, cap: 300 };
        assert_eq!(settle_dead_letters(&msgs, &[true, false, true], backoff), 2);
        let got: Vec<_> = msgs.iter().map(outcome).collect();
        assert_eq!(got, [(true, None), (false, Some(10)), (true, None)]);
    }

    #[test]
    fn dispositions_ack_or_retry_with_their_own_delay() {
        let msgs = [delivered(1), delivered(4)];
        let d = [Disposition::Retry { delay_seconds: 7 }, Disposition::Ack];
        assert_eq!(settle(&msgs, &d), 1);
        assert_eq!(
            (outcome(&msgs[0]), outcome(&msgs[1])),
            ((false, Some(7)), (true, None))
        );
    }

    #[test]
    fn the_batch_log_counts_what_happened() {
        let report = ConsumeReport {
            dispositions: vec![Disposition::Ack; 3],
            changed_owners: vec!["a".into(), "b".into()],
            events: 12,
            invalid: 1,
            requeued: 2,
            unfinished_rosters: 0,
        };
        assert_eq!(
            batch_log("q", 3, &report, 1),
            json!({
                "queue": "q", "messages": 3, "events": 12, "retried": 1, "requeued": 2,
                "invalid": 1, "owners_changed": 2, "rosters_unfinished": 0,
            })
        );
    }
}
