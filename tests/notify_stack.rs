//! The notification flow against the local stack, asserting Data API round trips per operation.

mod stack_support;

use egn_core::backend::ejson;
use egn_core::backend::native::{block_on, UreqClient};
use egn_core::dedup::{self, DedupConfig};
use egn_core::notify::document::field;
use egn_core::notify::store::NotificationStore;
use egn_core::notify::Deferred;
use egn_core::notify::{
    summary, view, CreateOutcome, Flag, ListParams, NewEvent, NewSender, NotificationEvent,
    NotifyConfig, NotifyError, RetractOutcome, Target,
};
use egn_http::notify_routes;
use serde_json::{json, Value};
use stack_support::{dedup, now_ms, stored, write_clock, Stack};

fn event(cfg: &NotifyConfig, owner: &str, item: &str, sender: &str, t: i64) -> NotificationEvent {
    NotificationEvent::new(
        stack_support::like_at(owner, item, sender, t),
        cfg,
        now_ms(),
    )
    .unwrap()
}

fn setup(stack: &Stack, cfg: NotifyConfig) -> NotificationStore<UreqClient> {
    let store = stack.store(cfg);
    stack.reset_stats();
    store
}

#[test]
fn create_merges_senders_once_and_caps_origins() {
    let stack = Stack::start();
    let cfg = NotifyConfig {
        origins_cap: 3,
        ..NotifyConfig::default()
    };
    let store = setup(&stack, cfg.clone());
    let t = now_ms();
    let create = |s: &str, dt: i64| {
        block_on(store.create(&event(&cfg, "u1", "post:1", s, t + dt), write_clock())).unwrap()
    };

    assert_eq!(create("ana", 0), CreateOutcome::Created);
    assert_eq!(
        stack.data_api_calls(),
        json!({"updateOne": 1}),
        "create = 1 call"
    );
    assert_eq!(create("ben", 1), CreateOutcome::Merged);
    stack.reset_stats();
    assert_eq!(create("ana", 2), CreateOutcome::AlreadyApplied);
    assert_eq!(
        stack.data_api_calls(),
        json!({"updateOne": 2}),
        "repeat = duplicate key, one confirming retry"
    );
    let doc = stored(&store, "u1", "post:1").unwrap();
    assert_eq!(doc[field::ORIGINS_COUNT], 2);
    assert_eq!(summary(&doc).unwrap(), "BEN and ANA liked your post");

    // Past the cap: count stays true, the newest `cap` origins (by event time) are kept.
    for (s, dt) in [("cy", 5), ("dee", 3), ("eve", 4)] {
        assert_eq!(create(s, dt), CreateOutcome::Merged);
    }
    let doc = stored(&store, "u1", "post:1").unwrap();
    assert_eq!(doc[field::ORIGINS_COUNT], 5);
    let kept: Vec<&str> = doc[field::ORIGINS]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["s"].as_str().unwrap())
        .collect();
    assert_eq!(kept, ["cy", "eve", "dee"]);
    assert_eq!(summary(&doc).unwrap(), "CY and 4 others liked your post");
    assert_eq!(
        ejson::date_ms(&doc["createdTime"]),
        Some(t + 5),
        "createdTime only moves forward"
    );
    assert_eq!(doc["_id"].as_str().unwrap().len(), 16);
    assert_eq!(doc["read"], false);
}

#[test]
fn concurrent_creates_of_a_new_item_keep_every_sender() {
    let stack = Stack::start();
    let cfg = NotifyConfig::default();
    let store = setup(&stack, cfg.clone());
    let t = now_ms();
    // 8 senders hit a missing item at once. (The emulator serialises writes, so the duplicate-key
    // race of real MongoDB is covered by `classify_create_result`'s unit test; this checks that
    // concurrent creates keep every sender and count each once.)
    std::thread::scope(|sc| {
        for i in 0..8 {
            let (store, cfg) = (&store, &cfg);
            sc.spawn(move || {
                block_on(store.create(
                    &event(cfg, "u", "hot", &format!("s{i}"), t + i),
                    write_clock(),
                ))
                .unwrap()
            });
        }
    });
    let doc = stored(&store, "u", "hot").unwrap();
    assert_eq!(doc[field::ORIGINS_COUNT], 8);
    assert_eq!(doc[field::ORIGINS].as_array().unwrap().len(), 8);
}

