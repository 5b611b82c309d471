//! Deployment configuration that the worker, the tests and the operating scripts share.
//!
//! [`SECRETS`] is the one list of secrets the worker reads. `secrets.example.json` (the format of
//! `wrangler secret bulk`) is checked against it by a test, and `/healthz` reports the names of
//! the ones a deployment lacks, so a forgotten secret shows before the first real request.

/// A secret the worker reads: set per environment with `wrangler secret bulk`, never in
/// `wrangler.toml`; locally in `.dev.vars`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Secret {
    /// Binding name.
    pub name: &'static str,
    /// What it is for (shown in docs and in `secrets.example.json`).
    pub purpose: &'static str,
}

/// Every secret the worker reads.
pub const SECRETS: &[Secret] = &[
    Secret {
        name: "DATA_API_URL",
        purpose: "Data API base URL, up to /action/…",
    },
    Secret {
        name: "DATA_API_KEY",
        purpose: "Data API key (apiKey header, bearer token or Basic password)",
    },
    Secret {
        name: "REDIS_REST_URL",
        purpose: "Upstash-style Redis REST endpoint",
    },
    Secret {
        name: "REDIS_REST_TOKEN",
        purpose: "bearer token of the Redis REST endpoint",
    },
    Secret {
        name: "SERVICE_TOKEN",
        purpose: "bearer token of producing services (create, retract, admin)",
    },
];

/// Names of the secrets for which `is_set` is false, in [`SECRETS`] order. Only names: the
/// values never leave the binding.
pub fn missing_secrets(is_set: impl Fn(&str) -> bool) -> Vec<&'static str> {
    SECRETS
        .iter()
        .map(|s| s.name)
        .filter(|n| !is_set(n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn reports_missing_names_in_order() {
        assert!(missing_secrets(|_| true).is_empty());
        assert_eq!(
            missing_secrets(|n| n.starts_with("DATA_")),
            ["REDIS_REST_URL", "REDIS_REST_TOKEN", "SERVICE_TOKEN"]
        );
        assert_eq!(missing_secrets(|_| false).len(), SECRETS.len());
    }

    #[test]
    fn example_bulk_file_lists_exactly_the_secrets() {
        let example: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(include_str!("../secrets.example.json"))
                .expect("secrets.example.json is a flat JSON object (wrangler secret bulk)");
        let listed: BTreeSet<&str> = example.keys().map(String::as_str).collect();
        let wanted: BTreeSet<&str> = SECRETS.iter().map(|s| s.name).collect();
        assert_eq!(listed, wanted, "secrets.example.json vs config::SECRETS");
        assert!(
            example
                .values()
                .all(|v| v.as_str().is_some_and(|s| !s.is_empty())),
            "every value is a non-empty placeholder string"
        );
    }

    #[test]
    fn dev_vars_example_sets_every_secret() {
        let text = include_str!("../.dev.vars.example");
        let set: BTreeSet<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
            .collect();
        assert!(missing_secrets(|n| set.contains(n)).is_empty(), "{set:?}");
    }
}
