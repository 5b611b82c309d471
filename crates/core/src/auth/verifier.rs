//! The user-token check: issuer lookup, pinned algorithms, keys (shared secret or a cached JWKS
//! with one fetch in flight per isolate), signature, then claims. The owner is `sub`.

use super::crypto::Crypto;
use super::jwks::{self, CachePolicy, CachedSet, Jwk, KeyMaterial, Lookup};
use super::jwt::{self, Alg};
use super::AuthError;
use crate::backend::{HttpClient, HttpRequest};
use futures_util::future::{FutureExt, LocalBoxFuture, Shared};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Where an issuer's keys come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// HS256 shared secret.
    Secret(Vec<u8>),
    /// A JWKS URL (Firebase, Auth0, Cognito, Supabase…).
    Jwks(String),
}

/// One accepted token issuer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issuer {
    /// Exact `iss`.
    pub issuer: String,
    /// Accepted `aud` values (one must match).
    pub audiences: Vec<String>,
    /// Algorithms this issuer signs with; anything else is refused before any key is used.
    pub algs: Vec<Alg>,
    /// Keys.
    pub keys: KeySource,
}

/// User authentication settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthConfig {
    /// Accepted issuers.
    pub issuers: Vec<Issuer>,
    /// Clock skew allowed on `exp`/`nbf` (seconds).
    pub leeway_s: u32,
    /// JWKS caching rules.
    pub policy: CachePolicy,
    /// Deadline of a JWKS fetch (ms).
    pub fetch_timeout_ms: u32,
}

type Fetch = Shared<LocalBoxFuture<'static, Result<(), AuthError>>>;

struct Inner<C: Crypto, H> {
    cfg: AuthConfig,
    crypto: C,
    http: H,
    secrets: RefCell<HashMap<usize, C::Key>>,
    sets: RefCell<HashMap<String, CachedSet<C::Key>>>,
    in_flight: RefCell<HashMap<String, Fetch>>,
    fetches: RefCell<u64>,
}

/// Verifies user tokens; clone it freely (one per isolate, shared state inside).
pub struct Verifier<C: Crypto, H> {
    inner: Rc<Inner<C, H>>,
}

impl<C: Crypto, H> Clone for Verifier<C, H> {
    fn clone(&self) -> Self {
        Verifier {
            inner: Rc::clone(&self.inner),
        }
    }
}

impl<C: Crypto + 'static, H: HttpClient + 'static> Verifier<C, H> {
    /// A verifier with empty caches.
    #[must_use]
    pub fn new(cfg: AuthConfig, crypto: C, http: H) -> Self {
        Verifier {
            inner: Rc::new(Inner {
                cfg,
                crypto,
                http,
                secrets: RefCell::default(),
                sets: RefCell::default(),
                in_flight: RefCell::default(),
                fetches: RefCell::new(0),
            }),
        }
    }

    /// JWKS fetches made so far (for `/healthz` and tests).
    #[must_use]
    pub fn jwks_fetches(&self) -> u64 {
        *self.inner.fetches.borrow()
    }

    /// Checks a bearer token at `now_ms` and returns the owner (`sub`).
    ///
    /// # Errors
    /// An [`AuthError`] naming the first check that failed.
    pub async fn verify(&self, token: &str, now_ms: f64) -> Result<String, AuthError> {
        let t = jwt::parse(token)?;
        let cfg = &self.inner.cfg;
        let iss = t.claims.iss.as_deref().ok_or(AuthError::WrongIssuer)?;
        let (idx, issuer) = cfg
            .issuers
            .iter()
            .enumerate()
            .find(|(_, i)| i.issuer == iss && i.algs.contains(&t.alg))
            .ok_or_else(|| {
                if cfg.issuers.iter().any(|i| i.issuer == iss) {
                    AuthError::UnsupportedAlg
                } else {
                    AuthError::WrongIssuer
                }
            })?;
        let key = match &issuer.keys {
            KeySource::Secret(s) => self.secret_key(idx, s).await?,
            KeySource::Jwks(url) => self.jwks_key(url, t.kid.as_deref(), t.alg, now_ms).await?,
        };
        if !self
            .inner
            .crypto
            .verify(t.alg, &key, &t.signing_input, &t.signature)
            .await?
        {
            return Err(AuthError::BadSignature);
        }
        jwt::check_claims(
            &t.claims,
            &issuer.issuer,
            &issuer.audiences,
            now_ms / 1000.0,
            cfg.leeway_s,
        )
    }

    async fn secret_key(&self, idx: usize, secret: &[u8]) -> Result<C::Key, AuthError> {
        if let Some(k) = self.inner.secrets.borrow().get(&idx) {
            return Ok(k.clone());
        }
        let k = self
            .inner
            .crypto
            .import(Alg::HS256, &KeyMaterial::Hmac(secret.to_vec()))
            .await?;
        self.inner.secrets.borrow_mut().insert(idx, k.clone());
        Ok(k)
    }

