//! The user's writes (mark, bulk, delete) against the local stack: Idempotency-Key per user
//! (replay of the first answer, in flight, reused, two users' equal keys) and 404
//! `item_not_found` for a write on an item the user does not have. Every call takes an explicit
//! time; the deferred work (the stored result) runs when the test says, which is how a request
//! "still in flight" is held.

mod stack_support;

use egn_core::backend::native::{block_on, UreqClient};
use egn_core::notify::NotifyService;
use egn_core::notify::{Deferred, NotificationEvent};
use egn_http::{notify_routes, user_writes, Reply};
use serde_json::json;
use stack_support::{now_ms, Stack};

type Svc = NotifyService<UreqClient>;

/// Writes one unread item of `owner` at `t`.
fn item(svc: &Svc, owner: &str, key: &str, t: i64) {
    let mut raw = stack_support::like(owner, key, "bo", &format!("{owner}/{key}/{t}"), t);
    raw.sender.name = "Bo".into();
    let ev = NotificationEvent::new(raw, svc.store().config(), t).unwrap();
    block_on(svc.store().create(&ev, t)).unwrap();
}

fn read(key: &str) -> Vec<u8> {
    json!({"itemKey": key, "flag": "read"})
        .to_string()
        .into_bytes()
}

/// Runs a write and its deferred work (the stored result), as the worker does after answering.
fn settled(svc: &Svc, (r, deferred): (Result<Reply, egn_http::ApiError>, Vec<Deferred>)) -> Reply {
    assert!(block_on(svc.run_deferred(deferred)).is_empty());
    r.unwrap_or_else(|e| Reply {
        status: e.status(),
        body: e.body(),
        replayed: false,
        changed: vec![],
    })
}

fn unread(svc: &Svc, owner: &str, t: i64) -> u64 {
    block_on(svc.store().counts(owner, None, t)).unwrap().unread
}

#[test]
fn a_resent_write_replays_its_first_answer_and_applies_once() {
    let stack = Stack::start();
    let svc = stack.notify_service(true);
    let t = now_ms();
    for k in ["a", "b", "c"] {
        item(&svc, "ana", k, t);
    }

    // mark: the first answer, then the same again without a Data API call.
    let first = settled(
        &svc,
        block_on(user_writes::post_mark(
            &svc,
            "ana",
            &read("a"),
            Some("m-1"),
            t,
        )),
    );
    assert_eq!((first.status, &first.body), (200, &json!({"updated": 1})));
    assert!(!first.replayed && first.changed == ["ana"]);
    stack.reset_stats();
    let (again, deferred) = block_on(user_writes::post_mark(
        &svc,
        "ana",
        &read("a"),
        Some("m-1"),
        t + 1,
    ));
    let again = again.unwrap();
    assert!(again.replayed && deferred.is_empty() && again.changed.is_empty());
    assert_eq!((again.status, &again.body), (first.status, &first.body));
    assert_eq!(
        stack.data_api_total(),
        0,
        "a replay never reaches the Data API"
    );

    // bulk: a resend after a new item arrived answers the first count and leaves the new item
    // unread (a re-run would read it).
    let all_read = br#"{"action":"read"}"#;
    let first = settled(
        &svc,
        block_on(user_writes::post_bulk(
            &svc,
            "ana",
            all_read,
            Some("b-1"),
            t + 2,
        )),
    );
    assert_eq!(first.body, json!({"updated": 2}));
    item(&svc, "ana", "d", t + 3);
    let (again, _) = block_on(user_writes::post_bulk(
        &svc,
        "ana",
        all_read,
        Some("b-1"),
        t + 4,
    ));
    let again = again.unwrap();
    assert!(again.replayed);
    assert_eq!(again.body, json!({"updated": 2}));
    assert_eq!(
        unread(&svc, "ana", t + 4),
        1,
        "d stays unread: bulk applied once"
    );

    // delete: the resend of a delete that applied gets its 200, not a 404.
    let first = settled(
        &svc,
        block_on(user_writes::delete_item(
            &svc,
            "ana",
            "c",
            Some("d-1"),
            t + 5,
        )),
    );
    assert_eq!(
        (first.status, &first.body),
        (200, &json!({"deleted": true}))
    );
    let (again, _) = block_on(user_writes::delete_item(
        &svc,
        "ana",
        "c",
        Some("d-1"),
        t + 6,
    ));
    let again = again.unwrap();
    assert!(again.replayed);
    assert_eq!(
        (again.status, &again.body),
        (200, &json!({"deleted": true}))
    );
    let (fresh, _) = block_on(user_writes::delete_item(
        &svc,
        "ana",
        "c",
        Some("d-2"),
        t + 6,
    ));
    assert_eq!(
        fresh.unwrap_err().code,
        "item_not_found",
        "a new key runs again"
    );

    // The first answer is what is kept, a 404 included.
    let gone = settled(
        &svc,
        block_on(user_writes::post_mark(
            &svc,
            "ana",
            &read("e"),
            Some("m-2"),
            t + 7,
        )),
    );
    assert_eq!(gone.status, 404);
    item(&svc, "ana", "e", t + 8);
    let (again, _) = block_on(user_writes::post_mark(
        &svc,
        "ana",
        &read("e"),
        Some("m-2"),
        t + 9,
    ));
    let again = again.unwrap();
    assert!(again.replayed);
    assert_eq!((again.status, &again.body), (404, &gone.body));
}

