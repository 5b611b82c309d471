//! Refusing public, placeholder and weak secrets in a deployed worker.
//!
//! Pure and platform-free: the worker (at configuration time, reported by `/healthz` and as
//! `503 config_invalid`) and `cargo run --bin check-config` (before `scripts/deploy.sh` uploads
//! anything) run this same code. Only variable names and reasons leave it, never a value.
//!
//! A value is refused when it
//! - equals or contains a value published in this repository ([`PUBLISHED_FILES`]: the example
//!   files, the local stack's defaults, the README, the test harnesses; the values are extracted
//!   from the files at build time by `build.rs`, not kept by hand),
//! - reads like a placeholder ([`PLACEHOLDERS`]),
//! - is shorter than [`MIN_SECRET_BYTES`] bytes, or
//! - has fewer than [`MIN_SECRET_BITS`] bits of estimated entropy ([`estimate_bits`]: a repeated
//!   character, a run like `0123`, a repeated chunk or a dictionary word count for little).
//!
//! Local development is exempt: it is marked by `ENVIRONMENT=development` (`.dev.vars`, the test
//! harness, `scripts/dev.sh`); a missing `ENVIRONMENT` counts as deployed.

/// Variable that marks local development.
pub const ENVIRONMENT_VAR: &str = "ENVIRONMENT";
/// Its value for local development (the only one that relaxes the checks).
pub const DEVELOPMENT: &str = "development";
/// Shortest secret accepted, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;
/// Fewest bits of estimated entropy a secret must have.
pub const MIN_SECRET_BITS: u32 = 128;
/// Secrets checked for strength, besides every `SERVICE_KEY_<NAME>` declared in `SERVICE_KEYS`.
pub const STRENGTH_CHECKED: &[&str] = &[
    "AUTH_HS256_SECRET",
    "SERVICE_TOKEN",
    "DATA_API_KEY",
    "REDIS_REST_TOKEN",
];

/// Variables that must not still hold a placeholder (not secrets: no strength rule).
pub const PLACEHOLDER_CHECKED: &[&str] = &[
    "AUTH_ISSUER",
    "AUTH_AUDIENCE",
    "AUTH_JWKS_URL",
    "AUTH_JWKS_ISSUER",
    "AUTH_JWKS_AUDIENCE",
    "CORS_ALLOWED_ORIGINS",
    "DATA_API_URL",
    "REDIS_REST_URL",
    "IPDB_SOURCE_URL",
    "MAXMIND_ACCOUNT_ID",
    "MAXMIND_LICENSE_KEY",
];

/// Placeholder markers, matched case-insensitively anywhere in a value.
pub const PLACEHOLDERS: &[&str] = &[
    "replace",
    "example",
    "changeme",
    "change-me",
    "change_me",
    "your-",
    "<",
    "todo",
    "xxxx",
];

/// Why a value is refused. Never carries the value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Weakness {
    /// Equals or contains a value published in this repository.
    #[error("equals or contains a value published in this repository ({source_file})")]
    Published {
        /// The file that publishes it.
        source_file: &'static str,
    },
    /// Reads like a placeholder.
    #[error("still a placeholder (contains {marker:?})")]
    Placeholder {
        /// The marker found.
        marker: &'static str,
    },
    /// Too short.
    #[error("shorter than {MIN_SECRET_BYTES} bytes ({len})")]
    TooShort {
        /// Its length in bytes.
        len: usize,
    },
    /// Too predictable.
    #[error("about {bits} bits of estimated entropy, fewer than {MIN_SECRET_BITS} (a repeated character, a run or a dictionary word counts for little)")]
    LowEntropy {
        /// The estimate.
        bits: u32,
    },
}

/// A variable the deployed worker refuses, with the reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {weakness}")]
pub struct Refused {
    /// The variable.
    pub var: String,
    /// Why.
    pub weakness: Weakness,
}

/// Whether the variables mark local development (`ENVIRONMENT=development`).
pub fn is_development(get: &dyn Fn(&str) -> Option<String>) -> bool {
    get(ENVIRONMENT_VAR).is_some_and(|v| v.trim() == DEVELOPMENT)
}

mod extract;
pub use extract::{secret_looking_values, MIN_CONTAINED_LEN, PUBLISHED_FILES};