#[test]
fn retract_rerenders_then_deletes_the_last_origin() {
    let stack = Stack::start();
    let cfg = NotifyConfig::default();
    let store = setup(&stack, cfg.clone());
    let t = now_ms();
    // Retractions at an explicit time after the creates' events, and a late create between
    // them: nothing depends on how many milliseconds the calls take.
    let retracted_at = t + 1_000;
    for (i, s) in ["ana", "ben", "cy"].iter().enumerate() {
        block_on(store.create(&event(&cfg, "u1", "post:1", s, t + i as i64), write_clock()))
            .unwrap();
    }
    stack.reset_stats();
    assert_eq!(
        block_on(store.retract("u1", "post:1", "cy", retracted_at)).unwrap(),
        RetractOutcome::Updated
    );
    assert_eq!(
        stack.data_api_calls(),
        json!({"updateOne": 1}),
        "merged item: 1 call"
    );
    let doc = stored(&store, "u1", "post:1").unwrap();
    assert_eq!(summary(&doc).unwrap(), "BEN and ANA liked your post");
    assert_eq!(doc[field::ORIGINS_COUNT], 2);

    assert_eq!(
        block_on(store.retract("u1", "post:1", "cy", retracted_at)).unwrap(),
        RetractOutcome::NotFound
    );
    assert_eq!(
        block_on(store.retract("u1", "post:1", "ana", retracted_at)).unwrap(),
        RetractOutcome::Updated
    );
    stack.reset_stats();
    assert_eq!(
        block_on(store.retract("u1", "post:1", "ben", retracted_at)).unwrap(),
        RetractOutcome::Deleted
    );
    assert_eq!(
        stack.data_api_calls(),
        json!({"updateOne": 2}),
        "last origin: 2 calls"
    );
    let tomb = stored(&store, "u1", "post:1").unwrap();
    assert_eq!(
        (tomb["deleted"].clone(), tomb[field::ORIGINS_COUNT].clone()),
        (json!(true), json!(0))
    );
    // A create for an event older than the retraction (delivered late) stays out…
    let late =
        block_on(store.create(&event(&cfg, "u1", "post:1", "ben", t + 9), write_clock())).unwrap();
    assert_eq!(late, CreateOutcome::AlreadyApplied);
    assert_eq!(stored(&store, "u1", "post:1").unwrap()["deleted"], true);
    // …while a new event (the sender acted again) revives the item from its tombstone.
    let again = block_on(store.create(
        &event(&cfg, "u1", "post:1", "ben", retracted_at + 1),
        write_clock(),
    ))
    .unwrap();
    assert_eq!(again, CreateOutcome::Merged);
    let doc = stored(&store, "u1", "post:1").unwrap();
    assert_eq!(
        (doc["deleted"].clone(), doc[field::ORIGINS_COUNT].clone()),
        (json!(false), json!(1))
    );
    assert_eq!(summary(&doc).unwrap(), "BEN liked your post");
    assert!(matches!(
        block_on(store.retract("", "x", "y", now_ms())),
        Err(NotifyError::Missing { field: "owner" })
    ));
}

