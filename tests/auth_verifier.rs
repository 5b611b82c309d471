//! The user-token verifier natively (pure-Rust crypto behind the same trait as WebCrypto): every
//! algorithm, every refusal, JWKS caching, rotation and one fetch in flight. The JWKS endpoint is
//! a counting fake (the flow's I/O is a trait); the worker end to end is in tests/js/auth.test.mjs.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use egn_core::auth::crypto::{hs256_sign, RustCrypto};
use egn_core::auth::jwks::CachePolicy;
use egn_core::auth::{Alg, AuthConfig, AuthError, Issuer, KeySource, Verifier};
use egn_core::backend::{HttpClient, HttpRequest, HttpResponse, TransportError};
use p256::ecdsa::signature::Signer;
use rand::SeedableRng;
use rsa::traits::PublicKeyParts;
use serde_json::json;
use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

const JWKS: &str = "https://keys.example/jwks";
const NOW_MS: f64 = 1_800_000_000_000.0;
const HS_SECRET: &[u8] = b"a-test-secret-of-at-least-32-bytes!!";

/// Drives futures whose only suspension is [`Fake`]'s yield (no real I/O): lets two verifications
/// interleave so single-flight is observable.
fn run<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[derive(Clone, Default)]
struct Fake {
    body: Rc<RefCell<String>>,
    cache_control: Rc<RefCell<Option<String>>>,
    status: Rc<RefCell<u16>>,
    fetches: Rc<RefCell<u32>>,
}

struct YieldOnce(bool);
impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

impl HttpClient for Fake {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, TransportError> {
        assert_eq!((req.method.as_str(), req.url.as_str()), ("GET", JWKS));
        *self.fetches.borrow_mut() += 1;
        YieldOnce(false).await;
        Ok(HttpResponse {
            status: *self.status.borrow(),
            body: self.body.borrow().clone().into_bytes(),
            headers: self
                .cache_control
                .borrow()
                .iter()
                .map(|v| ("cache-control".to_owned(), v.clone()))
                .collect(),
        })
    }
}

struct Keys {
    rsa: rsa::RsaPrivateKey,
    ec: p256::ecdsa::SigningKey,
}

fn keys() -> &'static Keys {
    static K: OnceLock<Keys> = OnceLock::new();
    K.get_or_init(|| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        Keys {
            rsa: rsa::RsaPrivateKey::new(&mut rng, 2048).unwrap(),
            ec: p256::ecdsa::SigningKey::random(&mut rng),
        }
    })
}

fn rsa_jwk(kid: &str) -> serde_json::Value {
    let pk = keys().rsa.to_public_key();
    json!({"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
           "n": B64.encode(pk.n().to_bytes_be()), "e": B64.encode(pk.e().to_bytes_be())})
}

fn ec_jwk(kid: &str) -> serde_json::Value {
    let p = keys().ec.verifying_key().to_encoded_point(false);
    json!({"kty": "EC", "kid": kid, "crv": "P-256",
           "x": B64.encode(p.x().unwrap()), "y": B64.encode(p.y().unwrap())})
}