// `PUBLISHED`: every published value with the file that publishes it, extracted from
// `PUBLISHED_FILES` by build.rs with the same `secret_looking_values`. Only the values are
// compiled in, not the files (they were ~90 KB of the wasm).
include!(concat!(env!("OUT_DIR"), "/published.rs"));

/// Every published value with the file that publishes it.
#[must_use]
pub fn published() -> &'static [(&'static str, &'static str)] {
    PUBLISHED
}

/// The published value `value` equals or contains, if any.
fn published_in(value: &str) -> Option<&'static str> {
    let v = value.to_ascii_lowercase();
    published().iter().find_map(|(p, file)| {
        let p = p.to_ascii_lowercase();
        (v == p || (p.len() >= MIN_CONTAINED_LEN && v.contains(&p))).then_some(*file)
    })
}

/// The placeholder marker in `value`, if any.
pub fn placeholder_in(value: &str) -> Option<&'static str> {
    let v = value.to_ascii_lowercase();
    PLACEHOLDERS.iter().copied().find(|m| v.contains(m))
}

/// Checks a secret's value: published, placeholder, length, entropy (in that order).
///
/// # Errors
/// The first rule it breaks.
pub fn check_secret(value: &str) -> Result<(), Weakness> {
    if let Some(source_file) = published_in(value) {
        return Err(Weakness::Published { source_file });
    }
    if let Some(marker) = placeholder_in(value) {
        return Err(Weakness::Placeholder { marker });
    }
    if value.len() < MIN_SECRET_BYTES {
        return Err(Weakness::TooShort { len: value.len() });
    }
    let bits = estimate_bits(value);
    if bits < MIN_SECRET_BITS {
        return Err(Weakness::LowEntropy { bits });
    }
    Ok(())
}

/// Names of the secrets a configuration holds that [`check_secret`] applies to.
fn strength_checked(get: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut names: Vec<String> = STRENGTH_CHECKED.iter().map(|s| (*s).to_owned()).collect();
    if let Some(spec) = get("SERVICE_KEYS") {
        if let Ok(decl) = crate::auth::service_keys::parse_declarations(&spec) {
            names.extend(decl.into_iter().map(|d| d.secret));
        }
    }
    names
}

