//! Erasing and exporting an owner against the local stack (the Data API emulator, real
//! redis-server behind the REST bridge): an inbox in every state is erased in budgeted runs,
//! then every Data API collection and every Redis key is scanned for what is left; a late event
//! behind the fence is dropped and counted, a new one starts a new inbox; the export carries
//! everything stored. Clocks are explicit: the final sweep's wait is a later `now`, not a sleep.

mod stack_support;

use egn_core::backend::native::{block_on, UreqClient};
use egn_core::backend::FindOptions;
use egn_core::notify::batch::{EventOutcome, QueuedMessage};
use egn_core::notify::erasure::{self, JobState, NoHubs, Removed};
use egn_core::notify::privacy::AnyErasureView;
use egn_core::notify::{
    roster, Created, NewEvent, NewSender, NotificationEvent, NotifyService, Preferences,
    RetractOutcome, Retraction,
};
use egn_http::user_writes;
use serde_json::{json, Value};
use stack_support::{now_ms, Stack};

type Svc = NotifyService<UreqClient>;

/// [`stack_support::like_at`] with what erasure must remove: a named sender with an avatar, and
/// a landing.
fn event(owner: &str, key: &str, sender: &str, t: i64) -> NewEvent {
    NewEvent {
        sender: NewSender {
            id: sender.into(),
            name: format!("Name of {sender}"),
            avatar: Some(format!("https://cdn.example/{sender}.png")),
        },
        landing: Some(format!("app://{key}")),
        ..stack_support::like_at(owner, key, sender, t)
    }
}

fn create(svc: &Svc, ev: NewEvent, now: i64) -> Created {
    let w = block_on(svc.create(ev, now)).unwrap();
    assert!(block_on(svc.run_deferred(w.deferred)).is_empty());
    w.value
}

fn all(stack: &Stack, coll: &str) -> Vec<Value> {
    block_on(
        stack
            .data_api()
            .find(coll, &json!({}), &FindOptions::default()),
    )
    .unwrap()
}

fn redis_keys(stack: &Stack) -> Vec<String> {
    let keys = block_on(stack.redis().command(&["KEYS", "*"])).unwrap();
    keys.as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect()
}

/// An inbox in every state a recipient's data can be in, for `owner`; returns the item keys.
fn fill(svc: &Svc, owner: &str, t: i64) -> Vec<&'static str> {
    for (key, sender) in [
        ("live", "bo"),
        ("read", "bo"),
        ("archived", "bo"),
        ("gone", "bo"),
        ("merged", "bo"),
        ("merged", "cy"),
    ] {
        assert!(matches!(
            create(svc, event(owner, key, sender, t), t),
            Created::Applied { .. }
        ));
    }
    let write = |r: egn_http::notify_routes::Flow| {
        let (reply, deferred) = r;
        assert_eq!(reply.unwrap().status, 200);
        assert!(block_on(svc.run_deferred(deferred)).is_empty());
    };
    let mark = |key: &str, flag: &str| {
        json!({ "itemKey": key, "flag": flag })
            .to_string()
            .into_bytes()
    };
    // With Idempotency-Keys: the user's records (and their index) are in Redis too.
    write(block_on(user_writes::post_mark(
        svc,
        owner,
        &mark("read", "read"),
        Some("k1"),
        t,
    )));
    write(block_on(user_writes::post_mark(
        svc,
        owner,
        &mark("archived", "archived"),
        Some("k2"),
        t,
    )));
    write(block_on(user_writes::delete_item(
        svc,
        owner,
        "gone",
        Some("k3"),
        t,
    )));
    block_on(svc.set_preferences(
        owner,
        Preferences {
            muted_categories: vec![],
            muted_types: vec!["follow".into()],
        },
        t,
    ))
    .unwrap();
    // A dead letter addressed to the owner, and one stored before letters named their owner.
    let body = serde_json::to_string(&event(owner, "dead", "dy", t)).unwrap();
    let kept = block_on(svc.store_dead_letters(
        &[QueuedMessage {
            id: format!("m-{owner}"),
            body,
            attempts: 3,
        }],
        "notify-dlq",
        t,
    ));
    assert_eq!(kept, [true]);
    vec!["live", "read", "archived", "gone", "merged"]
}

fn owner_view(v: AnyErasureView) -> erasure::ErasureView {
    match v {
        AnyErasureView::Owner(v) => v,
        AnyErasureView::Sender(v) => panic!("an owner's erasure, not {v:?}"),
    }
}

