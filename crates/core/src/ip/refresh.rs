//! An isolate's hot-swap check, minus the I/O: read the version record, decide whether to
//! fetch, and accept the fetched object only when its checksum matches and it opens. The
//! worker adapter only reads KV and R2 and stores what this returns.

use super::db::{IpDb, IpDbError};
use super::table::{IpTable, TableError};
use super::version::{IpdbRecord, RecordError};

/// What to do after reading the version record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// No record published: keep serving the bundled database.
    NoRecord,
    /// The record names the version already served.
    UpToDate(String),
    /// A new version: fetch its object.
    Fetch(Box<IpdbRecord>),
}

/// Why a published version was not swapped in (the current database keeps serving).
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The record is not valid.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The record names an object the bucket does not have.
    #[error("object {0} missing")]
    Missing(String),
    /// The object's bytes do not hash to the record's `sha256`.
    #[error("checksum mismatch for {0}")]
    Checksum(String),
    /// The converted table is not usable.
    #[error("{key}: {source}")]
    InvalidTable {
        /// Object key.
        key: String,
        /// Why it did not open.
        source: TableError,
    },
    /// The object is not a usable database.
    #[error("{key}: {source}")]
    Invalid {
        /// Object key.
        key: String,
        /// Why it did not open.
        source: IpDbError,
    },
}

/// Decides from the record's text (`None` = no record) and the version being served.
///
/// # Errors
/// [`RefreshError::Record`] when the record is malformed.
pub fn check(record_text: Option<&str>, serving: Option<&str>) -> Result<Check, RefreshError> {
    let Some(text) = record_text else {
        return Ok(Check::NoRecord);
    };
    let record = IpdbRecord::parse(text)?;
    if serving == Some(record.version.as_str()) {
        return Ok(Check::UpToDate(record.version));
    }
    Ok(Check::Fetch(Box::new(record)))
}

/// Accepts the object fetched for `record` (`None` = not in the bucket).
///
/// # Errors
/// [`RefreshError`] when it is missing, does not match the checksum or does not open.
pub fn accept(record: &IpdbRecord, bytes: Option<Vec<u8>>) -> Result<IpDb<Vec<u8>>, RefreshError> {
    let bytes = bytes.ok_or_else(|| RefreshError::Missing(record.object_key.clone()))?;
    if !record.matches(&bytes) {
        return Err(RefreshError::Checksum(record.object_key.clone()));
    }
    IpDb::from_bytes(bytes).map_err(|source| RefreshError::Invalid {
        key: record.object_key.clone(),
        source,
    })
}

/// Accepts the converted table's directory fetched for `record` (`None` = not in the
/// bucket); its pages come later, one by one ([`accept_page`]).
///
/// # Errors
/// [`RefreshError`] when the record names no table, it is missing, does not match its
/// checksum, does not open or names another number of pages than the record.
pub fn accept_table<S: AsRef<[u8]> + From<Vec<u8>>>(
    record: &IpdbRecord,
    bytes: Option<Vec<u8>>,
) -> Result<IpTable<S>, RefreshError> {
    let (Some(key), Some(sha)) = (record.table_dir_key(), &record.table_sha256) else {
        return Err(RefreshError::Missing("table".into()));
    };
    let bytes = bytes.ok_or_else(|| RefreshError::Missing(key.clone()))?;
    if super::sha256_hex(&bytes) != *sha {
        return Err(RefreshError::Checksum(key));
    }
    let invalid = |source| RefreshError::InvalidTable {
        key: key.clone(),
        source,
    };
    let t = IpTable::from_bytes(S::from(bytes)).map_err(invalid)?;
    if t.page_count() != record.table_pages.len() {
        return Err(invalid(TableError::Malformed(
            "page count differs from the record",
        )));
    }
    Ok(t)
}

