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

/// The wrapper on tiny databases written here, byte by byte, in the MaxMind DB format (IPv4
/// tree, 24-bit records): each layout detected, boundaries, reserved ranges, junk refused.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// MaxMind DB data-section encodings of the few types a tiny database needs.
    fn string(s: &str) -> Vec<u8> {
        assert!(s.len() < 29);
        let mut v = vec![0x40 | s.len() as u8];
        v.extend(s.as_bytes());
        v
    }
    fn map(pairs: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut v = vec![0xE0 | pairs.len() as u8];
        for (k, val) in pairs {
            v.extend(string(k));
            v.extend(val);
        }
        v
    }
    fn uint(type_bits: u8, n: u64, bytes: usize) -> Vec<u8> {
        let mut v = vec![type_bits | bytes as u8];
        v.extend(&n.to_be_bytes()[8 - bytes..]);
        v
    }
    fn uint64(n: u64) -> Vec<u8> {
        // Extended type 9: control byte with type 0, then 9 - 7.
        let mut v = vec![8, 2];
        v.extend(n.to_be_bytes());
        v
    }

    /// An IPv4 database mapping each `/prefix` to its record, nothing elsewhere.
    pub(crate) fn mmdb(db_type: &str, nets: &[(&str, u8, Vec<u8>)]) -> Vec<u8> {
        #[derive(Clone, Copy)]
        enum Rec {
            Empty,
            Node(usize),
            Data(usize),
        }
        let mut nodes = vec![[Rec::Empty; 2]];
        let mut data: Vec<u8> = Vec::new();
        for (net, len, record) in nets {
            let ip = u32::from(net.parse::<std::net::Ipv4Addr>().unwrap());
            let mut n = 0;
            for i in 0..*len {
                let bit = ((ip >> (31 - i)) & 1) as usize;
                if i + 1 == *len {
                    nodes[n][bit] = Rec::Data(data.len());
                } else if let Rec::Node(m) = nodes[n][bit] {
                    n = m;
                } else {
                    nodes.push([Rec::Empty; 2]);
                    let m = nodes.len() - 1;
                    nodes[n][bit] = Rec::Node(m);
                    n = m;
                }
            }
            data.extend(record);
        }
        let count = nodes.len();
        let mut out = Vec::new();
        for node in &nodes {
            for r in node {
                let v = match *r {
                    Rec::Empty => count,
                    Rec::Node(m) => m,
                    Rec::Data(off) => count + 16 + off,
                };
                out.extend(&(v as u32).to_be_bytes()[1..]);
            }
        }
        out.extend([0u8; 16]);
        out.extend(data);
        out.extend(b"\xAB\xCD\xEFMaxMind.com");
        out.extend(map(&[
            ("node_count", uint(0xC0, count as u64, 4)),
            ("record_size", uint(0xA0, 24, 1)),
            ("ip_version", uint(0xA0, 4, 1)),
            ("database_type", string(db_type)),
            ("languages", vec![0, 4]),
            ("binary_format_major_version", uint(0xA0, 2, 1)),
            ("binary_format_minor_version", uint(0xA0, 0, 0)),
            ("build_epoch", uint64(1_700_000_000)),
            ("description", map(&[])),
        ]));
        out
    }

    pub(crate) fn flat(code: &str) -> Vec<u8> {
        map(&[("country_code", string(code))])
    }

    fn geoip2(code: &str) -> Vec<u8> {
        map(&[("country", map(&[("iso_code", string(code))]))])
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_flat_database_answers_its_ranges_and_nothing_else() {
        let bytes = mmdb(
            "tiny-flat",
            &[("8.8.8.0", 24, flat("US")), ("81.2.69.0", 24, flat("GB"))],
        );
        let db = IpDb::from_bytes(bytes.as_slice()).unwrap();
        assert_eq!(db.layout(), Layout::Flat);
        assert_eq!(db.describe(), ("tiny-flat".to_owned(), 1_700_000_000));
        for (addr, want) in [
            ("8.8.8.0", IpAnswer::Country("US")),
            ("8.8.8.255", IpAnswer::Country("US")),
            ("8.8.7.255", IpAnswer::NotFound),
            ("8.8.9.0", IpAnswer::NotFound),
            ("81.2.69.160", IpAnswer::Country("GB")),
            ("::ffff:8.8.8.8", IpAnswer::Country("US")),
            ("10.1.2.3", IpAnswer::Reserved("private")),
            ("255.255.255.255", IpAnswer::Reserved("broadcast")),
        ] {
            assert_eq!(db.lookup(ip(addr)), want, "{addr}");
        }
    }

    #[test]
    fn a_geoip2_database_is_read_through_country_iso_code() {
        let bytes = mmdb("tiny-geoip2", &[("1.1.1.0", 24, geoip2("AU"))]);
        let db = IpDb::from_bytes(bytes.as_slice()).unwrap();
        assert_eq!(db.layout(), Layout::GeoIp2);
        assert_eq!(db.lookup(ip("1.1.1.1")), IpAnswer::Country("AU"));
        assert_eq!(db.lookup(ip("1.1.2.1")), IpAnswer::NotFound);
    }

    #[test]
    fn junk_and_country_less_databases_are_refused() {
        assert!(matches!(
            IpDb::from_bytes(&b""[..]),
            Err(IpDbError::Invalid(_))
        ));
        let good = mmdb("tiny", &[("8.8.8.0", 24, flat("US"))]);
        // Without its metadata marker the file is not a MaxMind DB.
        assert!(matches!(
            IpDb::from_bytes(&good[..good.len() / 2]),
            Err(IpDbError::Invalid(_))
        ));
        // Readable, but no anchor address has a two-letter code in either layout.
        let cities = mmdb(
            "tiny-city",
            &[("8.8.8.0", 24, map(&[("city", string("x"))]))],
        );
        match IpDb::from_bytes(cities.as_slice()) {
            Err(IpDbError::UnknownLayout(t)) => assert_eq!(t, "tiny-city"),
            other => panic!("{other:?}"),
        }
        let long = mmdb("tiny", &[("8.8.8.0", 24, flat("USA"))]);
        assert!(matches!(
            IpDb::from_bytes(long.as_slice()),
            Err(IpDbError::UnknownLayout(_))
        ));
    }
}
