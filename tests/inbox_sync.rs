//! An inbox that never lies: the change feed, tombstones, counts, bulk actions, retraction edge
//! cases and preferences, against the local stack (real redis-server, the Data API emulator).

mod stack_support;

use std::collections::BTreeMap;

use egn_core::backend::ejson;
use egn_core::backend::native::{block_on, UreqClient};
use egn_core::dedup::DedupConfig;
use egn_core::notify::document::field;
use egn_core::notify::store::NotificationStore;
use egn_core::notify::{
    change_view, view, Bulk, Flag, ListParams, NewEvent, NotificationEvent, NotifyConfig,
    NotifyService, RetractOutcome, Target, MIN_SETTLE_MS,
};
use egn_http::notify_routes;
use serde_json::{json, Value};
use stack_support::{now_ms, wait_until_settled, write_clock, Stack};

fn cfg() -> NotifyConfig {
    // Same clock for worker and database here, so the shortest window is enough for exact
    // assertions (the feed still holds back the current millisecond: `MIN_SETTLE_MS`).
    NotifyConfig {
        sync_settle_ms: 0,
        ..NotifyConfig::default()
    }
}

fn raw(owner: &str, item: &str, sender: &str, t: i64) -> NewEvent {
    // A hashed id: the tests' senders and items may hold any character.
    let event_id = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (owner, item, sender, t).hash(&mut h);
        format!("e{:016x}", h.finish())
    };
    let mut ev = stack_support::like(owner, item, sender, &event_id, t);
    ev.sender.name = ev.sender.name.chars().take(100).collect();
    ev
}

fn setup(stack: &Stack, cfg: &NotifyConfig) -> NotificationStore<UreqClient> {
    let store = stack.store(cfg.clone());
    stack.reset_stats();
    store
}

fn create(store: &NotificationStore<UreqClient>, owner: &str, item: &str, sender: &str, t: i64) {
    let ev = NotificationEvent::new(raw(owner, item, sender, t), store.config(), now_ms()).unwrap();
    block_on(store.create(&ev, write_clock())).unwrap();
}

fn doc(store: &NotificationStore<UreqClient>, owner: &str, item: &str) -> Value {
    stack_support::stored(store, owner, item).expect("document")
}

/// A device's cache: itemKey → item, built from a list and kept by the change feed.
#[derive(Default)]
struct Device {
    items: BTreeMap<String, Value>,
    sync: Option<String>,
}

/// What a client receives: the view as JSON.
fn wire(v: impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap()
}

impl Device {
    fn list(store: &NotificationStore<UreqClient>, owner: &str) -> Self {
        let page = block_on(store.list(owner, &ListParams::default(), true, now_ms())).unwrap();
        assert!(page.next_cursor.is_none(), "test inboxes fit one page");
        Device {
            items: page
                .items
                .iter()
                .map(|d| (d["itemKey"].as_str().unwrap().to_owned(), wire(view(d))))
                .collect(),
            sync: Some(page.sync),
        }
    }

    /// Pulls the feed until it is drained; returns the entries applied.
    fn sync(&mut self, store: &NotificationStore<UreqClient>, owner: &str) -> Vec<Value> {
        self.sync_pages(store, owner).0
    }

    /// [`Self::sync`], also returning how many pages it took.
    fn sync_pages(
        &mut self,
        store: &NotificationStore<UreqClient>,
        owner: &str,
    ) -> (Vec<Value>, u64) {
        let mut applied = Vec::new();
        for pages in 1.. {
            let now = now_ms();
            let c = block_on(store.changes(owner, self.sync.as_deref(), 2, now)).unwrap();
            for d in &c.items {
                let e = wire(change_view(d, now));
                let key = e["itemKey"].as_str().unwrap().to_owned();
                if e["deleted"] == true {
                    self.items.remove(&key);
                } else {
                    self.items.insert(key, e.clone());
                }
                applied.push(e);
            }
            self.sync = Some(c.sync);
            if !c.has_more {
                return (applied, pages);
            }
        }
        unreachable!()
    }

