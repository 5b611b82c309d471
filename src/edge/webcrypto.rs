//! [`Crypto`] over the runtime's WebCrypto (`crypto.subtle`): RSA and ECDSA verification run as
//! native code in workerd instead of big-number arithmetic in wasm.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use egn_core::auth::crypto::{hs256_verify, Crypto};
use egn_core::auth::jwks::KeyMaterial;
use egn_core::auth::jwt::Alg;
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
        let b = |v: &[u8]| URL_SAFE_NO_PAD.encode(v);
        let (jwk, algorithm) = match (alg, material) {
            (Alg::HS256, KeyMaterial::Hmac(s)) => return Ok(WebKey::Hmac(s.clone())),
            (Alg::RS256, KeyMaterial::Rsa { n, e }) => (
                format!(
                    r#"{{"kty":"RSA","n":"{}","e":"{}","ext":true}}"#,
                    b(n),
                    b(e)
                ),
                r#"{"name":"RSASSA-PKCS1-v1_5","hash":"SHA-256"}"#,
            ),
            (Alg::ES256, KeyMaterial::P256 { x, y }) => (
                format!(
                    r#"{{"kty":"EC","crv":"P-256","x":"{}","y":"{}","ext":true}}"#,
                    b(x),
                    b(y)
                ),
                r#"{"name":"ECDSA","namedCurve":"P-256"}"#,
            ),
            _ => return Err(AuthError::KeysUnavailable("mismatched key".into())),
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
        let algorithm = match (alg, key) {
            (Alg::HS256, WebKey::Hmac(secret)) => return Ok(hs256_verify(secret, data, sig)),
            (Alg::RS256, WebKey::Subtle(_)) => r#"{"name":"RSASSA-PKCS1-v1_5"}"#,
            // JWS ES256 signatures are raw r‖s, which is WebCrypto's format too.
            (Alg::ES256, WebKey::Subtle(_)) => r#"{"name":"ECDSA","hash":"SHA-256"}"#,
            _ => return Ok(false),
        };
        let WebKey::Subtle(k) = key else {
            return Ok(false);
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