#[test]
fn in_flight_reused_and_malformed_keys() {
    let stack = Stack::start();
    let svc = stack.notify_service(true);
    let t = now_ms();
    item(&svc, "ana", "a", t);
    item(&svc, "ana", "b", t);

    // Until the first answer is stored, the key is in flight, for every route.
    let (first, deferred) = block_on(user_writes::delete_item(&svc, "ana", "a", Some("k-1"), t));
    assert_eq!(first.unwrap().status, 200);
    let (busy, _) = block_on(user_writes::delete_item(
        &svc,
        "ana",
        "a",
        Some("k-1"),
        t + 1,
    ));
    let busy = busy.unwrap_err();
    assert_eq!(
        (busy.status(), busy.code.as_str()),
        (409, "idempotency_in_flight")
    );
    assert_eq!(busy.retry_after, Some(1));
    assert!(block_on(svc.run_deferred(deferred)).is_empty());
    let (first, deferred) = block_on(user_writes::post_mark(
        &svc,
        "ana",
        &read("b"),
        Some("k-2"),
        t + 2,
    ));
    assert_eq!(first.unwrap().status, 200);
    let (busy, _) = block_on(user_writes::post_mark(
        &svc,
        "ana",
        &read("b"),
        Some("k-2"),
        t + 3,
    ));
    assert_eq!(busy.unwrap_err().code, "idempotency_in_flight");
    assert!(block_on(svc.run_deferred(deferred)).is_empty());

    // Another body (for a delete: another item) under a used key is refused.
    let (other, _) = block_on(user_writes::delete_item(
        &svc,
        "ana",
        "b",
        Some("k-1"),
        t + 4,
    ));
    assert_eq!(other.unwrap_err().code, "idempotency_key_reused");
    let unread_b = br#"{"itemKey":"b","flag":"read","value":false}"#;
    let (other, _) = block_on(user_writes::post_mark(
        &svc,
        "ana",
        unread_b,
        Some("k-2"),
        t + 4,
    ));
    assert_eq!(other.unwrap_err().code, "idempotency_key_reused");
    let (other, _) = block_on(user_writes::post_bulk(
        &svc,
        "ana",
        br#"{"action":"seen"}"#,
        Some("k-2"),
        t + 4,
    ));
    let other = settled(&svc, (other, vec![]));
    assert_eq!(
        other.status, 200,
        "a key is per route: bulk's k-2 is not mark's"
    );

    stack.reset_stats();
    for bad in ["", "has space", &"x".repeat(256)] {
        let (r, _) = block_on(user_writes::post_mark(
            &svc,
            "ana",
            &read("b"),
            Some(bad),
            t + 5,
        ));
        assert_eq!(r.unwrap_err().code, "invalid_idempotency_key");
        let (r, _) = block_on(user_writes::delete_item(&svc, "ana", "b", Some(bad), t + 5));
        assert_eq!(r.unwrap_err().code, "invalid_idempotency_key");
    }
    assert_eq!(stack.data_api_total(), 0, "a malformed key runs nothing");
}