    /// What the inbox screen shows: unarchived items, newest first.
    fn inbox(&self) -> Vec<Value> {
        let mut v: Vec<Value> = self
            .items
            .values()
            .filter(|i| i["archived"] == false)
            .cloned()
            .collect();
        v.sort_by_key(|i| std::cmp::Reverse(i["revision"].as_i64().unwrap()));
        v
    }
}

#[test]
fn a_second_device_converges_through_the_change_feed() {
    let stack = Stack::start();
    let cfg = cfg();
    let store = setup(&stack, &cfg);
    let t = now_ms();
    for i in 0..6 {
        create(&store, "u1", &format!("p{i}"), "ana", t + i);
    }
    create(&store, "u2", "other", "ana", t);
    // A list's feed position is "now - settle" (at least one millisecond back), so writes stamped
    // within it come again as repeats. Wait until every write above lies before it.
    wait_until_settled(MIN_SETTLE_MS);
    let mut b = Device::list(&store, "u1");
    assert_eq!(b.items.len(), 6);
    assert!(b.sync(&store, "u1").is_empty(), "nothing changed yet");

    // Device A: read one, archive one, delete one; a sender merges into another.
    block_on(store.mark("u1", Target::Item("p0"), Flag::Read, true, now_ms())).unwrap();
    block_on(store.mark("u1", Target::Item("p1"), Flag::Archived, true, now_ms())).unwrap();
    assert!(block_on(store.delete("u1", "p2", now_ms())).unwrap());
    create(&store, "u1", "p3", "ben", t + 10);
    // A full page whose last entry is younger than the settle window holds the position and says
    // `has_more: false` (the rest comes on the next poll); to drain in one go, let it pass.
    wait_until_settled(MIN_SETTLE_MS);

    stack.reset_stats();
    let (applied, pages) = b.sync_pages(&store, "u1");
    let mut keys: Vec<&str> = applied
        .iter()
        .map(|e| e["itemKey"].as_str().unwrap())
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["p0", "p1", "p2", "p3"], "exactly the changes");
    let by_key = |k: &str| applied.iter().find(|e| e["itemKey"] == k).unwrap();
    assert_eq!(by_key("p0")["read"], true);
    assert_eq!(by_key("p1")["archived"], true);
    assert_eq!(by_key("p2"), &json!({"itemKey": "p2", "deleted": true}));
    assert_eq!(by_key("p3")[field::ORIGINS_COUNT], 2);
    assert!(pages >= 2, "pages of 2 for 4 changes");
    assert_eq!(
        stack.data_api_calls(),
        json!({ "find": pages }),
        "one call per page"
    );

    let fresh = Device::list(&store, "u1");
    assert_eq!(b.inbox(), fresh.inbox(), "replayed state = a fresh list");
    assert_eq!(fresh.inbox().len(), 4);

    // Bulk actions and the cron's trim and expiry reach the feed too.
    block_on(store.bulk("u1", Bulk::Seen, None, now_ms())).unwrap();
    assert_eq!(block_on(store.trim_owner("u1", 4, now_ms())).unwrap(), 1);
    assert_eq!(Device::list(&store, "u2").items.len(), 1);
    let later = now_ms() + cfg.ttl_ms + 1;
    assert_eq!(
        block_on(store.delete_expired_batch(later, 100)).unwrap(),
        5,
        "u1's four left and u2's one"
    );
    wait_until_settled(MIN_SETTLE_MS);
    let applied = b.sync(&store, "u1");
    assert!(applied.iter().any(|e| e["deleted"] == true));
    assert!(
        b.items.is_empty(),
        "trimmed and expired items are tombstones: {applied:?}"
    );
    assert!(Device::list(&store, "u1").items.is_empty());
}

