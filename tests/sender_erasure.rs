//! Erasing a sender against the local stack (the Data API emulator, real redis-server behind the
//! REST bridge): a sender present in items below and above the origins cap, across many owners,
//! is erased while other senders' creates and retractions and the sender's own late events race
//! the job through injected Redis faults; afterwards every item's count is exactly its other
//! senders, and the sender's id and name are in no collection and no roster. The fence drops
//! the sender's late events (counted) and lets a new one through. Clocks are explicit: the
//! sweep's wait is a later `now`, not a sleep.

mod stack_support;

use std::collections::{BTreeMap, BTreeSet};

use egn_core::backend::native::{block_on, UreqClient};
use egn_core::backend::FindOptions;
use egn_core::notify::batch::{EventOutcome, QueuedMessage};
use egn_core::notify::document::field;
use egn_core::notify::erasure::{JobState, Step};
use egn_core::notify::privacy::AnyErasureView;
use egn_core::notify::senders::{self, SenderErasureView};
use egn_core::notify::{
    roster, summary, view, Created, NewEvent, NotificationEvent, NotifyConfig, NotifyService,
    RetractOutcome, Retraction,
};
use serde_json::{json, Value};
use stack_support::{dedup, like_at, now_ms, Stack};

type Svc = NotifyService<UreqClient>;

const CAP: u32 = 3;
const ANA: &str = "ana";

fn service(stack: &Stack, redis: bool) -> Svc {
    let cfg = NotifyConfig {
        origins_cap: CAP,
        ..NotifyConfig::default()
    };
    stack.service(cfg, redis.then(dedup))
}

/// A create as a client makes it: a retryable failure (a fault) is sent again.
fn create(svc: &Svc, e: &NewEvent) -> Created {
    for _ in 0..200 {
        if let Ok(w) = block_on(svc.create(e.clone(), now_ms())) {
            let _ = block_on(svc.run_deferred(w.deferred));
            return w.value;
        }
    }
    panic!("create never succeeded: {e:?}");
}

fn retract(svc: &Svc, owner: &str, item: &str, sender: &str) -> RetractOutcome {
    let r = Retraction {
        owner: owner.into(),
        item_key: item.into(),
        sender_id: sender.into(),
    };
    for _ in 0..200 {
        if let Ok(w) = block_on(svc.retract(r.clone(), now_ms())) {
            let _ = block_on(svc.run_deferred(w.deferred));
            return w.value;
        }
    }
    panic!("retraction never succeeded");
}

/// Runs the sender's erasure from `now` until it stops at `until` (or is done), repeating a
/// failed run; to get past the sweep's wait the clock moves to when it may go on.
fn erase_until(svc: &Svc, mut now: i64, until: Step) -> (SenderErasureView, u32) {
    let mut runs = 0;
    loop {
        runs += 1;
        assert!(runs < 500, "the erasure makes progress");
        let Ok(v) = block_on(svc.erase_sender(ANA, 40, now)) else {
            continue;
        };
        if v.step == until || v.state == JobState::Done {
            return (v, runs);
        }
        if let Some(after) = v.continue_after_msec {
            now = now.max(after);
        }
    }
}

fn sender_view(v: AnyErasureView) -> SenderErasureView {
    match v {
        AnyErasureView::Sender(v) => v,
        AnyErasureView::Owner(v) => panic!("a sender's erasure, not {v:?}"),
    }
}

fn all(stack: &Stack, coll: &str) -> Vec<Value> {
    block_on(
        stack
            .data_api()
            .find(coll, &json!({}), &FindOptions::default()),
    )
    .unwrap()
}

fn item(stack: &Stack, svc: &Svc, owner: &str, key: &str) -> Value {
    all(stack, &svc.store().config().collection)
        .into_iter()
        .find(|d| d["owner"] == owner && d["itemKey"] == key)
        .unwrap_or_else(|| panic!("{owner}/{key} exists"))
}

fn roster_senders(stack: &Stack, owner: &str, key: &str) -> (BTreeSet<String>, i64) {
    let h = block_on(
        stack
            .redis()
            .command(&["HGETALL", &roster::key(owner, key)]),
    )
    .unwrap();
    let flat: Vec<String> = h
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let mut on = BTreeSet::new();
    let mut n = 0;
    for kv in flat.chunks(2) {
        match kv[0].as_str() {
            "n" => n = kv[1].parse().unwrap(),
            "v" | "r" | "f" | "b" => {}
            field if kv[1].parse::<i64>().unwrap() > 0 => {
                on.insert(field.to_owned());
            }
            _ => {}
        }
    }
    (on, n)
}

