//! The pipeline's rules over in-memory ports: a header map, a token table, limiters that
//! record what they were asked.

use super::*;
use crate::routes::resolve;
use crate::testing::Tokens;
use egn_core::backend::native::block_on;
use egn_core::config::Vars;
use std::cell::RefCell;
use std::collections::BTreeMap;

struct Req(BTreeMap<String, String>);

impl Req {
    fn new(headers: &[(&str, &str)]) -> Self {
        Req(headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned()))
            .collect())
    }
}

impl RequestHeaders for Req {
    fn header(&self, name: &str) -> Option<String> {
        self.0.get(&name.to_ascii_lowercase()).cloned()
    }
}

/// Answers `allow` (or nothing: not bound) and records each question.
struct Limiters {
    allow: Option<bool>,
    asked: RefCell<Vec<(Limiter, String)>>,
}

impl Limiters {
    fn answering(allow: Option<bool>) -> Self {
        Limiters {
            allow,
            asked: RefCell::new(Vec::new()),
        }
    }
}

impl RateLimiters for Limiters {
    async fn allows(&self, limiter: Limiter, key: &str) -> Option<bool> {
        self.asked.borrow_mut().push((limiter, key.to_owned()));
        self.allow
    }
}

fn config(extra: &[(&str, &str)]) -> Config {
    let mut vars: BTreeMap<&str, &str> = BTreeMap::from([
        ("ENVIRONMENT", "development"),
        ("SERVICE_KEYS", "ingest:notify:write"),
        ("SERVICE_KEY_INGEST", "ingest-key"),
        ("CORS_ALLOWED_ORIGINS", "https://app.example"),
    ]);
    vars.extend(extra.iter().copied());
    let get = |n: &str| vars.get(n).map(|v| (*v).to_owned());
    Config::from_vars(&Vars::new(&get)).expect("a valid configuration")
}

fn route(method: &str, path: &str) -> &'static Route {
    resolve(method, path, false).unwrap().route
}

const NO_USERS: Option<&Tokens> = None;

fn auth(req: &Req, method: &str, path: &str, users: Option<&Tokens>) -> Result<Caller, ApiError> {
    block_on(authorize(
        req,
        route(method, path),
        &config(&[]),
        users,
        0.0,
    ))
}

#[test]
fn the_gate_lets_only_health_and_the_document_through_a_bad_configuration() {
    let get = |n: &str| (n == "BACKEND_TIMEOUT_MS").then(|| "soon".to_owned());
    let bad = Config::from_vars(&Vars::new(&get));
    assert!(bad.is_err());
    assert!(matches!(gate(&bad, "/healthz"), Ok(Gate::Health)));
    assert!(matches!(gate(&bad, "/openapi.json"), Ok(Gate::Document)));
    let e = gate(&bad, "/v1/geo/country").unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (503, "config_invalid"));
    assert!(
        e.message.starts_with("configuration error: "),
        "{}",
        e.message
    );
    assert!(e.message.contains("BACKEND_TIMEOUT_MS"), "{}", e.message);
    let good = Ok(config(&[]));
    assert!(matches!(gate(&good, "/healthz"), Ok(Gate::Open(_))));
}

#[test]
fn cors_headers_only_for_a_listed_origin_of_a_parsed_configuration() {
    let cfg = config(&[]);
    let h = cors_headers(Some("https://app.example"), Some(&cfg));
    let names: Vec<_> = h.iter().map(|h| (h.name, h.append)).collect();
    assert_eq!(
        names,
        [
            ("Access-Control-Allow-Origin", false),
            ("Access-Control-Expose-Headers", false),
            ("Vary", true)
        ]
    );
    assert_eq!(h[0].value, "https://app.example");
    assert_eq!(h[1].value, "X-Request-Id, Retry-After, Idempotent-Replayed");
    assert!(cors_headers(Some("https://evil.example"), Some(&cfg)).is_empty());
    assert!(cors_headers(None, Some(&cfg)).is_empty());
    assert!(cors_headers(Some("https://app.example"), None).is_empty());
    let any = config(&[("CORS_ALLOWED_ORIGINS", "*")]);
    assert_eq!(
        cors_headers(Some("https://x.example"), Some(&any))[0].value,
        "https://x.example"
    );
}

