//! Validates an IP database before it is published, with the worker's own reader.
//!
//! Usage: `ipdb-check FILE [--against BASELINE] [--max-disagreement SHARE] [--min-countries N]
//! [--updated-at RFC3339] [--attribution dbip|iptoasn|maxmind] [--table-out DIR]` (defaults:
//! `assets/ip/default.mmdb`, `0.2`, `1`, none, the credit the file's metadata names if any).
//!
//! Checks that FILE opens as an mmdb whose records carry a country (either layout), that it
//! answers at least N distinct countries on the fixed probe set, and that it disagrees with the
//! baseline on at most SHARE of the probes either database answers. Prints one JSON object:
//! `{ok, file, sha256, size, database_type, build_epoch, layout, agreement{…}, errors[],
//! record}` where `record` is the KV version record to publish (only when every check passed and
//! `--updated-at` was given). With `--table-out DIR` the compact table converted from FILE is
//! written there (`dir.bin`, `page-NNN.bin`, what the worker loads) and the record names it
//! with its checksums, so a publisher uploads it next to FILE. Exit 0 when every check passes, 1 when one fails, 2 on bad usage.

use egn_core::ip::convert;
use egn_core::ip::table::{page_name, TableFiles};
use egn_core::ip::update::table_meta;
use egn_core::ip::{compare, probe_set, sha256_hex, Attribution, IpDb, IpdbRecord, PROBE_SEED};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;

struct Args {
    file: PathBuf,
    against: PathBuf,
    max_disagreement: f64,
    min_countries: usize,
    updated_at: Option<String>,
    table_out: Option<PathBuf>,
    attribution: Option<Attribution>,
}

fn parse_args() -> Result<Args, String> {
    let mut file = None;
    let mut args = Args {
        file: PathBuf::new(),
        against: PathBuf::from("assets/ip/default.mmdb"),
        max_disagreement: 0.2,
        min_countries: 1,
        updated_at: None,
        table_out: None,
        attribution: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--against" => args.against = value("--against")?.into(),
            "--max-disagreement" => {
                args.max_disagreement = value("--max-disagreement")?
                    .parse()
                    .ok()
                    .filter(|s: &f64| (0.0..=1.0).contains(s))
                    .ok_or("--max-disagreement takes a share between 0 and 1")?;
            }
            "--min-countries" => {
                args.min_countries = value("--min-countries")?
                    .parse()
                    .map_err(|_| "--min-countries takes a count")?;
            }
            "--updated-at" => args.updated_at = Some(value("--updated-at")?),
            "--table-out" => args.table_out = Some(value("--table-out")?.into()),
            // The npm builds name no source in their metadata: say whose data it is.
            "--attribution" => {
                args.attribution = Some(match value("--attribution")?.as_str() {
                    "dbip" => Attribution::dbip(),
                    "iptoasn" => Attribution::iptoasn(),
                    "maxmind" => Attribution::maxmind("GeoLite2-Country"),
                    _ => return Err("--attribution takes dbip, iptoasn or maxmind".into()),
                });
            }
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s if file.is_none() => file = Some(PathBuf::from(s)),
            s => return Err(format!("unexpected argument {s}")),
        }
    }
    args.file = file.ok_or("FILE is required")?;
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("ipdb-check: {e}");
            }
            eprintln!(
                "usage: ipdb-check FILE [--against BASELINE] [--max-disagreement SHARE] \
                 [--min-countries N] [--updated-at RFC3339] [--attribution dbip|iptoasn|maxmind] \
                 [--table-out DIR]"
            );
            return ExitCode::from(2);
        }
    };
    let (report, ok) = check(&args);
    println!(
        "{}",
        serde_json::to_string_pretty(&report).expect("JSON value")
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn check(args: &Args) -> (Value, bool) {
    let mut report = json!({ "ok": false, "file": args.file.display().to_string() });
    let fail = |mut report: Value, errors: Vec<String>| {
        report["errors"] = json!(errors);
        (report, false)
    };
    let bytes = match std::fs::read(&args.file) {
        Ok(b) => b,
        Err(e) => return fail(report, vec![format!("cannot read file: {e}")]),
    };
    let sha256 = sha256_hex(&bytes);
    report["sha256"] = json!(sha256);
    report["size"] = json!(bytes.len());
    let db = match IpDb::from_bytes(bytes.as_slice()) {
        Ok(db) => db,
        Err(e) => return fail(report, vec![e.to_string()]),
    };
    let (db_type, epoch) = db.describe();
    report["database_type"] = json!(db_type);
    report["build_epoch"] = json!(epoch);
    report["layout"] = json!(format!("{:?}", db.layout()).to_lowercase());
    let baseline_bytes = match std::fs::read(&args.against) {
        Ok(b) => b,
        Err(e) => {
            let msg = format!("cannot read baseline {}: {e}", args.against.display());
            return fail(report, vec![msg]);
        }
    };
    let baseline = match IpDb::from_bytes(baseline_bytes.as_slice()) {
        Ok(db) => db,
        Err(e) => return fail(report, vec![format!("baseline: {e}")]),
    };
    let a = compare(&baseline, &db, &probe_set());
    let share = a.disagreement();
    let mut errors = Vec::new();
    if a.candidate_countries < args.min_countries {
        errors.push(format!(
            "answers {} distinct countries on the probe set; at least {} required",
            a.candidate_countries, args.min_countries
        ));
    }
    if share > args.max_disagreement {
        errors.push(format!(
            "disagrees with {} on {:.1}% of compared probes; at most {:.1}% allowed",
            args.against.display(),
            share * 100.0,
            args.max_disagreement * 100.0
        ));
    }
    let mut agreement = serde_json::to_value(&a).expect("plain struct");
    agreement["against"] = json!(args.against.display().to_string());
    agreement["seed"] = json!(format!("{PROBE_SEED:#x}"));
    agreement["disagreement"] = json!((share * 1e4).round() / 1e4);
    agreement["max_disagreement"] = json!(args.max_disagreement);
    report["agreement"] = agreement;
    let ok = errors.is_empty();
    if let (true, Some(at)) = (ok, &args.updated_at) {
        let attribution = args
            .attribution
            .clone()
            .or_else(|| Attribution::for_database_type(&db_type));
        let mut record = IpdbRecord::for_database(sha256, epoch, at.clone(), attribution);
        if let Some(out) = &args.table_out {
            let meta = table_meta(&db_type, epoch, record.attribution.as_ref());
            match write_table(&db, &meta, out) {
                Ok(t) => record = record.with_table(&t),
                Err(e) => return fail(report, vec![format!("writing the table: {e}")]),
            }
        }
        report["record"] = json!(record);
    }
    report["ok"] = json!(ok);
    report["errors"] = json!(errors);
    (report, ok)
}

/// Converts `db` and writes the table's directory and pages into `out` (emptied first).
fn write_table(
    db: &IpDb<&[u8]>,
    meta: &[u8],
    out: &std::path::Path,
) -> Result<TableFiles, Box<dyn std::error::Error>> {
    let t = convert::table(db, meta)?;
    if out.exists() {
        std::fs::remove_dir_all(out)?;
    }
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("dir.bin"), &t.dir)?;
    for (i, p) in t.pages.iter().enumerate() {
        std::fs::write(out.join(page_name(i)), p)?;
    }
    Ok(t)
}
