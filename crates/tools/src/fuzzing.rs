//! Fuzz entry points: one function per `cargo fuzz` target in `fuzz/`, each taking raw bytes.
//!
//! They live in the crate (not in `fuzz/`) so `tests/fuzz_regressions.rs` replays every kept
//! input through exactly the code libFuzzer ran, under plain `cargo test` on stable, without
//! cargo-fuzz or nightly. Each function drives the real entry points and asserts cheap
//! invariants; a panic is a finding. See docs/fuzzing.md.
//!
//! Binary formats are checksummed, so random bytes would almost never get past the CRC check.
//! The geo targets therefore also *repair* the header of their input (magic, version, lengths,
//! CRC) before a second open, so the fuzzer explores the structural validation behind it.

use egn_core::notify::document::field;
use egn_core::notify::{
    create_upsert, decode_cursor, encode_cursor, list_query, view, Cursor, NotificationEvent,
    NotifyConfig,
};
use egn_http::routes::{self, Method};
use egn_http::{geo as api_geo, ip as api_ip, notify as api_notify};
use serde_json::{Map, Value};
use std::net::IpAddr;

/// "Now" for validation: fixed, so a replayed input behaves exactly as it did when found.
const NOW_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// Every target name, as used for `fuzz/fuzz_targets/<name>.rs` and `fuzz/{seeds,regressions}/<name>/`.
pub const TARGETS: &[&str] = &[
    "query_parsing",
    "body_parsing",
    "route_resolution",
    "cursor_decoding",
    #[cfg(not(target_arch = "wasm32"))]
    "geo_index",
    #[cfg(not(target_arch = "wasm32"))]
    "geo_tile",
    "mmdb_open",
    "ip_table",
    "jwt_parsing",
    "jwks_parsing",
];

/// Runs the target called `name` on `data`; `false` if there is no such target.
pub fn run(name: &str, data: &[u8]) -> bool {
    let f: fn(&[u8]) = match name {
        "query_parsing" => query_parsing,
        "body_parsing" => body_parsing,
        "route_resolution" => route_resolution,
        "cursor_decoding" => cursor_decoding,
        #[cfg(not(target_arch = "wasm32"))]
        "geo_index" => geo_index,
        #[cfg(not(target_arch = "wasm32"))]
        "geo_tile" => geo_tile,
        "mmdb_open" => mmdb_open,
        "ip_table" => ip_table,
        "jwt_parsing" => jwt_parsing,
        "jwks_parsing" => jwks_parsing,
        _ => return false,
    };
    f(data);
    true
}

/// Every query-string parser of the API, then the list query built from parsed list parameters
/// (which decodes the cursor).
pub fn query_parsing(data: &[u8]) {
    let q = String::from_utf8_lossy(data);
    if let Ok(p) = api_geo::parse_point_query(&q) {
        assert!((-90.0..=90.0).contains(&p.lat()) && (-180.0..=180.0).contains(&p.lon()));
    }
    let _ = api_ip::parse_ip_query(&q);
    if let Ok((p, _)) = api_notify::parse_list(&q) {
        assert!((1..=egn_core::notify::MAX_PAGE).contains(&p.page_size()));
        let cfg = NotifyConfig::default();
        match list_query("owner", &p, &cfg, NOW_MS) {
            Ok(fq) => assert_eq!(fq.options.limit, Some(p.page_size() + 1)),
            Err(e) => assert_eq!(egn_http::ErrorCode::from(&e), "invalid_cursor"),
        }
    }
    if let Ok((_, limit)) = api_notify::parse_changes(&q) {
        assert!((1..=egn_core::notify::MAX_PAGE).contains(&limit));
    }
    let _ = api_notify::parse_category(&q);
}

/// Every request-body parser; a parsed event is validated, and a valid one goes through the
/// create upsert and is rendered as the document that upsert would insert.
pub fn body_parsing(data: &[u8]) {
    if let Ok(points) = api_geo::parse_batch(data) {
        assert!(!points.is_empty() && points.len() <= api_geo::MAX_BATCH_POINTS);
    }
    if let Ok(ips) = api_ip::parse_ip_batch(data) {
        assert!(!ips.is_empty() && ips.len() <= api_ip::MAX_BATCH_IPS);
    }
    let _ = api_notify::parse_retraction(data);
    if let Ok((m, _flag)) = api_notify::parse_mark(data) {
        assert!(m.all != m.item_key.is_some());
    }
    let Ok(raw) = api_notify::parse_event(data) else {
        return;
    };
    let cfg = NotifyConfig::default();
    let Ok(ev) = NotificationEvent::new(raw, &cfg, NOW_MS) else {
        return;
    };
    let (_filter, update) = create_upsert(&ev, &cfg, NOW_MS);
    let doc = inserted_document(&ev, &update);
    let v = view(&doc);
    // A summary is a short template around the sender's name: nothing in an event may grow it
    // (sizes are bounded by the event limits in crates/core/src/notify/event.rs).
    let summary = v
        .summary
        .as_deref()
        .expect("a one-sender item has a summary");
    assert!(
        summary.len() <= 512,
        "summary of {} bytes from one event",
        summary.len()
    );
    assert!(summary.contains(ev.sender().name()));
}