#[test]
fn a_preflight_answers_the_tables_methods_and_refuses_unknown_paths_and_origins() {
    let cfg = config(&[]);
    let same_origin = preflight("/v1/geo/country", None, &cfg).unwrap();
    assert_eq!(same_origin, [set("Allow", "GET, POST, OPTIONS")]);
    let cross = preflight(
        "/v1/notifications/items/k1",
        Some("https://app.example"),
        &cfg,
    )
    .unwrap();
    assert_eq!(
        cross,
        [
            set("Allow", "DELETE, OPTIONS"),
            set("Access-Control-Allow-Methods", "DELETE"),
            set(
                "Access-Control-Allow-Headers",
                "Authorization, Content-Type, Idempotency-Key"
            ),
            set("Access-Control-Max-Age", "600"),
        ]
    );
    let e = preflight("/nope", Some("https://app.example"), &cfg).unwrap_err();
    assert_eq!(
        (e.status(), e.message.as_str()),
        (404, "no route for /nope")
    );
    let e = preflight("/v1/geo/country", Some("https://evil.example"), &cfg).unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (403, "origin_not_allowed"));
}

#[test]
fn bearer_takes_any_case_of_the_scheme_and_no_empty_token() {
    assert_eq!(
        bearer(&Req::new(&[("authorization", "Bearer abc")])).as_deref(),
        Some("abc")
    );
    assert_eq!(
        bearer(&Req::new(&[("authorization", "bearer  abc ")])).as_deref(),
        Some("abc")
    );
    assert_eq!(bearer(&Req::new(&[("authorization", "Basic abc")])), None);
    assert_eq!(bearer(&Req::new(&[("authorization", "Bearer  ")])), None);
    assert_eq!(bearer(&Req::new(&[("authorization", "Bearer")])), None);
    assert_eq!(bearer(&Req::new(&[])), None);
}

#[test]
fn only_the_stream_takes_its_token_from_the_subprotocols() {
    let ws = Req::new(&[("sec-websocket-protocol", "inbox.v1, auth.good-ana")]);
    let stream = route("GET", "/v1/notifications/stream");
    assert_eq!(user_token(&ws, stream).as_deref(), Some("good-ana"));
    assert_eq!(user_token(&ws, route("GET", "/v1/notifications")), None);
    // A header token wins.
    let both = Req::new(&[
        ("sec-websocket-protocol", "inbox.v1, auth.good-ana"),
        ("authorization", "Bearer good-bob"),
    ]);
    assert_eq!(user_token(&both, stream).as_deref(), Some("good-bob"));
}

#[test]
fn public_routes_need_no_one() {
    let r = auth(
        &Req::new(&[("authorization", "Bearer junk")]),
        "GET",
        "/v1/geo/country",
        NO_USERS,
    );
    assert_eq!(r.unwrap(), Caller::Anonymous);
}

#[test]
fn user_routes_check_the_configuration_then_the_token_then_its_signature() {
    let path = "/v1/notifications";
    let e = auth(
        &Req::new(&[("authorization", "Bearer good-ana")]),
        "GET",
        path,
        NO_USERS,
    )
    .unwrap_err();
    assert_eq!(e.code.as_str(), "not_configured");
    assert_eq!(
        e.message,
        "user authentication (AUTH_HS256_SECRET or AUTH_JWKS_URL) is not configured"
    );
    let e = auth(&Req::new(&[]), "GET", path, Some(&Tokens)).unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (401, "unauthorized"));
    let e = auth(
        &Req::new(&[("authorization", "Bearer bad")]),
        "GET",
        path,
        Some(&Tokens),
    )
    .unwrap_err();
    assert_eq!(e.code.as_str(), "invalid_signature");
    let ok = auth(
        &Req::new(&[("authorization", "Bearer good-ana")]),
        "GET",
        path,
        Some(&Tokens),
    );
    assert_eq!(ok.unwrap(), Caller::User("ana".into()));
}

#[test]
fn service_routes_check_the_keys_then_the_token_then_the_key_then_its_scope() {
    let events = "/v1/notifications/events";
    let key = Req::new(&[("authorization", "Bearer ingest-key")]);
    let none = config(&[("SERVICE_KEYS", ""), ("SERVICE_KEY_INGEST", "")]);
    let e = block_on(authorize(&key, route("POST", events), &none, NO_USERS, 0.0)).unwrap_err();
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        (
            "not_configured",
            "service keys (SERVICE_KEYS or SERVICE_TOKEN) is not configured"
        )
    );
    let e = auth(&Req::new(&[]), "POST", events, NO_USERS).unwrap_err();
    assert_eq!(e.code.as_str(), "unauthorized");
    let e = auth(
        &Req::new(&[("authorization", "Bearer other")]),
        "POST",
        events,
        NO_USERS,
    )
    .unwrap_err();
    assert_eq!(e.code.as_str(), "invalid_service_key");
    let e = auth(&key, "GET", "/v1/admin/dead-letters", NO_USERS).unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (403, "insufficient_scope"));
    assert_eq!(
        auth(&key, "POST", events, NO_USERS).unwrap(),
        Caller::Service("ingest".into())
    );
    // A user token is not a service key.
    let user = Req::new(&[("authorization", "Bearer good-ana")]);
    let e = auth(&user, "POST", events, Some(&Tokens)).unwrap_err();
    assert_eq!(e.code.as_str(), "invalid_service_key");
}

