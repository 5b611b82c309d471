//! Exact sender counts past the origins cap, against the local stack (real redis-server behind
//! the REST bridge, the Data API emulator): 300 distinct senders on one item (the cap keeps
//! 100), 50 of them returning after the cap dropped their origin, retractions interleaved, 8
//! writers at once. Clocks are explicit: every event and retraction time is chosen by the test.

mod stack_support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use egn_core::backend::native::{block_on, UreqClient};
use egn_core::notify::{view, NewEvent, NotificationView, NotifyService, Retraction};
use serde_json::json;
use stack_support::{now_ms, Stack};

const WRITERS: usize = 8;

fn raw(sender: usize, event_id: &str, t: i64) -> NewEvent {
    stack_support::like("u1", "post:1", &format!("s{sender}"), event_id, t)
}

enum Op {
    Create(usize, String, i64),
    Retract(usize, i64),
}

/// Runs `ops` on `WRITERS` threads at once; each op's deferred work (the dedup commit) too.
fn run(svc: &NotifyService<UreqClient>, ops: &[Vec<Op>]) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..WRITERS {
            s.spawn(|| loop {
                let Some(job) = ops.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return;
                };
                for op in job {
                    let deferred = match op {
                        Op::Create(sender, id, t) => {
                            block_on(svc.create(raw(*sender, id, *t), now_ms()))
                                .unwrap()
                                .deferred
                        }
                        Op::Retract(sender, at) => {
                            let r = Retraction {
                                owner: "u1".into(),
                                item_key: "post:1".into(),
                                sender_id: format!("s{sender}"),
                            };
                            block_on(svc.retract(r, *at)).unwrap().deferred
                        }
                    };
                    assert!(block_on(svc.run_deferred(deferred)).is_empty());
                }
            });
        }
    });
}

fn item(svc: &NotifyService<UreqClient>) -> NotificationView {
    let store = svc.store();
    let doc = block_on(store.api().find_one(
        &store.config().collection,
        &json!({"owner": "u1", "itemKey": "post:1"}),
        None,
        None,
    ))
    .unwrap()
    .expect("the item exists");
    view(&doc)
}

#[test]
fn counts_stay_exact_past_the_cap_with_returning_and_retracted_senders() {
    let stack = Stack::start();
    let svc = stack.notify_service(true);
    let t0 = now_ms() - 1_000_000;
    let retract_at = t0 + 5_000; // after every first event (t0 .. t0 + 2 990)
    let mut on = BTreeSet::new();
    // Round 1: 300 senders, newest last by event time, so s0..s199 fall out of the 100 kept
    // origins; every 6th is retracted right behind its create.
    let round1: Vec<Vec<Op>> = (0..300)
        .map(|i| {
            let mut job = vec![Op::Create(i, format!("a{i}"), t0 + 10 * i as i64)];
            if i % 6 == 0 {
                job.push(Op::Retract(i, retract_at));
            } else {
                on.insert(i);
            }
            job
        })
        .collect();
    run(&svc, &round1);
    let v = item(&svc);
    // The cap keeps the newest 100; retractions that land after the last create leave fewer.
    assert!(
        (83..=100).contains(&v.origins.len()),
        "{} origins",
        v.origins.len()
    );
    assert_eq!(
        (v.origins_count, v.origins_count_exact),
        (on.len() as i64, true)
    );

    // Round 2, interleaved: 50 senders whose origin was dropped send again (new event ids, old
    // times: their origin is dropped again at once; retracted ones stay refused); 20 retracted
    // senders come back later than their retraction; 17 dropped senders are retracted.
    let mut round2: Vec<Vec<Op>> = Vec::new();
    for i in 0..50 {
        round2.push(vec![Op::Create(i, format!("b{i}"), t0 + 10 * i as i64 + 5)]);
    }
    for i in (0..120).step_by(6) {
        round2.push(vec![Op::Create(i, format!("c{i}"), t0 + 10_000 + i as i64)]);
        on.insert(i);
    }
    for i in (101..200).step_by(6) {
        round2.push(vec![Op::Retract(i, retract_at)]);
        on.remove(&i);
    }
    run(&svc, &round2);
    let v = item(&svc);
    let stored: Vec<&str> = v.origins.iter().map(|o| o.sender_id.as_str()).collect();
    let distinct: BTreeSet<&str> = stored.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        stored.len(),
        "no sender twice among the origins"
    );
    let on_ids: BTreeSet<String> = on.iter().map(|i| format!("s{i}")).collect();
    assert!(
        distinct.iter().all(|s| on_ids.contains(*s)),
        "only senders on the item are shown"
    );
    assert_eq!(
        (v.origins_count, v.origins_count_exact),
        (on.len() as i64, true),
        "exactly the distinct senders on the item"
    );
    // A replay of the returning senders' events (same ids: the dedup marks them done) changes
    // nothing.
    run(&svc, &round2[..50]);
    assert_eq!(item(&svc).origins_count, on.len() as i64);
}

#[test]
fn without_redis_the_count_says_when_it_stops_being_exact() {
    let stack = Stack::start();
    let svc = stack.notify_service(false);
    let t0 = now_ms() - 1_000_000;
    let creates = |range: std::ops::Range<usize>, tag: &str| -> Vec<Vec<Op>> {
        range
            .map(|i| vec![Op::Create(i, format!("{tag}{i}"), t0 + 10 * i as i64)])
            .collect()
    };
    run(&svc, &creates(0..60, "a"));
    let v = item(&svc);
    assert_eq!((v.origins_count, v.origins_count_exact), (60, true));
    run(&svc, &creates(60..150, "a"));
    assert_eq!(item(&svc).origins_count, 150);
    // Ten senders whose origin the cap dropped return: the document alone cannot tell.
    run(&svc, &creates(0..10, "b"));
    let v = item(&svc);
    assert!(
        !v.origins_count_exact,
        "past the cap without Redis: an upper bound"
    );
    assert!(v.origins_count >= 150);
}
