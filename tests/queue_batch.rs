//! Bursts against the local stack: a batch is one upsert per (owner, itemKey) and one Redis
//! round trip for its reservations, keeps every rule of the single create (no double count, no
//! retracted sender back, muting), and the request forms, the queue chunking and dead letters.

mod stack_support;

use std::cell::RefCell;

use egn_core::backend::native::{block_on, UreqClient};
use egn_core::dedup::DedupConfig;
use egn_core::notify::batch::{
    self, Backoff, Disposition, EventOutcome, EventQueue, QueueError, QueuedMessage,
};
use egn_core::notify::document::field;
use egn_core::notify::{
    roster, CreateOutcome, NewEvent, NotificationEvent, NotifyConfig, NotifyService,
};
use egn_http::notify_routes;
use serde_json::{json, Value};
use stack_support::{like_at, now_ms, stored, Stack};

fn valid(svc: &NotifyService<UreqClient>, raws: &[NewEvent]) -> Vec<NotificationEvent> {
    batch::validate_all(raws, svc.store().config(), now_ms()).unwrap()
}

fn apply(svc: &NotifyService<UreqClient>, evs: &[NotificationEvent]) -> batch::BatchReport {
    block_on(svc.apply_batch(evs, now_ms()))
}

fn doc(svc: &NotifyService<UreqClient>, owner: &str, item: &str) -> Value {
    stored(svc.store(), owner, item).expect("document")
}

fn senders(d: &Value) -> Vec<String> {
    d[field::ORIGINS]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["s"].as_str().unwrap().to_owned())
        .collect()
}

fn start() -> (Stack, NotifyService<UreqClient>) {
    let stack = Stack::start();
    let svc = stack.service(NotifyConfig::default(), Some(DedupConfig::default()));
    (stack, svc)
}

