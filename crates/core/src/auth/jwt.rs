//! Compact JWS parsing and claim checks (no signature work here: see [`super::crypto`]).

use super::AuthError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Deserialize;

/// Longest token accepted: real ID tokens are 1–2 KB; anything far larger is abuse.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Signature algorithms the worker verifies. `none` and everything else are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
pub enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// ECDSA P-256 with SHA-256 (signature is raw `r‖s`, 64 bytes).
    ES256,
    /// HMAC-SHA-256 with a shared secret.
    HS256,
}

impl Alg {
    /// Name as in the JOSE header.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Alg::RS256 => "RS256",
            Alg::ES256 => "ES256",
            Alg::HS256 => "HS256",
        }
    }

    /// Parses a configured or header name; `None` for anything unsupported (incl. `none`).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Alg::RS256, Alg::ES256, Alg::HS256]
            .into_iter()
            .find(|a| a.as_str() == s)
    }
}

/// `aud` may be one string or an array (RFC 7519 §4.1.3).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    /// No `aud` claim.
    #[default]
    None,
    /// One audience.
    One(String),
    /// Several audiences.
    Many(Vec<String>),
}

impl Audience {
    /// True when `want` is among the token's audiences.
    #[must_use]
    pub fn contains(&self, want: &str) -> bool {
        match self {
            Audience::None => false,
            Audience::One(a) => a == want,
            Audience::Many(v) => v.iter().any(|a| a == want),
        }
    }
}

/// The registered claims the worker uses; others are ignored.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Claims {
    /// Subject: the owner of the inbox.
    #[serde(default)]
    pub sub: Option<String>,
    /// Issuer.
    #[serde(default)]
    pub iss: Option<String>,
    /// Audience(s).
    #[serde(default)]
    pub aud: Audience,
    /// Expiry (seconds since the epoch).
    #[serde(default)]
    pub exp: Option<f64>,
    /// Not before (seconds since the epoch).
    #[serde(default)]
    pub nbf: Option<f64>,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    crit: Option<serde_json::Value>,
}

/// A token split and decoded, signature not yet checked.
#[derive(Clone, Debug)]
pub struct Token {
    /// Header `alg`.
    pub alg: Alg,
    /// Header `kid`.
    pub kid: Option<String>,
    /// Decoded claims.
    pub claims: Claims,
    /// `header.payload` as sent: the bytes the signature covers.
    pub signing_input: Vec<u8>,
    /// Decoded signature.
    pub signature: Vec<u8>,
}

fn segment(s: &str) -> Result<Vec<u8>, AuthError> {
    URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| AuthError::Malformed("a segment is not base64url"))
}

/// Splits and decodes a compact JWS.
///
/// # Errors
/// [`AuthError::Malformed`] for anything that is not three base64url JSON segments of sane size;
/// [`AuthError::UnsupportedAlg`] for `none` and algorithms the worker does not verify.
pub fn parse(token: &str) -> Result<Token, AuthError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(AuthError::Malformed("token too long"));
    }
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::Malformed("not three dot-separated segments"));
    };
    let header: Header = serde_json::from_slice(&segment(h)?)
        .map_err(|_| AuthError::Malformed("header is not a JSON object with alg"))?;
    // RFC 7515 §4.1.11: an unknown critical extension must be refused; we know none.
    if header.crit.is_some() {
        return Err(AuthError::Malformed("crit header not supported"));
    }
    let alg = Alg::parse(&header.alg).ok_or(AuthError::UnsupportedAlg)?;
    let claims: Claims = serde_json::from_slice(&segment(p)?)
        .map_err(|_| AuthError::Malformed("payload is not a JSON object of claims"))?;
    let signature = segment(s)?;
    if signature.is_empty() {
        return Err(AuthError::Malformed("empty signature"));
    }
    Ok(Token {
        alg,
        kid: header.kid,
        claims,
        signing_input: token.as_bytes()[..h.len() + 1 + p.len()].to_vec(),
        signature,
    })
}