#[test]
fn feed_positions_never_skip_a_write_that_lands_late() {
    let stack = Stack::start();
    let cfg = NotifyConfig {
        sync_settle_ms: 60_000,
        ..NotifyConfig::default()
    };
    let store = setup(&stack, &cfg);
    create(&store, "u1", "a", "ana", now_ms());
    // Inside the settle window the position is held back, so the same entry comes again and
    // `hasMore` is false (no tight loop) — a repeat, never a miss.
    let first = block_on(store.changes("u1", None, 100, now_ms())).unwrap();
    assert_eq!(first.items.len(), 1);
    let again = block_on(store.changes("u1", Some(&first.sync), 100, now_ms())).unwrap();
    assert_eq!(again.items.len(), 1);
    assert!(!again.has_more);
    // Past the window the position moves after the entry.
    let later = now_ms() + 61_000;
    let settled = block_on(store.changes("u1", Some(&again.sync), 100, later)).unwrap();
    assert_eq!(
        settled.items.len(),
        1,
        "still held: position was now - settle"
    );
    let done = block_on(store.changes("u1", Some(&settled.sync), 100, later)).unwrap();
    assert!(done.items.is_empty());
    assert!(block_on(store.changes("u1", Some("garbage"), 10, now_ms())).is_err());
}

#[test]
fn counts_come_with_the_page_in_one_call_and_seen_is_not_read() {
    let stack = Stack::start();
    let cfg = cfg();
    let store = setup(&stack, &cfg);
    let t = now_ms();
    for i in 0..5 {
        create(&store, "u1", &format!("i{i}"), "ana", t + i);
    }
    let page = |counts: bool| {
        let p = ListParams {
            limit: 2,
            ..ListParams::default()
        };
        block_on(store.list("u1", &p, counts, now_ms())).unwrap()
    };
    stack.reset_stats();
    let p = page(true);
    assert_eq!(stack.data_api_calls(), json!({"aggregate": 1}));
    assert_eq!(p.items.len(), 2);
    assert!(p.next_cursor.is_some());
    let c = p.counts.unwrap();
    assert_eq!((c.unread, c.unseen), (5, 5));
    assert_eq!(p.items, page(false).items, "same page either way");
    assert!(p.items[0][field::ORIGINS].as_array().unwrap().len() <= cfg.list_origins as usize);

    stack.reset_stats();
    assert_eq!(
        block_on(store.bulk("u1", Bulk::Seen, None, now_ms())).unwrap(),
        5
    );
    assert_eq!(stack.data_api_calls(), json!({"updateMany": 1}));
    let c = page(true).counts.unwrap();
    assert_eq!(
        (c.unread, c.unseen),
        (5, 0),
        "the badge clears, items stay unread"
    );

    block_on(store.mark("u1", Target::Item("i0"), Flag::Read, true, now_ms())).unwrap();
    block_on(store.mark("u1", Target::Item("i1"), Flag::Read, true, now_ms())).unwrap();
    assert_eq!(
        block_on(store.bulk("u1", Bulk::ArchiveRead, None, now_ms())).unwrap(),
        2
    );
    assert_eq!(
        block_on(store.bulk("u1", Bulk::ArchiveRead, Some("system"), now_ms())).unwrap(),
        0,
        "by category"
    );
    assert_eq!(
        block_on(store.bulk("u1", Bulk::Read, None, now_ms())).unwrap(),
        3
    );
    let c = block_on(store.counts("u1", None, now_ms())).unwrap();
    assert_eq!((c.unread, c.unseen), (0, 0));
    stack.reset_stats();
    assert_eq!(
        block_on(store.bulk("u1", Bulk::Delete, Some("social"), now_ms())).unwrap(),
        5,
        "delete all includes the archive"
    );
    assert_eq!(stack.data_api_calls(), json!({"updateMany": 1}));
    assert!(page(true).items.is_empty());
}

