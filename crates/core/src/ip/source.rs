//! Where the scheduled update downloads from, minus the I/O: the configured source (a plain
//! URL, a URL template with the period in it, or MaxMind's download endpoint with HTTP basic
//! auth), the URLs to try in order, the conditional-request validators kept from the last
//! download, and where a published version came from ([`Origin`], kept in its record).
//!
//! - **URL template**: `{YYYY}`, `{MM}` and `{YYYYMMDD}` are replaced by the current period
//!   (a month, or a day when `{YYYYMMDD}` is used), then by the previous one when the current
//!   one is not published yet (`404`, `403`, `410`). DB-IP Lite:
//!   `https://download.db-ip.com/free/dbip-country-lite-{YYYY}-{MM}.mmdb.gz`. A period older than
//!   the one already published is never tried (a late 404 must not roll the database back).
//! - **MaxMind**: `https://download.maxmind.com/geoip/databases/GeoLite2-Country/download?suffix=tar.gz`
//!   (or `GeoIP2-Country`) with basic auth from the secrets `MAXMIND_ACCOUNT_ID` and
//!   `MAXMIND_LICENSE_KEY`. Credentials are only ever sent over `https` (or to a loopback test
//!   server) and never sit in the URL: a URL with a user-info part or a `license_key` parameter
//!   is refused.

use serde::{Deserialize, Serialize};

/// A period placeholder's granularity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    /// `{YYYY}` / `{MM}` only: one file per month.
    Month,
    /// `{YYYYMMDD}`: one file per day.
    Day,
}

/// Account id and licence key for HTTP basic auth. `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicCredentials {
    /// The user (MaxMind: the account id).
    pub user: String,
    /// The password (MaxMind: the licence key).
    pub password: String,
}

impl std::fmt::Debug for BasicCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicCredentials")
            .field("user", &"<set>")
            .field("password", &"<set>")
            .finish()
    }
}

impl BasicCredentials {
    /// The `Authorization` header's value (`Basic base64(user:password)`). Only for the
    /// request: never logged, never stored.
    pub fn header(&self) -> String {
        use base64::Engine as _;
        let raw = format!("{}:{}", self.user, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }
}

/// How the source authenticates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceAuth {
    /// No credentials (DB-IP, any public URL).
    None,
    /// MaxMind's download endpoint: basic auth with the account id and licence key.
    MaxMind(BasicCredentials),
}

/// The configured source (`IPDB_SOURCE_URL`, `IPDB_SOURCE_AUTH`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceSpec {
    /// The URL, or the template with placeholders.
    pub url: String,
    /// `Some` for a template.
    pub template: Option<Granularity>,
    /// Credentials, if any.
    pub auth: SourceAuth,
}

/// Why the configured source is unusable (reported as a configuration error by variable).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// Not an `http(s)` URL.
    #[error("expected an http(s) URL")]
    NotHttp,
    /// A placeholder other than `{YYYY}`, `{MM}`, `{YYYYMMDD}`, or an unclosed `{`.
    #[error("unknown placeholder {0:?} (use {{YYYY}}, {{MM}} or {{YYYYMMDD}})")]
    Placeholder(String),
    /// Credentials written into the URL.
    #[error("credentials in the URL ({0}): set the secrets MAXMIND_ACCOUNT_ID and MAXMIND_LICENSE_KEY with IPDB_SOURCE_AUTH=maxmind instead")]
    CredentialsInUrl(&'static str),
    /// `IPDB_SOURCE_AUTH` is not `none` or `maxmind`.
    #[error("expected none or maxmind, got {0:?}")]
    Auth(String),
    /// A secret the auth needs is not set.
    #[error("required with IPDB_SOURCE_AUTH=maxmind (a secret)")]
    MissingSecret,
    /// Credentials would go over plain HTTP to a remote host.
    #[error("credentials are only sent over https (or to a loopback address)")]
    Insecure,
}

/// The variable a [`SourceError`] is reported under.
impl SourceError {
    /// `IPDB_SOURCE_URL`, `IPDB_SOURCE_AUTH` or the missing secret's name (given by the caller).
    pub fn var(&self) -> &'static str {
        match self {
            SourceError::Auth(_) => "IPDB_SOURCE_AUTH",
            _ => "IPDB_SOURCE_URL",
        }
    }
}