#[test]
fn list_pages_are_stable_under_concurrent_inserts() {
    let stack = Stack::start();
    let cfg = NotifyConfig::default();
    let store = setup(&stack, cfg.clone());
    let t = now_ms();
    for i in 0..25 {
        block_on(store.create(
            &event(&cfg, "u1", &format!("item:{i:02}"), "ana", t + i),
            write_clock(),
        ))
        .unwrap();
    }
    // Noise: another owner, and an expired item of ours (TTL of 1 s, event 10 s old).
    block_on(store.create(&event(&cfg, "u2", "other", "ana", t), write_clock())).unwrap();
    let short = NotificationStore::new(
        stack.data_api(),
        NotifyConfig {
            ttl_ms: 1_000,
            ..cfg.clone()
        },
    );
    block_on(short.create(
        &event(&cfg, "u1", "expired", "ana", t - 10_000),
        write_clock(),
    ))
    .unwrap();

    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        stack.reset_stats();
        let p = ListParams {
            limit: 10,
            cursor: cursor.clone(),
            ..ListParams::default()
        };
        let page = block_on(store.list("u1", &p, false, now_ms())).unwrap();
        assert_eq!(
            stack.data_api_calls(),
            json!({"find": 1}),
            "one call per page"
        );
        pages += 1;
        seen.extend(page.items.iter().map(|d| {
            (
                d["itemKey"].as_str().unwrap().to_owned(),
                d["revision"].as_i64().unwrap(),
            )
        }));
        assert!(page
            .items
            .iter()
            .all(|d| d[field::ORIGINS].as_array().unwrap().len() <= cfg.list_origins as usize));
        // Concurrent writers: new items arrive between page reads.
        block_on(store.create(
            &event(&cfg, "u1", &format!("new:{pages}"), "ben", t + 100),
            write_clock(),
        ))
        .unwrap();
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    // Newest first by revision (write time in ms plus hash bits, so two writes in the same
    // millisecond may order either way), no gaps, no repeats, no late arrivals, no expired.
    assert!(
        seen.windows(2).all(|w| w[0].1 >= w[1].1),
        "revisions descend: {seen:?}"
    );
    let mut keys: Vec<String> = seen.into_iter().map(|(k, _)| k).collect();
    keys.sort();
    let expected: Vec<String> = (0..25).map(|i| format!("item:{i:02}")).collect();
    assert_eq!(
        keys, expected,
        "each item exactly once, no late arrivals, no expired"
    );

    // A fresh first page shows the late arrivals on top.
    let first = block_on(store.list(
        "u1",
        &ListParams {
            limit: 3,
            ..ListParams::default()
        },
        false,
        now_ms(),
    ))
    .unwrap();
    assert!(first.items[0]["itemKey"]
        .as_str()
        .unwrap()
        .starts_with("new:"));
    assert!(matches!(
        block_on(store.list(
            "u1",
            &ListParams {
                cursor: Some("garbage".into()),
                ..ListParams::default()
            },
            true,
            now_ms()
        )),
        Err(NotifyError::InvalidCursor)
    ));
}

#[test]
fn unread_count_and_marks() {
    let stack = Stack::start();
    let cfg = NotifyConfig::default();
    let store = setup(&stack, cfg.clone());
    let t = now_ms();
    for i in 0..4 {
        block_on(store.create(
            &event(&cfg, "u1", &format!("i{i}"), "ana", t + i),
            write_clock(),
        ))
        .unwrap();
    }
    stack.reset_stats();
    assert_eq!(
        block_on(store.counts("u1", None, now_ms())).unwrap().unread,
        4
    );
    assert_eq!(stack.data_api_calls(), json!({"aggregate": 1}));
    assert_eq!(
        block_on(store.counts("u1", Some("system"), now_ms()))
            .unwrap()
            .unread,
        0
    );

    stack.reset_stats();
    assert_eq!(
        block_on(store.mark("u1", Target::Item("i0"), Flag::Read, true, now_ms())).unwrap(),
        1
    );
    assert_eq!(stack.data_api_calls(), json!({"updateOne": 1}));
    assert_eq!(
        block_on(store.counts("u1", None, now_ms())).unwrap().unread,
        3
    );
    assert_eq!(
        block_on(store.mark("u1", Target::Item("i1"), Flag::Archived, true, now_ms())).unwrap(),
        1
    );
    assert_eq!(
        block_on(store.counts("u1", None, now_ms())).unwrap().unread,
        2,
        "archived items don't count"
    );
    let archive = block_on(store.list(
        "u1",
        &ListParams {
            archived: true,
            ..ListParams::default()
        },
        false,
        now_ms(),
    ))
    .unwrap();
    assert_eq!(archive.items.len(), 1);
    let unread = block_on(store.list(
        "u1",
        &ListParams {
            unread_only: true,
            ..ListParams::default()
        },
        false,
        now_ms(),
    ))
    .unwrap();
    assert_eq!(unread.items.len(), 2);

    stack.reset_stats();
    assert_eq!(
        block_on(store.mark("u1", Target::All, Flag::Read, true, now_ms())).unwrap(),
        3
    );
    assert_eq!(stack.data_api_calls(), json!({"updateMany": 1}));
    assert_eq!(
        block_on(store.counts("u1", None, now_ms())).unwrap().unread,
        0
    );
    // New activity on a read item makes it unread again.
    block_on(store.create(&event(&cfg, "u1", "i0", "ben", t + 9), write_clock())).unwrap();
    assert_eq!(
        block_on(store.counts("u1", None, now_ms())).unwrap().unread,
        1
    );

    assert!(block_on(store.delete("u1", "i0", now_ms())).unwrap());
    assert!(!block_on(store.delete("u1", "i0", now_ms())).unwrap());
}

