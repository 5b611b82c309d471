//! The tile cache over an in-memory source, on the reader's hand-made world (four quadrants,
//! one mixed cell just north-east of (0, 0) whose tile holds a CC square in its middle half).
//! Overlaps are played out by holding a read pending and polling the futures by hand.

use super::*;
use crate::geo::index::{mixed_tile_id, world};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

#[derive(Debug, PartialEq, Eq)]
struct Down(String);

/// The assets in memory; every read is logged; a path in `held` stays pending; a path in
/// `down` fails.
#[derive(Default)]
struct Assets {
    files: RefCell<HashMap<String, Vec<u8>>>,
    reads: RefCell<Vec<String>>,
    held: RefCell<HashSet<String>>,
    down: RefCell<HashSet<String>>,
}

struct Hold<'a>(&'a Assets, &'a str);

impl Future for Hold<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.held.borrow().contains(self.1) {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

impl TileSource for Assets {
    type Error = Down;
    async fn fetch(&self, path: &str) -> Result<Vec<u8>, Down> {
        Hold(self, path).await;
        self.reads.borrow_mut().push(path.to_owned());
        if self.down.borrow().contains(path) {
            return Err(Down(path.to_owned()));
        }
        let file = self.files.borrow().get(path).cloned();
        file.ok_or_else(|| Down(format!("{path}: no such file")))
    }
}

impl Assets {
    fn with_tile(tile: &[u8]) -> Self {
        let a = Self::default();
        a.files.borrow_mut().insert(tile_path(), tile.to_vec());
        a
    }

    fn reads(&self) -> usize {
        self.reads.borrow().len()
    }
}

fn tile_path() -> String {
    format!("geo/{}", format::tile_file_name(mixed_tile_id()))
}

fn zero() -> u64 {
    0
}

fn pt(lat: f64, lon: f64) -> LatLon {
    LatLon::new(lat, lon).unwrap()
}

/// In the mixed cell: the CC square, and the sea around it in the same tile.
fn square() -> LatLon {
    pt(0.7, 0.7)
}
fn beside_square() -> LatLon {
    pt(0.1, 0.1)
}

fn run<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("pending with nothing held"),
    }
}