const OWNERS: usize = 20;

fn owner(i: usize) -> String {
    format!("o{i:02}")
}

#[test]
fn a_sender_below_and_above_the_cap_leaves_every_inbox_with_exact_counts_while_writes_race() {
    let stack = Stack::start();
    let svc = service(&stack, true);
    let t0 = now_ms();
    // Per owner: "small" (ana, bo), "solo" (ana alone), "big" (ana then four more: past the
    // cap of 3, ana is only in the roster), "x" (ana retracted: only in `x` and the roster).
    let mut expected: BTreeMap<(String, &str), BTreeSet<String>> = BTreeMap::new();
    for i in 0..OWNERS {
        let o = owner(i);
        let mut put = |key: &'static str, sender: &str, dt: i64| {
            create(&svc, &like_at(&o, key, sender, t0 - 1_000 + dt));
            expected
                .entry((o.clone(), key))
                .or_default()
                .insert(sender.to_owned());
        };
        put("small", ANA, 0);
        put("small", "bo", 1);
        put("solo", ANA, 0);
        put("big", ANA, 0);
        for (k, s) in ["cy", "di", "ed", "fa"].iter().enumerate() {
            put("big", s, 1 + k as i64);
        }
        put("x", ANA, 0);
        put("x", "bo", 1);
        assert_eq!(retract(&svc, &o, "x", ANA), RetractOutcome::Updated);
    }
    for set in expected.values_mut() {
        set.remove(ANA);
    }
    let big = item(&stack, &svc, &owner(0), "big");
    assert!(
        !big.to_string().contains("ANA"),
        "past the cap, ana is only in the roster"
    );
    assert!(roster_senders(&stack, &owner(0), "big")
        .0
        .contains(&roster::field(ANA)));
    // Dead letters: one of ana's events, one of bo's.
    let letter = |id: &str, e: &NewEvent| QueuedMessage {
        id: id.into(),
        body: serde_json::to_string(e).unwrap(),
        attempts: 3,
    };
    let kept = block_on(svc.store_dead_letters(
        &[
            letter("m-ana", &like_at("o00", "dead", ANA, t0 - 500)),
            letter("m-bo", &like_at("o00", "dead", "bo", t0 - 500)),
        ],
        "notify-dlq",
        t0,
    ));
    assert_eq!(kept, [true, true]);

    // The fence first (a budget of 4: loading the job, the fence's 2 calls, saving it), then the
    // race.
    let erased_at = t0;
    let first = block_on(svc.erase_sender(ANA, 4, erased_at)).unwrap();
    assert_eq!((first.step, first.state), (Step::Items, JobState::Running));
    stack.redis_faults(
        r#"{"seed": 45, "rules":[
            {"match":"evalsha","mode":"fail_before","probability":0.1},
            {"match":"evalsha","mode":"fail_after","probability":0.1}]}"#,
    );
    let late_sent = OWNERS;
    std::thread::scope(|s| {
        // Other senders keep arriving on every item of the even owners…
        s.spawn(|| {
            let svc = service(&stack, true);
            for i in (0..OWNERS).step_by(2) {
                for key in ["small", "solo", "big", "x"] {
                    let c = create(&svc, &like_at(&owner(i), key, "zed", now_ms()));
                    assert!(matches!(c, Created::Applied { .. }), "{c:?}");
                }
            }
        });
        // …bo is retracted from the odd owners' items…
        s.spawn(|| {
            let svc = service(&stack, true);
            for i in (1..OWNERS).step_by(2) {
                for key in ["small", "x"] {
                    retract(&svc, &owner(i), key, "bo");
                }
            }
        });
        // …and ana's own events created before the erasure land late (a queue retry).
        s.spawn(|| {
            let svc = service(&stack, true);
            for i in 0..late_sent {
                let c = create(&svc, &like_at(&owner(i), "small", ANA, erased_at - 1));
                assert_eq!(c, Created::Erased);
            }
        });
        // The job, meanwhile, up to its sweep (which waits a minute after the fence).
        s.spawn(|| {
            let svc = service(&stack, true);
            let (v, _) = erase_until(&svc, erased_at + 1, Step::Sweep);
            assert_eq!(v.step, Step::Sweep);
        });
    });
    let fired = stack.redis_faults_fired();
    assert!(fired > 20, "the race ran through faults: {fired}");
    stack.redis_faults(r#"{"rules":[]}"#);
    for i in (0..OWNERS).step_by(2) {
        for key in ["small", "solo", "big", "x"] {
            expected
                .get_mut(&(owner(i), key))
                .unwrap()
                .insert("zed".into());
        }
    }
    for i in (1..OWNERS).step_by(2) {
        for key in ["small", "x"] {
            expected.get_mut(&(owner(i), key)).unwrap().remove("bo");
        }
    }
    // Ana sends again after the erasure: that event is a new one and is written; the sweep
    // leaves it.
    let fresh = like_at(&owner(1), "solo", ANA, erased_at + 1_000);
    assert!(matches!(create(&svc, &fresh), Created::Applied { .. }));
    expected
        .get_mut(&(owner(1), "solo"))
        .unwrap()
        .insert(ANA.into());
    let (done, _) = erase_until(&svc, erased_at + 61_000, Step::Done);
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.scrubbed.dead_letters, 1);
    // A figure, not the counts: a page repeated after a failed roster call finds its rosters
    // already without ana and cannot tell it was its own work, so under faults it may be low.
    // The counts themselves are checked below, item by item.
    assert!(
        done.scrubbed.counts_dropped <= 3 * OWNERS as u64,
        "{done:?}"
    );
    assert!(done.scrubbed.counts_dropped > 0, "{done:?}");

    // Every count is exactly the other senders, in the document and in the roster.
    for ((o, key), senders_left) in &expected {
        let doc = item(&stack, &svc, o, key);
        let shown = view(&doc);
        assert_eq!(
            shown.origins_count,
            senders_left.len() as i64,
            "{o}/{key}: {doc}"
        );
        let (on, n) = roster_senders(&stack, o, key);
        let fields: BTreeSet<String> = senders_left.iter().map(|s| roster::field(s)).collect();
        assert_eq!(on, fields, "{o}/{key} roster");
        assert_eq!(n, senders_left.len() as i64, "{o}/{key} roster count");
        if senders_left.is_empty() {
            assert_eq!(doc["deleted"], true, "{o}/{key}: its only sender was ana");
        } else {
            assert_ne!(doc["deleted"], true, "{o}/{key}");
            let s = summary(&doc).unwrap();
            if !senders_left.contains(ANA) {
                assert!(!s.contains("ANA"), "{s}");
            }
            // "Bo and 2 others": the count without ana.
            if senders_left.len() > 2 {
                let others = senders_left.len() - 1;
                assert!(
                    s.contains(&format!(" and {others} others")),
                    "{o}/{key}: {s}"
                );
            }
        }
    }
    // The name and the id are nowhere but in the one event sent after the erasure.
    let colls = svc.store().config().collections();
    let fresh_id = senders::entry_id(ANA, &owner(1), "solo");
    for coll in colls.all() {
        for d in all(&stack, coll) {
            if d["_id"] == fresh_id || (d["owner"] == owner(1).as_str() && d["itemKey"] == "solo") {
                continue;
            }
            let text = d.to_string();
            assert!(!text.contains("ANA"), "{coll} still holds {text}");
            assert!(!text.contains("\"ana\""), "{coll} still holds {text}");
        }
    }
    let solo = item(&stack, &svc, &owner(1), "solo");
    let origins: Vec<i64> = solo[field::ORIGINS]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["s"] == ANA)
        .map(|o| o["t"].as_i64().unwrap())
        .collect();
    assert_eq!(origins, [erased_at + 1_000], "only the new event");
    // Bo's letter stays; the index keeps only the new pair.
    assert_eq!(all(&stack, &colls.dead_letters).len(), 1);
    let entries: Vec<Value> = all(&stack, &colls.senders)
        .into_iter()
        .filter(|d| d["s"] == senders::digest(ANA))
        .collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["_id"], fresh_id);

    // Progress: the late events dropped, the job without the sender's id.
    let shown = sender_view(block_on(svc.erasure(&done.id)).unwrap());
    assert_eq!(shown.late_events_dropped, late_sent as u64);
    let job = all(&stack, &colls.erasures)
        .into_iter()
        .find(|d| d["_id"] == done.id)
        .unwrap();
    assert!(!job.to_string().contains("\"ana\""), "{job}");
}

