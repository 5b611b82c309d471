//! The queue consumer over the ports: which queue a batch came from, the configuration it needs,
//! the erasure continuations that ride the events queue, and how each message is settled. The
//! flow per batch (grouping, one upsert per group, dedup, dead letters) is
//! `egn_core::notify::batch`; the adapter only converts the runtime's batch and messages.

use crate::dispatch::{Backends, Background, Badges, Level, Now};
use crate::{backends, privacy};
use egn_core::config::{Config, ConfigError};
use egn_core::notify::batch::{Backoff, QueuedMessage};
use egn_core::notify::delivery::{self, Delivered};
use egn_core::notify::NotifyService;
use serde_json::json;

/// Consumes one batch of the events queue or of its dead-letter queue (`queue` is its name);
/// `msgs[i]` carries `items[i]`. Every message is acknowledged or retried.
pub async fn consume<P, M>(
    ports: &P,
    config: &Result<Config, ConfigError>,
    queue: &str,
    items: Vec<QueuedMessage>,
    msgs: Vec<M>,
) where
    P: Backends + Badges + Background + Now,
    M: Delivered,
{
    let log = |v: serde_json::Value| ports.log(Level::Info, &v.to_string());
    let ready = config.as_ref().map_err(ToString::to_string).and_then(|c| {
        let svc = backends::service(ports.http(), c).map_err(|e| e.message)?;
        Ok((svc, c.queue_retry))
    });
    let (svc, (base, cap)) = match ready {
        Ok(v) => v,
        Err(e) => {
            // Nothing can be written: let the queue redeliver (and dead-letter) them.
            log(json!({ "queue": queue, "skipped": e }));
            delivery::retry_all(&msgs);
            return;
        }
    };
    let now = ports.now_ms() as i64;
    let backoff = Backoff { base, cap };
    if delivery::is_dead_letter_queue(queue) {
        let kept = svc.store_dead_letters(&items, queue, now).await;
        let stored = delivery::settle_dead_letters(&msgs, &kept, backoff);
        log(json!({ "queue": queue, "dead_letters": msgs.len(), "stored": stored }));
        return;
    }
    // Continuations of erasures ride the events queue: run them, then the events.
    let (items, msgs) = continue_erasures(ports, &svc, items, msgs, now).await;
    // A message of which only some events failed has those re-sent on the events queue.
    let requeue = ports.queue();
    let report = svc
        .consume(&items, queue, now, backoff, requeue.as_ref())
        .await;
    let retried = delivery::settle(&msgs, &report.dispositions);
    log(delivery::batch_log(queue, msgs.len(), &report, retried));
    ports.poke(report.changed_owners.clone());
}

/// Runs the erasure continuations among `items` (acknowledged once run, retried on failure);
/// returns the other messages.
async fn continue_erasures<P, M>(
    ports: &P,
    svc: &NotifyService<P::Http>,
    items: Vec<QueuedMessage>,
    msgs: Vec<M>,
    now: i64,
) -> (Vec<QueuedMessage>, Vec<M>)
where
    P: Backends + Badges + Background,
    M: Delivered,
{
    let (mut rest, mut rest_msgs) = (Vec::new(), Vec::new());
    let requeue = ports.queue();
    for (item, m) in items.into_iter().zip(msgs) {
        let Some(id) = egn_core::notify::erasure::continued(&item.body) else {
            rest.push(item);
            rest_msgs.push(m);
            continue;
        };
        let hubs = ports.hubs();
        match privacy::resume_erasure(svc, &id, &hubs, requeue.as_ref(), now).await {
            Ok(()) => m.ack(),
            Err(e) => {
                let line = json!({ "erasure": "continuation failed", "error": e.message });
                ports.log(Level::Info, &line.to_string());
                delivery::retry_later(&m, delivery::UNHANDLED);
            }
        }
    }
    (rest, rest_msgs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{config, Mem};
    use egn_core::backend::native::block_on;
    use egn_core::notify::erasure::continuation;
    use std::cell::Cell;

    /// A message that records how it was settled.
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
            self.acked.set(true);
        }
        fn retry(&self, delay_seconds: u32) {
            self.retried.set(Some(delay_seconds));
        }
    }

    fn item(body: &str) -> QueuedMessage {
        QueuedMessage {
            id: "m".into(),
            body: body.into(),
            attempts: 3,
        }
    }

    fn msgs(n: usize) -> Vec<Msg> {
        (0..n)
            .map(|_| Msg {
                attempts: 3,
                ..Msg::default()
            })
            .collect()
    }

    #[test]
    fn without_a_configuration_every_message_is_retried_on_its_own_backoff() {
        let ports = Mem::default();
        let bad = config(&[("BACKEND_TIMEOUT_MS", "soon")]);
        let ms = msgs(2);
        let settle = vec![Ref(&ms[0]), Ref(&ms[1])];
        block_on(consume(
            &ports,
            &bad,
            "events",
            vec![item("{}"), item("{}")],
            settle,
        ));
        // Not QUEUE_RETRY_*, which may be what does not parse: 2 s doubled per attempt.
        for m in &ms {
            assert_eq!((m.acked.get(), m.retried.get()), (false, Some(8)));
        }
        let lines = ports.lines.borrow();
        assert!(lines[0].contains("\"skipped\""), "{lines:?}");
        assert!(lines[0].contains("BACKEND_TIMEOUT_MS"));
    }

    #[test]
    fn a_failed_continuation_is_retried_beside_the_events() {
        let ports = Mem::default();
        let items = vec![item(&continuation("job-1")), item("{\"not\":\"an event\"}")];
        let ms = msgs(2);
        let (a, b) = (&ms[0], &ms[1]);
        block_on(consume(
            &ports,
            &config(&[]),
            "events",
            items,
            vec![Ref(a), Ref(b)],
        ));
        // The continuation: the Data API is down, so it waits on the unhandled backoff
        // (2 s doubled per attempt: the third waits 8 s).
        assert_eq!((a.acked.get(), a.retried.get()), (false, Some(8)));
        let lines = ports.lines.borrow();
        assert!(
            lines.iter().any(|l| l.contains("continuation failed")),
            "{lines:?}"
        );
        assert!(lines.last().unwrap().contains("\"queue\":\"events\""));
        // The malformed event is settled too (acknowledged or retried, never left).
        assert!(b.acked.get() || b.retried.get().is_some());
        assert!(ports.poked.borrow().is_empty());
    }

    #[test]
    fn dead_letters_that_cannot_be_stored_are_retried() {
        let ports = Mem::default();
        let ms = msgs(1);
        let m = &ms[0];
        block_on(consume(
            &ports,
            &config(&[]),
            "events-dlq",
            vec![item("{}")],
            vec![Ref(m)],
        ));
        assert!(!m.acked.get());
        assert!(m.retried.get().is_some());
        let lines = ports.lines.borrow();
        assert!(lines[0].contains("\"dead_letters\":1") && lines[0].contains("\"stored\":0"));
    }

    /// A borrowed message, so the test reads how it was settled.
    struct Ref<'a>(&'a Msg);

    impl Delivered for Ref<'_> {
        fn attempts(&self) -> u32 {
            self.0.attempts
        }
        fn ack(&self) {
            self.0.ack();
        }
        fn retry(&self, delay_seconds: u32) {
            self.0.retry(delay_seconds);
        }
    }
}