    fn key_of(&self, url: &str, kid: Option<&str>, alg: Alg) -> Option<C::Key> {
        let sets = self.inner.sets.borrow();
        let set = sets.get(url)?;
        set.keys
            .iter()
            .find(|(k, _)| k.alg == alg && (kid.is_none() || k.kid.as_deref() == kid))
            .map(|(_, imported)| imported.clone())
    }

    async fn jwks_key(
        &self,
        url: &str,
        kid: Option<&str>,
        alg: Alg,
        now_ms: f64,
    ) -> Result<C::Key, AuthError> {
        {
            let sets = self.inner.sets.borrow();
            if let Some(set) = sets.get(url) {
                match set.lookup(kid, alg, now_ms, &self.inner.cfg.policy) {
                    Lookup::Hit(_, key) => return Ok(key.clone()),
                    // Only failed fetches so far: the keys are unavailable, not the kid unknown.
                    Lookup::Unknown if set.keys.is_empty() => {
                        return Err(AuthError::KeysUnavailable("no JWKS fetched yet".into()))
                    }
                    Lookup::Unknown => return Err(AuthError::UnknownKid),
                    Lookup::Refresh => {}
                }
            }
        }
        let refreshed = self.refresh(url, now_ms).await;
        match (refreshed, self.key_of(url, kid, alg)) {
            (_, Some(k)) => Ok(k),
            // A failed refresh with no usable key: a server-side problem, not the caller's.
            (Err(e), None) => Err(e),
            (Ok(()), None) => Err(AuthError::UnknownKid),
        }
    }

    /// Fetches the set unless a fetch for it is already in flight in this isolate, in which
    /// case it waits for that one. A failed fetch keeps the previous set (stale keys beat none)
    /// but still counts against the cooldown.
    async fn refresh(&self, url: &str, now_ms: f64) -> Result<(), AuthError> {
        let existing = self.inner.in_flight.borrow().get(url).cloned();
        let fut = match existing {
            Some(f) => f,
            None => {
                let me = self.clone();
                let u = url.to_owned();
                let f = async move {
                    let r = me.fetch(&u, now_ms).await;
                    me.inner.in_flight.borrow_mut().remove(&u);
                    r
                }
                .boxed_local()
                .shared();
                self.inner
                    .in_flight
                    .borrow_mut()
                    .insert(url.to_owned(), f.clone());
                f
            }
        };
        fut.await
    }

    async fn fetch(&self, url: &str, now_ms: f64) -> Result<(), AuthError> {
        *self.inner.fetches.borrow_mut() += 1;
        let policy = self.inner.cfg.policy;
        let result = self
            .inner
            .http
            .send(HttpRequest::get(url, self.inner.cfg.fetch_timeout_ms))
            .await;
        let resp = match result {
            Ok(r) if r.status == 200 => r,
            Ok(r) => {
                self.note_failure(url, now_ms);
                return Err(AuthError::KeysUnavailable(format!(
                    "JWKS answered {}",
                    r.status
                )));
            }
            Err(e) => {
                self.note_failure(url, now_ms);
                return Err(AuthError::KeysUnavailable(format!("JWKS fetch: {e}")));
            }
        };
        let keys = match jwks::parse(&resp.body) {
            Ok(k) => k,
            Err(e) => {
                self.note_failure(url, now_ms);
                return Err(e);
            }
        };
        let ttl_ms = f64::from(policy.ttl_s(resp.header("cache-control"))) * 1000.0;
        let mut imported = Vec::with_capacity(keys.len());
        for k in keys {
            let reuse = self.reuse(url, &k);
            let key = match reuse {
                Some(key) => key,
                None => match self.inner.crypto.import(k.alg, &k.material).await {
                    Ok(key) => key,
                    Err(_) => continue, // one bad key does not poison the set
                },
            };
            imported.push((k, key));
        }
        self.inner.sets.borrow_mut().insert(
            url.to_owned(),
            CachedSet {
                keys: imported,
                fetched_ms: now_ms,
                fresh_until_ms: now_ms + ttl_ms,
            },
        );
        Ok(())
    }

    /// The imported form of a key already in the cached set (same `kid` and material).
    fn reuse(&self, url: &str, k: &Jwk) -> Option<C::Key> {
        let sets = self.inner.sets.borrow();
        sets.get(url)?
            .keys
            .iter()
            .find(|(old, _)| old == k)
            .map(|(_, imported)| imported.clone())
    }

    /// Records a failed fetch so the cooldown applies; keeps whatever keys were there.
    fn note_failure(&self, url: &str, now_ms: f64) {
        let mut sets = self.inner.sets.borrow_mut();
        let retry_ms = f64::from(self.inner.cfg.policy.unknown_kid_cooldown_s) * 1000.0;
        match sets.get_mut(url) {
            Some(s) => {
                s.fetched_ms = now_ms;
                s.fresh_until_ms = s.fresh_until_ms.max(now_ms + retry_ms);
            }
            None => {
                sets.insert(
                    url.to_owned(),
                    CachedSet {
                        keys: Vec::new(),
                        fetched_ms: now_ms,
                        fresh_until_ms: now_ms + retry_ms,
                    },
                );
            }
        }
    }
}
