//! [`handle`] over in-memory ports: a header map, assets in a map, a scripted Data API, hubs
//! that record their pokes, a hand-set clock.

use super::*;
use crate::testing::{config, data_api, Mem, Tokens};
use crate::{console, Reply};
use egn_core::backend::native::block_on;
use egn_core::backend::TransportError;
use std::collections::BTreeMap;

struct Req {
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

impl RequestHeaders for Req {
    fn header(&self, name: &str) -> Option<String> {
        self.headers.get(&name.to_ascii_lowercase()).cloned()
    }
}

impl RequestBody for Req {
    type Error = std::fmt::Error;
    async fn bytes(&mut self) -> Result<Vec<u8>, std::fmt::Error> {
        Ok(std::mem::take(&mut self.body))
    }
}

impl Incoming for Req {
    fn cf_country(&self) -> Option<String> {
        Some("DE".into())
    }
    fn cf_timezone(&self) -> Option<String> {
        None
    }
}

fn isolate() -> Isolate<Tokens> {
    Isolate::new(config(&[]), Some(Tokens))
}

/// `method path?query` with `headers`, through [`handle`] and [`finish`].
fn call(
    ports: &Mem,
    isolate: &Isolate<Tokens>,
    target: (&str, &str),
    headers: &[(&str, &str)],
) -> (Handled<String>, Caller) {
    let (path, query) = target.1.split_once('?').unwrap_or((target.1, ""));
    let mut req = Req {
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned()))
            .collect(),
        body: Vec::new(),
    };
    let t = Target {
        method: target.0,
        path,
        query: Some(query),
    };
    let mut caller = Caller::Anonymous;
    let result = block_on(handle(&mut req, t, isolate, ports, &mut caller));
    let origin = req.header("Origin");
    let cfg = isolate.config.as_ref().ok();
    (finish(result, "rid-1", origin.as_deref(), cfg).0, caller)
}

fn answer(h: Handled<String>) -> Answer {
    match h {
        Handled::Answer(a) => a,
        Handled::Upgrade(s) => panic!("an upgrade: {s}"),
    }
}

fn body(a: &Answer) -> serde_json::Value {
    serde_json::from_slice(a.body.as_deref().unwrap()).unwrap()
}

fn get(ports: &Mem, isolate: &Isolate<Tokens>, path: &str) -> Answer {
    answer(call(ports, isolate, ("GET", path), &[]).0)
}