/// Checks `exp` (required), `nbf`, `iss` and `aud` against the issuer's settings.
///
/// # Errors
/// The first failing check, each with its own code.
pub fn check_claims(
    c: &Claims,
    issuer: &str,
    audiences: &[String],
    now_s: f64,
    leeway_s: u32,
) -> Result<String, AuthError> {
    let leeway = f64::from(leeway_s);
    if c.iss.as_deref() != Some(issuer) {
        return Err(AuthError::WrongIssuer);
    }
    if !audiences.iter().any(|a| c.aud.contains(a)) {
        return Err(AuthError::WrongAudience);
    }
    match c.exp {
        None => return Err(AuthError::Malformed("exp claim required")),
        Some(exp) if now_s > exp + leeway => return Err(AuthError::Expired),
        Some(_) => {}
    }
    if c.nbf.is_some_and(|nbf| now_s + leeway < nbf) {
        return Err(AuthError::NotYetValid);
    }
    match &c.sub {
        Some(s) if !s.is_empty() && s.len() <= 128 => Ok(s.clone()),
        _ => Err(AuthError::Malformed("sub claim missing or longer than 128")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        URL_SAFE_NO_PAD.encode(s)
    }

    fn tok(header: &str, payload: &str) -> String {
        format!("{}.{}.{}", b64(header), b64(payload), b64("sig"))
    }

    #[test]
    fn parses_a_token_and_keeps_the_signed_bytes() {
        let t = tok(
            r#"{"alg":"RS256","kid":"k1"}"#,
            r#"{"sub":"ana","aud":["x","y"],"exp":10}"#,
        );
        let p = parse(&t).unwrap();
        assert_eq!((p.alg, p.kid.as_deref()), (Alg::RS256, Some("k1")));
        assert!(p.claims.aud.contains("y"));
        assert_eq!(p.signing_input, t.rsplit_once('.').unwrap().0.as_bytes());
        assert_eq!(p.signature, b"sig");
    }

    #[test]
    fn refuses_none_unknown_algs_and_malformed_tokens() {
        for alg in ["none", "None", "HS512", "RS384", "PS256", ""] {
            let t = tok(&format!(r#"{{"alg":"{alg}"}}"#), "{}");
            assert_eq!(parse(&t).unwrap_err(), AuthError::UnsupportedAlg, "{alg}");
        }
        for bad in [
            "",
            "a.b",
            "a.b.c.d",
            "!!.e30.c2ln",
            &"a".repeat(MAX_TOKEN_BYTES + 1),
        ] {
            assert!(
                matches!(parse(bad), Err(AuthError::Malformed(_))),
                "{bad:.20}"
            );
        }
        let unsigned = format!("{}.{}.", b64(r#"{"alg":"HS256"}"#), b64("{}"));
        assert!(matches!(parse(&unsigned), Err(AuthError::Malformed(_))));
        let crit = tok(r#"{"alg":"HS256","crit":["b64"]}"#, "{}");
        assert!(matches!(parse(&crit), Err(AuthError::Malformed(_))));
    }

    #[test]
    fn claims_are_checked_with_leeway() {
        let aud = vec!["app".to_owned()];
        let c = |json: &str| serde_json::from_str::<Claims>(json).unwrap();
        let ok = c(r#"{"sub":"ana","iss":"i","aud":"app","exp":100,"nbf":50}"#);
        assert_eq!(check_claims(&ok, "i", &aud, 60.0, 0).unwrap(), "ana");
        assert_eq!(
            check_claims(&ok, "i", &aud, 101.0, 0),
            Err(AuthError::Expired)
        );
        assert_eq!(check_claims(&ok, "i", &aud, 101.0, 5).unwrap(), "ana");
        assert_eq!(
            check_claims(&ok, "i", &aud, 40.0, 0),
            Err(AuthError::NotYetValid)
        );
        assert_eq!(check_claims(&ok, "i", &aud, 46.0, 5).unwrap(), "ana");
        assert_eq!(
            check_claims(&ok, "j", &aud, 60.0, 0),
            Err(AuthError::WrongIssuer)
        );
        assert_eq!(
            check_claims(&ok, "i", &["web".to_owned()], 60.0, 0),
            Err(AuthError::WrongAudience)
        );
        let no_exp = c(r#"{"sub":"ana","iss":"i","aud":"app"}"#);
        assert!(matches!(
            check_claims(&no_exp, "i", &aud, 60.0, 0),
            Err(AuthError::Malformed(_))
        ));
        let no_sub = c(r#"{"iss":"i","aud":"app","exp":100}"#);
        assert!(matches!(
            check_claims(&no_sub, "i", &aud, 60.0, 0),
            Err(AuthError::Malformed(_))
        ));
    }
}