fn is_loopback_http(url: &str) -> bool {
    let rest = url.strip_prefix("http://").unwrap_or("");
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, p)| {
        if p.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

impl SourceSpec {
    /// Parses the source's URL (or template) and auth; `account` and `key` are the MaxMind
    /// secrets (`None` when unset).
    ///
    /// # Errors
    /// [`SourceError`]: a bad URL or placeholder, credentials in the URL, an unknown auth, a
    /// missing secret (with `maxmind`), or credentials over plain HTTP.
    pub fn parse(
        url: &str,
        auth: Option<&str>,
        account: Option<String>,
        key: Option<String>,
    ) -> Result<Self, SourceError> {
        let Some(rest) = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
        else {
            return Err(SourceError::NotHttp);
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.contains('@') {
            return Err(SourceError::CredentialsInUrl("user info"));
        }
        let lower = url.to_ascii_lowercase();
        if lower.contains("license_key=") || lower.contains("account_id=") {
            return Err(SourceError::CredentialsInUrl("a license_key parameter"));
        }
        let template = placeholders(url)?;
        let auth = match auth.unwrap_or("none") {
            "none" => SourceAuth::None,
            "maxmind" => {
                let (Some(user), Some(password)) = (account, key) else {
                    return Err(SourceError::MissingSecret);
                };
                if !url.starts_with("https://") && !is_loopback_http(url) {
                    return Err(SourceError::Insecure);
                }
                SourceAuth::MaxMind(BasicCredentials { user, password })
            }
            other => return Err(SourceError::Auth(other.to_owned())),
        };
        Ok(SourceSpec {
            url: url.to_owned(),
            template,
            auth,
        })
    }

    /// `template`, `maxmind` or `url`: what [`Origin::kind`] says.
    pub fn kind(&self) -> &'static str {
        match (&self.auth, self.template) {
            (SourceAuth::MaxMind(_), _) => "maxmind",
            (SourceAuth::None, Some(_)) => "template",
            (SourceAuth::None, None) => "url",
        }
    }

    /// The URLs to try, in order, at `now_ms`: a plain URL once; a template for the current
    /// period, then the previous one, leaving out periods before `not_before` (the period of
    /// the published version, if it came from this template).
    pub fn candidates(&self, now_ms: u64, not_before: Option<&str>) -> Vec<Candidate> {
        let Some(g) = self.template else {
            return vec![Candidate {
                url: self.url.clone(),
                period: None,
            }];
        };
        let today = date_of(now_ms);
        let previous = match g {
            Granularity::Month => {
                let (y, m) = if today.month == 1 {
                    (today.year - 1, 12)
                } else {
                    (today.year, today.month - 1)
                };
                Ymd {
                    year: y,
                    month: m,
                    day: 1,
                }
            }
            Granularity::Day => date_of(now_ms.saturating_sub(86_400_000)),
        };
        [today, previous]
            .into_iter()
            .map(|d| Candidate {
                url: expand(&self.url, d),
                period: Some(d.label(g)),
            })
            // Labels of one granularity sort as their periods do.
            .filter(|c| match (not_before, &c.period) {
                (Some(nb), Some(p)) if nb.len() == p.len() => p.as_str() >= nb,
                _ => true,
            })
            .collect()
    }
}

/// Whether a candidate's status means "not published (yet)": then the previous period is
/// tried. Any other failure ends the run (a 401 is not a missing month).
pub fn not_published(status: u16) -> bool {
    matches!(status, 403 | 404 | 410)
}

/// One URL to try.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The expanded URL.
    pub url: String,
    /// Its period (`2026-12`, or `2026-12-02` for a daily template); `None` for a plain URL.
    pub period: Option<String>,
}

/// A calendar date (UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ymd {
    year: i32,
    month: u32,
    day: u32,
}

impl Ymd {
    fn label(self, g: Granularity) -> String {
        match g {
            Granularity::Month => format!("{:04}-{:02}", self.year, self.month),
            Granularity::Day => format!("{:04}-{:02}-{:02}", self.year, self.month, self.day),
        }
    }
}

fn date_of(ms: u64) -> Ymd {
    use chrono::Datelike as _;
    let d = chrono::DateTime::from_timestamp_millis(i64::try_from(ms).unwrap_or(i64::MAX))
        .unwrap_or_default()
        .date_naive();
    Ymd {
        year: d.year(),
        month: d.month(),
        day: d.day(),
    }
}

/// `ms` since the epoch as RFC 3339 (UTC, whole seconds).
pub fn rfc3339(ms: u64) -> String {
    use chrono::{Datelike as _, Timelike as _};
    let t = chrono::DateTime::from_timestamp_millis(i64::try_from(ms).unwrap_or(i64::MAX))
        .unwrap_or_default();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// RFC 3339 text as ms since the epoch; `None` when it does not parse or is before 1970.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    u64::try_from(t.timestamp_millis()).ok()
}

/// The granularity of the placeholders in `url` (`None`: no placeholder).
fn placeholders(url: &str) -> Result<Option<Granularity>, SourceError> {
    let mut g = None;
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(SourceError::Placeholder(after.to_owned()));
        };
        match &after[..close] {
            "YYYYMMDD" => g = Some(Granularity::Day),
            "YYYY" | "MM" => {
                g.get_or_insert(Granularity::Month);
            }
            other => return Err(SourceError::Placeholder(other.to_owned())),
        }
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return Err(SourceError::Placeholder("}".into()));
    }
    Ok(g)
}