#[test]
fn a_batch_written_with_one_clock_lists_its_items_by_event_time() {
    let (_stack, svc) = start();
    // One write clock for the whole batch (as the queue consumer writes it): the list order
    // among its items comes from the events' times, not from hashes. Sent oldest last.
    let t0 = now_ms() - 500;
    let raws: Vec<NewEvent> = (0..8)
        .rev()
        .map(|i| like_at("u9", &format!("k{i}"), "ana", t0 + 10 * i))
        .collect();
    let report = block_on(svc.apply_batch(&valid(&svc, &raws), now_ms()));
    assert_eq!(report.changed_owners, vec!["u9".to_owned()]);
    let page = block_on(svc.store().list(
        "u9",
        &egn_core::notify::ListParams::default(),
        false,
        now_ms(),
    ))
    .unwrap();
    let keys: Vec<&str> = page
        .items
        .iter()
        .map(|d| d["itemKey"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["k7", "k6", "k5", "k4", "k3", "k2", "k1", "k0"]);
}

#[test]
fn a_hundred_likes_on_one_item_are_one_upsert_and_two_redis_round_trips() {
    let (stack, svc) = start();
    let t0 = now_ms() - 10_000;
    // Warm the scripts (the first EVALSHA of a script is answered NOSCRIPT, then EVAL).
    apply(&svc, &valid(&svc, &[like_at("warm", "k", "s", t0)]));
    stack.reset_stats();
    let likes: Vec<NewEvent> = (0..100)
        .map(|i| like_at("u1", "post", &format!("s{i}"), t0 + i))
        .collect();
    let report = apply(&svc, &valid(&svc, &likes));
    assert_eq!(
        report.outcomes[0],
        EventOutcome::Applied(CreateOutcome::Created)
    );
    assert!(report.outcomes[1..]
        .iter()
        .all(|o| *o == EventOutcome::Applied(CreateOutcome::Merged)));
    assert_eq!(report.changed_owners, vec!["u1".to_owned()]);
    // The item's one upsert, and the 100 new senders' index entries in one insertMany.
    assert_eq!(
        stack.data_api_calls(),
        json!({"updateOne": 1, "insertMany": 1})
    );
    // One EVALSHA reserves the 100 ids (and reads the muted set), one settles them.
    assert_eq!(stack.redis_calls(), json!({"evalsha": 2}));
    assert_eq!(stack.data_api_total(), 2);
    let d = doc(&svc, "u1", "post");
    assert_eq!(d[field::ORIGINS_COUNT], 100);
    // Newest first by event time, whatever the batch order.
    assert_eq!(senders(&d)[0], "s99");
    assert_eq!(senders(&d).len(), 100);

    // The same batch again (a redelivery): every id is a duplicate, nothing is written.
    stack.reset_stats();
    let again = apply(&svc, &valid(&svc, &likes));
    assert!(again.outcomes.iter().all(|o| *o == EventOutcome::Duplicate));
    assert!(again.changed_owners.is_empty());
    assert_eq!(stack.data_api_total(), 0);
    assert_eq!(doc(&svc, "u1", "post")[field::ORIGINS_COUNT], 100);
}

#[test]
fn a_group_with_a_present_or_retracted_sender_falls_back_and_counts_right() {
    let (stack, svc) = start();
    let t0 = now_ms() - 10_000;
    apply(&svc, &valid(&svc, &[like_at("u1", "post", "ana", t0)]));
    // Ben is retracted after his event: his delayed create must stay out.
    block_on(svc.store().retract("u1", "post", "ben", now_ms())).unwrap();
    stack.reset_stats();
    // Redis is bypassed (new ids) and the batch holds: Ana again under a new event id (already
    // present), Ben (retracted), Cy and Dee (new), and Cy twice.
    let evs = valid(
        &svc,
        &[
            like_at("u1", "post", "ana", t0 + 1),
            like_at("u1", "post", "ben", t0 + 2),
            like_at("u1", "post", "cy", t0 + 3),
            like_at("u1", "post", "cy", t0 + 4),
            like_at("u1", "post", "dee", t0 + 5),
        ],
    );
    let report = apply(&svc, &evs);
    assert!(report
        .outcomes
        .iter()
        .all(|o| !matches!(o, EventOutcome::Failed(_))));
    assert_eq!(
        report.outcomes[3],
        EventOutcome::Applied(CreateOutcome::AlreadyApplied)
    );
    // The group upsert missed, one read found Ana stored and Ben retracted, and Cy and Dee went
    // in as one group again: 3 calls, however many events the group had (and before them one
    // insertMany of the index entries of Cy and Dee, new to the item).
    assert_eq!(
        stack.data_api_calls(),
        json!({"updateOne": 2, "findOne": 1, "insertMany": 1})
    );
    let d = doc(&svc, "u1", "post");
    let mut got = senders(&d);
    got.sort();
    assert_eq!(got, vec!["ana", "cy", "dee"]);
    assert_eq!(d[field::ORIGINS_COUNT], 3);
}

#[test]
fn muted_owners_and_tombstones_follow_the_single_create_rules() {
    let (_stack, svc) = start();
    let t0 = now_ms() - 10_000;
    block_on(notify_routes::put_preferences(
        &svc,
        "mute",
        br#"{"mutedCategories":["social"]}"#,
        t0,
    ))
    .unwrap();
    apply(&svc, &valid(&svc, &[like_at("u2", "gone", "ana", t0)]));
    assert!(block_on(svc.store().delete("u2", "gone", now_ms())).unwrap());
    let report = apply(
        &svc,
        &valid(
            &svc,
            &[
                like_at("mute", "post", "ana", t0),
                like_at("u2", "gone", "ben", t0 + 1),
                like_at("u2", "gone", "cy", t0 + 2),
            ],
        ),
    );
    assert_eq!(report.outcomes[0], EventOutcome::Muted);
    assert_eq!(report.changed_owners, vec!["u2".to_owned()]);
    // A tombstone is revived by the group upsert with exactly the new senders.
    let d = doc(&svc, "u2", "gone");
    assert_eq!(d["deleted"], false);
    assert_eq!(d[field::ORIGINS_COUNT], 2);
    let mut got = senders(&d);
    got.sort();
    assert_eq!(got, vec!["ben", "cy"]);
}

#[test]
fn a_failed_group_write_is_retried_not_mistaken_for_a_duplicate() {
    let (stack, svc) = start();
    let t0 = now_ms() - 10_000;
    let msgs: Vec<QueuedMessage> = (0..10)
        .map(|i| QueuedMessage {
            id: format!("m{i}"),
            body: serde_json::to_string(&like_at("u3", "post", &format!("s{i}"), t0 + i)).unwrap(),
            attempts: 1,
        })
        .collect();
    stack.data_api_faults(
        r#"{"rules":[{"match":"updateOne","mode":"fail_before","count":1,"status":503}]}"#,
    );
    let first = consume(&svc, &msgs, None);
    assert!(first
        .dispositions
        .iter()
        .all(|d| matches!(d, Disposition::Retry { .. })));
    assert!(first.changed_owners.is_empty());
    // The redelivery writes them: the reservations were released, not left as "in flight".
    let second = consume(&svc, &msgs, None);
    assert!(second.dispositions.iter().all(|d| *d == Disposition::Ack));
    assert_eq!(doc(&svc, "u3", "post")[field::ORIGINS_COUNT], 10);
    // Applied, but the answer was lost: the retry neither double counts nor fails.
    stack.data_api_faults(
        r#"{"rules":[{"match":"updateOne","mode":"fail_after","count":1,"status":503}]}"#,
    );
    let more: Vec<QueuedMessage> = (10..20)
        .map(|i| QueuedMessage {
            id: format!("m{i}"),
            body: serde_json::to_string(&like_at("u3", "post", &format!("s{i}"), t0 + i)).unwrap(),
            attempts: 1,
        })
        .collect();
    let lost = consume(&svc, &more, None);
    assert!(lost
        .dispositions
        .iter()
        .all(|d| matches!(d, Disposition::Retry { .. })));
    let again = consume(&svc, &more, None);
    assert!(again.dispositions.iter().all(|d| *d == Disposition::Ack));
    let d = doc(&svc, "u3", "post");
    assert_eq!(d[field::ORIGINS_COUNT], 20);
    assert_eq!(senders(&d).len(), 20);
}

#[test]
fn a_packed_message_retries_only_its_failed_events_and_dead_letters_per_event() {
    let (stack, svc) = start();
    let t0 = now_ms() - 10_000;
    // Ten events on ten items in one packed message; the first upsert fails.
    let bodies: Vec<String> = (0..10)
        .map(|i| serde_json::to_string(&like_at("u6", &format!("k{i}"), "s", t0 + i)).unwrap())
        .collect();
    let packed = batch::pack_messages(bodies.clone(), 0);
    assert_eq!(packed.len(), 1);
    let msg = |body: &str, attempts| QueuedMessage {
        id: "p1".into(),
        body: body.into(),
        attempts,
    };
    stack.data_api_faults(
        r#"{"rules":[{"match":"updateOne","mode":"fail_before","count":1,"status":503}]}"#,
    );
    let q = VecQueue::default();
    let r = consume(&svc, &[msg(&packed[0], 1)], Some(&q));
    // Acknowledged: the failed event went out again as a new message, with its delivery and
    // the backoff's delay; the nine others are written.
    assert_eq!(r.dispositions, vec![Disposition::Ack]);
    assert_eq!(r.requeued, 1);
    assert_eq!(*q.delays.borrow(), vec![2]);
    let sent = q.batches.borrow()[0].clone();
    let (rest, attempts) = batch::unpack(&sent[0]);
    assert_eq!((rest.len(), attempts), (1, 1));
    let written = (0..10)
        .filter(|i| {
            block_on(svc.store().api().find_one(
                &svc.store().config().collection,
                &json!({"owner": "u6", "itemKey": format!("k{i}")}),
                None,
                None,
            ))
            .unwrap()
            .is_some()
        })
        .count();
    assert_eq!(written, 9);
    // The remainder fails whole: retried by the queue, its backoff counting both deliveries.
    stack.data_api_faults(
        r#"{"rules":[{"match":"updateOne","mode":"fail_before","count":1,"status":503}]}"#,
    );
    let r = consume(&svc, &[msg(&sent[0], 1)], Some(&q));
    assert_eq!(
        r.dispositions,
        vec![Disposition::Retry { delay_seconds: 4 }]
    );
    // Redelivered whole, the original writes nothing twice.
    let r = consume(&svc, &[msg(&packed[0], 2)], Some(&q));
    assert_eq!(r.dispositions, vec![Disposition::Ack]);
    for i in 0..10 {
        assert_eq!(
            doc(&svc, "u6", &format!("k{i}"))[field::ORIGINS_COUNT],
            1,
            "k{i}"
        );
    }
    // The dead-letter queue keeps a packed message as one letter per event, replayed packed.
    let kept = block_on(svc.store_dead_letters(&[msg(&packed[0], 6)], "events-dlq", now_ms()));
    assert_eq!(kept, vec![true]);
    let list = block_on(notify_routes::get_dead_letters(&svc, "")).unwrap();
    assert_eq!(list["count"], 10);
    assert_eq!(list["items"][3]["id"], "p1:3");
    assert_eq!(list["items"][3]["event"]["itemKey"], "k3");
    let q2 = VecQueue::default();
    let replayed = block_on(notify_routes::post_replay(
        &svc,
        br#"{"limit":10}"#,
        Some(&q2),
    ))
    .unwrap();
    assert_eq!(replayed, json!({"replayed": 10, "removed": 10}));
    assert_eq!(q2.batches.borrow().len(), 1);
    assert_eq!(q2.batches.borrow()[0].len(), 1);
    let mut again = batch::unpack(&q2.batches.borrow()[0][0]).0;
    again.sort();
    let mut want = bodies;
    want.sort();
    assert_eq!(again, want);
}

/// The queue of the tests: records each `sendBatch`.
#[derive(Default)]
struct VecQueue {
    batches: RefCell<Vec<Vec<String>>>,
    delays: RefCell<Vec<u32>>,
}

impl EventQueue for VecQueue {
    async fn send_batch(&self, bodies: &[String], delay_seconds: u32) -> Result<(), QueueError> {
        self.batches.borrow_mut().push(bodies.to_vec());
        self.delays.borrow_mut().push(delay_seconds);
        Ok(())
    }
}

const BACKOFF: Backoff = Backoff { base: 2, cap: 60 };

fn consume(
    svc: &NotifyService<UreqClient>,
    msgs: &[QueuedMessage],
    requeue: Option<&VecQueue>,
) -> batch::ConsumeReport {
    block_on(svc.consume(msgs, "events", now_ms(), BACKOFF, requeue))
}

#[test]
fn forms_are_validated_whole_then_queued_in_chunks_or_written_at_once() {
    let (_stack, svc) = start();
    let t0 = now_ms() - 10_000;
    let q = VecQueue::default();
    // A fan-out to 250 owners: packed into 25 messages of 10 events (each within the 64 KB
    // operation unit), one sendBatch call, per-owner event ids.
    let mut template = like_at("", "post:9", "ana", t0);
    template.event_id = "like-9".into();
    let owners: Vec<String> = (0..250).map(|i| format!("f{i}")).collect();
    let body = serde_json::to_vec(&json!({"template": template, "owners": owners})).unwrap();
    let (reply, _) = block_on(notify_routes::post_events(
        &svc,
        &body,
        None,
        now_ms(),
        Some(&q),
    ));
    let reply = reply.unwrap();
    assert_eq!(
        (reply.status, &reply.body),
        (202, &json!({"status": "queued", "accepted": 250}))
    );
    let sizes: Vec<usize> = q.batches.borrow().iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![25]);
    let events: Vec<usize> = q.batches.borrow()[0]
        .iter()
        .map(|m| {
            assert!(m.len() <= batch::QUEUE_OPERATION_BYTES);
            batch::unpack(m).0.len()
        })
        .collect();
    assert_eq!(events, vec![batch::MAX_EVENTS_PER_MESSAGE; 25]);
    let first: Value =
        serde_json::from_str(&batch::unpack(&q.batches.borrow()[0][0]).0[0]).unwrap();
    assert_eq!(
        (first["owner"].as_str(), first["eventId"].as_str()),
        (Some("f0"), Some("like-9:f0"))
    );

    // One bad event among three: 422 naming it, nothing enqueued.
    let mut bad = like_at("u4", "post", "ben", t0);
    bad.category_type = "nope".into();
    let body = serde_json::to_vec(
        &json!({"events": [like_at("u4", "post", "ana", t0), bad, like_at("u4", "post", "cy", t0)]}),
    )
    .unwrap();
    let (reply, _) = block_on(notify_routes::post_events(
        &svc,
        &body,
        None,
        now_ms(),
        Some(&q),
    ));
    let e = reply.unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (422, "invalid_events"));
    assert_eq!(
        e.body()["error"]["details"],
        json!([{"index": 1, "code": "unknown_category", "message": e.body()["error"]["details"][0]["message"]}])
    );
    assert_eq!(q.batches.borrow().len(), 1);

    // Without a queue: a batch is written at once, one result per event.
    let body = serde_json::to_vec(&json!({"events": [like_at("u4", "post", "ana", t0), like_at("u4", "post", "cy", t0 + 1), like_at("u4", "other", "cy", t0)]})).unwrap();
    let (reply, _) = block_on(notify_routes::post_events::<_, VecQueue>(
        &svc,
        &body,
        None,
        now_ms(),
        None,
    ));
    let reply = reply.unwrap();
    assert_eq!(reply.status, 200);
    let statuses: Vec<&str> = reply.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, vec!["created", "merged", "created"]);
    assert_eq!(doc(&svc, "u4", "post")[field::ORIGINS_COUNT], 2);
    // …but a fan-out beyond the synchronous cap needs the queue.
    let body = serde_json::to_vec(&json!({"template": template, "owners": owners})).unwrap();
    let (reply, _) = block_on(notify_routes::post_events::<_, VecQueue>(
        &svc,
        &body,
        None,
        now_ms(),
        None,
    ));
    let e = reply.unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (503, "not_configured"));
    // A single event without a queue answers exactly as before.
    let body = serde_json::to_vec(&like_at("u4", "single", "ana", t0)).unwrap();
    let (reply, _) = block_on(notify_routes::post_events::<_, VecQueue>(
        &svc,
        &body,
        None,
        now_ms(),
        None,
    ));
    assert_eq!(reply.unwrap().status, 201);
    // Limits: 101 events, an empty fan-out.
    let many: Vec<NewEvent> = (0..101)
        .map(|i| like_at("u", "k", &format!("s{i}"), t0))
        .collect();
    let body = serde_json::to_vec(&json!({"events": many})).unwrap();
    let (reply, _) = block_on(notify_routes::post_events(
        &svc,
        &body,
        None,
        now_ms(),
        Some(&q),
    ));
    assert_eq!(reply.unwrap_err().code.as_str(), "batch_too_large");
    let body = serde_json::to_vec(&json!({"template": template, "owners": []})).unwrap();
    let (reply, _) = block_on(notify_routes::post_events(
        &svc,
        &body,
        None,
        now_ms(),
        Some(&q),
    ));
    assert_eq!(reply.unwrap_err().code.as_str(), "empty_batch");
    assert_eq!(q.batches.borrow().len(), 1);
}

