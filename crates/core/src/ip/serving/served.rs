//! One version as an isolate serves it, and where its pages come from.

use super::{elapsed, Clock, IpdbStore, PageError};
use crate::ip::refresh;
use crate::ip::source::Origin;
use crate::ip::table::{page_name, IpTable, TableError};
use crate::ip::{Attribution, IpdbRecord};
use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::net::IpAddr;
use std::rc::Rc;

/// Where the served table came from (`source` in every answer's `ipdb` object).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Built into the worker.
    Bundled,
    /// Hot-swapped from a published record.
    R2,
}

/// Where a table's pages come from.
pub(super) enum Pages {
    /// The bundled pages ([`IpdbStore::bundled_page`]).
    Bundled,
    /// A published version's pages, named and checksummed by its record.
    Published(Box<IpdbRecord>),
    /// Converted in this isolate: every page is in memory already.
    Loaded,
}

/// One version as an isolate serves it: the table's directory, its pages fetched on first need
/// and kept for the isolate's life.
pub struct Served {
    pub(super) db: IpTable<Vec<u8>>,
    pub(super) pages: Pages,
    pub(super) version: String,
    pub(super) source: Source,
    pub(super) attribution: Option<Attribution>,
    /// Where a published version came from (its record's); `None` for the bundled table.
    pub(super) origin: Option<Origin>,
    /// Build time of the database (seconds; 0 = unknown), from the table's metadata.
    pub(super) build_epoch: u64,
    /// Fetch (published only) + open time of the directory (ms).
    pub(super) load_ms: f64,
    /// Fetch + validation time of the pages loaded so far (ms).
    pub(super) page_ms: Cell<f64>,
    /// What served before this one was swapped in: serves again if a page of this one fails.
    pub(super) fallback: RefCell<Option<Rc<Served>>>,
}

/// What a table says about its source (written by `update::table_meta`).
#[derive(serde::Deserialize, Default)]
pub(super) struct TableMeta {
    #[serde(default)]
    pub(super) database_type: String,
    #[serde(default)]
    pub(super) build_epoch: u64,
    #[serde(default)]
    pub(super) attribution: Option<Attribution>,
}

pub(super) fn meta_of<S: AsRef<[u8]>>(t: &IpTable<S>) -> TableMeta {
    // The meta only labels the version; a table whose meta does not parse still answers.
    serde_json::from_slice(t.meta()).unwrap_or_default()
}

impl Served {
    /// The bundled table from its directory's bytes (its pages come through the store).
    ///
    /// # Errors
    /// When the directory does not open.
    pub fn bundled(dir: Vec<u8>, clock: &impl Clock) -> Result<Self, TableError> {
        let started = clock.now_ms();
        let db = IpTable::from_bytes(dir)?;
        let meta = meta_of(&db);
        Ok(Served {
            db,
            pages: Pages::Bundled,
            version: format!("bundled:{}:{}", meta.database_type, meta.build_epoch),
            source: Source::Bundled,
            attribution: meta.attribution,
            origin: None,
            build_epoch: meta.build_epoch,
            load_ms: elapsed(clock, started),
            page_ms: Cell::new(0.0),
            fallback: RefCell::new(None),
        })
    }

    /// The table (lookups need the pages [`Serving::ready`] loaded).
    pub fn db(&self) -> &IpTable<Vec<u8>> {
        &self.db
    }

    /// The version label answers carry.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Bundled or published.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The credit the data's licence asks for.
    pub fn attribution(&self) -> Option<&Attribution> {
        self.attribution.as_ref()
    }

    /// Where a published version came from.
    pub fn origin(&self) -> Option<&Origin> {
        self.origin.as_ref()
    }

    /// The pages `ips` need that are not loaded yet, each once.
    pub(super) fn missing_pages(&self, ips: &[IpAddr]) -> Vec<usize> {
        let mut need: Vec<usize> = ips
            .iter()
            .filter_map(|&ip| self.db.missing_page(ip))
            .collect();
        need.sort_unstable();
        need.dedup();
        need
    }

    pub(super) async fn load_page<S: IpdbStore>(
        &self,
        store: &S,
        p: usize,
    ) -> Result<(), PageError<S::Error>> {
        let read = |source| PageError::Read { page: p, source };
        match &self.pages {
            Pages::Bundled => {
                let bytes = store.bundled_page(&page_name(p)).await.map_err(read)?;
                let corrupt = |source| PageError::Corrupt { page: p, source };
                self.db.insert_page(p, bytes).map_err(corrupt)
            }
            Pages::Published(record) => {
                let bytes = match record.table_page_key(p) {
                    Some(key) => store.object(&key).await.map_err(read)?,
                    None => None,
                };
                refresh::accept_page(record, &self.db, p, bytes).map_err(PageError::Refused)
            }
            Pages::Loaded => Err(PageError::NotLoaded(p)),
        }
    }
}
