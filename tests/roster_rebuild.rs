//! Short-lived rosters against the local stack (real redis-server behind the REST bridge, the
//! Data API emulator): the roster of an item whose document holds every sender expires after
//! `roster_idle_ms` without a change, and the next event on the item rebuilds it from the
//! document, so no count is lost or doubled. Expiry is what `DEL` does to the key, so the tests
//! delete it rather than wait a day; clocks are explicit.

mod stack_support;

use std::sync::atomic::{AtomicUsize, Ordering};

use egn_core::backend::native::{block_on, UreqClient};
use egn_core::backend::RedisRestClient;
use egn_core::dedup::{self, DedupConfig, MuteCheck};
use egn_core::notify::batch::EventOutcome;
use egn_core::notify::{
    batch, roster, view, CreateOutcome, Created, Deferred, NewEvent, NotificationEvent,
    NotificationView, NotifyConfig, NotifyService, Retraction,
};
use serde_json::{json, Value};
use stack_support::{now_ms, Stack};

const IDLE_MS: i64 = 24 * 3_600_000;

fn raw(item: &str, sender: &str, event_id: &str, t: i64) -> NewEvent {
    stack_support::like("u1", item, sender, event_id, t)
}

/// Leases (and so a new roster's grace) of 10 minutes: a slow machine cannot outlast them.
fn dedup_config() -> DedupConfig {
    DedupConfig {
        lease_ms: 600_000,
        ..DedupConfig::for_rate(10_000, 600_000)
    }
}

fn create(svc: &NotifyService<UreqClient>, ev: NewEvent) -> Created {
    let w = block_on(svc.create(ev, now_ms())).unwrap();
    assert!(block_on(svc.run_deferred(w.deferred)).is_empty());
    w.value
}

/// Senders s0, s1, … on `item`, one create each, at `t0`, `t0 + 1`, …
fn senders_on(svc: &NotifyService<UreqClient>, item: &str, n: i64, t0: i64) {
    for i in 0..n {
        let id = format!("{item}-{i}");
        create(svc, raw(item, &format!("s{i}"), &id, t0 + i));
    }
}

/// Runs the rebuild of `item`'s new roster of `generation` now.
fn rebuild_now(svc: &NotifyService<UreqClient>, item: &str, generation: Option<i64>) {
    let life = roster::life(svc.store().config(), dedup_config().lease_ms);
    let r = svc.redis().expect("Redis");
    block_on(roster::reseed(
        svc.store(),
        r,
        &life,
        generation,
        "u1",
        item,
    ))
    .unwrap();
}

fn retract(svc: &NotifyService<UreqClient>, item: &str, sender: &str, at: i64) {
    let r = Retraction {
        owner: "u1".into(),
        item_key: item.into(),
        sender_id: sender.into(),
    };
    let w = block_on(svc.retract(r, at)).unwrap();
    assert!(block_on(svc.run_deferred(w.deferred)).is_empty());
}

fn doc(svc: &NotifyService<UreqClient>, item: &str) -> Value {
    let store = svc.store();
    block_on(store.api().find_one(
        &store.config().collection,
        &json!({"owner": "u1", "itemKey": item}),
        None,
        None,
    ))
    .unwrap()
    .expect("the item exists")
}

fn item(svc: &NotifyService<UreqClient>, item: &str) -> NotificationView {
    view(&doc(svc, item))
}

fn count(svc: &NotifyService<UreqClient>, key: &str) -> (i64, bool) {
    let v = item(svc, key);
    (v.origins_count, v.origins_count_exact)
}

fn redis(r: &RedisRestClient<UreqClient>, cmd: &[&str]) -> Value {
    block_on(r.command(cmd)).unwrap()
}

/// What idle expiry does.
fn expire(r: &RedisRestClient<UreqClient>, item: &str) {
    assert_eq!(redis(r, &["DEL", &roster::key("u1", item)]), json!(1));
}

fn ttl(r: &RedisRestClient<UreqClient>, item: &str) -> i64 {
    redis(r, &["PTTL", &roster::key("u1", item)])
        .as_i64()
        .unwrap()
}

fn marked_new(r: &RedisRestClient<UreqClient>, item: &str) -> bool {
    redis(r, &["HEXISTS", &roster::key("u1", item), "f"]) == json!(1)
}