#[test]
fn dead_letters_are_kept_listed_and_replayed() {
    let (_stack, svc) = start();
    let t0 = now_ms() - 10_000;
    let good = serde_json::to_string(&like_at("u5", "post", "ana", t0)).unwrap();
    // The DLQ consumer keeps what failed every attempt; a redelivery stores it once.
    let letters = vec![QueuedMessage {
        id: "d1".into(),
        body: good.clone(),
        attempts: 1,
    }];
    assert_eq!(
        block_on(svc.store_dead_letters(&letters, "events-dlq", now_ms())),
        vec![true]
    );
    assert_eq!(
        block_on(svc.store_dead_letters(&letters, "events-dlq", now_ms())),
        vec![true]
    );
    // The consumer keeps a message that can never be valid as a dead letter and acks it.
    let broken = vec![QueuedMessage {
        id: "d2".into(),
        body: "{\"owner\":1}".into(),
        attempts: 1,
    }];
    let r = consume(&svc, &broken, None);
    assert_eq!((r.dispositions[0], r.invalid), (Disposition::Ack, 1));
    let list = block_on(notify_routes::get_dead_letters(&svc, "")).unwrap();
    assert_eq!(list["count"], 2);
    assert_eq!(list["items"][0]["id"], "d1");
    assert_eq!(list["items"][0]["event"]["owner"], "u5");
    assert!(list["items"][1]["reason"]
        .as_str()
        .unwrap()
        .contains("not an event"));

    let q = VecQueue::default();
    let replayed = block_on(notify_routes::post_replay(
        &svc,
        br#"{"ids":["d1"]}"#,
        Some(&q),
    ))
    .unwrap();
    assert_eq!(replayed, json!({"replayed": 1, "removed": 1}));
    assert_eq!(*q.batches.borrow(), vec![vec![good]]);
    assert_eq!(
        block_on(notify_routes::get_dead_letters(&svc, "")).unwrap()["count"],
        1
    );
    let e = block_on(notify_routes::post_replay::<_, VecQueue>(&svc, b"", None)).unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (503, "not_configured"));
    let e = block_on(notify_routes::post_replay(
        &svc,
        br#"{"limit":0}"#,
        Some(&q),
    ))
    .unwrap_err();
    assert_eq!(e.code.as_str(), "invalid_parameter");
}