#[test]
fn health_is_ok_or_degraded_by_each_probe_outcome_and_probes_until_one_succeeds() {
    let outcomes = [
        (data_api(404, "not found"), 503, Some("data_api_not_found")),
        (
            data_api(401, r#"{"error":"no"}"#),
            503,
            Some("data_api_unauthorized"),
        ),
        (
            Err(TransportError {
                timed_out: true,
                message: "timeout".into(),
            }),
            503,
            Some("data_api_unavailable"),
        ),
        (data_api(200, r#"{"documents":[]}"#), 200, None),
    ];
    let ports = Mem {
        geo_ok: true,
        ..Mem::default()
    };
    let isolate = isolate();
    for (n, (reply, status, error)) in outcomes.into_iter().enumerate() {
        ports.http.0.borrow_mut().push(reply);
        let a = get(&ports, &isolate, "/healthz");
        let b = body(&a);
        assert_eq!(a.status, status, "{b}");
        assert_eq!(b["data_api"]["error"].as_str(), error);
        assert_eq!(b["status"], if status == 200 { "ok" } else { "degraded" });
        assert_eq!(
            ports.http.1.get(),
            n + 1,
            "one probe per call until one succeeds"
        );
    }
    // Probed once in this isolate: no more requests, still ok.
    let a = get(&ports, &isolate, "/healthz");
    assert_eq!((a.status, ports.http.1.get()), (200, 4));
    assert_eq!(body(&a)["data_api"]["probe"], "ok");
    assert_eq!(body(&a)["auth"]["jwks_fetches"], 7);
    assert_eq!(a.header("content-type"), Some("application/json"));
    assert_eq!(a.header("X-Request-Id"), Some("rid-1"));
}

#[test]
fn health_answers_under_a_bad_configuration_without_probing() {
    let ports = Mem {
        geo_ok: true,
        ..Mem::default()
    };
    let bad = Isolate::new(config(&[("BACKEND_TIMEOUT_MS", "soon")]), Some(Tokens));
    let a = get(&ports, &bad, "/healthz");
    let b = body(&a);
    assert_eq!((a.status, &b["status"]), (503, &"degraded".into()));
    assert_eq!(b["config"]["var"], "BACKEND_TIMEOUT_MS");
    assert!(b["data_api"].is_null());
    assert_eq!(ports.http.1.get(), 0);
    // The geo index alone degrades it too.
    let ports = Mem::default();
    ports
        .http
        .0
        .borrow_mut()
        .push(data_api(200, r#"{"documents":[]}"#));
    let a = get(&ports, &isolate(), "/healthz");
    assert_eq!(
        (a.status, &body(&a)["geo"]["status"]),
        (503, &"unavailable".into())
    );
}

#[test]
fn the_manifest_is_read_once_and_a_failed_read_is_retried() {
    let ports = Mem {
        geo_ok: true,
        assets_down: Cell::new(true),
        ..Mem::default()
    };
    let isolate = isolate();
    ports
        .http
        .0
        .borrow_mut()
        .push(data_api(200, r#"{"documents":[]}"#));
    let a = get(&ports, &isolate, "/healthz");
    assert!(body(&a)["assets"]["geo_source"].is_null());
    ports.assets_down.set(false);
    let manifest = br#"{"geo":{"source":"ne"},"ip":{"source":"db"},"format_version":3}"#;
    ports
        .assets
        .borrow_mut()
        .insert("manifest.json".into(), manifest.to_vec());
    let a = get(&ports, &isolate, "/healthz");
    assert_eq!(body(&a)["assets"]["geo_source"], "ne");
    assert_eq!(ports.asset_reads.get(), 2);
    let a = get(&ports, &isolate, "/healthz");
    assert_eq!(body(&a)["assets"]["format_version"], 3);
    assert_eq!(ports.asset_reads.get(), 2, "cached once read");
}

#[test]
fn the_document_answers_even_under_a_bad_configuration() {
    let ports = Mem::default();
    let bad = Isolate::new(config(&[("BACKEND_TIMEOUT_MS", "soon")]), Some(Tokens));
    let a = get(&ports, &bad, "/openapi.json");
    assert_eq!(a.status, 200);
    assert_eq!(a.body.as_deref(), Some(&b"{\"openapi\":\"3.1.0\"}"[..]));
    assert_eq!(a.header("content-type"), Some("application/json"));
    let a = get(&ports, &bad, "/v1/geo/ip?ip=1.1.1.1");
    assert_eq!(
        (a.status, &body(&a)["error"]["code"]),
        (503, &"config_invalid".into())
    );
}

#[test]
fn console_files_carry_the_policy_and_only_served_kinds_are_read() {
    let ports = Mem::default();
    ports
        .assets
        .borrow_mut()
        .insert("www/app.js".into(), b"let x;".to_vec());
    let a = get(&ports, &isolate(), "/www/app.js");
    assert_eq!(a.status, 200);
    assert_eq!(a.body.as_deref(), Some(&b"let x;"[..]));
    assert_eq!(
        a.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(a.header("content-security-policy"), Some(console::CSP));
    assert_eq!(a.header("cache-control"), Some("no-cache"));
    // Not a served kind: 404 before any read; a missing file: 404 too.
    let a = get(&ports, &isolate(), "/www/x.mmdb");
    assert_eq!((a.status, ports.asset_reads.get()), (404, 1));
    assert_eq!(body(&a)["error"]["code"], "not_found");
    let a = get(&ports, &isolate(), "/www/gone.css");
    assert_eq!((a.status, ports.asset_reads.get()), (404, 2));
    // The page must exist: else the assets are unavailable.
    let a = get(&ports, &isolate(), "/");
    assert_eq!(
        (a.status, &body(&a)["error"]["code"]),
        (503, &"asset_unavailable".into())
    );
}

#[test]
fn a_preflight_is_a_204_with_a_null_body() {
    let ports = Mem::default();
    let cors = Isolate::new(
        config(&[("CORS_ALLOWED_ORIGINS", "https://app.example")]),
        None,
    );
    let origin = [("Origin", "https://app.example")];
    let (h, _) = call(&ports, &cors, ("OPTIONS", "/v1/geo/ip"), &origin);
    let a = answer(h);
    assert_eq!((a.status, a.body.as_ref()), (204, None));
    assert!(a.header("Access-Control-Allow-Methods").is_some());
    assert_eq!(
        a.header("Access-Control-Allow-Origin"),
        Some("https://app.example")
    );
    assert_eq!(a.header("X-Request-Id"), Some("rid-1"));
}

#[test]
fn ip_routes_check_the_query_before_the_database_and_me_takes_the_edge_address() {
    let ports = Mem::default();
    let a = get(&ports, &isolate(), "/v1/geo/ip?ip=nope");
    assert_eq!((a.status, ports.served.get()), (400, 0));
    let a = get(&ports, &isolate(), "/v1/geo/ip?ip=1.1.1.1");
    assert_eq!((a.status, ports.served.get()), (503, 1));
    let (h, _) = call(
        &ports,
        &isolate(),
        ("GET", "/v1/geo/me"),
        &[("CF-Connecting-IP", "9.9.9.9")],
    );
    assert_eq!((answer(h).status, ports.served.get()), (503, 2));
}

#[test]
fn the_stream_needs_an_upgrade_and_a_hub() {
    let ports = Mem::default();
    let user = [("Authorization", "Bearer good-u1")];
    let (h, caller) = call(
        &ports,
        &isolate(),
        ("GET", "/v1/notifications/stream"),
        &user,
    );
    let a = answer(h);
    assert_eq!(
        (a.status, &body(&a)["error"]["code"]),
        (426, &"upgrade_required".into())
    );
    assert_eq!(caller, Caller::User("u1".into()));
    let upgrade = [
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Protocol", "inbox.v1, auth.good-u1"),
    ];
    let (h, _) = call(
        &ports,
        &isolate(),
        ("GET", "/v1/notifications/stream"),
        &upgrade,
    );
    let a = answer(h);
    assert_eq!(
        (a.status, &body(&a)["error"]["code"]),
        (503, &"not_configured".into())
    );
    let hubs = Mem {
        hubs: true,
        ..Mem::default()
    };
    let (h, _) = call(
        &hubs,
        &isolate(),
        ("GET", "/v1/notifications/stream"),
        &upgrade,
    );
    assert!(matches!(h, Handled::Upgrade(ref s) if s == "socket of u1"));
    let connected = hubs.connected.borrow();
    assert_eq!(connected[0].1, "inbox.v1, auth.good-u1");
}

#[test]
fn a_write_pokes_the_changed_owners_and_marks_a_replay() {
    let ports = Mem::default();
    let reply = Reply {
        status: 201,
        body: serde_json::json!({ "ok": true }),
        replayed: true,
        changed: vec!["u1".into(), "u2".into()],
    };
    let svc = crate::backends::service(ports.http(), isolate().config.as_ref().unwrap()).unwrap();
    let a = routes::answer_write(&ports, svc, (Ok(reply), Vec::new())).unwrap();
    assert_eq!(
        (a.status, a.header("Idempotent-Replayed")),
        (201, Some("true"))
    );
    assert_eq!(*ports.poked.borrow(), ["u1", "u2"]);
    assert_eq!(ports.after.get(), 0, "nothing deferred, nothing scheduled");
    // A refused write pokes nobody.
    let svc = crate::backends::service(ports.http(), isolate().config.as_ref().unwrap()).unwrap();
    let e = routes::answer_write(&ports, svc, (Err(ApiError::internal("x")), Vec::new()));
    assert_eq!(e.unwrap_err().status(), 500);
    assert_eq!(ports.poked.borrow().len(), 2);
}

#[test]
fn errors_render_their_headers_and_answers_get_the_request_id() {
    let e = ApiError::rate_limited();
    let (h, err) = finish::<String>(Err(e), "r9", None, None);
    let a = answer(h);
    assert_eq!(err.map(|e| e.status()), Some(429));
    assert!(a.header("Retry-After").is_some());
    assert_eq!(body(&a)["error"]["code"], "rate_limited");
    assert_eq!(a.header("X-Request-Id"), Some("r9"));
}