fn body(owner: &str, item: &str, sender: &str, event_id: &str) -> Vec<u8> {
    json!({"owner": owner, "itemKey": item, "serviceType": "feed", "categoryType": "social",
           "notificationType": "like", "templateType": "default", "eventId": event_id,
           "sender": {"id": sender, "name": sender.to_uppercase()}, "createdTimeMsec": now_ms()})
    .to_string()
    .into_bytes()
}

#[test]
fn create_flow_dedups_defers_the_commit_and_releases_on_write_failure() {
    let stack = Stack::start();
    let cfg = NotifyConfig::default();
    let svc = stack.service_over(setup(&stack, cfg.clone()), Some(dedup()));
    let redis = stack.redis();
    let ev = body("u1", "p", "ana", "e-1");

    // The write fails before applying: the reservation is released, so the retry is not a duplicate.
    stack.data_api_faults(
        r#"{"rules":[{"match":"updateOne","mode":"fail_before","count":1,"status":503}]}"#,
    );
    let (r, deferred) = block_on(notify_routes::post_event(&svc, &ev, None, now_ms()));
    assert_eq!(r.unwrap_err().status(), 503);
    assert!(
        deferred.is_empty(),
        "nothing to commit after a failed write"
    );

    stack.reset_stats();
    let (r, deferred) = block_on(notify_routes::post_event(&svc, &ev, None, now_ms()));
    let r = r.unwrap();
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (201, Some("created"))
    );
    // The senders' index entry, then the item: the first attempt failed at the entry, after its
    // reservation had put ana on the roster, and the retry (same event time) writes it again.
    assert_eq!(stack.data_api_calls(), json!({"updateOne": 2}));
    assert_eq!(
        stack.redis_calls(),
        json!({"evalsha": 1}),
        "dedup = one EVALSHA before the write"
    );
    assert!(
        matches!(deferred.as_slice(), [Deferred::Commit(..)]),
        "{deferred:?}"
    );
    // Until the deferred commit runs, the id is leased: a concurrent redelivery is written
    // anyway and absorbed by the upsert's filter (never stranded behind a lease).
    let (r2, d2) = block_on(notify_routes::post_event(&svc, &ev, None, now_ms()));
    assert_eq!(r2.unwrap().body["status"], "already_applied");
    assert!(d2.is_empty());
    assert!(block_on(svc.run_deferred(deferred)).is_empty());
    stack.reset_stats();
    let (r, _) = block_on(notify_routes::post_event(&svc, &ev, None, now_ms()));
    assert_eq!(r.unwrap().body["status"], "duplicate");
    assert_eq!(
        stack.data_api_total(),
        0,
        "a duplicate never reaches the Data API"
    );

    // fail_after (applied, then 503): the retry reaches the write again and is absorbed by the
    // origin filter: the item is not double counted. (The item's write, not the senders' index
    // entry before it.)
    let ev2 = body("u1", "p", "ben", "e-2");
    stack.data_api_faults(
        r#"{"rules":[{"match":"updateOne:notifications","mode":"fail_after","count":1,"status":503}]}"#,
    );
    assert!(
        block_on(notify_routes::post_event(&svc, &ev2, None, now_ms()))
            .0
            .is_err()
    );
    let dcfg = DedupConfig::for_rate(10_000, 600_000);
    let parsed: NewEvent = serde_json::from_slice(&ev2).unwrap();
    let slot2 = dedup::slot(&dcfg, &parsed.event_id, parsed.created_time_msec);
    // Released = the field is gone (not merely a lease that will run out).
    assert_eq!(
        block_on(redis.command(&["HEXISTS", &slot2.key, &slot2.field])).unwrap(),
        json!(0),
        "released"
    );
    let (r, _) = block_on(notify_routes::post_event(&svc, &ev2, None, now_ms()));
    assert_eq!(r.unwrap().body["status"], "already_applied");
    assert_eq!(
        stored(svc.store(), "u1", "p").unwrap()[field::ORIGINS_COUNT],
        2
    );
}