#[test]
fn single_creates_are_written_at_once_until_their_item_is_hot_then_queued() {
    let (stack, base) = start();
    // Windows far longer than the test, so a slow machine cannot split the burst in two.
    let mut cfg = DedupConfig::default();
    cfg.hot.window_ms = 600_000;
    cfg.hot.cooldown_ms = 600_000;
    let hot = cfg.hot;
    let svc = NotifyService::new(base.store().clone(), Some(stack.redis()), cfg);
    let t0 = now_ms() - 10_000;
    let q = VecQueue::default();
    let post = |svc: &NotifyService<UreqClient>, ev: &NewEvent| {
        let body = serde_json::to_vec(ev).unwrap();
        let (reply, _) = block_on(notify_routes::post_events(
            svc,
            &body,
            None,
            now_ms(),
            Some(&q),
        ));
        reply.unwrap()
    };
    // An ordinary item: each create is written now (201, then 200 merged), nothing queued.
    for (i, s) in ["ana", "bo"].iter().enumerate() {
        let r = post(&svc, &like_at("h1", "calm", s, t0 + i as i64));
        assert_eq!(r.status, if i == 0 { 201 } else { 200 }, "{}", r.body);
    }
    assert!(q.batches.borrow().is_empty());
    // A burst on one item: the first `limit` are written, the rest are queued (202) without a
    // reservation, and the item stays hot (each event restarts the cool-down).
    let fans: Vec<String> = (0..30).map(|i| format!("fan{i}")).collect();
    let statuses: Vec<u16> = fans
        .iter()
        .enumerate()
        .map(|(i, s)| post(&svc, &like_at("h1", "burst", s, t0 + i as i64)).status)
        .collect();
    let direct = hot.limit as usize;
    assert_eq!(&statuses[..direct], &[201, 200, 200, 200][..direct]);
    assert!(statuses[direct..].iter().all(|s| *s == 202), "{statuses:?}");
    // The queued events are one-event messages; consumed as one batch they are one upsert.
    let msgs: Vec<QueuedMessage> = q
        .batches
        .borrow()
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, b)| QueuedMessage {
            id: format!("m{i}"),
            body: b.clone(),
            attempts: 1,
        })
        .collect();
    assert_eq!(msgs.len(), fans.len() - direct);
    stack.reset_stats();
    let r = consume(&svc, &msgs, None);
    assert!(r.dispositions.iter().all(|d| *d == Disposition::Ack));
    // One upsert, and one insertMany of the queued senders' index entries.
    assert_eq!(
        stack.data_api_calls(),
        json!({"updateOne": 1, "insertMany": 1})
    );
    let d = doc(&svc, "h1", "burst");
    let mut got = senders(&d);
    got.sort();
    let mut want = fans.clone();
    want.sort();
    assert_eq!(got, want);
    // Exact, from the roster: the queued events joined it in the consumer's reservation.
    assert_eq!(roster::count(d[field::TALLY].as_i64().unwrap()), 30);
    // With limit 0 every single create is queued, without a Redis call (the old rule).
    let mut cfg = DedupConfig::default();
    cfg.hot.limit = 0;
    let svc0 = NotifyService::new(svc.store().clone(), Some(stack.redis()), cfg);
    stack.reset_stats();
    assert_eq!(post(&svc0, &like_at("h2", "any", "ana", t0)).status, 202);
    assert_eq!(stack.redis_calls(), json!({}));
}