/// Accepts page `p` of the table named by `record` (`None` = not in the bucket) into `table`.
///
/// # Errors
/// [`RefreshError`] when it is missing, does not match the record's checksum or the
/// directory's, or does not validate.
pub fn accept_page<S: AsRef<[u8]>>(
    record: &IpdbRecord,
    table: &IpTable<S>,
    p: usize,
    bytes: Option<Vec<u8>>,
) -> Result<(), RefreshError> {
    let (Some(key), Some(sha)) = (record.table_page_key(p), record.table_pages.get(p)) else {
        return Err(RefreshError::Missing(format!("table page {p}")));
    };
    let bytes = bytes.ok_or_else(|| RefreshError::Missing(key.clone()))?;
    if super::sha256_hex(&bytes) != *sha {
        return Err(RefreshError::Checksum(key));
    }
    table
        .insert_page(p, bytes)
        .map_err(|source| RefreshError::InvalidTable { key, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::sha256_hex;

    fn record(sha: &str) -> IpdbRecord {
        IpdbRecord {
            version: "v2".into(),
            sha256: sha.into(),
            object_key: "ipdb/x.mmdb".into(),
            updated_at: String::new(),
            attribution: None,
            table_key: None,
            table_sha256: None,
            table_pages: Vec::new(),
            origin: None,
        }
    }

    #[test]
    fn decides_from_the_record() {
        assert_eq!(check(None, Some("v1")).unwrap(), Check::NoRecord);
        let text = serde_json::to_string(&record(&sha256_hex(b"x"))).unwrap();
        assert_eq!(
            check(Some(&text), Some("v2")).unwrap(),
            Check::UpToDate("v2".into())
        );
        assert!(matches!(check(Some(&text), Some("v1")), Ok(Check::Fetch(r)) if r.version == "v2"));
        assert!(matches!(check(Some(&text), None), Ok(Check::Fetch(_))));
        let err = check(Some("{"), None).unwrap_err();
        assert!(err.to_string().contains("not valid JSON"), "{err}");
    }

    #[test]
    fn accepts_only_a_matching_database() {
        let garbage = b"garbage".to_vec();
        let r = record(&sha256_hex(&garbage));
        let e = accept(&r, None).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
        let e = accept(&record(&sha256_hex(b"other")), Some(garbage.clone())).unwrap_err();
        assert!(e.to_string().starts_with("checksum mismatch"), "{e}");
        let e = accept(&r, Some(garbage)).unwrap_err();
        assert!(e.to_string().contains("not a valid MaxMind DB"), "{e}");
    }

    #[test]
    fn accepts_only_a_matching_table() {
        let junk = b"junk".to_vec();
        let mut r = record(&sha256_hex(b"db"));
        assert!(
            accept_table::<Vec<u8>>(&r, Some(junk.clone())).is_err(),
            "no table named"
        );
        r.table_key = Some("ipdb/x.table".into());
        r.table_sha256 = Some(sha256_hex(&junk));
        let e = accept_table::<Vec<u8>>(&r, None).unwrap_err();
        assert!(
            e.to_string().contains("ipdb/x.table/dir.bin missing"),
            "{e}"
        );
        let e = accept_table::<Vec<u8>>(&r, Some(b"other".to_vec())).unwrap_err();
        assert!(e.to_string().starts_with("checksum mismatch"), "{e}");
        let e = accept_table::<Vec<u8>>(&r, Some(junk)).unwrap_err();
        assert!(e.to_string().contains("IP country table truncated"), "{e}");
    }

    #[test]
    fn accepts_pages_only_as_the_record_names_them() {
        let ranges = crate::ip::convert::Ranges {
            v4: vec![(0, None), (0x0808_0800, Some(*b"US")), (0x0808_0900, None)],
            v6: vec![(0, None)],
        };
        let files = crate::ip::table::build(&ranges, b"{}");
        let r = record(&sha256_hex(b"db")).with_table(&files);
        assert_eq!(r.table_pages.len(), 1);
        let t: IpTable<Vec<u8>> = accept_table(&r, Some(files.dir.clone())).unwrap();
        let ip = "8.8.8.8".parse().unwrap();
        assert_eq!(t.missing_page(ip), Some(0));
        let e = accept_page(&r, &t, 0, None).unwrap_err();
        assert!(e.to_string().ends_with("page-000.bin missing"), "{e}");
        let mut bad = files.pages[0].clone();
        bad[0] ^= 1;
        let e = accept_page(&r, &t, 0, Some(bad)).unwrap_err();
        assert!(e.to_string().starts_with("checksum mismatch"), "{e}");
        let e = accept_page(&r, &t, 1, Some(Vec::new())).unwrap_err();
        assert!(e.to_string().contains("table page 1"), "{e}");
        assert_eq!(
            t.missing_page(ip),
            Some(0),
            "nothing kept from a refused page"
        );
        accept_page(&r, &t, 0, Some(files.pages[0].clone())).unwrap();
        assert_eq!(t.try_lookup(ip), Ok(crate::ip::IpAnswer::Country("US")));
        // A record naming another number of pages than the directory is refused.
        let mut two = r.clone();
        two.table_pages.push(sha256_hex(b"x"));
        let e = accept_table::<Vec<u8>>(&two, Some(files.dir)).unwrap_err();
        assert!(e.to_string().contains("page count"), "{e}");
    }
}