#[test]
fn the_senders_fence_drops_late_events_and_retractions_and_lets_new_events_through() {
    let stack = Stack::start();
    for redis in [true, false] {
        let svc = service(&stack, redis);
        let o = if redis { "fr" } else { "fd" };
        let t = now_ms();
        create(&svc, &like_at(o, "a", ANA, t - 10));
        create(&svc, &like_at(o, "a", "bo", t - 9));
        // The second round (without Redis) starts the finished job again, fenced anew.
        let (done, _) = erase_until(&svc, t, Step::Done);
        let at = done.erased_at_msec;
        let doc = item(&stack, &svc, o, "a");
        assert!(!doc.to_string().contains("ANA"), "{doc}");
        assert_eq!(view(&doc).origins_count, 1);

        // Late: the single path and a batch, both dropped and counted.
        assert_eq!(create(&svc, &like_at(o, "b", ANA, at - 5)), Created::Erased);
        let late = NotificationEvent::new(like_at(o, "c", ANA, at), svc.store().config(), at + 10)
            .unwrap();
        let report = block_on(svc.apply_batch(&[late], at + 10));
        assert_eq!(report.outcomes, [EventOutcome::Erased]);
        // A retraction of the erased sender writes nothing (no `x` naming it).
        assert_eq!(retract(&svc, o, "a", ANA), RetractOutcome::NotFound);
        let doc = item(&stack, &svc, o, "a");
        assert!(!doc.to_string().contains("\"ana\""), "{doc}");
        let colls = svc.store().config().collections();
        assert!(all(&stack, &colls.items)
            .iter()
            .all(|d| d["owner"] != o || d["itemKey"] == "a"));
        // A late event that fails its last delivery: acknowledged, not kept as a dead letter
        // (it would keep ana's name for the letters' retention); bo's is kept.
        let letter = |id: &str, e: &NewEvent| QueuedMessage {
            id: id.into(),
            body: serde_json::to_string(e).unwrap(),
            attempts: 3,
        };
        let (ana_letter, bo_letter) = (format!("{o}-ana"), format!("{o}-bo"));
        let kept = block_on(svc.store_dead_letters(
            &[
                letter(&ana_letter, &like_at(o, "d", ANA, at - 1)),
                letter(&bo_letter, &like_at(o, "d", "bo", at - 1)),
            ],
            "notify-dlq",
            at + 10,
        ));
        assert_eq!(kept, [true, true]);
        let letters: Vec<Value> = all(&stack, &colls.dead_letters)
            .into_iter()
            .filter(|d| d["owner"] == o)
            .map(|d| d["_id"].clone())
            .collect();
        assert_eq!(letters, [json!(bo_letter)]);
        let shown = sender_view(block_on(svc.erasure(&done.id)).unwrap());
        assert_eq!(shown.late_events_dropped, 3 * (1 + u64::from(!redis)));

        // Created after the erasure: written, counted, indexed.
        let fresh = like_at(o, "a", ANA, at + 1);
        assert!(matches!(create(&svc, &fresh), Created::Applied { .. }));
        let doc = item(&stack, &svc, o, "a");
        assert_eq!(view(&doc).origins_count, 2);
        assert!(all(&stack, &colls.senders)
            .iter()
            .any(|d| d["_id"] == senders::entry_id(ANA, o, "a")));
    }
}