fn claims(over: serde_json::Value) -> serde_json::Value {
    let mut c = json!({"sub": "ana", "iss": "https://issuer.example", "aud": "app",
                       "exp": NOW_MS / 1000.0 + 600.0, "iat": NOW_MS / 1000.0});
    for (k, v) in over.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

fn token(alg: &str, kid: Option<&str>, claims: &serde_json::Value) -> String {
    let mut h = json!({"alg": alg, "typ": "JWT"});
    if let Some(k) = kid {
        h["kid"] = json!(k);
    }
    let input = format!(
        "{}.{}",
        B64.encode(h.to_string()),
        B64.encode(claims.to_string())
    );
    let sig = match alg {
        "RS256" => {
            let k = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(keys().rsa.clone());
            let s: rsa::pkcs1v15::Signature = k.sign(input.as_bytes());
            Box::<[u8]>::from(s).to_vec()
        }
        "ES256" => {
            let s: p256::ecdsa::Signature = keys().ec.sign(input.as_bytes());
            s.to_bytes().to_vec()
        }
        "HS256" => hs256_sign(HS_SECRET, input.as_bytes()),
        _ => b"x".to_vec(),
    };
    format!("{input}.{}", B64.encode(sig))
}

fn verifier(fake: &Fake) -> Verifier<RustCrypto, Fake> {
    let cfg = AuthConfig {
        issuers: vec![
            Issuer {
                issuer: "https://issuer.example".into(),
                audiences: vec!["app".into()],
                algs: vec![Alg::RS256, Alg::ES256],
                keys: KeySource::Jwks(JWKS.into()),
            },
            Issuer {
                issuer: "self".into(),
                audiences: vec!["app".into()],
                algs: vec![Alg::HS256],
                keys: KeySource::Secret(HS_SECRET.to_vec()),
            },
        ],
        leeway_s: 30,
        policy: CachePolicy::default(),
        fetch_timeout_ms: 1000,
    };
    Verifier::new(cfg, RustCrypto, fake.clone())
}

fn serving(keys: &[serde_json::Value]) -> Fake {
    let f = Fake::default();
    *f.status.borrow_mut() = 200;
    *f.body.borrow_mut() = json!({ "keys": keys }).to_string();
    *f.cache_control.borrow_mut() = Some("public, max-age=3600".into());
    f
}

#[test]
fn every_algorithm_verifies_and_the_owner_is_sub() {
    let fake = serving(&[rsa_jwk("r1"), ec_jwk("e1")]);
    let v = verifier(&fake);
    let c = claims(json!({}));
    assert_eq!(
        run(v.verify(&token("RS256", Some("r1"), &c), NOW_MS)).unwrap(),
        "ana"
    );
    assert_eq!(
        run(v.verify(&token("ES256", Some("e1"), &c), NOW_MS)).unwrap(),
        "ana"
    );
    let hs = claims(json!({"iss": "self", "sub": "bo"}));
    assert_eq!(
        run(v.verify(&token("HS256", None, &hs), NOW_MS)).unwrap(),
        "bo"
    );
    assert_eq!(
        *fake.fetches.borrow(),
        1,
        "one fetch serves every later request"
    );
}

#[test]
fn refusals_have_their_own_codes() {
    let fake = serving(&[rsa_jwk("r1")]);
    let v = verifier(&fake);
    let c = claims(json!({}));
    let check = |t: String, want: AuthError| {
        assert_eq!(run(v.verify(&t, NOW_MS)).unwrap_err(), want);
    };
    check(token("none", Some("r1"), &c), AuthError::UnsupportedAlg);
    // Algorithm confusion: an HS256 token "signed" with the RSA public key for a JWKS issuer.
    let n = keys().rsa.to_public_key().n().to_bytes_be();
    let h = B64.encode(json!({"alg": "HS256", "kid": "r1"}).to_string());
    let input = format!("{h}.{}", B64.encode(c.to_string()));
    let forged = format!("{input}.{}", B64.encode(hs256_sign(&n, input.as_bytes())));
    check(forged, AuthError::UnsupportedAlg);
    check(
        token(
            "RS256",
            Some("r1"),
            &claims(json!({"exp": NOW_MS / 1000.0 - 31.0})),
        ),
        AuthError::Expired,
    );
    check(
        token(
            "RS256",
            Some("r1"),
            &claims(json!({"nbf": NOW_MS / 1000.0 + 31.0})),
        ),
        AuthError::NotYetValid,
    );
    check(
        token("RS256", Some("r1"), &claims(json!({"iss": "evil"}))),
        AuthError::WrongIssuer,
    );
    check(
        token("RS256", Some("r1"), &claims(json!({"aud": ["other"]}))),
        AuthError::WrongAudience,
    );
    let mut t = token("RS256", Some("r1"), &c);
    t.truncate(t.len() - 4);
    t.push_str("AAAA");
    check(t, AuthError::BadSignature);
    // HS256 with the wrong secret.
    let hs = claims(json!({"iss": "self"}));
    let good = token("HS256", None, &hs);
    let (input, _) = good.rsplit_once('.').unwrap();
    let wrong = format!(
        "{input}.{}",
        B64.encode(hs256_sign(
            b"another-secret-of-32-bytes-or-more",
            input.as_bytes()
        ))
    );
    check(wrong, AuthError::BadSignature);
    // Within leeway is fine.
    assert!(run(v.verify(
        &token(
            "RS256",
            Some("r1"),
            &claims(json!({"exp": NOW_MS / 1000.0 - 29.0}))
        ),
        NOW_MS
    ))
    .is_ok());
}

#[test]
fn unknown_kid_refreshes_at_most_once_per_cooldown_and_rotation_needs_no_redeploy() {
    let fake = serving(&[rsa_jwk("r1")]);
    let v = verifier(&fake);
    let c = claims(json!({}));
    run(v.verify(&token("RS256", Some("r1"), &c), NOW_MS)).unwrap();
    // An unknown kid right after a fetch: no refetch (cooldown), 401 unknown_kid.
    let e = run(v.verify(&token("ES256", Some("e9"), &c), NOW_MS + 1_000.0)).unwrap_err();
    assert_eq!(e, AuthError::UnknownKid);
    assert_eq!(*fake.fetches.borrow(), 1);
    // The provider rotates: e1 appears. After the cooldown one refetch finds it.
    *fake.body.borrow_mut() = json!({"keys": [rsa_jwk("r1"), ec_jwk("e1")]}).to_string();
    assert_eq!(
        run(v.verify(&token("ES256", Some("e1"), &c), NOW_MS + 2_000.0)).unwrap_err(),
        AuthError::UnknownKid,
        "still inside the cooldown"
    );
    assert_eq!(
        run(v.verify(&token("ES256", Some("e1"), &c), NOW_MS + 31_000.0)).unwrap(),
        "ana"
    );
    assert_eq!(*fake.fetches.borrow(), 2);
    // Expiry of the set (max-age=3600) refetches; a failed refetch keeps the stale keys.
    *fake.status.borrow_mut() = 500;
    let later = NOW_MS + 31_000.0 + 3_601_000.0;
    let fresh = claims(json!({"exp": later / 1000.0 + 600.0}));
    assert_eq!(
        run(v.verify(&token("RS256", Some("r1"), &fresh), later)).unwrap(),
        "ana"
    );
    assert_eq!(*fake.fetches.borrow(), 3);
}

#[test]
fn one_fetch_in_flight_per_isolate() {
    let fake = serving(&[rsa_jwk("r1")]);
    let v = verifier(&fake);
    let t = token("RS256", Some("r1"), &claims(json!({})));
    let (a, b) = run(futures_util::future::join(
        v.verify(&t, NOW_MS),
        v.verify(&t, NOW_MS),
    ));
    assert_eq!(
        (a.unwrap(), b.unwrap()),
        ("ana".to_owned(), "ana".to_owned())
    );
    assert_eq!(
        *fake.fetches.borrow(),
        1,
        "the second request waited for the first fetch"
    );
}

#[test]
fn keys_unavailable_is_a_server_problem() {
    let fake = serving(&[]);
    *fake.status.borrow_mut() = 503;
    let v = verifier(&fake);
    let t = token("RS256", Some("r1"), &claims(json!({})));
    let e = run(v.verify(&t, NOW_MS)).unwrap_err();
    assert!(matches!(e, AuthError::KeysUnavailable(_)), "{e:?}");
    assert_eq!(egn_http::ApiError::from(e).status(), 503);
    // Within the cooldown, no refetch storm: still 503, still one fetch.
    assert!(matches!(
        run(v.verify(&t, NOW_MS + 1.0)),
        Err(AuthError::KeysUnavailable(_))
    ));
    assert_eq!(*fake.fetches.borrow(), 1);
}
