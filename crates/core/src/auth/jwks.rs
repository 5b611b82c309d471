//! JSON Web Key Sets: parsing the keys the worker can use, and the cache rules (how long a set
//! is fresh, when an unknown `kid` may trigger a refresh).

use super::jwt::Alg;
use super::AuthError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Deserialize;

/// Public key material of one JWK, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyMaterial {
    /// RSA modulus and exponent (big-endian).
    Rsa {
        /// Modulus.
        n: Vec<u8>,
        /// Public exponent.
        e: Vec<u8>,
    },
    /// P-256 point coordinates (32 bytes each).
    P256 {
        /// x coordinate.
        x: Vec<u8>,
        /// y coordinate.
        y: Vec<u8>,
    },
    /// A shared HMAC secret (configuration, never from a JWKS).
    Hmac(Vec<u8>),
}

/// A usable key: its id, the one algorithm it verifies, its material.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jwk {
    /// `kid`.
    pub kid: Option<String>,
    /// The algorithm this key is for (from `alg`, or implied by `kty`/`crv`).
    pub alg: Alg,
    /// Decoded material.
    pub material: KeyMaterial,
}

#[derive(Deserialize)]
struct RawSet {
    keys: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawKey {
    kty: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    alg: Option<String>,
    #[serde(default, rename = "use")]
    use_: Option<String>,
    #[serde(default)]
    n: Option<String>,
    #[serde(default)]
    e: Option<String>,
    #[serde(default)]
    crv: Option<String>,
    #[serde(default)]
    x: Option<String>,
    #[serde(default)]
    y: Option<String>,
}

fn b64(s: Option<&String>) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(s?).ok().filter(|v| !v.is_empty())
}

fn key(raw: RawKey) -> Option<Jwk> {
    if raw.use_.as_deref().is_some_and(|u| u != "sig") {
        return None;
    }
    let (implied, material) = match (raw.kty.as_str(), raw.crv.as_deref()) {
        ("RSA", _) => {
            let n = b64(raw.n.as_ref())?;
            // Below 2048 bits is not a key anyone should accept.
            if n.iter().skip_while(|b| **b == 0).count() < 256 {
                return None;
            }
            (
                Alg::RS256,
                KeyMaterial::Rsa {
                    n,
                    e: b64(raw.e.as_ref())?,
                },
            )
        }
        ("EC", Some("P-256")) => {
            let (x, y) = (b64(raw.x.as_ref())?, b64(raw.y.as_ref())?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            (Alg::ES256, KeyMaterial::P256 { x, y })
        }
        _ => return None,
    };
    // A key that names another algorithm is not used for this one (no confusion by `alg`).
    if raw.alg.as_deref().is_some_and(|a| a != implied.as_str()) {
        return None;
    }
    Some(Jwk {
        kid: raw.kid,
        alg: implied,
        material,
    })
}

/// Parses a JWKS document, keeping the RS256/ES256 signature keys and skipping the others
/// (encryption keys, other curves, short RSA moduli).
///
/// # Errors
/// [`AuthError::KeysUnavailable`] when the body is not a JWKS at all.
pub fn parse(body: &[u8]) -> Result<Vec<Jwk>, AuthError> {
    let set: RawSet = serde_json::from_slice(body)
        .map_err(|_| AuthError::KeysUnavailable("JWKS is not {\"keys\": [...]}".into()))?;
    Ok(set
        .keys
        .into_iter()
        .filter_map(|v| serde_json::from_value::<RawKey>(v).ok())
        .filter_map(key)
        .collect())
}

/// How long a fetched set is used, from the response's `Cache-Control`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CachePolicy {
    /// Used when the response says nothing (seconds).
    pub default_ttl_s: u32,
    /// Floor: even `no-store` keeps a set this long, or every request would refetch.
    pub min_ttl_s: u32,
    /// Ceiling: rotate within a day even if the provider says a week.
    pub max_ttl_s: u32,
    /// An unknown `kid` refreshes the set at most this often.
    pub unknown_kid_cooldown_s: u32,
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy {
            default_ttl_s: 300,
            min_ttl_s: 30,
            max_ttl_s: 86_400,
            unknown_kid_cooldown_s: 30,
        }
    }
}

impl CachePolicy {
    /// Seconds a set fetched with this `Cache-Control` stays fresh.
    #[must_use]
    pub fn ttl_s(&self, cache_control: Option<&str>) -> u32 {
        let mut ttl = None;
        for d in cache_control.unwrap_or("").split(',').map(str::trim) {
            let d = d.to_ascii_lowercase();
            if d == "no-store" || d == "no-cache" {
                ttl = Some(0);
                break;
            }
            if let Some(v) = d.strip_prefix("max-age=") {
                ttl = v.trim_matches('"').parse::<u32>().ok();
            }
        }
        ttl.unwrap_or(self.default_ttl_s)
            .clamp(self.min_ttl_s, self.max_ttl_s)
    }
}