#[test]
fn idempotency_key_claims_before_and_records_after() {
    let stack = Stack::start();
    let svc = stack.service_over(setup(&stack, NotifyConfig::default()), Some(dedup()));
    let ev = body("u2", "p", "ana", "e-3");
    let (r, deferred) = block_on(notify_routes::post_event(&svc, &ev, Some("k-1"), now_ms()));
    let first = r.unwrap();
    assert!(!first.replayed);
    assert!(matches!(
        deferred.as_slice(),
        [Deferred::Commit(..), Deferred::StoreResult { .. }]
    ));
    // While the record is not yet stored, the key is in flight.
    let (r, _) = block_on(notify_routes::post_event(&svc, &ev, Some("k-1"), now_ms()));
    assert_eq!(r.unwrap_err().code, "idempotency_in_flight");
    assert!(block_on(svc.run_deferred(deferred)).is_empty());
    let (r, _) = block_on(notify_routes::post_event(&svc, &ev, Some("k-1"), now_ms()));
    let again = r.unwrap();
    assert!(again.replayed);
    assert_eq!((again.status, &again.body), (first.status, &first.body));
    let (r, _) = block_on(notify_routes::post_event(
        &svc,
        &body("u2", "p", "bo", "e-4"),
        Some("k-1"),
        now_ms(),
    ));
    assert_eq!(r.unwrap_err().code, "idempotency_key_reused");
    // A 5xx frees the key: the retry runs.
    stack.data_api_faults(
        r#"{"rules":[{"match":"updateOne","mode":"fail_before","count":1,"status":503}]}"#,
    );
    let ev5 = body("u2", "q", "cy", "e-5");
    let (r, deferred) = block_on(notify_routes::post_event(&svc, &ev5, Some("k-2"), now_ms()));
    assert_eq!(r.unwrap_err().status(), 503);
    assert!(matches!(deferred.as_slice(), [Deferred::FreeKey(_)]));
    assert!(block_on(svc.run_deferred(deferred)).is_empty());
    let (r, _) = block_on(notify_routes::post_event(&svc, &ev5, Some("k-2"), now_ms()));
    assert_eq!(r.unwrap().status, 201);
}

#[test]
fn without_redis_events_are_written_and_keys_run_unguarded() {
    let stack = Stack::start();
    let svc = stack.service_over(setup(&stack, NotifyConfig::default()), None);
    let ev = body("u3", "p", "ana", "e-6");
    let (r, deferred) = block_on(notify_routes::post_event(&svc, &ev, Some("k-3"), now_ms()));
    assert_eq!(r.unwrap().status, 201);
    assert!(deferred.is_empty());
    let (r, _) = block_on(notify_routes::post_event(&svc, &ev, Some("k-3"), now_ms()));
    let r = r.unwrap();
    assert_eq!(
        r.body["status"], "already_applied",
        "the upsert alone is idempotent"
    );
    assert!(!r.replayed);
    assert_eq!(
        block_on(notify_routes::post_event(
            &svc,
            &ev,
            Some("bad key"),
            now_ms()
        ))
        .0
        .unwrap_err()
        .code,
        "invalid_idempotency_key"
    );
    assert_eq!(stack.redis_calls(), json!({}), "Redis never called");
}