/// The document a first create inserts: `$setOnInsert`, `$set`, `$max` and the one origin,
/// in the normalized shape reads return.
fn inserted_document(ev: &NotificationEvent, update: &Value) -> Value {
    let mut doc = Map::new();
    doc.insert("owner".into(), ev.owner().into());
    doc.insert("itemKey".into(), ev.item_key().into());
    for op in ["$setOnInsert", "$set", "$max"] {
        if let Some(fields) = update[op].as_object() {
            doc.extend(fields.clone());
        }
    }
    doc.insert(
        field::ORIGINS.into(),
        update["$push"][field::ORIGINS]["$each"].clone(),
    );
    doc.insert(field::ORIGINS_COUNT.into(), 1.into());
    egn_core::backend::ejson::normalize(Value::Object(doc))
}

/// Route resolution over `METHOD path` (first byte: bench routes on when odd). Never panics; a
/// 405 always carries `Allow`, which lists the path's methods and never the one refused.
pub fn route_resolution(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let bench = flags & 1 == 1;
    let text = String::from_utf8_lossy(rest);
    let (method, path) = text.split_once(' ').unwrap_or((&text, "/"));
    let allowed = routes::allowed(path, bench);
    match routes::resolve(method, path, bench) {
        Ok(m) => {
            assert_eq!(m.route.method.as_str(), method);
            assert!(bench || !m.route.bench);
            assert_eq!(m.param.is_some(), m.route.path.contains('{'));
            assert!(allowed.contains(&method));
        }
        Err(e) if e.status() == 405 => {
            let allow = e.allow.expect("405 carries Allow");
            assert_eq!(allow, allowed.join(", "));
            assert!(!allowed.is_empty() && !allowed.contains(&method));
            let mut unique = allowed.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(
                unique.len(),
                allowed.len(),
                "Allow repeats a method: {allow}"
            );
        }
        Err(e) if e.status() == 404 => assert!(allowed.is_empty() && e.allow.is_none()),
        Err(e) => {
            assert_eq!((e.status(), e.code.as_str()), (400, "invalid_path"));
            assert!(Method::Delete.as_str() == method && e.allow.is_none());
        }
    }
}

/// The list cursor: a decoded cursor re-encodes to one that decodes to the same value, and any
/// (revision, id) made from the input round-trips.
pub fn cursor_decoding(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    if let Ok(c) = decode_cursor(&s) {
        assert_eq!(decode_cursor(&encode_cursor(&c)).as_ref(), Ok(&c));
    }
    if data.len() >= 8 {
        let (rev, id) = data.split_at(8);
        let c = Cursor {
            revision: i64::from_le_bytes(rev.try_into().expect("8 bytes")),
            id: String::from_utf8_lossy(id).into_owned(),
        };
        assert_eq!(decode_cursor(&encode_cursor(&c)).as_ref(), Ok(&c));
    }
}

/// Opens an IP database from arbitrary bytes; one that opens answers IPv4, IPv6 and
/// IPv4-mapped lookups, and a country it names is two bytes.
pub fn mmdb_open(data: &[u8]) {
    let Ok(db) = egn_core::ip::IpDb::from_bytes(data.to_vec()) else {
        return;
    };
    let _ = db.describe();
    let _ = db.layout();
    for ip in [
        "8.8.8.8",
        "81.2.69.160",
        "1.1.1.1",
        "2001:4860:4860::8888",
        "2a00:1450::1",
        "::ffff:8.8.4.4",
        "255.255.255.254",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe",
    ] {
        let ip: IpAddr = ip.parse().expect("literal");
        if let egn_core::ip::IpAnswer::Country(c) = db.lookup(ip) {
            assert_eq!(c.len(), 2);
        }
    }
}

