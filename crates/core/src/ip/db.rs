//! The database wrapper: open once from bytes, answer lookups without allocating.

use super::agreement::ANCHORS;
use super::answer::{CountryLookup, IpAnswer};
use super::special::special_range;
use maxminddb::{MaxMindDbError, PathElement, Reader};
use std::fmt;
use std::net::IpAddr;

/// Which record layout the database uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `{"country_code": "XX"}` (ip-location-db).
    Flat,
    /// `{"country": {"iso_code": "XX"}}` (MaxMind GeoIP2 / GeoLite2).
    GeoIp2,
}

/// Why a database was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IpDbError {
    #[error("not a valid MaxMind DB: {0}")]
    /// Not a readable MaxMind DB.
    Invalid(String),
    #[error("database type {0:?} has no country code field")]
    /// Readable, but its records carry no country code we understand.
    UnknownLayout(String),
}

const FLAT_PATH: &[PathElement<'static>] = &[PathElement::Key("country_code")];
const GEOIP2_PATH: &[PathElement<'static>] =
    &[PathElement::Key("country"), PathElement::Key("iso_code")];

impl<S: AsRef<[u8]>> CountryLookup for IpDb<S> {
    fn country(&self, ip: IpAddr) -> IpAnswer<'_> {
        self.lookup(ip)
    }
}

/// An opened IP database.
pub struct IpDb<S: AsRef<[u8]>> {
    reader: Reader<S>,
    layout: Layout,
}

impl<S: AsRef<[u8]>> IpDb<S> {
    /// Opens a database in place and detects its layout by probing well-known public addresses.
    ///
    /// # Errors
    /// [`IpDbError`] when the bytes are not an mmdb or no probe finds a country in either layout.
    pub fn from_bytes(buf: S) -> Result<Self, IpDbError> {
        let mut reader = Reader::from_source(buf).map_err(|e| IpDbError::Invalid(e.to_string()))?;
        let db_type = reader.metadata().database_type.clone();
        for layout in [Layout::Flat, Layout::GeoIp2] {
            let db = IpDb { reader, layout };
            // Public resolvers and large allocations present in every real country database.
            let hit = ANCHORS
                .iter()
                .any(|&ip| matches!(db.lookup_raw(ip), Ok(Some(code)) if code.len() == 2));
            if hit {
                return Ok(db);
            }
            reader = db.reader;
        }
        Err(IpDbError::UnknownLayout(db_type))
    }

    /// The detected record layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// `database_type` and build time from the metadata, for health and responses.
    pub fn describe(&self) -> (String, u64) {
        let m = self.reader.metadata();
        (m.database_type.clone(), m.build_epoch)
    }

    fn lookup_raw(&self, ip: IpAddr) -> Result<Option<&str>, MaxMindDbError> {
        self.country_of(&self.reader.lookup(ip)?)
    }

    /// The country code a lookup result's record carries, in this database's layout.
    pub(crate) fn country_of<'a>(
        &'a self,
        r: &maxminddb::LookupResult<'a, S>,
    ) -> Result<Option<&'a str>, MaxMindDbError> {
        let path = match self.layout {
            Layout::Flat => FLAT_PATH,
            Layout::GeoIp2 => GEOIP2_PATH,
        };
        r.decode_path::<&str>(path)
    }

    /// Country of `ip`; reserved ranges are answered without touching the database. A record
    /// that fails to decode counts as not found (the database was verified at open).
    pub fn lookup(&self, ip: IpAddr) -> IpAnswer<'_> {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        if let Some(reason) = special_range(ip) {
            return IpAnswer::Reserved(reason);
        }
        match self.lookup_raw(ip) {
            Ok(Some(code)) if code.len() == 2 => IpAnswer::Country(code),
            _ => IpAnswer::NotFound,
        }
    }

    /// The plain crate call this wrapper adds to, for the overhead benchmark.
    pub fn reader(&self) -> &Reader<S> {
        &self.reader
    }
}

impl<S: AsRef<[u8]>> fmt::Debug for IpDb<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (db_type, epoch) = self.describe();
        f.debug_struct("IpDb")
            .field("database_type", &db_type)
            .field("build_epoch", &epoch)
            .field("layout", &self.layout)
            .finish()
    }
}
