//! The scheduled update's vetting on real databases: a candidate that agrees with the serving
//! database is published with a record, one that loses a whole address family or answers a
//! different world is refused, and the refusal carries its figures.

use egn_core::ip::update::{vet, Plan, UpdateError, UpdatePolicy, UpdateStatus};
use egn_core::ip::{sha256_hex, Attribution, IpDb, PROBE_COUNT};
use std::path::Path;

fn npm(file: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node_modules/@ip-location-db")
        .join(file);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e} (npm ci first)", p.display()))
}

fn dbip() -> Vec<u8> {
    npm("dbip-country-mmdb/dbip-country.mmdb")
}

fn policy(max_disagreement: f64) -> UpdatePolicy {
    UpdatePolicy {
        max_download_bytes: 64 << 20,
        max_db_bytes: 64 << 20,
        max_disagreement,
        min_countries: 50,
    }
}

#[test]
fn an_agreeing_candidate_is_published_with_the_fallback_credit() {
    let serving = IpDb::from_bytes(dbip()).unwrap();
    let candidate = dbip();
    let sha = sha256_hex(&candidate);
    let plan = vet(
        candidate,
        &serving,
        None,
        &policy(0.2),
        "2026-12-01T00:00:00Z".into(),
        Some(Attribution::dbip()),
    )
    .unwrap();
    let Plan::Publish(v) = plan else {
        panic!("not published")
    };
    assert_eq!(v.record.sha256, sha);
    assert_eq!(v.record.object_key, format!("ipdb/{sha}.mmdb"));
    // npm builds say only "country ipvAll": the serving database's credit carries over.
    assert_eq!(v.record.attribution, Some(Attribution::dbip()));
    assert_eq!(v.agreement.probes, PROBE_COUNT);
    assert_eq!(v.agreement.agree, v.agreement.compared);
    // The converted table travels with it, named and checksummed in the record.
    let table = v.table.open().unwrap();
    assert_eq!(
        v.record.table_sha256.as_deref(),
        Some(sha256_hex(&v.table.dir).as_str())
    );
    let page_shas: Vec<String> = v.table.pages.iter().map(|p| sha256_hex(p)).collect();
    assert_eq!(v.record.table_pages, page_shas);
    assert_eq!(v.record.table_key, Some(format!("ipdb/{sha}.table")));
    assert_eq!(
        v.record.table_page_key(2),
        Some(format!("ipdb/{sha}.table/page-002.bin"))
    );
    let meta: serde_json::Value = serde_json::from_slice(table.meta()).unwrap();
    assert_eq!(meta["attribution"]["text"], "IP Geolocation by DB-IP");
    for ip in egn_core::ip::probe_set() {
        assert_eq!(table.lookup(ip), serving.lookup(ip), "{ip}");
    }
    // Running again against the record just written changes nothing.
    let again = vet(
        dbip(),
        &serving,
        Some(&v.record),
        &policy(0.2),
        String::new(),
        None,
    );
    assert!(matches!(again, Ok(Plan::Unchanged(ver)) if ver == v.record.version));
}

#[test]
fn a_candidate_missing_ipv6_is_refused_with_its_figures() {
    let serving = IpDb::from_bytes(dbip()).unwrap();
    // The IPv4-only build loses every IPv6 probe: a quarter of the probe set.
    let v4_only = npm("dbip-country-mmdb/dbip-country-ipv4.mmdb");
    let result = vet(v4_only, &serving, None, &policy(0.2), String::new(), None);
    let Err(UpdateError::Disagrees { agreement, max }) = &result else {
        panic!("not refused: {result:?}")
    };
    let v6 = egn_core::ip::probe_set()
        .iter()
        .filter(|ip| ip.is_ipv6())
        .count();
    assert!(agreement.lost >= v6 * 9 / 10, "{agreement:?}");
    assert_eq!(agreement.gained, 0);
    assert_eq!(*max, 0.2);
    let status = UpdateStatus::of(&result, "t".into());
    assert_eq!(status.outcome, "refused");
    assert!(status.reason.unwrap().contains("disagrees"));
    // The same file passes when the operator allows that much change.
    assert!(matches!(
        vet(
            npm("dbip-country-mmdb/dbip-country-ipv4.mmdb"),
            &serving,
            None,
            &policy(0.3),
            String::new(),
            None
        ),
        Ok(Plan::Publish(_))
    ));
}

#[test]
fn a_candidate_answering_the_registrant_country_is_refused() {
    let serving = IpDb::from_bytes(dbip()).unwrap();
    let iptoasn = npm("iptoasn-country-mmdb/iptoasn-country.mmdb");
    let result = vet(iptoasn, &serving, None, &policy(0.2), String::new(), None);
    assert!(
        matches!(&result, Err(UpdateError::Disagrees { agreement, .. }) if agreement.changed > 0 && agreement.lost > 0),
        "{result:?}"
    );
}

#[test]
fn truncated_and_oversized_candidates_are_refused() {
    let serving = IpDb::from_bytes(dbip()).unwrap();
    let mut truncated = dbip();
    truncated.truncate(truncated.len() / 2);
    let r = vet(truncated, &serving, None, &policy(0.2), String::new(), None);
    assert!(matches!(r, Err(UpdateError::Invalid(_))), "{r:?}");
    let small = UpdatePolicy {
        max_db_bytes: 1 << 20,
        ..policy(0.2)
    };
    let r = vet(dbip(), &serving, None, &small, String::new(), None);
    assert!(matches!(r, Err(UpdateError::TooLarge { .. })), "{r:?}");
}
