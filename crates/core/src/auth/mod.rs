//! Who is calling: user tokens (JWT: RS256/ES256 from a JWKS, or HS256 with a shared secret) and
//! service keys with scopes. Platform-free: the worker implements [`crypto::Crypto`] over
//! WebCrypto (`src/edge/webcrypto.rs`); natively it is pure Rust.

pub mod crypto;
pub mod jwks;
pub mod jwt;
pub mod service_keys;
pub mod verifier;

pub use jwt::Alg;
pub use service_keys::{ServiceKey, ServiceKeys};
pub use verifier::{AuthConfig, Issuer, KeySource, Verifier};

/// A permission of a service key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Create and retract notifications.
    NotifyWrite,
    /// Operate the deployment (indexes).
    Admin,
}

impl Scope {
    /// Every scope (what the legacy `SERVICE_TOKEN` holds).
    pub const ALL: [Scope; 2] = [Scope::NotifyWrite, Scope::Admin];

    /// Name as configured and documented (`notify:write`, `admin`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::NotifyWrite => "notify:write",
            Scope::Admin => "admin",
        }
    }

    /// Parses a configured scope name.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// Why a caller was not let in. Each has a stable code; all are 401 except
/// [`AuthError::KeysUnavailable`] (503: the keys could not be fetched, not the caller's fault).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No `Authorization: Bearer …`.
    #[error("Authorization: Bearer <token> required")]
    Missing,
    /// Not a well-formed token.
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    /// `alg` is `none`, unknown, or not one this issuer signs with.
    #[error("token algorithm not accepted")]
    UnsupportedAlg,
    /// `iss` is not a configured issuer.
    #[error("token issuer not accepted")]
    WrongIssuer,
    /// No accepted `aud`.
    #[error("token audience not accepted")]
    WrongAudience,
    /// Past `exp` (plus leeway).
    #[error("token expired")]
    Expired,
    /// Before `nbf` (minus leeway).
    #[error("token not yet valid")]
    NotYetValid,
    /// `kid` not in the issuer's key set (after at most one refresh per cooldown).
    #[error("token key id unknown")]
    UnknownKid,
    /// The signature does not verify.
    #[error("token signature invalid")]
    BadSignature,
    /// The service key is unknown (or revoked).
    #[error("service key not recognised")]
    BadServiceKey,
    /// A service key without the route's scope.
    #[error("service key lacks scope {0}")]
    MissingScope(&'static str),
    /// The issuer's keys could not be fetched.
    #[error("signing keys unavailable: {0}")]
    KeysUnavailable(String),
}