#[test]
fn geo_routes_count_per_ip_user_routes_per_user_others_not_at_all() {
    let ip = Req::new(&[("cf-connecting-ip", "203.0.113.9")]);
    let anon = Caller::Anonymous;
    let geo = route("GET", "/v1/geo/country");
    assert_eq!(
        rate_limit_key(&ip, geo, &anon),
        Some((Limiter::Geo, "203.0.113.9".into()))
    );
    assert_eq!(
        rate_limit_key(&Req::new(&[]), geo, &anon),
        Some((Limiter::Geo, "unknown".into()))
    );
    let ana = Caller::User("ana".into());
    let list = route("GET", "/v1/notifications");
    assert_eq!(
        rate_limit_key(&ip, list, &ana),
        Some((Limiter::User, "ana".into()))
    );
    assert_eq!(rate_limit_key(&ip, list, &anon), None);
    let svc = Caller::Service("ingest".into());
    assert_eq!(
        rate_limit_key(&ip, route("POST", "/v1/notifications/events"), &svc),
        None
    );
    assert_eq!(rate_limit_key(&ip, route("GET", "/healthz"), &anon), None);
}

#[test]
fn a_refusing_limiter_answers_429_and_a_missing_or_failed_one_lets_through() {
    let req = Req::new(&[("cf-connecting-ip", "203.0.113.9")]);
    let geo = route("GET", "/v1/geo/ip");
    let run = |allow| {
        let l = Limiters::answering(allow);
        let r = block_on(rate_limit(&l, &req, geo, &Caller::Anonymous));
        (r, l.asked.into_inner())
    };
    let (r, asked) = run(Some(false));
    let e = r.unwrap_err();
    assert_eq!(
        (e.status(), e.code.as_str(), e.retry_after),
        (429, "rate_limited", Some(60))
    );
    assert_eq!(asked, [(Limiter::Geo, "203.0.113.9".to_owned())]);
    assert!(run(Some(true)).0.is_ok());
    assert!(run(None).0.is_ok());
    // A route that counts against nothing never asks.
    let l = Limiters::answering(Some(false));
    block_on(rate_limit(
        &l,
        &req,
        route("GET", "/healthz"),
        &Caller::Anonymous,
    ))
    .unwrap();
    assert!(l.asked.borrow().is_empty());
}

#[test]
fn body_limits_refuse_a_declared_or_read_length_over_the_routes() {
    assert!(check_body_len(1024, 1024).is_ok());
    let e = check_body_len(1025, 1024).unwrap_err();
    assert_eq!(
        (e.status(), e.message.as_str()),
        (413, "request body over 1024 bytes")
    );
    assert_eq!(
        declared_length(&Req::new(&[("content-length", "12")])),
        Some(12)
    );
    assert_eq!(declared_length(&Req::new(&[("content-length", "x")])), None);
    assert!(discard_unread(Some(16)));
    assert!(discard_unread(Some(DISCARD_MAX)));
    assert!(!discard_unread(Some(DISCARD_MAX + 1)));
    assert!(!discard_unread(Some(0)));
    assert!(!discard_unread(None));
}

#[test]
fn the_request_id_is_a_sane_cf_ray_or_random_hex() {
    let random = || [0xab, 0, 1, 2, 3, 4, 5, 0xff];
    assert_eq!(
        request_id(&Req::new(&[("cf-ray", "8f1-AMS")]), random),
        "8f1-AMS"
    );
    assert_eq!(request_id(&Req::new(&[]), random), "ab000102030405ff");
    assert_eq!(
        request_id(&Req::new(&[("cf-ray", "a b")]), random),
        "ab000102030405ff"
    );
    let long = "x".repeat(65);
    assert_eq!(
        request_id(&Req::new(&[("cf-ray", &long)]), random),
        "ab000102030405ff"
    );
}