#[test]
fn two_users_and_a_service_with_equal_keys_are_independent() {
    let stack = Stack::start();
    let svc = stack.notify_service(true);
    let t = now_ms();
    item(&svc, "ana", "x", t);
    item(&svc, "bo", "x", t);

    let ana = settled(
        &svc,
        block_on(user_writes::delete_item(&svc, "ana", "x", Some("same"), t)),
    );
    let bo = block_on(user_writes::delete_item(
        &svc,
        "bo",
        "x",
        Some("same"),
        t + 1,
    ));
    let bo = settled(&svc, bo);
    assert_eq!((ana.status, bo.status), (200, 200));
    assert!(!bo.replayed, "bo's delete ran: ana's record is not his");
    assert_eq!(unread(&svc, "bo", t + 2), 0, "bo's item is gone too");
    // Each replays his own; a user whose `sub` has a `:` meets neither.
    assert!(
        block_on(user_writes::delete_item(
            &svc,
            "bo",
            "x",
            Some("same"),
            t + 2
        ))
        .0
        .unwrap()
        .replayed
    );
    item(&svc, "ana:x", "x", t);
    let odd = block_on(user_writes::delete_item(
        &svc,
        "ana:x",
        "x",
        Some("same"),
        t + 3,
    ));
    assert!(!settled(&svc, odd).replayed);
    // The service's routes keep their own space: a create under the same key runs.
    let ev = json!({"owner": "cy", "itemKey": "p", "serviceType": "feed", "categoryType": "social",
                    "notificationType": "like", "templateType": "default", "eventId": "e-1",
                    "sender": {"id": "bo", "name": "Bo"}, "createdTimeMsec": t});
    let (r, deferred) = block_on(notify_routes::post_event(
        &svc,
        ev.to_string().as_bytes(),
        Some("same"),
        t,
    ));
    let r = settled(&svc, (r, deferred));
    assert_eq!((r.status, r.replayed), (201, false));
}

#[test]
fn a_write_on_an_item_the_user_does_not_have_is_404_item_not_found() {
    let stack = Stack::start();
    let svc = stack.notify_service(true);
    let t = now_ms();
    item(&svc, "ana", "kept", t);
    item(&svc, "ana", "deleted", t);
    item(&svc, "ana", "purged", t);
    item(&svc, "bo", "his", t);
    assert_eq!(
        settled(
            &svc,
            block_on(user_writes::delete_item(&svc, "ana", "deleted", None, t))
        )
        .status,
        200
    );
    // Hard-deleted: what the TTL index does to a tombstone.
    let coll = &svc.store().config().collection;
    let purged = json!({"owner": "ana", "itemKey": "purged"});
    assert_eq!(
        block_on(svc.store().api().delete_one(coll, &purged)).unwrap(),
        1
    );

    for key in ["never", "deleted", "purged", "his"] {
        let (r, _) = block_on(user_writes::post_mark(&svc, "ana", &read(key), None, t + 1));
        let e = r.unwrap_err();
        assert_eq!(
            (e.status(), e.code.as_str()),
            (404, "item_not_found"),
            "mark {key}"
        );
        let (r, _) = block_on(user_writes::delete_item(&svc, "ana", key, None, t + 1));
        let e = r.unwrap_err();
        assert_eq!(
            (e.status(), e.code.as_str()),
            (404, "item_not_found"),
            "delete {key}"
        );
    }
    assert_eq!(unread(&svc, "bo", t + 1), 1, "bo's item untouched");
    // All and bulk over an inbox with nothing to change are no miss.
    let (r, _) = block_on(user_writes::post_mark(
        &svc,
        "bo",
        br#"{"all":true,"flag":"seen"}"#,
        None,
        t + 2,
    ));
    assert_eq!(r.unwrap().body, json!({"updated": 1}));
    let (r, _) = block_on(user_writes::post_bulk(
        &svc,
        "bo",
        br#"{"action":"seen"}"#,
        None,
        t + 3,
    ));
    assert_eq!(r.unwrap().body, json!({"updated": 0}));
    // A mark that finds the flag already set still matched its item.
    let r = block_on(user_writes::post_mark(
        &svc,
        "ana",
        &read("kept"),
        None,
        t + 4,
    ))
    .0
    .unwrap();
    assert_eq!(r.status, 200);
    let r = block_on(user_writes::post_mark(
        &svc,
        "ana",
        &read("kept"),
        None,
        t + 5,
    ))
    .0
    .unwrap();
    assert_eq!(r.status, 200);
}

#[test]
fn without_redis_a_key_is_checked_and_the_write_runs_unguarded() {
    let stack = Stack::start();
    let svc = stack.notify_service(false);
    let t = now_ms();
    item(&svc, "ana", "a", t);
    let (r, deferred) = block_on(user_writes::delete_item(&svc, "ana", "a", Some("k"), t));
    assert_eq!(r.unwrap().status, 200);
    assert!(deferred.is_empty());
    let (r, _) = block_on(user_writes::delete_item(&svc, "ana", "a", Some("k"), t + 1));
    assert_eq!(r.unwrap_err().code, "item_not_found", "no record to replay");
    let (r, _) = block_on(user_writes::post_mark(
        &svc,
        "ana",
        &read("a"),
        Some("bad key"),
        t + 1,
    ));
    assert_eq!(r.unwrap_err().code, "invalid_idempotency_key");
    assert_eq!(stack.redis_calls(), json!({}), "Redis never called");
}