/// Runs the erasure to its end: budgeted runs at `t`, then the sweep after its wait.
fn erase(svc: &Svc, owner: &str, budget: u32, t: i64) -> (erasure::ErasureView, u32) {
    let mut runs = 0;
    let mut now = t;
    loop {
        runs += 1;
        let v = block_on(svc.erase_owner(owner, &NoHubs, budget, now)).unwrap();
        if v.state == JobState::Done {
            return (v, runs);
        }
        assert!(runs < 100, "the erasure makes progress: {v:?}");
        if let Some(after) = v.continue_after_msec {
            now = now.max(after);
        }
    }
}

#[test]
fn erasing_an_owner_leaves_nothing_of_them_in_any_store() {
    let stack = Stack::start();
    let svc = stack.notify_service(true);
    let t = now_ms();
    let keys = fill(&svc, "ana", t);
    fill(&svc, "bob", t);
    let colls = svc.store().config().collections();
    // The old letter format: no owner field, the owner only inside the body.
    block_on(stack.data_api().insert_one(
        &colls.dead_letters,
        &json!({ "_id": "old-letter", "body": "{\"owner\": \"ana\", \"itemKey\": \"x\"}" }),
    ))
    .unwrap();

    // A small budget: the erasure needs several runs, each resuming the last.
    let (done, runs) = erase(&svc, "ana", 6, t);
    assert!(runs > 3, "{runs} runs");
    assert_eq!(
        done.removed,
        Removed {
            items: 4,
            tombstones: 1,
            redis_keys: done.removed.redis_keys,
            preferences: 2,
            idempotency_records: 3,
            dead_letters: 2,
            badge_sockets: 0,
            // Every item of the owner's was indexed under its senders.
            sender_index: 6,
        }
    );
    assert!(done.removed.redis_keys >= 1, "rosters went too");

    // Every store, scanned: nothing names ana; bob's inbox is whole.
    for coll in colls.all() {
        for d in all(&stack, coll) {
            let text = d.to_string();
            assert!(!text.contains("\"ana\""), "{coll} still holds {text}");
            assert!(!text.contains("\\\"ana\\\""), "{coll} still holds {text}");
        }
    }
    let items = all(&stack, &colls.items);
    assert_eq!(items.iter().filter(|d| d["owner"] == "bob").count(), 5);
    assert_eq!(all(&stack, &colls.preferences).len(), 1);
    assert_eq!(all(&stack, &colls.dead_letters).len(), 1);
    let left = redis_keys(&stack);
    for k in &keys {
        for gone in [roster::key("ana", k), roster::hot_key("ana", k)] {
            assert!(!left.contains(&gone), "{gone} left");
        }
        assert!(left.contains(&roster::key("bob", k)) || *k == "gone" || *k == "live");
    }
    for k in &left {
        assert!(!k.contains(":ana"), "redis key {k} left");
    }
    assert!(
        left.iter().any(|k| k.contains(":3:bob:")),
        "bob's records stay"
    );

    // Idempotent: erasing again finds nothing more.
    let (again, _) = erase(&svc, "ana", 40, t + 120_000);
    assert_eq!(again.removed.items + again.removed.tombstones, 0);
    let progress = owner_view(block_on(svc.erasure(&done.id)).unwrap());
    assert_eq!(progress.state, JobState::Done);
}