#[test]
fn admit_resolves_then_authenticates_then_limits_then_checks_the_declared_body() {
    let cfg = config(&[]);
    let limiters = Limiters::answering(Some(false));
    let run = |req: &Req, method, path, limiters: &Limiters| {
        let mut caller = Caller::Anonymous;
        let ports = Ports {
            users: Some(&Tokens),
            limiters,
            now_ms: 0.0,
        };
        let r = block_on(admit(req, (method, path), &cfg, &ports, &mut caller));
        (r, caller)
    };
    // 404 and 405 before anyone is asked for a token.
    let (r, _) = run(&Req::new(&[]), "GET", "/nope", &limiters);
    assert_eq!(r.unwrap_err().status(), 404);
    let (r, _) = run(&Req::new(&[]), "PATCH", "/v1/notifications", &limiters);
    assert_eq!(r.unwrap_err().status(), 405);
    // 401 before the limiter is asked.
    let (r, _) = run(&Req::new(&[]), "GET", "/v1/notifications", &limiters);
    assert_eq!(r.unwrap_err().status(), 401);
    assert!(limiters.asked.borrow().is_empty());
    // 429 after: the log line still names the user.
    let ana = Req::new(&[
        ("authorization", "Bearer good-ana"),
        ("content-length", "99999999"),
    ]);
    let (r, caller) = run(&ana, "POST", "/v1/notifications/mark", &limiters);
    assert_eq!(
        (r.unwrap_err().status(), caller),
        (429, Caller::User("ana".into()))
    );
    // 413 from the declared length, before the body is read.
    let open = Limiters::answering(None);
    let (r, _) = run(&ana, "POST", "/v1/notifications/mark", &open);
    assert_eq!(r.unwrap_err().status(), 413);
    let ana = Req::new(&[
        ("authorization", "Bearer good-ana"),
        ("content-length", "20"),
    ]);
    let (r, _) = run(&ana, "DELETE", "/v1/notifications/items/k%201", &open);
    let admitted = r.unwrap();
    assert_eq!(admitted.matched.param.as_deref(), Some("k 1"));
    assert_eq!(admitted.caller.owner().unwrap(), "ana");
    assert!(Caller::Anonymous.owner().is_err());
    assert_eq!(Caller::Service("ingest".into()).label(), "service:ingest");
}

#[test]
fn the_log_line_names_the_caller_kind_and_only_a_5xx_cause() {
    let user = Caller::User("ana@example.com".into());
    let line = |status, ms, error: Option<&ApiError>| {
        LogLine {
            rid: "r1",
            method: "GET",
            path: "/v1/notifications",
            status,
            ms,
            caller: &user,
        }
        .json(error)
        .to_string()
    };
    assert_eq!(
        line(101, None, None),
        r#"{"rid":"r1","method":"GET","path":"/v1/notifications","status":101,"caller":"user"}"#
    );
    let refused = ApiError::from(AuthError::Expired);
    assert_eq!(
        line(401, Some(3), Some(&refused)),
        r#"{"rid":"r1","method":"GET","path":"/v1/notifications","status":401,"ms":3,"caller":"user","code":"token_expired"}"#
    );
    let down = ApiError::new(crate::ErrorCode::BackendUnavailable, "redis: refused");
    assert!(line(503, Some(9), Some(&down))
        .ends_with(r#""code":"backend_unavailable","error":"redis: refused"}"#));
    assert!(!line(503, Some(9), Some(&down)).contains("ana"));
}

#[test]
fn the_stream_takes_only_a_websocket_upgrade() {
    assert!(require_websocket(&Req::new(&[("upgrade", "WebSocket")])).is_ok());
    let e = require_websocket(&Req::new(&[])).unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (426, "upgrade_required"));
    assert!(require_websocket(&Req::new(&[("upgrade", "h2c")])).is_err());
}

/// A body that answers `bytes` (or fails) and counts its reads.
struct Body {
    bytes: Result<Vec<u8>, &'static str>,
    reads: usize,
}

impl RequestBody for Body {
    type Error = &'static str;
    async fn bytes(&mut self) -> Result<Vec<u8>, Self::Error> {
        self.reads += 1;
        self.bytes.clone()
    }
}

#[test]
fn the_front_gates_then_answers_a_preflight_without_a_caller_then_admits() {
    let good = Ok(config(&[]));
    let bad = Config::from_vars(&Vars::new(&|n: &str| {
        (n == "BACKEND_TIMEOUT_MS").then(|| "soon".to_owned())
    }));
    assert!(bad.is_err());
    let limiters = Limiters::answering(None);
    let ports = Ports {
        users: Some(&Tokens),
        limiters: &limiters,
        now_ms: 0.0,
    };
    let run = |req: &Req, method, path, config| {
        let mut caller = Caller::Anonymous;
        let r = block_on(front(req, (method, path), config, &ports, &mut caller));
        (r, caller)
    };
    let none = Req::new(&[]);
    // A bad configuration: only the health and the document answer, even to OPTIONS.
    assert!(matches!(
        run(&none, "GET", "/healthz", &bad).0,
        Ok(Front::Health)
    ));
    assert!(matches!(
        run(&none, "GET", "/openapi.json", &bad).0,
        Ok(Front::Document)
    ));
    let e = run(&none, "OPTIONS", "/v1/geo/country", &bad)
        .0
        .unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (503, "config_invalid"));
    // A preflight of a user route needs no token and asks no limiter.
    let cross = Req::new(&[("origin", "https://app.example")]);
    let Ok(Front::Preflight(h)) = run(&cross, "OPTIONS", "/v1/notifications", &good).0 else {
        panic!("a preflight");
    };
    assert_eq!(h[0].name, "Allow");
    assert_eq!(h[1].name, "Access-Control-Allow-Methods");
    assert!(limiters.asked.borrow().is_empty());
    let evil = Req::new(&[("origin", "https://evil.example")]);
    let e = run(&evil, "OPTIONS", "/v1/notifications", &good)
        .0
        .unwrap_err();
    assert_eq!(e.status(), 403);
    // Anything else is admitted, or refused by admit's first refusing step.
    let e = run(&none, "GET", "/v1/notifications", &good).0.unwrap_err();
    assert_eq!(e.status(), 401);
    let ana = Req::new(&[("authorization", "Bearer good-ana")]);
    let (r, caller) = run(&ana, "GET", "/v1/notifications", &good);
    let Ok(Front::Route(_, admitted)) = r else {
        panic!("admitted");
    };
    assert_eq!(admitted.matched.route.op, Op::List);
    assert_eq!(caller, Caller::User("ana".into()));
}