#[test]
fn an_expired_roster_is_rebuilt_from_the_document_without_losing_a_sender() {
    let stack = Stack::start();
    let svc = stack.service(NotifyConfig::default(), Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    senders_on(&svc, "p1", 5, t0);
    retract(&svc, "p1", "s1", t0 + 100);
    assert_eq!(count(&svc, "p1"), (4, true));
    // Small: it lives an idle day, not the item's life; the insert's commit dropped the mark.
    let left = ttl(&r, "p1");
    assert!(left > 0 && left <= IDLE_MS, "ttl {left}");
    assert!(!marked_new(&r, "p1"));

    // A new sender after expiry counts on top of the four the document holds.
    expire(&r, "p1");
    create(&svc, raw("p1", "s5", "a5", t0 + 200));
    assert_eq!(count(&svc, "p1"), (5, true));
    assert!(!marked_new(&r, "p1"), "the rebuild drops the mark");
    // A returning sender is not counted twice; a delayed create of the retracted one (older
    // than its retraction) stays refused.
    expire(&r, "p1");
    create(&svc, raw("p1", "s2", "b2", t0 + 300));
    assert_eq!(count(&svc, "p1"), (5, true));
    expire(&r, "p1");
    let late = create(&svc, raw("p1", "s1", "late1", t0 + 50));
    assert!(matches!(
        late,
        Created::Applied {
            outcome: CreateOutcome::AlreadyApplied,
            ..
        }
    ));
    assert_eq!(count(&svc, "p1"), (5, true));
    // A retraction after expiry: the others stay counted.
    expire(&r, "p1");
    retract(&svc, "p1", "s3", t0 + 400);
    assert_eq!(count(&svc, "p1"), (4, true));
    assert!(!marked_new(&r, "p1"));
    // The retracted sender comes back later than its retraction.
    expire(&r, "p1");
    create(&svc, raw("p1", "s1", "c1", t0 + 500));
    assert_eq!(count(&svc, "p1"), (5, true));
    let v = item(&svc, "p1");
    let mut on: Vec<&str> = v.origins.iter().map(|o| o.sender_id.as_str()).collect();
    on.sort_unstable();
    assert_eq!(on, ["s0", "s1", "s2", "s4", "s5"]);
}

#[test]
fn a_roster_the_document_cannot_rebuild_keeps_the_items_lifetime() {
    let stack = Stack::start();
    let cfg = NotifyConfig {
        origins_cap: 3,
        retracted_cap: 2,
        ..NotifyConfig::default()
    };
    let full = cfg.ttl_ms + cfg.tombstone_ttl_ms;
    let svc = stack.service(cfg, Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    senders_on(&svc, "small", 3, t0);
    assert!(ttl(&r, "small") <= IDLE_MS);
    // A fourth sender: the document keeps 3 origins, so only Redis knows them all.
    create(&svc, raw("small", "s3", "a3", t0 + 3));
    assert!(ttl(&r, "small") > full - 60_000, "past the cap");
    // Retractions up to the retracted cap: the document's list may have dropped one.
    senders_on(&svc, "quits", 2, t0);
    retract(&svc, "quits", "s0", t0 + 100);
    assert!(ttl(&r, "quits") <= IDLE_MS);
    retract(&svc, "quits", "s0", t0 + 101);
    assert!(ttl(&r, "quits") > full - 60_000, "at the retracted cap");
    assert_eq!(count(&svc, "small"), (4, true));
    assert_eq!(count(&svc, "quits"), (1, true));
}

#[test]
fn concurrent_writers_after_expiry_count_every_sender_once() {
    let stack = Stack::start();
    let svc = stack.service(NotifyConfig::default(), Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    senders_on(&svc, "p2", 20, t0);
    expire(&r, "p2");
    // 30 new senders and 10 returning ones, 8 writers at once: several may find the roster new.
    let jobs: Vec<NewEvent> = (10..50)
        .map(|i| raw("p2", &format!("s{i}"), &format!("b{i}"), t0 + 1_000 + i))
        .collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                while let Some(ev) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    create(&svc, ev.clone());
                }
            });
        }
    });
    assert_eq!(count(&svc, "p2"), (50, true));
    assert!(!marked_new(&r, "p2"));
}

