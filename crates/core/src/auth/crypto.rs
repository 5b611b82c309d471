//! Signature verification behind one trait: WebCrypto on wasm32 (the runtime's native code:
//! `src/edge/webcrypto.rs`, asking what [`super::webcrypto`] says), pure Rust natively (`rsa`,
//! `p256`) so `cargo test` runs the same flow.
//! HMAC is pure Rust on both: it is a few microseconds either way.

use super::jwks::KeyMaterial;
use super::jwt::Alg;
use super::AuthError;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Imports keys once and verifies signatures with them.
#[allow(async_fn_in_trait)]
pub trait Crypto {
    /// An imported key (cached per `kid` by the verifier).
    type Key: Clone;

    /// Imports `material` for `alg`.
    ///
    /// # Errors
    /// [`AuthError::KeysUnavailable`] when the material is not a valid key.
    async fn import(&self, alg: Alg, material: &KeyMaterial) -> Result<Self::Key, AuthError>;

    /// True when `sig` is a valid `alg` signature of `data` under `key`.
    ///
    /// # Errors
    /// Only for failures of the crypto provider itself; a wrong signature is `Ok(false)`.
    async fn verify(
        &self,
        alg: Alg,
        key: &Self::Key,
        data: &[u8],
        sig: &[u8],
    ) -> Result<bool, AuthError>;
}

/// HMAC-SHA-256 check in constant time.
#[must_use]
pub fn hs256_verify(secret: &[u8], data: &[u8], sig: &[u8]) -> bool {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(data);
    mac.verify_slice(sig).is_ok()
}

/// HMAC-SHA-256 signature (for minting dev tokens and tests).
#[must_use]
pub fn hs256_sign(secret: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Pure-Rust verifier (native builds: tests, tools).
#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone, Copy, Debug, Default)]
pub struct RustCrypto;

/// A key imported by [`RustCrypto`].
#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone, Debug)]
pub enum RustKey {
    /// RS256.
    Rsa(rsa::pkcs1v15::VerifyingKey<Sha256>),
    /// ES256.
    P256(p256::ecdsa::VerifyingKey),
    /// HS256.
    Hmac(Vec<u8>),
}

#[cfg(not(target_arch = "wasm32"))]
impl Crypto for RustCrypto {
    type Key = RustKey;

    async fn import(&self, alg: Alg, material: &KeyMaterial) -> Result<RustKey, AuthError> {
        let bad = |what: &str| AuthError::KeysUnavailable(format!("invalid {what} key"));
        match (alg, material) {
            (Alg::RS256, KeyMaterial::Rsa { n, e }) => {
                let pk = rsa::RsaPublicKey::new(
                    rsa::BigUint::from_bytes_be(n),
                    rsa::BigUint::from_bytes_be(e),
                )
                .map_err(|_| bad("RSA"))?;
                Ok(RustKey::Rsa(rsa::pkcs1v15::VerifyingKey::new(pk)))
            }
            (Alg::ES256, KeyMaterial::P256 { x, y }) => {
                let point = p256::EncodedPoint::from_affine_coordinates(
                    p256::FieldBytes::from_slice(x),
                    p256::FieldBytes::from_slice(y),
                    false,
                );
                p256::ecdsa::VerifyingKey::from_encoded_point(&point)
                    .map(RustKey::P256)
                    .map_err(|_| bad("P-256"))
            }
            (Alg::HS256, KeyMaterial::Hmac(s)) => Ok(RustKey::Hmac(s.clone())),
            _ => Err(bad("mismatched")),
        }
    }

    async fn verify(
        &self,
        alg: Alg,
        key: &RustKey,
        data: &[u8],
        sig: &[u8],
    ) -> Result<bool, AuthError> {
        use p256::ecdsa::signature::Verifier as _;
        Ok(match (alg, key) {
            (Alg::RS256, RustKey::Rsa(k)) => {
                rsa::pkcs1v15::Signature::try_from(sig).is_ok_and(|s| k.verify(data, &s).is_ok())
            }
            (Alg::ES256, RustKey::P256(k)) => {
                p256::ecdsa::Signature::from_slice(sig).is_ok_and(|s| k.verify(data, &s).is_ok())
            }
            (Alg::HS256, RustKey::Hmac(secret)) => hs256_verify(secret, data, sig),
            _ => false,
        })
    }
}
