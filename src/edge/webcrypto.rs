//! [`Crypto`] over the runtime's WebCrypto (`crypto.subtle`): RSA and ECDSA verification run as
//! native code in workerd instead of big-number arithmetic in wasm. What is asked for each
//! algorithm is `egn_core::auth::webcrypto`'s; this file calls the runtime.

use egn_core::auth::crypto::{hs256_verify, Crypto};
use egn_core::auth::jwks::KeyMaterial;
use egn_core::auth::jwt::Alg;
use egn_core::auth::webcrypto::{self, Import};
use egn_core::auth::AuthError;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = ["crypto", "subtle"], js_name = importKey, catch)]
    fn import_key(
        format: &str,
        key: &JsValue,
        algorithm: &JsValue,
        extractable: bool,
        usages: &js_sys::Array,
    ) -> Result<js_sys::Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["crypto", "subtle"], js_name = verify, catch)]
    fn subtle_verify(
        algorithm: &JsValue,
        key: &JsValue,
        signature: &js_sys::Uint8Array,
        data: &js_sys::Uint8Array,
    ) -> Result<js_sys::Promise, JsValue>;
}

/// WebCrypto verifier.
#[derive(Clone, Copy, Debug, Default)]
pub struct WebCrypto;

/// A key imported into WebCrypto (a `CryptoKey`), or an HMAC secret.
#[derive(Clone, Debug)]
pub enum WebKey {
    /// A `CryptoKey`.
    Subtle(JsValue),
    /// HS256 secret.
    Hmac(Vec<u8>),
}

fn json(s: &str) -> JsValue {
    js_sys::JSON::parse(s).expect("static JSON")
}

fn crypto_err(e: JsValue) -> AuthError {
    AuthError::KeysUnavailable(format!("WebCrypto: {e:?}"))
}

impl Crypto for WebCrypto {
    type Key = WebKey;

    async fn import(&self, alg: Alg, material: &KeyMaterial) -> Result<WebKey, AuthError> {
        let (jwk, algorithm) = match webcrypto::import(alg, material)? {
            Import::Hmac(secret) => return Ok(WebKey::Hmac(secret.to_vec())),
            Import::Jwk { jwk, algorithm } => (jwk, algorithm),
        };
        let usages = js_sys::Array::of1(&JsValue::from_str("verify"));
        let p =
            import_key("jwk", &json(&jwk), &json(algorithm), false, &usages).map_err(crypto_err)?;
        JsFuture::from(p)
            .await
            .map(WebKey::Subtle)
            .map_err(crypto_err)
    }

    async fn verify(
        &self,
        alg: Alg,
        key: &WebKey,
        data: &[u8],
        sig: &[u8],
    ) -> Result<bool, AuthError> {
        let (k, algorithm) = match (key, webcrypto::verify_algorithm(alg)) {
            (WebKey::Hmac(secret), None) => return Ok(hs256_verify(secret, data, sig)),
            (WebKey::Subtle(k), Some(algorithm)) => (k, algorithm),
            _ => return Ok(false),
        };
        let p = subtle_verify(
            &json(algorithm),
            k,
            &js_sys::Uint8Array::from(sig),
            &js_sys::Uint8Array::from(data),
        )
        .map_err(crypto_err)?;
        Ok(JsFuture::from(p)
            .await
            .map_err(crypto_err)?
            .as_bool()
            .unwrap_or(false))
    }
}