#[test]
fn housekeeping_trims_and_expires_in_batches() {
    let stack = Stack::start();
    let cfg = NotifyConfig::default();
    let store = setup(&stack, cfg.clone());
    let t = now_ms();
    for i in 0..7 {
        block_on(store.create(
            &event(&cfg, "u1", &format!("i{i}"), "ana", t + i),
            write_clock(),
        ))
        .unwrap();
    }
    assert_eq!(block_on(store.trim_owner("u1", 5, now_ms())).unwrap(), 2);
    let left = block_on(store.list("u1", &ListParams::default(), false, now_ms())).unwrap();
    let keys: Vec<&str> = left
        .items
        .iter()
        .map(|d| d["itemKey"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["i6", "i5", "i4", "i3", "i2"]);
    assert_eq!(block_on(store.trim_owner("u1", 5, now_ms())).unwrap(), 0);
    // Items expiring "now + 1 h" are expired from the point of view of a clock 31 days ahead.
    let later = t + 31 * 24 * 3_600_000;
    assert_eq!(block_on(store.delete_expired_batch(later, 3)).unwrap(), 3);
    assert_eq!(block_on(store.delete_expired_batch(later, 3)).unwrap(), 2);
    assert_eq!(block_on(store.delete_expired_batch(later, 3)).unwrap(), 0);
}

#[test]
fn trimming_keeps_an_item_that_ties_with_the_cutoff() {
    let stack = Stack::start();
    let cfg = NotifyConfig::default();
    let store = setup(&stack, cfg.clone());
    // Two items written in the same millisecond about events of the same time: their revisions
    // tie, the list ranks them by `_id`, and the trim must cut at the same place.
    let (t, w) = (now_ms(), write_clock());
    for k in ["tie-a", "tie-b"] {
        block_on(store.create(&event(&cfg, "u1", k, "ana", t), w)).unwrap();
    }
    block_on(store.create(&event(&cfg, "u1", "newer", "ana", t), write_clock())).unwrap();
    let before = block_on(store.list("u1", &ListParams::default(), false, now_ms())).unwrap();
    let ranked: Vec<&str> = before
        .items
        .iter()
        .map(|d| d["itemKey"].as_str().unwrap())
        .collect();
    assert_eq!(before.items[1]["revision"], before.items[2]["revision"]);
    assert_eq!(block_on(store.trim_owner("u1", 2, now_ms())).unwrap(), 1);
    let after = block_on(store.list("u1", &ListParams::default(), false, now_ms())).unwrap();
    let kept: Vec<&str> = after
        .items
        .iter()
        .map(|d| d["itemKey"].as_str().unwrap())
        .collect();
    assert_eq!(kept, ranked[..2], "the newest two as listed");
}

#[test]
fn housekeeping_stays_within_its_call_budget() {
    let stack = Stack::start();
    let cfg = NotifyConfig::default();
    let store = setup(&stack, cfg.clone());
    let t = now_ms();
    for o in ["h1", "h2", "h3"] {
        for i in 0..4 {
            block_on(store.create(
                &event(&cfg, o, &format!("i{i}"), "ana", t + i),
                write_clock(),
            ))
            .unwrap();
        }
    }
    // Budget 4: the owners query (1) and one trim (2); nothing else fits.
    stack.reset_stats();
    let r = block_on(store.housekeeping(2, 4, 500, t)).unwrap();
    assert!(r.budget_exhausted);
    assert_eq!((r.trimmed, r.calls), (2, 3));
    assert_eq!(stack.data_api_total(), 3, "the budget counts real calls");
    // The next run finishes the trims (and finds nothing expired yet, and no senders' index
    // entry due: one call).
    stack.reset_stats();
    let r = block_on(store.housekeeping(2, 40, 500, t)).unwrap();
    assert!(!r.budget_exhausted);
    assert_eq!((r.trimmed, r.expired, r.calls), (4, 0, 7));
    assert_eq!(stack.data_api_total(), 7);
    // 31 days on, the remaining 6 items have expired.
    stack.reset_stats();
    let r = block_on(store.housekeeping(2, 40, 500, t + 31 * 24 * 3_600_000)).unwrap();
    assert_eq!((r.trimmed, r.expired, r.calls), (0, 6, 4));
    assert_eq!(stack.data_api_total(), 4);
}

#[test]
fn largest_document_at_the_origins_cap() {
    let stack = Stack::start();
    let cfg = NotifyConfig::default();
    let store = setup(&stack, cfg.clone());
    let t = now_ms();
    let big = |i: usize| NewEvent {
        owner: "o".repeat(128),
        item_key: "k".repeat(256),
        service_type: "s".repeat(64),
        category_type: "social".into(),
        notification_type: "n".repeat(64),
        template_type: "t".repeat(64),
        event_id: format!("{i:0>128}"),
        sender: NewSender {
            id: format!("{i:s>128}"),
            name: "N".repeat(100),
            avatar: Some(format!("https://{}", "a".repeat(504))),
        },
        landing: Some(format!("https://{}", "l".repeat(504))),
        message_arguments: (0..16)
            .map(|k| (format!("{k:k>32}"), "v".repeat(256)))
            .collect(),
        created_time_msec: t,
    };
    let typical = |i: usize| NewEvent {
        owner: "user-1234567".into(),
        item_key: "post:98765432".into(),
        service_type: "feed".into(),
        category_type: "social".into(),
        notification_type: "like".into(),
        template_type: "default".into(),
        event_id: format!("evt-{i:012}"),
        sender: NewSender {
            id: format!("user-{i:07}"),
            name: "Ana Example".into(),
            avatar: Some(format!("https://cdn.example.com/a/{i:07}.jpg")),
        },
        landing: Some("app://post/98765432".into()),
        message_arguments: [("post".to_owned(), "Sunset at the beach".to_owned())].into(),
        created_time_msec: t,
    };
    for (label, make) in [
        (
            "worst case (every field at its limit)",
            &big as &dyn Fn(usize) -> NewEvent,
        ),
        ("typical", &typical),
    ] {
        let mut owner = String::new();
        for i in 0..cfg.origins_cap as usize + 5 {
            let ev = NotificationEvent::new(make(i), &cfg, now_ms()).unwrap();
            owner = ev.owner().to_owned();
            block_on(store.create(&ev, now_ms())).unwrap();
        }
        let doc = block_on(store.api().find_one(
            &cfg.collection,
            &json!({"owner": owner}),
            None,
            None,
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            doc[field::ORIGINS].as_array().unwrap().len(),
            cfg.origins_cap as usize
        );
        assert_eq!(doc[field::ORIGINS_COUNT], cfg.origins_cap + 5);
        let ejson_len = serde_json::to_vec(&doc).unwrap().len();
        let bson_len = bson_size(&doc).expect("pymongo's bson in the stack venv");
        println!(
            "max document at origins cap {} — {label}: EJSON {ejson_len} B, BSON {bson_len} B",
            cfg.origins_cap
        );
        // Sizes measured when this was written (15.9 KB typical, 150 KB worst case).
        let quoted = if label == "typical" { 15_900 } else { 150_000 };
        assert!(
            bson_len.abs_diff(quoted) * 50 <= quoted,
            "{label}: BSON {bson_len} B is more than 2% off the measured {quoted} B"
        );
        assert!(view(&doc).summary.unwrap().contains("and 104 others"));
    }
}

/// BSON size via pymongo's `bson` in the stack's venv (`None` if it cannot run).
fn bson_size(doc: &Value) -> Option<usize> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let py = concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python");
    let script = "import sys,bson\nfrom bson import json_util\nd=json_util.loads(sys.stdin.read())\nprint(len(bson.encode(d)))";
    // Back to EJSON a server understands: {"$date": ms} → canonical date.
    let mut doc = doc.clone();
    for k in ["createdTime", "expireAt"] {
        if let Some(ms) = ejson::date_ms(&doc[k]) {
            doc[k] = ejson::date(ms);
        }
    }
    let mut child = Command::new(py)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()?
        .write_all(doc.to_string().as_bytes())
        .ok()?;
    let out = child.wait_with_output().ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}
