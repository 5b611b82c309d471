//! `/healthz` under each part's outcome, and the Data API probe over a scripted HTTP client.

use super::*;
use crate::testing::config as parse;
use egn_core::backend::native::block_on;
use egn_core::backend::{DataApiClient, HttpRequest, HttpResponse, TransportError};
use egn_core::ip::serving::Serving;
use serde_json::json;
use std::cell::RefCell;
use std::collections::BTreeMap;

fn geo(status: GeoStatus) -> GeoHealth {
    GeoHealth {
        status,
        error: None,
        index: None,
    }
}

fn ipdb() -> IpdbReport {
    let s = Serving::new();
    IpdbReport {
        serving: s.health(),
        freshness: s.freshness(0, 45),
    }
}

fn failed_probe() -> DataApiProbe {
    DataApiProbe {
        probe: ProbeState::Failed,
        error: Some(ProbeError::DataApiNotFound),
        message: Some("m".into()),
    }
}

fn health(
    config: &Result<Config, ConfigError>,
    geo_status: GeoStatus,
    data_api: Option<DataApiProbe>,
    env: &[(&str, &str)],
) -> (u16, Health) {
    let manifest =
        json!({ "geo": { "source": "g" }, "ip": { "source": "i" }, "format_version": 2 });
    let parts = Parts {
        config,
        geo: geo(geo_status),
        ipdb: ipdb(),
        data_api,
        jwks_fetches: Some(3),
        manifest: &manifest,
    };
    let env: BTreeMap<&str, &str> = env.iter().copied().collect();
    assemble(parts, &|n| env.get(n).map(|v| (*v).to_owned()))
}

#[test]
fn ok_only_when_geo_config_and_the_probe_all_are() {
    let cfg = parse(&[]);
    let probe_ok = || Some(DataApiProbe::state(ProbeState::Ok));
    let (status, body) = health(&cfg, GeoStatus::Ok, probe_ok(), &[]);
    assert_eq!((status, body.status), (200, HealthStatus::Ok));
    assert_eq!(body.auth, Some(AuthHealth { jwks_fetches: 3 }));
    assert_eq!(body.assets.geo_source, "g");
    assert_eq!(body.assets.format_version, 2);
    // No Data API configured is not a failure.
    let not_configured = Some(DataApiProbe::state(ProbeState::NotConfigured));
    assert_eq!(health(&cfg, GeoStatus::Ok, not_configured, &[]).0, 200);
    let (status, body) = health(&cfg, GeoStatus::Unavailable, probe_ok(), &[]);
    assert_eq!((status, body.status), (503, HealthStatus::Degraded));
    assert_eq!(
        health(&cfg, GeoStatus::Ok, Some(failed_probe()), &[]).0,
        503
    );
}

#[test]
fn a_bad_configuration_is_named_and_degrades() {
    let bad = parse(&[("BACKEND_TIMEOUT_MS", "soon")]);
    let (status, body) = health(&bad, GeoStatus::Ok, None, &[]);
    assert_eq!(status, 503);
    let problem = body.config.expect("the problem");
    assert_eq!(problem.var, "BACKEND_TIMEOUT_MS");
    assert!(
        problem.error.contains("BACKEND_TIMEOUT_MS"),
        "{}",
        problem.error
    );
    assert_eq!(stale_after_days(&bad), 45);
    assert_eq!(
        stale_after_days(&parse(&[("IPDB_STALE_AFTER_DAYS", "9")])),
        9
    );
}

#[test]
fn missing_and_declared_secrets_are_listed_by_name() {
    let cfg = parse(&[("SERVICE_KEYS", "ingest:notify:write")]);
    let env = [("ENVIRONMENT", "development"), ("DATA_API_KEY", "k")];
    let (_, body) = health(&cfg, GeoStatus::Ok, None, &env);
    assert!(body
        .secrets
        .missing
        .contains(&"SERVICE_KEY_INGEST".to_owned()));
    assert!(body
        .secrets
        .missing
        .contains(&"REDIS_REST_TOKEN".to_owned()));
    assert!(!body.secrets.missing.contains(&"DATA_API_KEY".to_owned()));
    // Local development refuses nothing.
    assert!(body.secrets.refused.is_empty());
}

#[test]
fn a_deployment_lists_refused_secrets_by_name_and_reason() {
    let cfg = parse(&[]);
    let env = [("ENVIRONMENT", "production"), ("REDIS_REST_TOKEN", "short")];
    let (_, body) = health(&cfg, GeoStatus::Ok, None, &env);
    let refused: Vec<_> = body
        .secrets
        .refused
        .iter()
        .map(|r| r.var.as_str())
        .collect();
    assert_eq!(refused, ["REDIS_REST_TOKEN"]);
    assert!(!serde_json::to_string(&body).unwrap().contains("\"short\""));
}

/// Answers each request with the next scripted outcome and records the requests.
struct Script {
    answers: RefCell<Vec<Result<HttpResponse, TransportError>>>,
    sent: RefCell<Vec<HttpRequest>>,
}

impl HttpClient for &Script {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, TransportError> {
        self.sent.borrow_mut().push(req);
        self.answers.borrow_mut().remove(0)
    }
}

fn answer(status: u16, body: &str) -> Result<HttpResponse, TransportError> {
    Ok(HttpResponse {
        status,
        body: body.as_bytes().to_vec(),
        headers: Vec::new(),
    })
}

fn probe(
    answers: Vec<Result<HttpResponse, TransportError>>,
    probed: &Cell<bool>,
) -> (DataApiProbe, usize) {
    let script = Script {
        answers: RefCell::new(answers),
        sent: RefCell::new(Vec::new()),
    };
    let cfg = parse(&[]).unwrap();
    let api = DataApiClient::new(&script, cfg.data_api.clone().unwrap());
    let store = NotificationStore::new(api, cfg.notify.clone());
    let p = block_on(probe_data_api(Some(&store), probed));
    let sent = script.sent.borrow().len();
    (p, sent)
}

#[test]
fn the_probe_reports_each_failure_and_stops_after_a_success() {
    let probed = Cell::new(false);
    let (p, _) = probe(vec![answer(404, "not found")], &probed);
    assert_eq!(
        (p.probe, p.error),
        (ProbeState::Failed, Some(ProbeError::DataApiNotFound))
    );
    assert!(p.message.unwrap().contains("DATA_API_URL"));
    let (p, _) = probe(vec![answer(401, r#"{"error":"no"}"#)], &probed);
    assert_eq!(p.error, Some(ProbeError::DataApiUnauthorized));
    let down = Err(TransportError {
        timed_out: true,
        message: "timeout".into(),
    });
    let (p, _) = probe(vec![down], &probed);
    assert_eq!(p.error, Some(ProbeError::DataApiUnavailable));
    assert!(!probed.get());
    let (p, sent) = probe(vec![answer(200, r#"{"documents":[]}"#)], &probed);
    assert_eq!((p.probe, p.error, sent), (ProbeState::Ok, None, 1));
    assert!(probed.get());
    // Probed once in this isolate: no more requests.
    let (p, sent) = probe(vec![], &probed);
    assert_eq!((p.probe, sent), (ProbeState::Ok, 0));
    let none: Option<&NotificationStore<&Script>> = None;
    let p = block_on(probe_data_api(none, &Cell::new(false)));
    assert_eq!(p.probe, ProbeState::NotConfigured);
}