#[test]
fn retracting_the_last_stored_sender_after_the_cap_dropped_others_deletes_the_item() {
    let stack = Stack::start();
    let cfg = NotifyConfig {
        origins_cap: 2,
        ..cfg()
    };
    let store = setup(&stack, &cfg);
    let t = now_ms() - 10_000;
    for (i, s) in ["ana", "ben", "cy"].iter().enumerate() {
        create(&store, "u1", "post", s, t + i as i64);
    }
    let d = doc(&store, "u1", "post");
    assert_eq!(
        (
            d[field::ORIGINS].as_array().unwrap().len(),
            d[field::ORIGINS_COUNT].clone()
        ),
        (2, json!(3))
    );
    // Retractions at explicit, distinct times: `x` is kept newest first, and two retractions
    // in one millisecond would list in either order.
    let retract = |s: &str, at: i64| block_on(store.retract("u1", "post", s, at)).unwrap();
    assert_eq!(retract("cy", t + 100), RetractOutcome::Updated);
    assert_eq!(
        view(&doc(&store, "u1", "post")).summary.as_deref(),
        Some("BEN and 1 other liked your post")
    );
    // Ben is the last stored origin; Ana was dropped by the cap, so the count is still 2.
    assert_eq!(retract("ben", t + 200), RetractOutcome::Deleted);
    let d = doc(&store, "u1", "post");
    assert_eq!(d["deleted"], true);
    assert_eq!(d[field::ORIGINS_COUNT], 0);
    assert!(Device::list(&store, "u1").items.is_empty());
    // Ana, dropped by the cap, is "not found" but remembered; nothing is left to misrender.
    assert_eq!(retract("ana", t + 300), RetractOutcome::NotFound);
    let d = doc(&store, "u1", "post");
    let senders: Vec<&str> = d[field::RETRACTED]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["s"].as_str().unwrap())
        .collect();
    assert_eq!(senders, ["ana", "ben", "cy"]);
}

#[test]
fn a_create_delayed_past_its_retraction_stays_out() {
    let stack = Stack::start();
    let cfg = cfg();
    let store = setup(&stack, &cfg);
    let t = now_ms() - 5_000;
    create(&store, "u1", "post", "ana", t);
    // Ben's like is in flight (the worker timed out, the request is still on its way) when Ben
    // unlikes: the retraction finds no Ben, records him, and the late create is then refused.
    assert_eq!(
        block_on(store.retract("u1", "post", "ben", now_ms())).unwrap(),
        RetractOutcome::NotFound
    );
    create(&store, "u1", "post", "ben", t + 1);
    let d = doc(&store, "u1", "post");
    assert_eq!(d[field::ORIGINS_COUNT], 1, "{d}");
    // Same when the item does not exist yet: the retraction leaves a tombstone that refuses it.
    assert_eq!(
        block_on(store.retract("u1", "new", "cy", now_ms())).unwrap(),
        RetractOutcome::NotFound
    );
    create(&store, "u1", "new", "cy", t + 2);
    assert_eq!(doc(&store, "u1", "new")["deleted"], true);
    assert!(!Device::list(&store, "u1").items.contains_key("new"));
    // Liking again later is a new event, after the retraction: it counts.
    create(&store, "u1", "post", "ben", now_ms() + 1);
    assert_eq!(doc(&store, "u1", "post")[field::ORIGINS_COUNT], 2);
}

fn event_body(owner: &str, item: &str, category: &str, kind: &str, id: &str) -> Vec<u8> {
    json!({"owner": owner, "itemKey": item, "serviceType": "feed", "categoryType": category,
           "notificationType": kind, "templateType": "default", "eventId": id,
           "sender": {"id": "s", "name": "S"}, "createdTimeMsec": now_ms()})
    .to_string()
    .into_bytes()
}

