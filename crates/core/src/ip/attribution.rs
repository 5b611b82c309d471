//! Credit lines that the IP data licences ask for, shown wherever an answer is (`ipdb` in IP
//! answers, `/healthz`, the console) and in the README.
//!
//! DB-IP Lite (CC BY 4.0) asks for a link "IP Geolocation by DB-IP" on pages that display its
//! results; GeoLite2's EULA asks for "This product includes GeoLite2 data created by MaxMind";
//! iptoasn (PDDL) asks for nothing, but a source is still named.

use serde::{Deserialize, Serialize};

/// A credit line: what to show, where it links, under which licence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
// Strict where the worker reads one (a published record), open in the API: a credit line may
// gain a field without breaking a client that validates answers.
#[cfg_attr(not(target_arch = "wasm32"), schemars(transform = open_object))]
pub struct Attribution {
    /// The text to show, e.g. "IP Geolocation by DB-IP".
    pub text: String,
    /// The link the text points at.
    pub url: String,
    /// SPDX-style licence of the data.
    pub license: String,
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn open_object(s: &mut schemars::Schema) {
    s.remove("additionalProperties");
}

impl Attribution {
    fn new(text: &str, url: &str, license: &str) -> Self {
        Attribution {
            text: text.into(),
            url: url.into(),
            license: license.into(),
        }
    }

    /// DB-IP Lite, with the exact link text its licence gives.
    pub fn dbip() -> Self {
        Self::new("IP Geolocation by DB-IP", "https://db-ip.com", "CC-BY-4.0")
    }

    /// iptoasn.com (public domain; credit is a courtesy).
    pub fn iptoasn() -> Self {
        Self::new(
            "IP to country data by iptoasn.com",
            "https://iptoasn.com",
            "PDDL-1.0",
        )
    }

    /// MaxMind GeoLite2 / GeoIP2, with the sentence the GeoLite2 EULA asks for.
    pub fn maxmind(db_type: &str) -> Self {
        let (text, license) = if db_type.starts_with("GeoIP2") {
            (
                "This product uses GeoIP2 data created by MaxMind",
                "MaxMind-Commercial",
            )
        } else {
            (
                "This product includes GeoLite2 data created by MaxMind",
                "MaxMind-GeoLite2-EULA",
            )
        };
        Self::new(text, "https://www.maxmind.com", license)
    }

    /// The credit a database names in its metadata `database_type`, when it names one we know:
    /// MaxMind's (`GeoLite2-Country`, `GeoIP2-Country`, …) and DB-IP's own downloads
    /// (`DBIP-Country-Lite`, …). The npm builds say only `country ipvAll`, so their credit comes
    /// from the asset build instead.
    pub fn for_database_type(db_type: &str) -> Option<Self> {
        let lower = db_type.to_ascii_lowercase();
        if lower.starts_with("geolite2") || lower.starts_with("geoip2") {
            Some(Self::maxmind(db_type))
        } else if lower.starts_with("dbip") || lower.starts_with("db-ip") {
            Some(Self::dbip())
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_database_types_get_their_credit() {
        assert_eq!(
            Attribution::for_database_type("DBIP-Country-Lite"),
            Some(Attribution::dbip())
        );
        let ml = Attribution::for_database_type("GeoLite2-Country").unwrap();
        assert!(ml.text.contains("GeoLite2") && ml.url.contains("maxmind.com"));
        let m2 = Attribution::for_database_type("GeoIP2-Country").unwrap();
        assert!(m2.text.contains("GeoIP2"));
        assert_eq!(Attribution::for_database_type("country ipvAll"), None);
        assert_eq!(Attribution::for_database_type(""), None);
    }
}