fn alpha2(answers: &[Option<Country<'_>>]) -> Vec<Option<&'static str>> {
    let code = |c: &Country<'_>| match c.alpha2 {
        "AA" => "AA",
        "BB" => "BB",
        "CC" => "CC",
        other => panic!("unknown country {other}"),
    };
    answers.iter().map(|c| c.as_ref().map(code)).collect()
}

fn layers(index: Vec<u8>, zones: Vec<u8>) -> Layers<Vec<u8>> {
    Layers::new(index, zones, zero)
}

#[test]
fn points_in_uniform_cells_read_no_tile() {
    let (index, tile) = world();
    let (layers, src) = (layers(index, vec![]), Assets::with_tile(&tile));
    let points = [
        pt(45.0, -90.0),
        pt(45.0, 90.0),
        pt(-45.0, -90.0),
        pt(-45.0, 90.0),
    ];
    let answers = run(layers.countries_of(&src, &points)).unwrap();
    assert_eq!(alpha2(&answers), [Some("AA"), Some("BB"), None, Some("CC")]);
    assert_eq!(src.reads(), 0);
    let stats = layers.stats().unwrap();
    assert_eq!((stats.tiles_loaded, stats.tile_bytes_loaded), (0, 0));
}

#[test]
fn a_tile_is_fetched_once_and_kept() {
    let (index, tile) = world();
    let (layers, src) = (layers(index, vec![]), Assets::with_tile(&tile));
    // Two points of one batch need the same tile: one read.
    let answers = run(layers.countries_of(&src, &[square(), beside_square()])).unwrap();
    assert_eq!(alpha2(&answers), [Some("CC"), None]);
    assert_eq!(*src.reads.borrow(), [tile_path()]);
    // A later request answers from the kept tile.
    let again = run(layers.countries_of(&src, &[square()])).unwrap();
    assert_eq!(alpha2(&again), [Some("CC")]);
    assert_eq!(src.reads(), 1);
    let stats = layers.stats().unwrap();
    assert_eq!(stats.countries, 3);
    assert_eq!(
        (stats.tiles_loaded, stats.tile_bytes_loaded),
        (1, tile.len())
    );
    assert_eq!(stats.index_bytes, world().0.len());
}

#[test]
fn a_tile_that_fails_verification_is_rejected_and_not_kept() {
    let (index, good) = world();
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 1;
    let (layers, src) = (layers(index, vec![]), Assets::with_tile(&flipped));
    let rejected = GeoError::Rejected(Rejected {
        path: tile_path(),
        error: LoadError::TileMismatch {
            tile: mixed_tile_id(),
        },
    });
    assert_eq!(
        run(layers.countries_of(&src, &[square()])).err(),
        Some(rejected)
    );
    assert_eq!(layers.stats().unwrap().tiles_loaded, 0);
    // The next request reads it again; once the asset is whole, it answers and is kept.
    src.files.borrow_mut().insert(tile_path(), good);
    let answers = run(layers.countries_of(&src, &[square()])).unwrap();
    assert_eq!(alpha2(&answers), [Some("CC")]);
    assert_eq!(src.reads(), 2);
    assert_eq!(layers.stats().unwrap().tiles_loaded, 1);
}

#[test]
fn a_truncated_tile_is_rejected_with_its_path() {
    let (index, good) = world();
    let mut short = good.clone();
    short.pop();
    let (layers, src) = (layers(index, vec![]), Assets::with_tile(&short));
    let err = run(layers.countries_of(&src, &[beside_square()])).unwrap_err();
    let GeoError::Rejected(r) = err else {
        panic!("{err:?}")
    };
    assert_eq!(r.path, tile_path());
    assert_eq!(
        r.to_string(),
        format!(
            "{}: tile {} does not match the index (length or checksum)",
            tile_path(),
            mixed_tile_id()
        )
    );
}

#[test]
fn a_read_error_passes_through_and_nothing_is_kept() {
    let (index, tile) = world();
    let (layers, src) = (layers(index, vec![]), Assets::with_tile(&tile));
    src.down.borrow_mut().insert(tile_path());
    assert_eq!(
        run(layers.countries_of(&src, &[pt(45.0, -90.0), square()])).err(),
        Some(GeoError::Read(Down(tile_path())))
    );
    assert_eq!(layers.stats().unwrap().tiles_loaded, 0);
    src.down.borrow_mut().clear();
    assert!(run(layers.countries_of(&src, &[square()])).is_ok());
    assert_eq!(src.reads(), 2);
}

#[test]
fn a_damaged_index_is_rejected_on_every_use_and_no_tile_is_read() {
    let (mut index, tile) = world();
    *index.last_mut().unwrap() ^= 1;
    let (layers, src) = (layers(index, vec![]), Assets::with_tile(&tile));
    let rejected = Rejected {
        path: INDEX_PATH.into(),
        error: LoadError::ChecksumMismatch,
    };
    for _ in 0..2 {
        assert_eq!(
            run(layers.countries_of(&src, &[square()])).err(),
            Some(GeoError::Rejected(rejected.clone()))
        );
        assert_eq!(layers.stats().err(), Some(rejected.clone()));
        assert_eq!(layers.countries().err(), Some(rejected.clone()));
    }
    assert_eq!(src.reads(), 0);
}

#[test]
fn the_zone_layer_is_opened_only_for_zones_and_must_pair_these_countries() {
    let (index, tile) = world();
    // Garbage zone bytes: a country-only lookup never opens them.
    let garbage = layers(index.clone(), b"not an index".to_vec());
    let src = Assets::with_tile(&tile);
    assert!(run(garbage.countries_of(&src, &[square()])).is_ok());
    assert_eq!(
        run(garbage.pairs_of(&src, &[square()])).err(),
        Some(GeoError::Rejected(Rejected {
            path: ZONE_INDEX_PATH.into(),
            error: LoadError::Truncated,
        }))
    );
    // A valid index that is not the combined layer (no country pairs).
    let countries_only = layers(index.clone(), index);
    assert_eq!(
        run(countries_only.pairs_of(&src, &[square()])).err(),
        Some(GeoError::Rejected(Rejected {
            path: ZONE_INDEX_PATH.into(),
            error: LoadError::Corrupt("not the combined layer of these countries"),
        }))
    );
}

thread_local! {
    static NOW: Cell<u64> = const { Cell::new(1_000) };
}

/// A clock that moves 7 ms every time it is read.
fn ticking() -> u64 {
    NOW.with(|n| {
        let t = n.get();
        n.set(t + 7);
        t
    })
}

#[test]
fn the_open_time_is_the_clocks_and_the_index_opens_once() {
    let (index, _) = world();
    let layers = Layers::new(index, vec![], ticking);
    let before = NOW.with(Cell::get);
    assert_eq!(layers.stats().unwrap().index_open_ms, 7.0);
    // Opened once: later uses do not read the clock again.
    assert_eq!(layers.stats().unwrap().index_open_ms, 7.0);
    assert!(layers.countries().is_ok());
    assert_eq!(NOW.with(Cell::get), before + 14);
}

#[test]
fn overlapping_misses_of_one_tile_keep_the_first_and_count_it_once() {
    let (index, tile) = world();
    let (layers, src) = (layers(index, vec![]), Assets::with_tile(&tile));
    src.held.borrow_mut().insert(tile_path());
    let cx = &mut Context::from_waker(Waker::noop());
    let (pa, pb) = ([square()], [beside_square()]);
    let mut a = pin!(layers.countries_of(&src, &pa));
    let mut b = pin!(layers.countries_of(&src, &pb));
    assert!(a.as_mut().poll(cx).is_pending());
    assert!(b.as_mut().poll(cx).is_pending());
    src.held.borrow_mut().clear();
    let Poll::Ready(Ok(b)) = b.as_mut().poll(cx) else {
        panic!("b did not answer")
    };
    let Poll::Ready(Ok(a)) = a.as_mut().poll(cx) else {
        panic!("a did not answer")
    };
    assert_eq!((alpha2(&a), alpha2(&b)), (vec![Some("CC")], vec![None]));
    // Both fetched (neither could know of the other); one tile is kept and counted.
    assert_eq!(src.reads(), 2);
    let stats = layers.stats().unwrap();
    assert_eq!(
        (stats.tiles_loaded, stats.tile_bytes_loaded),
        (1, tile.len())
    );
}