/// Every refused variable of a deployed configuration, in a stable order (all at once, so an
/// operator fixes them in one go). Unset variables are not refused here (other checks report
/// missing secrets). Empty for local development.
pub fn refused(get: &dyn Fn(&str) -> Option<String>) -> Vec<Refused> {
    if is_development(get) {
        return Vec::new();
    }
    let value = |n: &str| {
        get(n)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let mut out = Vec::new();
    for var in strength_checked(get) {
        if let Some(v) = value(&var) {
            if let Err(weakness) = check_secret(&v) {
                out.push(Refused { var, weakness });
            }
        }
    }
    for var in PLACEHOLDER_CHECKED {
        if let Some(marker) = value(var).as_deref().and_then(placeholder_in) {
            out.push(Refused {
                var: (*var).to_owned(),
                weakness: Weakness::Placeholder { marker },
            });
        }
    }
    out
}

/// Common words and fragments of hand-made secrets; each counts as one pick from a list of
/// 2^[`WORD_BITS`].
const WORDS: &[&str] = &[
    "access",
    "account",
    "admin",
    "alpha",
    "api",
    "app",
    "auth",
    "bench",
    "beta",
    "bridge",
    "change",
    "char",
    "chars",
    "character",
    "characters",
    "cloud",
    "console",
    "data",
    "default",
    "demo",
    "deploy",
    "dev",
    "development",
    "dragon",
    "edge",
    "example",
    "football",
    "gateway",
    "geo",
    "hello",
    "hs256",
    "ingest",
    "inbox",
    "key",
    "keys",
    "leak",
    "least",
    "legacy",
    "letmein",
    "local",
    "localhost",
    "long",
    "master",
    "monkey",
    "mongo",
    "mongodb",
    "must",
    "new",
    "not",
    "notify",
    "old",
    "ops",
    "pass",
    "passw0rd",
    "password",
    "primary",
    "prod",
    "production",
    "qwerty",
    "random",
    "redis",
    "replace",
    "rest",
    "rotated",
    "secret",
    "secure",
    "service",
    "shadow",
    "smoke",
    "staging",
    "sunshine",
    "super",
    "test",
    "testing",
    "the",
    "token",
    "trustno1",
    "user",
    "value",
    "welcome",
    "with",
    "worker",
    "your",
];
const WORD_BITS: f64 = 11.0;

/// Separators that hand-made secrets put between words.
const SEPARATORS: &[u8] = b"-_. /:";

/// Estimated entropy of `s` in bits (a zxcvbn-like lower bound, simplified): a dictionary word
/// costs [`WORD_BITS`], a chunk repeated from earlier a few bits, a character that repeats or
/// continues the previous one (`aa`, `ab`, `21`) 1–2 bits, a separator 2 bits, and any other
/// character the size of its class (digits 3.3, letters 4.7, other 5 bits). Only the first 256
/// bytes are looked at.
pub fn estimate_bits(s: &str) -> u32 {
    let b: Vec<u8> = s.bytes().take(256).collect();
    let lower: Vec<u8> = b.iter().map(u8::to_ascii_lowercase).collect();
    let mut bits = 0.0f64;
    let mut i = 0;
    while i < b.len() {
        // The longest dictionary word starting here.
        let word = WORDS
            .iter()
            .filter(|w| lower[i..].starts_with(w.as_bytes()))
            .map(|w| w.len())
            .max();
        if let Some(len) = word.filter(|l| *l >= 3) {
            bits += WORD_BITS;
            i += len;
            continue;
        }
        // The longest chunk (3+ bytes) that already occurred.
        let repeat = (3..=(b.len() - i).min(i))
            .rev()
            .find(|&len| lower[..i].windows(len).any(|w| w == &lower[i..i + len]));
        if let Some(len) = repeat {
            bits += (i as f64).log2().max(1.0) + (len as f64).log2();
            i += len;
            continue;
        }
        let c = b[i];
        let sequential = i > 0 && c.abs_diff(b[i - 1]) == 1 && c.is_ascii_alphanumeric();
        bits += if i > 0 && c == b[i - 1] {
            1.0
        } else if sequential || SEPARATORS.contains(&c) {
            2.0
        } else if c.is_ascii_digit() {
            10f64.log2()
        } else if c.is_ascii_alphabetic() {
            26f64.log2()
        } else {
            5.0
        };
        i += 1;
    }
    bits as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A value drawn like `openssl rand -base64 48` would (fixed here so the test is exact).
    const STRONG: &str = "q7Vt9bXk2LmZ4pRw8sYc1NhJ6gFd3aQe5uKo0iTz-WvB_yMn";

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |n| m.get(n).cloned()
    }

    #[test]
    fn strong_random_values_pass() {
        assert_eq!(check_secret(STRONG), Ok(()));
        // 32 random bytes, hex (`openssl rand -hex 32`).
        assert_eq!(
            check_secret("3f9a1c7e5b2d8046f1e3a9c75b0d2e4f8a6c1b3d5e7f9012a4c6e8b0d2f4a6c8"),
            Ok(())
        );
    }

    #[test]
    fn every_example_value_is_refused() {
        let example: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(include_str!("../../../../secrets.example.json")).unwrap();
        for (k, v) in &example {
            let v = v.as_str().unwrap();
            assert!(check_secret(v).is_err(), "{k} passes");
        }
        for v in [
            "local-dev-service-token",
            "local-dev-hs256-secret-at-least-32-chars",
            "local-dev-data-api-key",
            "local-dev-redis-token",
        ] {
            assert!(
                matches!(check_secret(v), Err(Weakness::Published { .. })),
                "{v}: {:?}",
                check_secret(v)
            );
        }
        // Containing one is enough.
        assert!(matches!(
            check_secret(&format!("{STRONG}local-dev-redis-token")),
            Err(Weakness::Published { .. })
        ));
    }

    #[test]
    fn placeholders_short_repeated_and_word_values_are_refused() {
        assert!(matches!(
            check_secret(&format!("{STRONG}-CHANGEME")),
            Err(Weakness::Placeholder { marker: "changeme" })
        ));
        assert_eq!(check_secret("Zq8#vT2m"), Err(Weakness::TooShort { len: 8 }));
        for weak in [
            "a".repeat(64),
            "passwordpasswordpasswordpassword".to_owned(),
            "0123456789012345678901234567890123456789".to_owned(),
            "my-super-secret-production-token-for-the-worker-2026".to_owned(),
            "abcabcabcabcabcabcabcabcabcabcabcabcabc".to_owned(),
        ] {
            assert!(
                matches!(check_secret(&weak), Err(Weakness::LowEntropy { .. })),
                "{weak}: {:?}",
                check_secret(&weak)
            );
        }
    }

    #[test]
    fn estimate_orders_values_sensibly() {
        assert!(estimate_bits(&"a".repeat(40)) < 50);
        assert!(estimate_bits("password") <= 11);
        assert!(estimate_bits(STRONG) >= 200, "{}", estimate_bits(STRONG));
    }

    #[test]
    fn refused_lists_every_problem_by_name_and_never_the_value() {
        let get = vars(&[
            (
                "AUTH_HS256_SECRET",
                "replace-with-at-least-32-random-characters",
            ),
            ("SERVICE_TOKEN", "replace-with-a-long-random-token"),
            ("DATA_API_KEY", STRONG),
            ("REDIS_REST_TOKEN", "short"),
            ("SERVICE_KEYS", "ingest:notify:write,ops:admin"),
            ("SERVICE_KEY_INGEST", "local-dev-service-token"),
            ("SERVICE_KEY_OPS", "0123456789abcdef0123456789abcdef0123"),
            ("AUTH_ISSUER", "REPLACE-with-the-staging-token-issuer"),
            ("AUTH_AUDIENCE", "my-app"),
            ("DATA_API_URL", "https://data-api.example.com/action"),
        ]);
        let r = refused(&get);
        let names: Vec<&str> = r.iter().map(|r| r.var.as_str()).collect();
        assert_eq!(
            names,
            [
                "AUTH_HS256_SECRET",
                "SERVICE_TOKEN",
                "REDIS_REST_TOKEN",
                "SERVICE_KEY_INGEST",
                "SERVICE_KEY_OPS",
                "AUTH_ISSUER",
                "DATA_API_URL"
            ]
        );
        for x in &r {
            let text = x.to_string();
            assert!(
                !text.contains("replace-with") && !text.contains("local-dev"),
                "{text}"
            );
        }
    }

    #[test]
    fn development_is_exempt_and_a_missing_environment_is_deployed() {
        let pairs = [("SERVICE_TOKEN", "local-dev-service-token")];
        assert_eq!(refused(&vars(&pairs)).len(), 1);
        let mut dev = pairs.to_vec();
        dev.push(("ENVIRONMENT", "development"));
        assert!(refused(&vars(&dev)).is_empty());
        let mut other = pairs.to_vec();
        other.push(("ENVIRONMENT", "staging"));
        assert_eq!(refused(&vars(&other)).len(), 1);
    }

    #[test]
    fn extractor_finds_the_common_forms() {
        let text = r#"
            "SERVICE_TOKEN": "replace-with-a-long-random-token",
            SERVICE_TOKEN="local-dev-service-token"
            "redis_token": "local-dev-redis-token",
            const KEY = 'console-e2e-service-key-0123456789';
            export GATEWAY_API_KEYS=gw-key-aaaaaaaaaaaaaaaa
            IPDB_KV_KEY = "ipdb/current"  # not a secret, harmless
            name = "edge-geo-notify"
            TOKEN: `${value}`
        "#;
        assert_eq!(
            secret_looking_values(text),
            [
                "replace-with-a-long-random-token",
                "local-dev-service-token",
                "local-dev-redis-token",
                "console-e2e-service-key-0123456789",
                "gw-key-aaaaaaaaaaaaaaaa",
                "ipdb/current",
            ]
        );
    }

    /// The gateway's Python port (stack/keyrules.py) is held to the same samples by a pytest.
    #[test]
    fn shared_samples_have_the_same_estimate_in_both_implementations() {
        let samples: Vec<serde_json::Value> = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/secret_samples.json"
        ))
        .unwrap();
        assert!(samples.len() >= 10);
        for s in samples {
            let v = s["value"].as_str().unwrap();
            assert_eq!(
                u64::from(estimate_bits(v)),
                s["bits"].as_u64().unwrap(),
                "{v}"
            );
        }
    }
}