fn expand(template: &str, d: Ymd) -> String {
    template
        .replace(
            "{YYYYMMDD}",
            &format!("{:04}{:02}{:02}", d.year, d.month, d.day),
        )
        .replace("{YYYY}", &format!("{:04}", d.year))
        .replace("{MM}", &format!("{:02}", d.month))
}

/// Where a published version came from, kept in its record (and shown by `/healthz`): the
/// source's kind and URL (never a credential: the URL has none), the period a template took,
/// the release date of a MaxMind archive, and the response's validators, sent back as
/// `If-None-Match` / `If-Modified-Since` so an unchanged release costs one `304`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
// Strict in a record the worker reads, open in the API (a new field breaks no client).
#[cfg_attr(
    not(target_arch = "wasm32"),
    schemars(rename = "IpdbOrigin", transform = crate::ip::attribution::open_object)
)]
pub struct Origin {
    /// `template`, `maxmind`, `url` (the cron's sources) or `script` (`publish-ipdb.sh`).
    pub kind: String,
    /// The URL downloaded (a template expanded); empty for a local file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// The period a template took (`2026-12`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub period: Option<String>,
    /// The release date (`2026-12-01`): a MaxMind archive's directory date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub release: Option<String>,
    /// The response's `ETag`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub etag: Option<String>,
    /// The response's `Last-Modified`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub last_modified: Option<String>,
    /// The staging record key production promoted this version from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub promoted_from: Option<String>,
}

impl Origin {
    /// The validators to send when downloading `url` again, if this origin downloaded it:
    /// `(If-None-Match, If-Modified-Since)`.
    pub fn conditional(&self, url: &str) -> (Option<&str>, Option<&str>) {
        if self.url != url || self.promoted_from.is_some() {
            return (None, None);
        }
        (self.etag.as_deref(), self.last_modified.as_deref())
    }
}

