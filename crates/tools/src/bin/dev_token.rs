//! Mints an HS256 user token for local development, signed with `AUTH_HS256_SECRET` from
//! `.dev.vars` (or the environment), for `AUTH_ISSUER` / `AUTH_AUDIENCE`.
//!
//! ```text
//! cargo run --bin dev-token -- --sub ana [--ttl 3600] [--vars .dev.vars]
//! ```

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use egn_tools::auth::crypto::hs256_sign;
use std::collections::HashMap;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

fn dev_vars(path: &str) -> HashMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
        .collect()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let Some(sub) = opt("--sub") else {
        eprintln!("usage: dev-token --sub NAME [--ttl SECONDS] [--vars .dev.vars]");
        return ExitCode::from(2);
    };
    let vars = dev_vars(&opt("--vars").unwrap_or_else(|| ".dev.vars".into()));
    let get = |k: &str| std::env::var(k).ok().or_else(|| vars.get(k).cloned());
    let (Some(secret), Some(iss), Some(aud)) = (
        get("AUTH_HS256_SECRET"),
        get("AUTH_ISSUER"),
        get("AUTH_AUDIENCE"),
    ) else {
        eprintln!("AUTH_HS256_SECRET, AUTH_ISSUER and AUTH_AUDIENCE must be set (in .dev.vars or the environment)");
        return ExitCode::from(2);
    };
    let ttl: u64 = opt("--ttl").and_then(|t| t.parse().ok()).unwrap_or(3600);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    let aud = aud.split(',').next().unwrap_or_default().trim().to_owned();
    let header = B64.encode(r#"{"alg":"HS256","typ":"JWT"}"#);
    let claims =
        serde_json::json!({"sub": sub, "iss": iss, "aud": aud, "iat": now, "exp": now + ttl});
    let input = format!("{header}.{}", B64.encode(claims.to_string()));
    let sig = B64.encode(hs256_sign(secret.as_bytes(), input.as_bytes()));
    println!("{input}.{sig}");
    ExitCode::SUCCESS
}
