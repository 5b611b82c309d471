//! What the worker asks the runtime's WebCrypto (`crypto.subtle`) for each algorithm: the JWK
//! and the import algorithm of a key, and the verify algorithm (as the JSON texts `importKey`
//! and `verify` take). HS256 never goes there: its secret is kept and checked in Rust
//! ([`super::crypto::hs256_verify`]). `src/edge/webcrypto.rs` only calls the runtime.

use super::jwks::KeyMaterial;
use super::jwt::Alg;
use super::AuthError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// How a key is imported.
#[derive(Debug, PartialEq, Eq)]
pub enum Import<'a> {
    /// `importKey("jwk", jwk, algorithm, false, ["verify"])`.
    Jwk {
        /// The key as a JWK.
        jwk: String,
        /// The import algorithm.
        algorithm: &'static str,
    },
    /// An HS256 secret, kept as it is.
    Hmac(&'a [u8]),
}

/// How `material` is imported for `alg`.
///
/// # Errors
/// [`AuthError::KeysUnavailable`] when the material is not `alg`'s kind of key.
pub fn import(alg: Alg, material: &KeyMaterial) -> Result<Import<'_>, AuthError> {
    let b = |v: &[u8]| URL_SAFE_NO_PAD.encode(v);
    Ok(match (alg, material) {
        (Alg::HS256, KeyMaterial::Hmac(s)) => Import::Hmac(s),
        (Alg::RS256, KeyMaterial::Rsa { n, e }) => Import::Jwk {
            jwk: format!(
                r#"{{"kty":"RSA","n":"{}","e":"{}","ext":true}}"#,
                b(n),
                b(e)
            ),
            algorithm: r#"{"name":"RSASSA-PKCS1-v1_5","hash":"SHA-256"}"#,
        },
        (Alg::ES256, KeyMaterial::P256 { x, y }) => Import::Jwk {
            jwk: format!(
                r#"{{"kty":"EC","crv":"P-256","x":"{}","y":"{}","ext":true}}"#,
                b(x),
                b(y)
            ),
            algorithm: r#"{"name":"ECDSA","namedCurve":"P-256"}"#,
        },
        _ => return Err(AuthError::KeysUnavailable("mismatched key".into())),
    })
}

/// The `verify` algorithm of a key imported for `alg` (`None` for HS256, checked in Rust).
#[must_use]
pub fn verify_algorithm(alg: Alg) -> Option<&'static str> {
    match alg {
        Alg::RS256 => Some(r#"{"name":"RSASSA-PKCS1-v1_5"}"#),
        // JWS ES256 signatures are raw r‖s, which is WebCrypto's format too.
        Alg::ES256 => Some(r#"{"name":"ECDSA","hash":"SHA-256"}"#),
        Alg::HS256 => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(s: &str) -> serde_json::Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn each_key_is_imported_as_its_algorithm_s_jwk() {
        let rsa = KeyMaterial::Rsa {
            n: vec![0xfb, 0xff],
            e: vec![1, 0, 1],
        };
        let Import::Jwk { jwk, algorithm } = import(Alg::RS256, &rsa).unwrap() else {
            panic!("RSA is a JWK");
        };
        let want = r#"{"kty":"RSA","n":"-_8","e":"AQAB","ext":true}"#;
        assert_eq!(json(&jwk), json(want));
        assert_eq!(json(algorithm)["hash"], "SHA-256");
        let p256 = KeyMaterial::P256 {
            x: vec![1; 32],
            y: vec![2; 32],
        };
        let Import::Jwk { jwk, algorithm } = import(Alg::ES256, &p256).unwrap() else {
            panic!("P-256 is a JWK");
        };
        let jwk = json(&jwk);
        assert_eq!(
            (jwk["kty"].as_str(), jwk["crv"].as_str()),
            (Some("EC"), Some("P-256"))
        );
        assert_eq!(jwk["x"], URL_SAFE_NO_PAD.encode([1; 32]));
        assert_eq!(json(algorithm)["namedCurve"], "P-256");
        let secret = KeyMaterial::Hmac(b"s3cret".to_vec());
        assert_eq!(import(Alg::HS256, &secret), Ok(Import::Hmac(b"s3cret")));
    }

    #[test]
    fn a_key_of_another_kind_is_refused_and_hs256_never_reaches_webcrypto() {
        let secret = KeyMaterial::Hmac(b"s".to_vec());
        let rsa = KeyMaterial::Rsa {
            n: vec![1],
            e: vec![3],
        };
        for (alg, m) in [
            (Alg::RS256, &secret),
            (Alg::ES256, &rsa),
            (Alg::HS256, &rsa),
        ] {
            let mismatched = AuthError::KeysUnavailable("mismatched key".into());
            assert_eq!(import(alg, m), Err(mismatched));
        }
        assert_eq!(verify_algorithm(Alg::HS256), None);
        assert_eq!(json(verify_algorithm(Alg::ES256).unwrap())["name"], "ECDSA");
        assert_eq!(
            json(verify_algorithm(Alg::RS256).unwrap())["name"],
            "RSASSA-PKCS1-v1_5"
        );
    }
}