#[test]
fn a_batch_on_an_expired_roster_is_counted_on_top_of_the_document() {
    let stack = Stack::start();
    let svc = stack.service(NotifyConfig::default(), Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    let evs = |range: std::ops::Range<usize>, tag: &str| -> Vec<_> {
        let raws: Vec<NewEvent> = range
            .map(|i| raw("p3", &format!("s{i}"), &format!("{tag}{i}"), t0 + i as i64))
            .collect();
        batch::validate_all(&raws, svc.store().config(), now_ms()).unwrap()
    };
    // A batch that inserts the item leaves its roster complete (no mark, no rebuild later).
    let report = block_on(svc.apply_batch(&evs(0..10, "a"), now_ms()));
    assert!(report
        .outcomes
        .iter()
        .all(|o| matches!(o, EventOutcome::Applied(_))));
    assert!(!marked_new(&r, "p3"));
    assert_eq!(count(&svc, "p3"), (10, true));
    expire(&r, "p3");
    // 5 returning senders and 10 new ones in one batch, after expiry.
    let report = block_on(svc.apply_batch(&evs(5..20, "b"), now_ms()));
    assert!(report
        .outcomes
        .iter()
        .all(|o| matches!(o, EventOutcome::Applied(_))));
    assert_eq!(count(&svc, "p3"), (20, true));
    assert!(!marked_new(&r, "p3"));
}

#[test]
fn only_the_creator_completes_a_new_roster_until_its_grace_runs_out() {
    let stack = Stack::start();
    let svc = stack.service(NotifyConfig::default(), Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    // a's call creates the item's roster; its commit (which marks it complete) has not run.
    let first = block_on(svc.create(raw("p4", "a", "a1", t0), now_ms())).unwrap();
    assert!(marked_new(&r, "p4"));
    // b lands meanwhile (a burst on a new post): written, and no rebuild of its own.
    stack.reset_stats();
    create(&svc, raw("p4", "b", "b1", t0 + 1));
    // b's entry in the senders' index (b joins the roster), then the item: no rebuild's find.
    assert_eq!(stack.data_api_calls(), json!({"updateOne": 2}));
    assert!(block_on(svc.run_deferred(first.deferred)).is_empty());
    assert!(!marked_new(&r, "p4"));
    assert_eq!(count(&svc, "p4"), (2, true));
    // A creator that never finished (its grace ended long ago): the next writer rebuilds.
    expire(&r, "p4");
    let key = roster::key("u1", "p4");
    redis(&r, &["HSET", &key, "f", "123 0", "n", "0", "v", "0"]);
    stack.reset_stats();
    create(&svc, raw("p4", "c", "c1", t0 + 2));
    // As before the senders' index (the rebuild's find, two writes), plus c's entry in it.
    assert_eq!(
        stack.data_api_calls(),
        json!({"updateOne": 3, "findOne": 1})
    );
    assert_eq!(count(&svc, "p4"), (3, true));
    assert!(!marked_new(&r, "p4"));
}

/// `ev`'s reservation alone (its sender joins the roster): the write is the test's to make.
fn reserve(
    r: &RedisRestClient<UreqClient>,
    cfg: &NotifyConfig,
    ev: &NotificationEvent,
) -> (dedup::Slot, dedup::Tally) {
    let dedup = dedup_config();
    let life = roster::life(cfg, dedup.lease_ms);
    let slot = dedup::slot(&dedup, ev.event_id(), ev.created_time_msec());
    let mute = MuteCheck {
        key: "np:u1",
        members: &[],
        fence: None,
        sender_fence: None,
    };
    let check = roster::check(ev);
    let admission = block_on(dedup::reserve_unless_muted(
        r,
        &slot,
        dedup.lease_ms,
        &mute,
        Some((&check, &life)),
        None,
    ))
    .unwrap();
    (slot, admission.tally.unwrap())
}

fn senders(svc: &NotifyService<UreqClient>, key: &str) -> Vec<String> {
    let mut on: Vec<String> = item(svc, key)
        .origins
        .iter()
        .map(|o| o.sender_id.clone())
        .collect();
    on.sort_unstable();
    on
}

/// A create reserved before its sender's retraction and written after `retracted_cap` more
/// retractions of the item landed: the document's list has dropped the sender by then, so only
/// the roster can keep it out. (In the queue's fault test, 200 retractions of one hot item
/// brought a retracted sender back, rarely.) The undo of a write made without the guard takes
/// the sender out again, at the retraction's time. Senders never retracted still get in, one
/// by one and in a batch, though the list cannot vouch for them either.
#[test]
fn a_create_delayed_past_the_retracted_cap_stays_out_and_others_still_get_in() {
    let stack = Stack::start();
    let cfg = NotifyConfig {
        retracted_cap: 2,
        ..NotifyConfig::default()
    };
    let svc = stack.service(cfg.clone(), Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    senders_on(&svc, "p6", 4, t0);
    let late = NotificationEvent::new(raw("p6", "late", "late1", t0 + 10), &cfg, now_ms()).unwrap();
    let (_, tally) = reserve(&r, &cfg, &late);
    let t1 = now_ms();
    for (k, s) in ["late", "s0", "s1"].into_iter().enumerate() {
        retract(&svc, "p6", s, t1 + k as i64);
    }
    let store = svc.store();
    let doc = doc(&svc, "p6");
    let listed: Vec<&str> = doc["x"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["s"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["s1", "s0"], "the list dropped late's retraction");
    let w = block_on(roster::create_checked(
        store,
        Some(&r),
        &late,
        Some(tally),
        now_ms(),
    ))
    .unwrap();
    assert_eq!(w, CreateOutcome::AlreadyApplied);
    assert_eq!(senders(&svc, "p6"), ["s2", "s3"]);
    assert_eq!(count(&svc, "p6"), (2, true));

    // The undo, on the state it repairs: a write without the guard landed after the retraction
    // (what the document alone let happen before).
    let unguarded = block_on(store.create_counted(&late, Some(tally), now_ms())).unwrap();
    assert_eq!(unguarded, CreateOutcome::Merged);
    assert_eq!(senders(&svc, "p6"), ["late", "s2", "s3"]);
    let undone = block_on(roster::undo_retracted(store, &r, &[&late])).unwrap();
    assert_eq!(undone, [true]);
    assert_eq!(senders(&svc, "p6"), ["s2", "s3"]);
    assert_eq!(count(&svc, "p6"), (2, true));
    // The undo counts from the retraction's time, not the late writer's: a newer event of the
    // same sender is welcome.
    create(&svc, raw("p6", "late", "late2", t1 + 3));
    assert_eq!(senders(&svc, "p6"), ["late", "s2", "s3"]);
    // An undo whose question came before late2 joined (the roster read as retracted) takes
    // back only late1's origin, which is not there: late2's stays.
    let (key, f) = (roster::key("u1", "p6"), roster::field("late"));
    let joined = redis(&r, &["HGET", &key, &f]);
    redis(&r, &["HSET", &key, &f, &(-(t1 + 1)).to_string()]);
    let undone = block_on(roster::undo_retracted(store, &r, &[&late])).unwrap();
    redis(&r, &["HSET", &key, &f, joined.as_str().unwrap()]);
    assert_eq!(undone, [true]);
    assert_eq!(senders(&svc, "p6"), ["late", "s2", "s3"]);

    create(&svc, raw("p6", "new", "new1", t0 + 20));
    let raws = [
        raw("p6", "g1", "g1", t0 + 30),
        raw("p6", "g2", "g2", t0 + 31),
    ];
    let evs = batch::validate_all(&raws, &cfg, now_ms()).unwrap();
    let report = block_on(svc.apply_batch(&evs, now_ms()));
    assert_eq!(
        report.outcomes,
        vec![EventOutcome::Applied(CreateOutcome::Merged); 2]
    );
    assert_eq!(senders(&svc, "p6"), ["g1", "g2", "late", "new", "s2", "s3"]);
    assert_eq!(count(&svc, "p6"), (6, true));
}

#[test]
fn a_document_another_writer_inserted_under_the_new_roster_is_not_counted_twice() {
    let stack = Stack::start();
    let cfg = NotifyConfig {
        origins_cap: 3,
        ..NotifyConfig::default()
    };
    let svc = stack.service(cfg.clone(), Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    // a's reservation creates the roster of a new item; a's write is late.
    let a = NotificationEvent::new(raw("p5", "a", "a1", t0), &cfg, now_ms()).unwrap();
    let (slot, tally) = reserve(&r, &cfg, &a);
    assert!(tally.fresh && tally.generation.is_some());
    // Five others land first: b's write inserts the item, and the cap drops two origins.
    for s in ["b", "c", "d", "e", "f"] {
        create(&svc, raw("p5", s, &format!("{s}1"), t0 + 10));
    }
    assert!(marked_new(&r, "p5"), "only a completes the roster");
    let w = block_on(svc.store().create_counted(&a, Some(tally), now_ms())).unwrap();
    assert_eq!(w, CreateOutcome::Merged);
    let rebuild = Deferred::Rebuild {
        owner: "u1".into(),
        item_key: "p5".into(),
        generation: tally.generation,
        commit: Some(slot),
    };
    assert!(block_on(svc.run_deferred(vec![rebuild])).is_empty());
    assert_eq!(count(&svc, "p5"), (6, true), "the roster had every sender");
    assert!(!marked_new(&r, "p5"));
}

fn version(r: &RedisRestClient<UreqClient>, item: &str) -> i64 {
    let v = redis(r, &["HGET", &roster::key("u1", item), "v"]);
    v.as_str().unwrap().parse().unwrap()
}

#[test]
fn a_late_event_on_an_item_at_the_cap_after_expiry_is_counted_once() {
    let stack = Stack::start();
    let cfg = NotifyConfig {
        origins_cap: 3,
        ..NotifyConfig::default()
    };
    let svc = stack.service(cfg, Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    for (i, s) in ["a", "b", "c"].iter().enumerate() {
        create(
            &svc,
            raw("p6", s, &format!("{s}1"), t0 + 10 * (i as i64 + 1)),
        );
    }
    expire(&r, "p6");
    // x's event is older than every stored origin (a late redelivery): a capped push would
    // drop it at once, and the document's count alone would then look like a dropped sender.
    create(&svc, raw("p6", "x", "x1", t0));
    assert_eq!(count(&svc, "p6"), (4, true));
    // The next capped write trims the document back to the cap.
    create(&svc, raw("p6", "y", "y1", t0 + 100));
    assert_eq!(count(&svc, "p6"), (5, true));
    assert_eq!(item(&svc, "p6").origins.len(), 3);
}

#[test]
fn a_second_rebuild_of_one_roster_changes_nothing_but_its_version() {
    let stack = Stack::start();
    let svc = stack.service(NotifyConfig::default(), Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    senders_on(&svc, "p7", 3, t0);
    expire(&r, "p7");
    // d's create finds the roster new; its rebuild is held back and run twice.
    let w = block_on(svc.create(raw("p7", "d", "d1", t0 + 1), now_ms())).unwrap();
    let generation = match w.deferred.as_slice() {
        [Deferred::Rebuild { generation, .. }] => *generation,
        other => panic!("a rebuild is deferred: {other:?}"),
    };
    rebuild_now(&svc, "p7", generation);
    rebuild_now(&svc, "p7", generation);
    assert_eq!(count(&svc, "p7"), (4, true));
    // The deferred rebuild runs a third time, then drops the mark.
    assert!(block_on(svc.run_deferred(w.deferred)).is_empty());
    let v = version(&r, "p7");
    assert!(
        v < 20,
        "versions add one per rebuild, they do not double: {v}"
    );
    // Once the mark is gone, a late completer of that generation merges nothing.
    rebuild_now(&svc, "p7", generation);
    assert_eq!(count(&svc, "p7"), (4, true));
    assert_eq!(version(&r, "p7"), v);
}

#[test]
fn a_failed_rebuild_keeps_the_mark_and_a_later_writer_completes_it() {
    let stack = Stack::start();
    let svc = stack.service(NotifyConfig::default(), Some(dedup_config()));
    let r = stack.redis();
    let t0 = now_ms() - 1_000_000;
    senders_on(&svc, "p8", 3, t0);
    expire(&r, "p8");
    let w = block_on(svc.create(raw("p8", "d", "d1", t0 + 1), now_ms())).unwrap();
    // The rebuild's document read fails.
    stack.data_api_faults(r#"{"rules":[{"match":"findOne","mode":"fail_before","count":1}]}"#);
    let failures = block_on(svc.run_deferred(w.deferred));
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(marked_new(&r, "p8"), "the mark stays");
    // The creator's grace runs out (what its clock would do; set, not waited for).
    let key = roster::key("u1", "p8");
    let mark = redis(&r, &["HGET", &key, "f"]);
    let by = mark.as_str().unwrap().split(' ').next().unwrap().to_owned();
    redis(&r, &["HSET", &key, "f", &format!("{by} 1")]);
    create(&svc, raw("p8", "e", "e1", t0 + 2));
    assert_eq!(count(&svc, "p8"), (5, true));
    assert!(!marked_new(&r, "p8"));
}