/// `YYYY-MM-DD` from a MaxMind archive member's directory (`GeoLite2-Country_20261201/…`).
pub fn release_of_member(name: &str) -> Option<String> {
    let dir = name.split('/').next()?;
    let (_, date) = dir.rsplit_once('_')?;
    (date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("{}-{}-{}", &date[..4], &date[4..6], &date[6..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-02T01:00:00Z.
    const DEC_2: u64 = 1_796_173_200_000;
    /// 2026-01-01T00:30:00Z.
    const JAN_1: u64 = 1_767_227_400_000;

    fn spec(url: &str) -> SourceSpec {
        SourceSpec::parse(url, None, None, None).unwrap()
    }

    #[test]
    fn clock_constants_are_what_they_say() {
        assert_eq!(rfc3339(DEC_2), "2026-12-02T01:00:00Z");
        assert_eq!(rfc3339(JAN_1), "2026-01-01T00:30:00Z");
        assert_eq!(parse_rfc3339("2026-12-02T01:00:00Z"), Some(DEC_2));
        assert_eq!(parse_rfc3339("2026-12-02T02:00:00+01:00"), Some(DEC_2));
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn a_monthly_template_tries_this_month_then_the_last() {
        let s = spec("https://download.db-ip.com/free/dbip-country-lite-{YYYY}-{MM}.mmdb.gz");
        assert_eq!(
            (s.template, s.kind()),
            (Some(Granularity::Month), "template")
        );
        let c = s.candidates(DEC_2, None);
        let urls: Vec<&str> = c.iter().map(|c| c.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://download.db-ip.com/free/dbip-country-lite-2026-12.mmdb.gz",
                "https://download.db-ip.com/free/dbip-country-lite-2026-11.mmdb.gz"
            ]
        );
        assert_eq!(c[0].period.as_deref(), Some("2026-12"));
        assert_eq!(c[1].period.as_deref(), Some("2026-11"));
        // January falls back to December of the year before.
        let c = s.candidates(JAN_1, None);
        assert_eq!(c[1].period.as_deref(), Some("2025-12"));
        assert!(c[1].url.ends_with("lite-2025-12.mmdb.gz"));
    }

    #[test]
    fn a_period_older_than_the_published_one_is_not_tried() {
        let s = spec("https://h/x-{YYYY}-{MM}.mmdb.gz");
        let c = s.candidates(DEC_2, Some("2026-12"));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].period.as_deref(), Some("2026-12"));
        assert_eq!(s.candidates(DEC_2, Some("2026-11")).len(), 2);
        // A label of another granularity (another template before) does not filter.
        assert_eq!(s.candidates(DEC_2, Some("2026-12-31")).len(), 2);
    }

    #[test]
    fn a_daily_template_tries_today_then_yesterday() {
        let s = spec("https://h/db-{YYYYMMDD}.mmdb");
        let c = s.candidates(JAN_1, None);
        assert_eq!(
            c.iter().map(|c| c.url.as_str()).collect::<Vec<_>>(),
            ["https://h/db-20260101.mmdb", "https://h/db-20251231.mmdb"]
        );
        assert_eq!(c[1].period.as_deref(), Some("2025-12-31"));
    }

    #[test]
    fn a_plain_url_is_tried_once_as_written() {
        let s = spec("https://h/dbip-country-lite.mmdb.gz");
        assert_eq!(s.kind(), "url");
        assert_eq!(
            s.candidates(DEC_2, Some("2030-01")),
            [Candidate {
                url: "https://h/dbip-country-lite.mmdb.gz".into(),
                period: None
            }]
        );
    }

    #[test]
    fn bad_urls_and_placeholders_are_refused() {
        let p = |u: &str| SourceSpec::parse(u, None, None, None).unwrap_err();
        assert_eq!(p("ftp://h/x"), SourceError::NotHttp);
        assert_eq!(
            p("https://h/{YY}.mmdb"),
            SourceError::Placeholder("YY".into())
        );
        assert!(matches!(
            p("https://h/{YYYY.mmdb"),
            SourceError::Placeholder(_)
        ));
        assert!(matches!(
            p("https://h/YYYY}.mmdb"),
            SourceError::Placeholder(_)
        ));
        assert!(matches!(
            p("https://1234:secret@download.maxmind.com/x"),
            SourceError::CredentialsInUrl(_)
        ));
        let e = p("https://download.maxmind.com/app/geoip_download?edition_id=GeoLite2-Country&license_key=abc&suffix=tar.gz");
        assert!(matches!(e, SourceError::CredentialsInUrl(_)), "{e}");
        assert!(e.to_string().contains("MAXMIND_LICENSE_KEY"), "{e}");
        assert!(!e.to_string().contains("abc"), "never the value: {e}");
    }

    const MAXMIND: &str =
        "https://download.maxmind.com/geoip/databases/GeoLite2-Country/download?suffix=tar.gz";

    #[test]
    fn maxmind_needs_both_secrets_and_https() {
        let some = |s: &str| Some(s.to_owned());
        let s = SourceSpec::parse(MAXMIND, Some("maxmind"), some("42"), some("k3y")).unwrap();
        assert_eq!(s.kind(), "maxmind");
        let SourceAuth::MaxMind(c) = &s.auth else {
            panic!("maxmind auth")
        };
        // base64("42:k3y")
        assert_eq!(c.header(), "Basic NDI6azN5");
        let dbg = format!("{s:?}");
        assert!(!dbg.contains("k3y") && !dbg.contains("42"), "{dbg}");
        assert_eq!(
            SourceSpec::parse(MAXMIND, Some("maxmind"), some("42"), None),
            Err(SourceError::MissingSecret)
        );
        assert_eq!(
            SourceSpec::parse(
                "http://example.net/x",
                Some("maxmind"),
                some("1"),
                some("k")
            ),
            Err(SourceError::Insecure)
        );
        // A loopback test server is allowed plain HTTP.
        for u in [
            "http://127.0.0.1:8123/x",
            "http://localhost/x",
            "http://[::1]:9/x",
        ] {
            assert!(
                SourceSpec::parse(u, Some("maxmind"), some("1"), some("k")).is_ok(),
                "{u}"
            );
        }
        assert_eq!(
            SourceSpec::parse(MAXMIND, Some("basic"), None, None)
                .unwrap_err()
                .var(),
            "IPDB_SOURCE_AUTH"
        );
    }

    #[test]
    fn validators_go_back_only_to_the_url_they_came_from() {
        let o = Origin {
            kind: "maxmind".into(),
            url: MAXMIND.into(),
            etag: Some("\"abc\"".into()),
            last_modified: Some("Tue, 01 Dec 2026 10:00:00 GMT".into()),
            ..Origin::default()
        };
        assert_eq!(
            o.conditional(MAXMIND),
            (Some("\"abc\""), Some("Tue, 01 Dec 2026 10:00:00 GMT"))
        );
        assert_eq!(o.conditional("https://other/x"), (None, None));
        let promoted = Origin {
            promoted_from: Some("ipdb/current".into()),
            ..o
        };
        assert_eq!(promoted.conditional(MAXMIND), (None, None));
    }

    #[test]
    fn release_date_from_the_archive_directory() {
        assert_eq!(
            release_of_member("GeoLite2-Country_20261201/GeoLite2-Country.mmdb").as_deref(),
            Some("2026-12-01")
        );
        assert_eq!(release_of_member("GeoLite2-Country.mmdb"), None);
        assert_eq!(release_of_member("x_2026/y.mmdb"), None);
    }
}