#[test]
fn an_owners_erasure_takes_its_index_entries_and_a_senders_erasure_costs_what_it_says() {
    let stack = Stack::start();
    let svc = service(&stack, true);
    let t = now_ms();
    for i in 0..(senders::PAGE as usize + 5) {
        create(&svc, &like_at("pam", &format!("k{i}"), ANA, t - 100));
    }
    create(&svc, &like_at("pam", "k0", "bo", t - 99));
    let colls = svc.store().config().collections();
    assert_eq!(
        all(&stack, &colls.senders)
            .iter()
            .filter(|d| d["o"] == "pam")
            .count(),
        senders::PAGE as usize + 6
    );
    // Budgeted: every run stays within its 40 subrequests (the request counters say so).
    stack.reset_stats();
    let mut runs = 0;
    let mut now = t;
    loop {
        runs += 1;
        let before = stack.data_api_total() + redis_total(&stack);
        let v = block_on(svc.erase_sender(ANA, 40, now)).unwrap();
        let spent = stack.data_api_total() + redis_total(&stack) - before;
        assert!(spent <= 40, "run {runs} spent {spent}");
        if v.state == JobState::Done {
            break;
        }
        if let Some(after) = v.continue_after_msec {
            now = now.max(after);
        }
        assert!(runs < 20);
    }
    assert!(runs >= 2, "{runs}");
    // Bo's item stays, every other one of pam's is tombstoned (ana was its only sender).
    let items = all(&stack, &colls.items);
    let live: Vec<&Value> = items.iter().filter(|d| d["deleted"] != true).collect();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0]["itemKey"], "k0");
    // The owner's erasure takes the entries naming the owner.
    let v = block_on(svc.erase_owner("pam", &egn_core::notify::erasure::NoHubs, 40, t + 200_000))
        .unwrap();
    let v = if v.state == JobState::Done {
        v
    } else {
        block_on(svc.erase_owner("pam", &egn_core::notify::erasure::NoHubs, 40, t + 300_000))
            .unwrap()
    };
    assert_eq!(v.state, JobState::Done);
    assert_eq!(
        v.removed.sender_index, 1,
        "bo's entry (ana's went with her)"
    );
    assert!(all(&stack, &colls.senders).iter().all(|d| d["o"] != "pam"));
}

