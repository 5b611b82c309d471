//! Who is calling: user tokens (JWT: RS256/ES256 from a JWKS, or HS256 with a shared secret) and
//! service keys with scopes. Platform-free: the worker implements [`crypto::Crypto`] over
//! WebCrypto (`src/edge/webcrypto.rs`); natively it is pure Rust.

pub mod crypto;
pub mod jwks;
pub mod jwt;
pub mod service_keys;
pub mod verifier;
pub mod webcrypto;

pub use jwt::Alg;
pub use service_keys::{ServiceKey, ServiceKeys};
pub use verifier::{AuthConfig, Issuer, KeySource, Verifier};

/// A permission of a service key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Create and retract notifications.
    NotifyWrite,
    /// Operate the deployment (indexes, dead letters); holds [`Scope::Privacy`] too.
    Admin,
    /// Erase and export a person's data (a key for the account-deletion service alone).
    Privacy,
}

impl Scope {
    /// Every scope (what the legacy `SERVICE_TOKEN` holds).
    pub const ALL: [Scope; 3] = [Scope::NotifyWrite, Scope::Admin, Scope::Privacy];

    /// Name as configured and documented (`notify:write`, `admin`, `privacy`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::NotifyWrite => "notify:write",
            Scope::Admin => "admin",
            Scope::Privacy => "privacy",
        }
    }

    /// Whether a key holding `held` may call a route that needs `self`: its own scope, and
    /// `admin` covers `privacy` (an operator can erase without a second key).
    #[must_use]
    pub fn granted_by(self, held: &[Scope]) -> bool {
        held.contains(&self) || (self == Scope::Privacy && held.contains(&Scope::Admin))
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

#[cfg(test)]
mod scope_tests {
    use super::Scope;

    #[test]
    fn admin_covers_privacy_and_nothing_covers_admin() {
        assert!(Scope::Privacy.granted_by(&[Scope::Admin]));
        assert!(Scope::Privacy.granted_by(&[Scope::Privacy]));
        assert!(!Scope::Admin.granted_by(&[Scope::Privacy]));
        assert!(!Scope::Privacy.granted_by(&[Scope::NotifyWrite]));
        assert_eq!(Scope::parse("privacy"), Some(Scope::Privacy));
    }
}