/// An IP country table's directory and one page from arbitrary bytes:
/// `[page number u8][directory length u32 LE][directory][page]`. Opened as given, then with
/// the directory's header repaired (magic, version, length, CRC) and the named page's length
/// and CRC written into it, so the fuzzer gets past the checksums to the structural checks
/// behind them. Whatever opens answers lookups of fixed and input-chosen addresses: a country
/// of two bytes, or the number of the page it still needs.
pub fn ip_table(data: &[u8]) {
    use egn_core::ip::table::{IpTable, HEADER, MAGIC, VERSION};
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Some((len, rest)) = rest.split_first_chunk::<4>() else {
        return;
    };
    let (dir, page) = rest.split_at((u32::from_le_bytes(*len) as usize).min(rest.len()));
    let addrs: Vec<IpAddr> = [
        "8.8.8.8",
        "81.2.69.160",
        "0.0.0.1",
        "255.255.255.254",
        "2a02:2e0::1",
        "2001:4860::8888",
        "3fff:ffff::1",
        "::ffff:8.8.4.4",
    ]
    .iter()
    .map(|s| s.parse().expect("literal"))
    .chain(page.chunks_exact(16).take(64).flat_map(|c| {
        let v = u128::from_le_bytes(c.try_into().expect("16"));
        [
            IpAddr::from((v as u32).to_be_bytes()),
            IpAddr::from(v.to_be_bytes()),
        ]
    }))
    .collect();
    let exercise = |t: &IpTable<&[u8]>| {
        let _ = (t.meta(), t.pages_len(), t.dir_len());
        let p = usize::from(pick) % t.page_count().max(1);
        let _ = t.insert_page(p, page.to_vec());
        for &ip in &addrs {
            match t.try_lookup(ip) {
                Ok(egn_core::ip::IpAnswer::Country(c)) => assert_eq!(c.len(), 2),
                Ok(_) => {}
                Err(q) => {
                    assert!(q < t.page_count());
                    assert_eq!(t.missing_page(ip), Some(q));
                }
            }
        }
        p
    };
    let p = match IpTable::from_bytes(dir) {
        Ok(t) => exercise(&t),
        Err(_) => usize::from(pick),
    };
    if dir.len() < HEADER {
        return;
    }
    let u32_at = |b: &[u8], o: usize| -> usize {
        u32::from_le_bytes(b[o..o + 4].try_into().expect("4")) as usize
    };
    let mut d = dir.to_vec();
    d[..8].copy_from_slice(&MAGIC);
    d[8..12].copy_from_slice(&VERSION.to_le_bytes());
    let total = d.len() as u32;
    d[32..36].copy_from_slice(&total.to_le_bytes());
    // The named page's entry in the page list, when the header puts one inside the bytes.
    let (pages_at, n_pages) = (u32_at(&d, 20), u32_at(&d, 24));
    let slot = pages_at.saturating_add(8 * (p % n_pages.max(1)));
    if n_pages > 0 && slot.saturating_add(8) <= d.len() {
        d[slot..slot + 4].copy_from_slice(&(page.len() as u32).to_le_bytes());
        d[slot + 4..slot + 8].copy_from_slice(&crc32fast::hash(page).to_le_bytes());
    }
    let crc = crc32fast::hash(&d[HEADER..]);
    d[36..40].copy_from_slice(&crc.to_le_bytes());
    if let Ok(t) = IpTable::from_bytes(d.as_slice()) {
        exercise(&t);
    }
}

/// A bearer token: split and decoded, then its claims checked and an HS256 signature compared.
/// What parses keeps the signed bytes exactly as sent.
pub fn jwt_parsing(data: &[u8]) {
    let token = String::from_utf8_lossy(data);
    let Ok(t) = egn_core::auth::jwt::parse(&token) else {
        return;
    };
    assert!(token.as_bytes().starts_with(&t.signing_input));
    assert_eq!(token.as_bytes().get(t.signing_input.len()), Some(&b'.'));
    assert_eq!(egn_core::auth::Alg::parse(t.alg.as_str()), Some(t.alg));
    assert!(!t.signature.is_empty());
    let audiences = ["app".to_owned()];
    if let Ok(sub) = egn_core::auth::jwt::check_claims(
        &t.claims,
        "https://issuer.example",
        &audiences,
        NOW_MS as f64 / 1000.0,
        60,
    ) {
        assert!(!sub.is_empty() && sub.len() <= 128);
    }
    let _ = egn_core::auth::crypto::hs256_verify(b"secret", &t.signing_input, &t.signature);
}