/// A cached set and when it was fetched.
#[derive(Clone, Debug)]
pub struct CachedSet<K> {
    /// Keys with their imported form (e.g. a WebCrypto `CryptoKey`), imported once per `kid`.
    pub keys: Vec<(Jwk, K)>,
    /// Fetch time (ms).
    pub fetched_ms: f64,
    /// Fresh until (ms).
    pub fresh_until_ms: f64,
}

/// What to do for a token's `kid`.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<'a, K> {
    /// Use this key.
    Hit(&'a Jwk, &'a K),
    /// Fetch the set first (none yet, stale, or an unknown `kid` after the cooldown).
    Refresh,
    /// Unknown `kid` and the set was fetched too recently to try again.
    Unknown,
}

impl<K> CachedSet<K> {
    /// The decision for `kid` at `now_ms`. A token without `kid` matches when the set has one
    /// key for the algorithm.
    pub fn lookup(
        &self,
        kid: Option<&str>,
        alg: Alg,
        now_ms: f64,
        p: &CachePolicy,
    ) -> Lookup<'_, K> {
        if now_ms >= self.fresh_until_ms {
            return Lookup::Refresh;
        }
        let mut candidates = self
            .keys
            .iter()
            .filter(|(k, _)| k.alg == alg && (kid.is_none() || k.kid.as_deref() == kid));
        match (candidates.next(), candidates.next()) {
            (Some((k, imported)), None) => Lookup::Hit(k, imported),
            (Some(_), Some(_)) => Lookup::Unknown, // no kid and several keys: ambiguous
            (None, _)
                if now_ms - self.fetched_ms >= f64::from(p.unknown_kid_cooldown_s) * 1000.0 =>
            {
                Lookup::Refresh
            }
            (None, _) => Lookup::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rsa_n() -> String {
        URL_SAFE_NO_PAD.encode([0xC5u8; 256])
    }

    #[test]
    fn keeps_signature_keys_it_can_use() {
        let n = rsa_n();
        let xy = URL_SAFE_NO_PAD.encode([7u8; 32]);
        let doc = format!(
            r#"{{"keys":[
            {{"kty":"RSA","kid":"r1","n":"{n}","e":"AQAB","alg":"RS256","use":"sig"}},
            {{"kty":"RSA","kid":"enc","n":"{n}","e":"AQAB","use":"enc"}},
            {{"kty":"RSA","kid":"ps","n":"{n}","e":"AQAB","alg":"PS256"}},
            {{"kty":"RSA","kid":"short","n":"AQAB","e":"AQAB"}},
            {{"kty":"EC","kid":"e1","crv":"P-256","x":"{xy}","y":"{xy}"}},
            {{"kty":"EC","kid":"e384","crv":"P-384","x":"{xy}","y":"{xy}"}},
            {{"kty":"oct","kid":"h","k":"c2VjcmV0"}},
            "not an object"]}}"#
        );
        let keys = parse(doc.as_bytes()).unwrap();
        let kids: Vec<_> = keys
            .iter()
            .map(|k| (k.kid.as_deref().unwrap(), k.alg))
            .collect();
        assert_eq!(kids, [("r1", Alg::RS256), ("e1", Alg::ES256)]);
        assert!(parse(b"[]").is_err());
        assert!(parse(b"{\"keys\": 3}").is_err());
    }

    #[test]
    fn ttl_follows_cache_control_within_bounds() {
        let p = CachePolicy::default();
        assert_eq!(p.ttl_s(None), 300);
        assert_eq!(p.ttl_s(Some("public, max-age=3600, must-revalidate")), 3600);
        assert_eq!(p.ttl_s(Some("max-age=5")), 30);
        assert_eq!(p.ttl_s(Some("no-store")), 30);
        assert_eq!(p.ttl_s(Some("max-age=99999999")), 86_400);
        assert_eq!(p.ttl_s(Some("max-age=junk")), 300);
    }

    #[test]
    fn unknown_kid_refreshes_once_per_cooldown() {
        let p = CachePolicy::default();
        let k = Jwk {
            kid: Some("a".into()),
            alg: Alg::RS256,
            material: KeyMaterial::Rsa {
                n: vec![1],
                e: vec![1],
            },
        };
        let set = CachedSet {
            keys: vec![(k, ())],
            fetched_ms: 0.0,
            fresh_until_ms: 300_000.0,
        };
        assert!(matches!(
            set.lookup(Some("a"), Alg::RS256, 1.0, &p),
            Lookup::Hit(..)
        ));
        assert!(matches!(
            set.lookup(None, Alg::RS256, 1.0, &p),
            Lookup::Hit(..)
        ));
        // Right kid, wrong algorithm: never used (algorithm confusion).
        assert_eq!(set.lookup(Some("a"), Alg::ES256, 1.0, &p), Lookup::Unknown);
        assert_eq!(
            set.lookup(Some("b"), Alg::RS256, 1_000.0, &p),
            Lookup::Unknown
        );
        assert_eq!(
            set.lookup(Some("b"), Alg::RS256, 30_000.0, &p),
            Lookup::Refresh
        );
        assert_eq!(
            set.lookup(Some("a"), Alg::RS256, 300_000.0, &p),
            Lookup::Refresh
        );
    }
}