#[test]
fn a_late_event_behind_the_fence_is_dropped_and_counted_a_new_one_is_a_new_inbox() {
    let stack = Stack::start();
    for redis in [true, false] {
        let svc = stack.notify_service(redis);
        let owner = if redis { "late-r" } else { "late-d" };
        let t = now_ms();
        create(&svc, event(owner, "old", "bo", t - 10), t - 10);
        let (done, _) = erase(&svc, owner, 40, t);
        assert_eq!(done.removed.items, 1);

        // A queue retry of an event created before the erasure: the single path and a batch.
        assert_eq!(
            create(&svc, event(owner, "old", "cy", t - 5), t + 1_000),
            Created::Erased
        );
        let late = NotificationEvent::new(
            event(owner, "other", "dy", t),
            svc.store().config(),
            t + 1_000,
        )
        .unwrap();
        let report = block_on(svc.apply_batch(&[late], t + 1_000));
        assert_eq!(report.outcomes, [EventOutcome::Erased]);
        // A retraction of an item the erased owner no longer has writes nothing.
        let r = block_on(svc.retract(
            Retraction {
                owner: owner.into(),
                item_key: "old".into(),
                sender_id: "bo".into(),
            },
            t + 1_000,
        ))
        .unwrap();
        assert_eq!(r.value, RetractOutcome::NotFound);
        // An event that fails its last delivery after the erasure: acknowledged, not kept as
        // a dead letter (a replay would drop it; keeping it would keep the owner's event).
        let letter = |id: &str, created: i64| QueuedMessage {
            id: format!("{owner}-{id}"),
            body: serde_json::to_string(&event(owner, "dead", "ey", created)).unwrap(),
            attempts: 3,
        };
        let kept = block_on(svc.store_dead_letters(
            &[letter("late-letter", t - 1), letter("new-letter", t + 1)],
            "notify-dlq",
            t + 1_000,
        ));
        assert_eq!(kept, [true, true]);
        let colls = svc.store().config().collections();
        let letters: Vec<Value> = all(&stack, &colls.dead_letters)
            .into_iter()
            .filter(|d| d["owner"] == owner)
            .map(|d| d["_id"].clone())
            .collect();
        assert_eq!(letters, [json!(format!("{owner}-new-letter"))]);
        assert!(all(&stack, &colls.items)
            .iter()
            .all(|d| d["owner"] != owner));
        assert_eq!(
            owner_view(block_on(svc.erasure(&done.id)).unwrap()).late_events_dropped,
            3
        );

        // Created after the erasure: a new inbox.
        assert!(matches!(
            create(&svc, event(owner, "new", "bo", t + 1), t + 2_000),
            Created::Applied { .. }
        ));
        let page = block_on(svc.export(owner, None, 10)).unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(page.items[0]["itemKey"], "new");
    }
}

#[test]
fn the_export_pages_through_everything_stored_about_the_owner() {
    let stack = Stack::start();
    let svc = stack.notify_service(true);
    let t = now_ms();
    fill(&svc, "eve", t);
    let first = block_on(svc.export("eve", None, 2)).unwrap();
    assert_eq!(first.items.len(), 2);
    assert_eq!(
        first.preferences.as_ref().unwrap()["mutedTypes"],
        json!(["follow"])
    );
    assert_eq!(first.dead_letters.len(), 1);
    assert_eq!(first.dead_letters[0].event["owner"], "eve");
    let mut seen: Vec<String> = first
        .items
        .iter()
        .map(|d| d["itemKey"].as_str().unwrap().to_owned())
        .collect();
    let mut cursor = first.next_cursor.clone();
    while let Some(c) = cursor {
        let page = block_on(svc.export("eve", Some(&c), 2)).unwrap();
        assert!(page.preferences.is_none() && page.dead_letters.is_empty());
        seen.extend(
            page.items
                .iter()
                .map(|d| d["itemKey"].as_str().unwrap().to_owned()),
        );
        cursor = page.next_cursor;
    }
    seen.sort();
    // The tombstone is stored too, so it is exported.
    assert_eq!(seen, ["archived", "gone", "live", "merged", "read"]);
}

#[test]
fn the_sweep_takes_a_write_that_slipped_past_the_fence_and_keeps_the_new_inbox() {
    let stack = Stack::start();
    let svc = stack.notify_service(true);
    let t = now_ms();
    create(&svc, event("sam", "a", "bo", t - 10), t - 10);
    let first = block_on(svc.erase_owner("sam", &NoHubs, 40, t)).unwrap();
    assert_eq!(
        (first.state, first.step),
        (JobState::Running, erasure::Step::Sweep)
    );
    // A write that checked the fence before it was raised lands now (the store, unchecked).
    let slipped = NotificationEvent::new(
        event("sam", "slipped", "cy", t - 1),
        svc.store().config(),
        t,
    )
    .unwrap();
    block_on(svc.store().create(&slipped, t + 5)).unwrap();
    // And the user starts again after the erasure.
    create(&svc, event("sam", "fresh", "bo", t + 1), t + 10);
    // Not yet: the sweep waits for its minute.
    let waiting = block_on(svc.erase_owner("sam", &NoHubs, 40, t + 30_000)).unwrap();
    assert_eq!(waiting.step, erasure::Step::Sweep);
    let done = block_on(svc.erase_owner("sam", &NoHubs, 40, t + 61_000)).unwrap();
    assert_eq!(done.state, JobState::Done);
    let left: Vec<Value> = all(&stack, &svc.store().config().collections().items)
        .into_iter()
        .filter(|d| d["owner"] == "sam")
        .collect();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["itemKey"], "fresh");
}