fn redis_total(stack: &Stack) -> u64 {
    stack
        .redis_calls()
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_u64)
        .sum()
}

#[test]
fn a_failed_insert_many_falls_back_to_one_upsert_per_entry_so_the_batch_is_written() {
    let stack = Stack::start();
    let svc = service(&stack, true);
    let t = now_ms();
    let evs: Vec<NotificationEvent> = (0..3)
        .map(|i| {
            NotificationEvent::new(
                like_at("bat", &format!("k{i}"), &format!("s{i}"), t - 10 + i),
                svc.store().config(),
                t,
            )
            .unwrap()
        })
        .collect();
    stack.data_api_faults(
        r#"{"rules":[{"match":"insertMany","mode":"fail_before","count":1,"status":503}]}"#,
    );
    stack.reset_stats();
    let report = block_on(svc.apply_batch(&evs, t));
    assert!(
        report
            .outcomes
            .iter()
            .all(|o| matches!(o, EventOutcome::Applied(_))),
        "{:?}",
        report.outcomes
    );
    assert_eq!(
        stack.data_api_calls(),
        json!({"insertMany": 1, "updateOne": 6}),
        "the failed insertMany, an upsert per entry, an upsert per item"
    );
    let colls = svc.store().config().collections();
    for i in 0..3 {
        let id = senders::entry_id(&format!("s{i}"), "bat", &format!("k{i}"));
        assert!(all(&stack, &colls.senders).iter().any(|d| d["_id"] == id));
    }
}

/// An item's life is extended by every later event of any sender; the index entry of a sender
/// whose own event is older must live as long as the item, or the erasure misses the item.
#[test]
fn an_index_entry_lives_as_long_as_its_item_whoever_extended_it() {
    let stack = Stack::start();
    let svc = service(&stack, true);
    let cfg = svc.store().config().clone();
    let colls = cfg.collections();
    let day = 24 * 3_600_000;
    let now = now_ms();
    // Ana's event is older than an item's TTL and its tombstone's together; bo's, yesterday's,
    // keeps "long" alive for another 29 days. "gone" had only ana: its life is over.
    let old = now - cfg.ttl_ms - cfg.tombstone_ttl_ms - 3 * day;
    create(&svc, &like_at("lu", "long", ANA, old));
    create(&svc, &like_at("lu", "long", "bo", now - day));
    create(&svc, &like_at("lu", "gone", ANA, old));
    // The TTL monitor purges "gone" (its `purgeAt` has passed), and nothing else.
    assert!(stack.run_ttl() >= 1);
    let items = all(&stack, &colls.items);
    assert!(items.iter().all(|d| d["itemKey"] != "gone"));
    assert!(items.iter().any(|d| d["itemKey"] == "long"));
    // The nightly housekeeping drops the entry of the item that is gone and keeps the other,
    // to be looked at again when "long" can be gone.
    let r = block_on(svc.store().housekeeping(10_000, 40, 500, now)).unwrap();
    assert_eq!((r.index_entries_dropped, r.index_entries_kept), (1, 1));
    assert_eq!(stack.run_ttl(), 0, "no TTL takes an entry");
    let entries = all(&stack, &colls.senders);
    let ids: BTreeSet<&str> = entries.iter().filter_map(|d| d["_id"].as_str()).collect();
    assert!(
        ids.contains(senders::entry_id(ANA, "lu", "long").as_str()),
        "the entry of an item still alive stays: {ids:?}"
    );
    assert!(!ids.contains(senders::entry_id(ANA, "lu", "gone").as_str()));
    let long = item(&stack, &svc, "lu", "long");
    let next = entries
        .iter()
        .find(|d| d["_id"] == senders::entry_id(ANA, "lu", "long"))
        .map(|d| d[senders::CHECK_AT].clone());
    assert_eq!(next, Some(long["purgeAt"].clone()));
    // So the erasure finds the item and takes ana out of it.
    let (done, _) = erase_until(&svc, now, Step::Done);
    assert_eq!(done.scrubbed.items, 1, "{done:?}");
    let doc = item(&stack, &svc, "lu", "long");
    assert!(!doc.to_string().contains("\"ana\""), "{doc}");
    assert_eq!(view(&doc).origins_count, 1);
}
