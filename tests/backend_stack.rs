//! Backend clients and dedup against the real local stack (Data API emulator + redis-server).

mod stack_support;

use egn_core::backend::native::{block_on, UreqClient};
use egn_core::backend::{ejson, BackendError, DataApiAuth, DataApiClient, FindOptions, Script};
use egn_core::dedup::{self, DedupConfig, Reservation};
use serde_json::{json, Value};
use stack_support::{now_ms, Stack};

#[test]
fn data_api_client_covers_every_action() {
    let stack = Stack::start();
    let api = stack.data_api();
    let c = "things";
    block_on(async {
        let names = api
            .create_indexes(
                c,
                &[json!({"key": {"owner": 1, "k": 1}, "name": "owner_k", "unique": true})],
            )
            .await
            .unwrap();
        assert_eq!(names, ["owner_k"]);

        // insertOne + EJSON date round trip (a real BSON date comes back as {"$date": ms}).
        let t = 1_700_000_000_123_i64;
        let id = api
            .insert_one(
                c,
                &json!({"owner": "u", "k": 1, "at": ejson::date(t), "tags": []}),
            )
            .await
            .unwrap();
        assert!(id.get("$oid").is_some(), "ObjectId expected, got {id}");
        let doc = api
            .find_one(c, &json!({"owner": "u", "k": 1}), None, None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ejson::date_ms(&doc["at"]), Some(t));
        // Date comparison in a filter proves it is stored as a date, not a string.
        let n = api
            .find(
                c,
                &json!({"at": {"$gt": ejson::date(t - 1)}}),
                &FindOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(n.len(), 1);

        // Unique violation → DuplicateKey, nothing applied.
        let dup = api
            .insert_one(c, &json!({"owner": "u", "k": 1}))
            .await
            .unwrap_err();
        assert!(matches!(dup, BackendError::DuplicateKey { .. }), "{dup:?}");

        // updateOne upsert with $setOnInsert: inserted once, then only updated.
        let upd = json!({"$setOnInsert": {"born": 1}, "$inc": {"hits": 1}});
        let r = api
            .update_one(c, &json!({"owner": "u", "k": 2}), &upd, true)
            .await
            .unwrap();
        assert!(r.upserted_id.is_some());
        let r = api
            .update_one(
                c,
                &json!({"owner": "u", "k": 2}),
                &json!({"$setOnInsert": {"born": 2}, "$inc": {"hits": 1}}),
                true,
            )
            .await
            .unwrap();
        assert_eq!((r.matched, r.modified, r.upserted_id), (1, 1, None));
        let doc = api
            .find_one(
                c,
                &json!({"k": 2}),
                Some(&json!({"_id": 0, "born": 1, "hits": 1})),
                None,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(doc, json!({"born": 1, "hits": 2}));

        // $push with $each/$sort/$slice, then $pull.
        for (i, t) in [(1, 30), (2, 10), (3, 20)] {
            let push = json!({"$push": {"tags": {"$each": [{"s": i, "t": t}], "$sort": {"t": -1}, "$slice": 2}}});
            api.update_one(c, &json!({"k": 1}), &push, false)
                .await
                .unwrap();
        }
        let doc = api
            .find_one(c, &json!({"k": 1}), None, None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(doc["tags"], json!([{"s": 1, "t": 30}, {"s": 3, "t": 20}]));
        let r = api
            .update_one(
                c,
                &json!({"k": 1}),
                &json!({"$pull": {"tags": {"s": 1}}}),
                false,
            )
            .await
            .unwrap();
        assert_eq!(r.modified, 1);
        let doc = api
            .find_one(c, &json!({"k": 1}), Some(&json!({"tags": 1})), None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(doc["tags"], json!([{"s": 3, "t": 20}]));

        // find with sort/skip/limit/projection (sort order survives: preserve_order).
        for k in 3..8 {
            api.insert_one(c, &json!({"owner": "v", "k": k, "g": k % 2}))
                .await
                .unwrap();
        }
        let opts = FindOptions {
            projection: Some(json!({"_id": 0, "k": 1})),
            sort: Some(json!({"g": -1, "k": 1})),
            limit: Some(2),
            skip: Some(1),
        };
        let docs = api.find(c, &json!({"owner": "v"}), &opts).await.unwrap();
        assert_eq!(docs, vec![json!({"k": 5}), json!({"k": 7})]);

        // updateMany, aggregate, deleteOne, deleteMany.
        let r = api
            .update_many(
                c,
                &json!({"owner": "v"}),
                &json!({"$set": {"seen": true}}),
                false,
            )
            .await
            .unwrap();
        assert_eq!((r.matched, r.modified), (5, 5));
        let agg = api
            .aggregate(c, &json!([{"$match": {"owner": "v"}}, {"$group": {"_id": "$g", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
            .await
            .unwrap();
        assert_eq!(
            agg,
            vec![json!({"_id": 0, "n": 2}), json!({"_id": 1, "n": 3})]
        );
        assert_eq!(
            api.delete_one(c, &json!({"owner": "v", "k": 3}))
                .await
                .unwrap(),
            1
        );
        assert_eq!(api.delete_many(c, &json!({"owner": "v"})).await.unwrap(), 4);
        assert_eq!(
            api.find_one(c, &json!({"owner": "v"}), None, None)
                .await
                .unwrap(),
            None
        );

        // Bad operator → Rejected (final), not retryable.
        let bad = api
            .update_one(c, &json!({}), &json!({"$bogus": {"a": 1}}), false)
            .await
            .unwrap_err();
        assert!(
            matches!(bad, BackendError::Rejected { status: 400, ref code, .. } if code == "InvalidParameter"),
            "{bad:?}"
        );
        assert!(!bad.is_retryable());
    });
}

#[test]
fn data_api_auth_modes_and_failure_classes() {
    let stack = Stack::start();
    block_on(async {
        for auth in [
            DataApiAuth::ApiKey,
            DataApiAuth::Bearer,
            DataApiAuth::Basic {
                username: "app".into(),
            },
        ] {
            let api =
                DataApiClient::new(UreqClient::default(), stack.data_api_config(auth.clone()));
            assert!(
                api.find_one("x", &json!({}), None, None).await.is_ok(),
                "{auth:?}"
            );
        }
        let mut cfg = stack.data_api_config(DataApiAuth::ApiKey);
        cfg.api_key = "wrong".into();
        let err = DataApiClient::new(UreqClient::default(), cfg)
            .find_one("x", &json!({}), None, None)
            .await
            .unwrap_err();
        assert!(
            matches!(err, BackendError::Rejected { status: 401, .. }),
            "{err:?}"
        );

        // Injected 503 → Unavailable (retryable).
        stack.data_api_faults(
            r#"{"rules":[{"match":"findOne","mode":"fail_before","count":1,"status":503}]}"#,
        );
        let err = stack
            .data_api()
            .find_one("x", &json!({}), None, None)
            .await
            .unwrap_err();
        assert!(err.is_retryable(), "{err:?}");

        // Client deadline → Unavailable { timed_out }.
        stack.data_api_faults(
            r#"{"rules":[{"match":"findOne","mode":"delay","delay_ms":800,"count":1}]}"#,
        );
        let mut cfg = stack.data_api_config(DataApiAuth::ApiKey);
        cfg.timeout_ms = 200;
        let err = DataApiClient::new(UreqClient::default(), cfg)
            .find_one("x", &json!({}), None, None)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                BackendError::Unavailable {
                    timed_out: true,
                    ..
                }
            ),
            "{err:?}"
        );

        // Nothing listening → Unavailable.
        let mut cfg = stack.data_api_config(DataApiAuth::ApiKey);
        cfg.base_url = "http://127.0.0.1:9".into();
        let err = DataApiClient::new(UreqClient::default(), cfg)
            .find_one("x", &json!({}), None, None)
            .await
            .unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
    });
}

#[test]
fn redis_client_command_pipeline_and_script_fallback() {
    let stack = Stack::start();
    let redis = stack.redis();
    block_on(async {
        assert_eq!(
            redis.command(&["SET", "k", "v"]).await.unwrap(),
            json!("OK")
        );
        assert_eq!(redis.command(&["GET", "k"]).await.unwrap(), json!("v"));
        assert_eq!(
            redis.command(&["GET", "missing"]).await.unwrap(),
            Value::Null
        );
        let err = redis.command(&["HGET", "k", "f"]).await.unwrap_err();
        assert!(
            matches!(err, BackendError::Rejected { ref code, .. } if code == "WRONGTYPE"),
            "{err:?}"
        );

        let out = redis
            .pipeline(&[
                vec!["INCR", "n"],
                vec!["INCR", "k"],
                vec!["INCRBY", "n", "5"],
            ])
            .await
            .unwrap();
        assert_eq!(out[0], Ok(json!(1)));
        assert!(out[1].is_err());
        assert_eq!(out[2], Ok(json!(6)));

        let script = Script::new("return {KEYS[1], ARGV[1]}");
        redis.command(&["SCRIPT", "FLUSH"]).await.unwrap();
        stack.reset_stats();
        assert_eq!(
            redis
                .evalsha_or_eval(&script, &["a"], &["b"])
                .await
                .unwrap(),
            json!(["a", "b"])
        );
        let calls = stack.redis_calls();
        assert_eq!(
            (calls["evalsha"].as_u64(), calls["eval"].as_u64()),
            (Some(1), Some(1)),
            "NOSCRIPT → EVAL: {calls}"
        );
        stack.reset_stats();
        redis
            .evalsha_or_eval(&script, &["a"], &["b"])
            .await
            .unwrap();
        let calls = stack.redis_calls();
        assert_eq!(
            (calls["evalsha"].as_u64(), calls.get("eval")),
            (Some(1), None),
            "cached after EVAL: {calls}"
        );
    });
}

#[test]
fn dedup_reserve_commit_release_and_leases() {
    let stack = Stack::start();
    let redis = stack.redis();
    let cfg = DedupConfig::for_rate(10_000, 600_000);
    let now = now_ms();
    block_on(async {
        let s = dedup::slot(&cfg, "evt-1", now);
        stack.reset_stats();
        let Reservation::Reserved { token } = dedup::reserve(&redis, &s, 30_000).await.unwrap()
        else {
            panic!("first sighting")
        };
        assert_eq!(
            stack.redis_calls(),
            json!({"evalsha": 1, "eval": 1}),
            "one round trip (+ the first EVAL after NOSCRIPT)"
        );
        assert_eq!(
            dedup::reserve(&redis, &s, 30_000).await.unwrap(),
            Reservation::InFlight
        );

        // Release by a stranger does nothing; by the holder frees the id.
        assert!(!dedup::release(&redis, &s, "not-the-token").await.unwrap());
        assert!(dedup::release(&redis, &s, &token).await.unwrap());
        let Reservation::Reserved { .. } = dedup::reserve(&redis, &s, 30_000).await.unwrap() else {
            panic!("released → free")
        };

        // Commit → duplicate forever after (within retention); release cannot undo it.
        assert!(dedup::commit(&redis, &s, None).await.unwrap());
        assert_eq!(
            dedup::reserve(&redis, &s, 30_000).await.unwrap(),
            Reservation::Duplicate
        );
        assert!(!dedup::release(&redis, &s, &token).await.unwrap());
        assert_eq!(
            dedup::reserve(&redis, &s, 30_000).await.unwrap(),
            Reservation::Duplicate
        );

        // The hash expires at window end + retention (PEXPIRETIME, redis ≥ 7).
        let at = redis.command(&["PEXPIRETIME", &s.key]).await.unwrap();
        assert_eq!(at.as_i64(), Some(s.expire_at_ms));

        // A crashed holder's lease expires and the id can be taken over. The lease is long, so
        // the in-flight check cannot race the clock; its expiry is then made to have happened
        // by moving the stored deadline into the past (what a crash leaves behind).
        let s2 = dedup::slot(&cfg, "evt-2", now);
        let Reservation::Reserved { token: lease } =
            dedup::reserve(&redis, &s2, 60_000).await.unwrap()
        else {
            panic!("first sighting")
        };
        assert_eq!(
            dedup::reserve(&redis, &s2, 60_000).await.unwrap(),
            Reservation::InFlight
        );
        let expired = (lease.parse::<i64>().expect("lease = deadline ms") - 120_000).to_string();
        redis
            .command(&["HSET", &s2.key, &s2.field, &expired])
            .await
            .unwrap();
        let Reservation::Reserved { token: taken } =
            dedup::reserve(&redis, &s2, 60_000).await.unwrap()
        else {
            panic!("an expired lease is taken over")
        };
        assert_ne!(taken, expired, "the new holder has its own lease");

        // Commit after the hash is gone does not resurrect it without a TTL.
        let s3 = dedup::slot(&cfg, "evt-3", now);
        assert!(!dedup::commit(&redis, &s3, None).await.unwrap());
        assert_eq!(redis.command(&["EXISTS", &s3.key]).await.unwrap(), json!(0));

        // An event older than the retention still gets a hash that outlives its lease.
        let old = dedup::slot(&cfg, "evt-old", now - 3_600_000);
        assert!(matches!(
            dedup::reserve(&redis, &old, 5_000).await.unwrap(),
            Reservation::Reserved { .. }
        ));
        let ttl = redis
            .command(&["PTTL", &old.key])
            .await
            .unwrap()
            .as_i64()
            .unwrap();
        assert!((1..=5_000).contains(&ttl), "ttl {ttl}");

        // A redelivery is keyed by the event's own time, whenever it arrives: still a duplicate.
        let again = dedup::slot(&cfg, "evt-1", now);
        assert_eq!(
            dedup::reserve(&redis, &again, 30_000).await.unwrap(),
            Reservation::Duplicate
        );

        // Buckets stay listpack-encoded (the whole point of sub-bucketing).
        let enc = redis
            .command(&["OBJECT", "ENCODING", &s.key])
            .await
            .unwrap();
        assert_eq!(enc, json!("listpack"));
    });
}