/// A JSON Web Key Set body; every key kept has the size its algorithm needs. The same bytes as
/// a `Cache-Control` value give a TTL inside the policy's bounds.
pub fn jwks_parsing(data: &[u8]) {
    use egn_core::auth::jwks::{parse, CachePolicy, KeyMaterial};
    if let Ok(keys) = parse(data) {
        for k in keys {
            match k.material {
                KeyMaterial::P256 { x, y } => assert_eq!((x.len(), y.len()), (32, 32)),
                KeyMaterial::Rsa { n, e } => {
                    assert!(n.iter().skip_while(|b| **b == 0).count() >= 256 && !e.is_empty());
                }
                KeyMaterial::Hmac(_) => {}
            }
        }
    }
    let p = CachePolicy::default();
    let ttl = p.ttl_s(Some(&String::from_utf8_lossy(data)));
    assert!((p.min_ttl_s..=p.max_ttl_s).contains(&ttl));
}

#[cfg(not(target_arch = "wasm32"))]
pub use crate::geo::fixture::synthetic_world;
#[cfg(not(target_arch = "wasm32"))]
pub use native::{geo_index, geo_tile};

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use crate::geo::fixture::synthetic_world;
    use crate::geo::format::{
        tile_of, FORMAT_VERSION, GRID_COLS, GRID_ROWS, INDEX_HEADER, INDEX_MAGIC, N_TILES,
        TILE_CELLS, TILE_COLS, TILE_HEADER, TILE_MAGIC, TOP_SHIFT,
    };
    use crate::geo::{grid_x, grid_y, CountryIndex, GridPoint, Probe, Tile, WORLD_H, WORLD_W};
    use std::sync::OnceLock;

    fn world_index() -> &'static CountryIndex<&'static [u8]> {
        static INDEX: OnceLock<CountryIndex<&'static [u8]>> = OnceLock::new();
        INDEX.get_or_init(|| {
            CountryIndex::from_bytes(synthetic_world().index.as_slice()).expect("synthetic index")
        })
    }

    /// Points to look up: a fixed sweep over the synthetic countries plus points from the input.
    fn points(data: &[u8]) -> impl Iterator<Item = GridPoint> + '_ {
        let sweep = (0..24).flat_map(|i| {
            (0..24).map(move |j| GridPoint {
                x: grid_x(-1.0 + 1.3 * f64::from(i)),
                y: grid_y(-5.0 + 1.1 * f64::from(j)),
            })
        });
        let from_input = data.chunks_exact(16).take(16).map(|c| GridPoint {
            x: i64::from_le_bytes(c[..8].try_into().expect("8")).rem_euclid(WORLD_W),
            y: i64::from_le_bytes(c[8..].try_into().expect("8")).rem_euclid(WORLD_H),
        });
        sweep.chain(from_input)
    }

    /// Lookups through the synthetic world's tiles; every answer names a country in the table.
    fn lookups<S: AsRef<[u8]>>(index: &CountryIndex<S>, data: &[u8]) {
        let world = synthetic_world();
        let tiles: Vec<Option<Tile<&[u8]>>> = (0..N_TILES)
            .map(|t| {
                let b = world.tiles[t].as_deref()?;
                index.open_tile(t, b).ok()
            })
            .collect();
        for p in points(data) {
            if let Ok(Some(c)) = index.lookup_with(p, |t| tiles.get(t)?.as_ref()) {
                assert!(index.country(c).is_some(), "answer {c} is not in the table");
            }
        }
    }

    fn put_u32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// `index.bin` readers on arbitrary bytes, on the same bytes with a repaired header, and on
    /// the synthetic index with byte edits from the input (header repaired): each that opens
    /// answers lookups.
    pub fn geo_index(data: &[u8]) {
        if let Ok(index) = CountryIndex::from_bytes(data) {
            lookups(&index, data);
        }
        if data.len() >= INDEX_HEADER {
            let mut b = data.to_vec();
            repair_index_header(&mut b);
            if let Ok(index) = CountryIndex::from_bytes(b.as_slice()) {
                lookups(&index, data);
            }
        }
        // Edits: (offset u32, byte) pairs into the synthetic index.
        let mut b = synthetic_world().index.clone();
        for e in data.chunks_exact(5).take(64) {
            let off = u32::from_le_bytes(e[..4].try_into().expect("4")) as usize % b.len();
            b[off] = e[4];
        }
        repair_index_header(&mut b);
        if let Ok(index) = CountryIndex::from_bytes(b.as_slice()) {
            lookups(&index, data);
        }
    }

    /// Sets magic, version, geometry, length and CRC, and the country count the length implies
    /// (when the length leaves room for the tile table and the grid).
    fn repair_index_header(b: &mut [u8]) {
        b[..8].copy_from_slice(&INDEX_MAGIC);
        put_u32(b, 8, FORMAT_VERSION);
        let fixed = INDEX_HEADER + N_TILES * 8 + GRID_COLS * GRID_ROWS * 4;
        if let Some(countries) = b.len().checked_sub(fixed) {
            put_u32(b, 12, (countries / 8) as u32);
        }
        put_u32(b, 16, GRID_COLS as u32);
        put_u32(b, 20, GRID_ROWS as u32);
        put_u32(b, 24, TILE_CELLS as u32);
        put_u32(b, 28, N_TILES as u32);
        let crc = crc32fast::hash(&b[INDEX_HEADER..]);
        put_u32(b, 32, crc);
        put_u32(b, 36, (b.len() - INDEX_HEADER) as u32);
    }

    /// Tile bytes (first input byte picks the tile) opened against the synthetic index: as
    /// given (`open_tile`, which checks the pinned length and CRC), then with a repaired header
    /// through the decoder behind that check, and looked up in every mixed cell of the tile.
    pub fn geo_tile(data: &[u8]) {
        let Some((&pick, bytes)) = data.split_first() else {
            return;
        };
        let index = world_index();
        let world = synthetic_world();
        let present: Vec<usize> = (0..N_TILES).filter(|&t| world.tiles[t].is_some()).collect();
        // Even picks name a tile the world has, odd ones any tile id (most have no file).
        let id = if pick & 1 == 0 {
            present[usize::from(pick >> 1) % present.len()]
        } else {
            usize::from(pick >> 1) % N_TILES
        };
        if let Ok(tile) = index.open_tile(id, bytes) {
            tile_lookups(index, &tile, id, bytes);
        }
        if bytes.len() < TILE_HEADER {
            return;
        }
        let mut b = bytes.to_vec();
        b[..8].copy_from_slice(&TILE_MAGIC);
        put_u32(&mut b, 8, FORMAT_VERSION);
        put_u32(&mut b, 12, id as u32);
        let n_nodes = u32::from_le_bytes(b[16..20].try_into().expect("4")) as usize;
        let room = (b.len() - TILE_HEADER) / 4;
        let n_nodes = n_nodes.min(room);
        put_u32(&mut b, 16, n_nodes as u32);
        let leaf_len = b.len() - TILE_HEADER - n_nodes * 4;
        put_u32(&mut b, 20, leaf_len as u32);
        let crc = crc32fast::hash(&b[TILE_HEADER..]);
        put_u32(&mut b, 24, crc);
        if let Ok(tile) = Tile::from_bytes(id, b.as_slice(), index.len()) {
            tile_lookups(index, &tile, id, bytes);
        }
    }

    fn tile_lookups<T: AsRef<[u8]>>(
        index: &CountryIndex<&[u8]>,
        tile: &Tile<T>,
        id: usize,
        data: &[u8],
    ) {
        let corner = |col: usize, row: usize| GridPoint {
            x: (col as i64) << TOP_SHIFT,
            y: (row as i64) << TOP_SHIFT,
        };
        let (col0, row0) = ((id % TILE_COLS) * TILE_CELLS, (id / TILE_COLS) * TILE_CELLS);
        let cell = 1i64 << TOP_SHIFT;
        // Corners, centres and input-chosen offsets of every mixed cell in the tile.
        let mut extra = data.chunks_exact(8).map(|c| {
            let v = u64::from_le_bytes(c.try_into().expect("8"));
            ((v & 0xFFFF_FFFF) as i64 % cell, (v >> 32) as i64 % cell)
        });
        for row in row0..row0 + TILE_CELLS {
            for col in col0..col0 + TILE_CELLS {
                let p = corner(col, row);
                if index.probe(p) != Probe::NeedTile(id) {
                    continue;
                }
                assert_eq!(tile_of(col, row), id);
                let (dx, dy) = extra.next().unwrap_or((cell / 2, cell / 3));
                for (ox, oy) in [(0, 0), (cell - 1, cell - 1), (cell / 2, cell / 2), (dx, dy)] {
                    let q = GridPoint {
                        x: p.x + ox,
                        y: p.y + oy,
                    };
                    if let Some(c) = index.lookup_in_tile(tile, q) {
                        assert!(index.country(c).is_some(), "answer {c} is not in the table");
                    }
                }
            }
        }
    }
}
