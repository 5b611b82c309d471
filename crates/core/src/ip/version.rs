//! The config-store record naming the current IPDB (a KV value), and its validation.

use super::attribution::Attribution;
use serde::{Deserialize, Serialize};

/// `{version, sha256, object_key, updated_at[, attribution]}` as stored under the KV key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IpdbRecord {
    /// Opaque version label; a change triggers a download.
    pub version: String,
    /// Lower-case hex SHA-256 of the object's bytes.
    pub sha256: String,
    /// Key of the object in the R2 bucket.
    pub object_key: String,
    /// RFC 3339 time of publication (informational).
    pub updated_at: String,
    /// The credit the data's licence asks for; absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    /// The compact country table converted from the object (an R2 key prefix: the directory
    /// is `{table_key}/dir.bin`, page `i` is `{table_key}/page-{i:03}.bin`), when the
    /// publisher stored one: isolates load it instead of the mmdb, pages as lookups need them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_key: Option<String>,
    /// Lower-case hex SHA-256 of the table's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_sha256: Option<String>,
    /// Lower-case hex SHA-256 of each page, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub table_pages: Vec<String>,
    /// Where the database came from (source kind, URL, period or release date, validators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<super::source::Origin>,
}

/// Why a record was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("IPDB record is not valid JSON: {0}")]
    /// Not the JSON shape above.
    Json(String),
    #[error("IPDB record field {0} is missing or malformed")]
    /// A field is empty or malformed.
    Field(&'static str),
}

impl IpdbRecord {
    /// The record a publisher writes for a database (the cron job and `scripts/publish-ipdb.sh`
    /// through `ipdb-check` alike): version `{build_epoch}-{first 12 hex of sha256}`, object key
    /// `ipdb/{sha256}.mmdb` (content-addressed, so an object is never overwritten in place).
    pub fn for_database(
        sha256: String,
        build_epoch: u64,
        updated_at: String,
        attribution: Option<Attribution>,
    ) -> Self {
        IpdbRecord {
            version: format!("{build_epoch}-{}", &sha256[..12.min(sha256.len())]),
            object_key: format!("ipdb/{sha256}.mmdb"),
            sha256,
            updated_at,
            attribution,
            table_key: None,
            table_sha256: None,
            table_pages: Vec::new(),
            origin: None,
        }
    }

    /// Every object the record names with its SHA-256: the database, the table's directory
    /// and its pages.
    pub fn objects(&self) -> Vec<(String, String)> {
        let mut out = vec![(self.object_key.clone(), self.sha256.clone())];
        if let (Some(dir), Some(sha)) = (self.table_dir_key(), &self.table_sha256) {
            out.push((dir, sha.clone()));
        }
        for (i, sha) in self.table_pages.iter().enumerate() {
            if let Some(key) = self.table_page_key(i) {
                out.push((key, sha.clone()));
            }
        }
        out
    }

    /// Names the converted table (directory and pages) in this record, stored under
    /// `ipdb/{sha256}.table/`.
    pub fn with_table(mut self, table: &super::table::TableFiles) -> Self {
        self.table_key = Some(format!("ipdb/{}.table", self.sha256));
        self.table_sha256 = Some(sha256_hex(&table.dir));
        self.table_pages = table.pages.iter().map(|p| sha256_hex(p)).collect();
        self
    }

    /// R2 key of the table's directory, when the record names a table.
    pub fn table_dir_key(&self) -> Option<String> {
        self.table_key.as_ref().map(|k| format!("{k}/dir.bin"))
    }

    /// R2 key of the table's page `i`, when the record names a table.
    pub fn table_page_key(&self, i: usize) -> Option<String> {
        let name = super::table::page_name(i);
        self.table_key.as_ref().map(|k| format!("{k}/{name}"))
    }

    /// Parses and validates a record.
    ///
    /// # Errors
    /// [`RecordError`] on bad JSON or fields.
    pub fn parse(text: &str) -> Result<Self, RecordError> {
        let r: IpdbRecord =
            serde_json::from_str(text).map_err(|e| RecordError::Json(e.to_string()))?;
        if r.version.is_empty() || r.version.len() > 128 {
            return Err(RecordError::Field("version"));
        }
        if !is_sha256_hex(&r.sha256) {
            return Err(RecordError::Field("sha256"));
        }
        if r.object_key.is_empty() || r.object_key.len() > 1024 {
            return Err(RecordError::Field("object_key"));
        }
        match (&r.table_key, &r.table_sha256) {
            (None, None) => {}
            (Some(k), Some(h)) if !k.is_empty() && k.len() <= 1024 && is_sha256_hex(h) => {}
            _ => return Err(RecordError::Field("table_key/table_sha256")),
        }
        let pages_ok = r.table_pages.len() <= super::table::MAX_PAGES
            && r.table_pages.iter().all(|h| is_sha256_hex(h))
            && (r.table_key.is_some() || r.table_pages.is_empty());
        if !pages_ok {
            return Err(RecordError::Field("table_pages"));
        }
        Ok(r)
    }

    /// True when `bytes` hash to this record's `sha256`.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        sha256_hex(bytes) == self.sha256
    }
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`: the one encoder (digests here, request ids in the adapter, asset
/// manifests in the builder).
pub fn hex(bytes: &[u8]) -> String {
    base16ct::lower::encode_string(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_records() {
        let ok = format!(
            r#"{{"version":"v1","sha256":"{}","object_key":"ipdb/a.mmdb","updated_at":"2026-11-30T00:00:00Z"}}"#,
            sha256_hex(b"abc")
        );
        let r = IpdbRecord::parse(&ok).unwrap();
        assert!(r.matches(b"abc") && !r.matches(b"abd"));
        assert!(matches!(IpdbRecord::parse("{"), Err(RecordError::Json(_))));
        let bad = ok.replace(&sha256_hex(b"abc"), "xyz");
        assert_eq!(IpdbRecord::parse(&bad), Err(RecordError::Field("sha256")));
    }

    #[test]
    fn record_for_a_database_round_trips() {
        let sha = sha256_hex(b"db");
        let r = IpdbRecord::for_database(
            sha.clone(),
            1_700_000_000,
            "2026-12-01T00:00:00Z".into(),
            Some(Attribution::dbip()),
        );
        assert_eq!(r.version, format!("1700000000-{}", &sha[..12]));
        assert_eq!(r.object_key, format!("ipdb/{sha}.mmdb"));
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(IpdbRecord::parse(&text).unwrap(), r);
    }
}