#[test]
fn muted_kinds_are_refused_in_the_reservation_round_trip() {
    let stack = Stack::start();
    let cfg = cfg();
    let svc = NotifyService::new(
        setup(&stack, &cfg),
        Some(stack.redis()),
        DedupConfig::for_rate(10_000, 600_000),
    );
    let put = |b: &str| {
        block_on(notify_routes::put_preferences(
            &svc,
            "u1",
            b.as_bytes(),
            now_ms(),
        ))
    };
    let p = put(r#"{"mutedCategories":["system"],"mutedTypes":["follow","follow"]}"#).unwrap();
    assert_eq!(
        p,
        json!({"mutedCategories": ["system"], "mutedTypes": ["follow"], "enforced": true})
    );
    assert_eq!(
        put(r#"{"mutedCategories":["nope"]}"#)
            .unwrap_err()
            .code
            .as_str(),
        "unknown_category"
    );
    assert_eq!(
        put(r#"{"muted":[]}"#).unwrap_err().code.as_str(),
        "invalid_json"
    );

    // Warm the script cache (a new script's first EVALSHA falls back to EVAL once).
    let (r, _) = block_on(notify_routes::post_event(
        &svc,
        &event_body("u3", "a", "system", "like", "e0"),
        None,
        now_ms(),
    ));
    assert_eq!(r.unwrap().body["status"], "created");
    stack.reset_stats();
    let (r, _) = block_on(notify_routes::post_event(
        &svc,
        &event_body("u1", "a", "system", "like", "e1"),
        None,
        now_ms(),
    ));
    assert_eq!(r.unwrap().body["status"], "muted");
    assert_eq!(stack.data_api_total(), 0, "not stored");
    assert_eq!(
        stack.redis_calls(),
        json!({"evalsha": 1}),
        "no extra round trip"
    );
    let (r, _) = block_on(notify_routes::post_event(
        &svc,
        &event_body("u1", "b", "social", "follow", "e2"),
        None,
        now_ms(),
    ));
    assert_eq!(r.unwrap().body["status"], "muted");
    let (r, _) = block_on(notify_routes::post_event(
        &svc,
        &event_body("u2", "b", "social", "follow", "e3"),
        None,
        now_ms(),
    ));
    assert_eq!(
        r.unwrap().body["status"],
        "created",
        "another owner's mutes don't apply"
    );

    // Redis down: the reservation also keeps the item's sender count, so the create answers
    // 503 (retryable) rather than writing a count it could not check; the retry, with Redis
    // back, is refused as muted: a mute is never skipped for want of Redis.
    stack.redis_faults(r#"{"rules":[{"match":"*","mode":"fail_before","count":1,"status":503}]}"#);
    let body = event_body("u1", "c", "system", "like", "e4");
    let (r, _) = block_on(notify_routes::post_event(&svc, &body, None, now_ms()));
    let e = r.unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (503, "backend_unavailable"));
    let (r, _) = block_on(notify_routes::post_event(&svc, &body, None, now_ms()));
    assert_eq!(r.unwrap().body["status"], "muted");

    // The document is the truth: a lost mirror is rebuilt by the next read.
    block_on(stack.redis().command(&["DEL", "np:u1"])).unwrap();
    let (got, deferred) = block_on(notify_routes::get_preferences(&svc, "u1"));
    assert_eq!(got.unwrap()["mutedTypes"], json!(["follow"]));
    assert!(block_on(svc.run_deferred(deferred)).is_empty());
    let (r, _) = block_on(notify_routes::post_event(
        &svc,
        &event_body("u1", "d", "social", "follow", "e5"),
        None,
        now_ms(),
    ));
    assert_eq!(r.unwrap().body["status"], "muted");
    // Unmuting takes effect at once.
    put(r#"{}"#).unwrap();
    let (r, _) = block_on(notify_routes::post_event(
        &svc,
        &event_body("u1", "d", "social", "follow", "e6"),
        None,
        now_ms(),
    ));
    assert_eq!(r.unwrap().body["status"], "created");
}

/// A read repair runs after its response, so it can land after a later PUT's own mirror write
/// (the CI failure of session 33: a GET's empty repair undid the PUT's mutes). The mirror only
/// moves forward by the document's revision, also across a delete and a new document.
#[test]
fn a_late_read_repair_never_rolls_the_mirror_back() {
    let stack = Stack::start();
    let cfg = cfg();
    let svc = stack.service(cfg.clone(), Some(DedupConfig::for_rate(10_000, 600_000)));
    let t = now_ms();
    let put = |b: &str, at: i64| {
        block_on(notify_routes::put_preferences(
            &svc,
            "late",
            b.as_bytes(),
            at,
        ))
        .unwrap()
    };
    let status = |key: &str, category: &str| {
        let body = event_body("late", key, category, "like", key);
        let (r, _) = block_on(notify_routes::post_event(&svc, &body, None, now_ms()));
        r.unwrap().body["status"].clone()
    };
    let mirror = || {
        let mut m: Vec<String> = serde_json::from_value(
            block_on(stack.redis().command(&["SMEMBERS", "np:late"])).unwrap(),
        )
        .unwrap();
        m.sort();
        m
    };
    // Nothing stored: a read has nothing to repair.
    let (_, none) = block_on(notify_routes::get_preferences(&svc, "late"));
    assert!(none.is_empty());

    put(r#"{"mutedCategories":["social"]}"#, t);
    let (_, stale) = block_on(notify_routes::get_preferences(&svc, "late"));
    // Two saves in the same millisecond still order: the revision counts saves.
    put(r#"{"mutedCategories":["system"]}"#, t);
    assert_eq!(mirror(), ["c:system".to_string(), format!("v:{t}:2")]);
    assert!(block_on(svc.run_deferred(stale)).is_empty());
    assert_eq!(
        mirror(),
        ["c:system".to_string(), format!("v:{t}:2")],
        "the late repair changed nothing"
    );
    assert_eq!(status("a", "system"), "muted");
    assert_eq!(status("b", "social"), "created");

    // A repair read before the document was deleted, landing after a new document's write.
    let (_, stale) = block_on(notify_routes::get_preferences(&svc, "late"));
    let prefs = cfg.collections().preferences;
    block_on(
        svc.store()
            .api()
            .delete_one(&prefs, &json!({"_id": "late"})),
    )
    .unwrap();
    put(r#"{"mutedCategories":["social"]}"#, t + 1);
    assert!(block_on(svc.run_deferred(stale)).is_empty());
    assert_eq!(mirror(), ["c:social".to_string(), format!("v:{}:1", t + 1)]);
    assert_eq!(status("c", "system"), "created");
    assert_eq!(status("d", "social"), "muted");

    // A repair of the current save rewrites a lost mirror, as before.
    block_on(stack.redis().command(&["DEL", "np:late"])).unwrap();
    let (_, repair) = block_on(notify_routes::get_preferences(&svc, "late"));
    assert!(block_on(svc.run_deferred(repair)).is_empty());
    assert_eq!(mirror(), ["c:social".to_string(), format!("v:{}:1", t + 1)]);
}

#[test]
fn tombstone_and_retracted_list_sizes_at_their_caps() {
    let stack = Stack::start();
    let cfg = NotifyConfig {
        origins_cap: 3,
        ..cfg()
    };
    let store = setup(&stack, &cfg);
    let t = now_ms() - 60_000;
    let (owner, item) = ("o".repeat(128), "k".repeat(256));
    for i in 0..3 {
        create(&store, &owner, &item, &format!("{i:s>128}"), t + i);
    }
    // Fill the retracted list with the longest sender ids, then delete the item.
    for i in 0..cfg.retracted_cap + 2 {
        block_on(store.retract(&owner, &item, &format!("{i:r>128}"), now_ms())).unwrap();
    }
    let live = doc(&store, &owner, &item);
    assert_eq!(
        live[field::RETRACTED].as_array().unwrap().len(),
        cfg.retracted_cap as usize
    );
    let x_bytes = serde_json::to_vec(&live[field::RETRACTED]).unwrap().len();
    assert!(block_on(store.delete(&owner, &item, now_ms())).unwrap());
    let tomb = doc(&store, &owner, &item);
    let tomb_bytes = serde_json::to_vec(&tomb).unwrap().len();
    println!(
        "retracted list at cap {}: {x_bytes} B (EJSON); tombstone with it: {tomb_bytes} B",
        cfg.retracted_cap
    );
    // 20 × (128-byte id + time) plus the keys: bounded by the caps, whatever the traffic.
    assert!(x_bytes < 20 * 170, "{x_bytes}");
    assert!(tomb_bytes < x_bytes + 1_200, "{tomb_bytes}");
    assert!(ejson::date_ms(&tomb["purgeAt"]).unwrap() > now_ms());
}