#[test]
fn a_body_is_read_only_for_a_route_that_takes_one_and_checked_once_read() {
    let read = |method, path, bytes: Result<Vec<u8>, &'static str>| {
        let mut body = Body { bytes, reads: 0 };
        let r = block_on(read_body(route(method, path), &mut body));
        (r, body.reads)
    };
    let (r, reads) = read("GET", "/v1/notifications", Ok(vec![1; 10]));
    assert_eq!((r.unwrap(), reads), (Vec::new(), 0));
    let (r, reads) = read("POST", "/v1/notifications/mark", Ok(b"{}".to_vec()));
    assert_eq!((r.unwrap(), reads), (b"{}".to_vec(), 1));
    let limit = route("POST", "/v1/notifications/mark").body_limit;
    let (r, _) = read("POST", "/v1/notifications/mark", Ok(vec![b' '; limit + 1]));
    let e = r.unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (413, "payload_too_large"));
    let (r, _) = read("POST", "/v1/notifications/mark", Err("stream reset"));
    let e = r.unwrap_err();
    assert_eq!((e.status(), e.code.as_str()), (400, "unreadable_body"));
}

#[test]
fn every_answer_carries_its_request_id_then_cors_for_a_listed_origin() {
    let cfg = config(&[]);
    let names = |h: Vec<Header>| h.iter().map(|h| h.name).collect::<Vec<_>>();
    let h = answer_headers("r1", Some("https://app.example"), Some(&cfg));
    assert_eq!((h[0].name, h[0].value.as_str()), ("X-Request-Id", "r1"));
    assert_eq!(
        names(h)[1..],
        [
            "Access-Control-Allow-Origin",
            "Access-Control-Expose-Headers",
            "Vary"
        ]
    );
    assert_eq!(
        names(answer_headers(
            "r1",
            Some("https://evil.example"),
            Some(&cfg)
        )),
        ["X-Request-Id"]
    );
    assert_eq!(
        names(answer_headers("r1", Some("https://app.example"), None)),
        ["X-Request-Id"]
    );
}

#[test]
fn only_a_5xx_is_logged_at_error_level() {
    let line = |status| LogLine {
        rid: "r1",
        method: "GET",
        path: "/",
        status,
        ms: None,
        caller: &Caller::Anonymous,
    };
    assert!(!line(499).is_error());
    assert!(line(500).is_error());
    assert!(line(503).is_error());
    assert!(!line(101).is_error());
}
