//! Redis over REST, Upstash dialect: `POST /` with `["CMD", args…]` → `{"result"}` / `{"error"}`.

use serde_json::Value;

use super::http::{HttpClient, HttpRequest};
use super::{status_error, BackendError};

/// Where and how to reach the REST bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisRestConfig {
    /// Base URL, e.g. `http://127.0.0.1:8079`.
    pub base_url: String,
    /// Read-write bearer token.
    pub token: String,
    /// Per-request deadline in ms (0 = the HTTP client's default).
    pub timeout_ms: u32,
}

/// A Lua script with its SHA-1, computed once so EVALSHA needs no round trip to learn it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    source: String,
    sha1: String,
}

impl Script {
    /// Wraps Lua source and hashes it (Redis keys its script cache by the SHA-1 hex of the body).
    #[must_use]
    pub fn new(source: impl Into<String>) -> Self {
        let source = source.into();
        let sha1 = sha1_smol::Sha1::from(source.as_bytes())
            .digest()
            .to_string();
        Self { source, sha1 }
    }

    /// The Lua body.
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Lower-case SHA-1 hex, as `EVALSHA` wants it.
    #[must_use]
    pub fn sha1(&self) -> &str {
        &self.sha1
    }
}

/// A Redis REST client over any [`HttpClient`].
#[derive(Debug, Clone)]
pub struct RedisRestClient<H> {
    http: H,
    cfg: RedisRestConfig,
}

impl<H: HttpClient> RedisRestClient<H> {
    /// Builds a client.
    pub fn new(http: H, cfg: RedisRestConfig) -> Self {
        Self { http, cfg }
    }

    /// One command; Redis errors come back as `Rejected { code: "NOSCRIPT" | "WRONGTYPE" | … }`.
    ///
    /// # Errors
    /// [`BackendError`] by status class, or the Redis error.
    pub async fn command<S: AsRef<str>>(&self, args: &[S]) -> Result<Value, BackendError> {
        let (status, body) = self.post("", &strings(args)).await?;
        entry(status, body)
    }

    /// Several commands in one round trip (not atomic): one `Result` per command, in order.
    ///
    /// # Errors
    /// The outer `Err` is for the whole request (transport, auth, malformed).
    pub async fn pipeline<C: AsRef<[S]>, S: AsRef<str>>(
        &self,
        commands: &[C],
    ) -> Result<Vec<Result<Value, BackendError>>, BackendError> {
        let cmds: Vec<Value> = commands.iter().map(|c| strings(c.as_ref())).collect();
        let (status, body) = self.post("pipeline", &Value::Array(cmds)).await?;
        match body {
            Value::Array(items) if status == 200 => {
                Ok(items.into_iter().map(|v| entry(200, v)).collect())
            }
            other => Err(entry(status, other)
                .err()
                .unwrap_or_else(|| BackendError::Decode("pipeline: expected an array".into()))),
        }
    }

    /// `EVALSHA`, falling back to `EVAL` (which also caches the script) on `NOSCRIPT`.
    ///
    /// # Errors
    /// As [`Self::command`].
    pub async fn evalsha_or_eval(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[&str],
    ) -> Result<Value, BackendError> {
        let numkeys = keys.len().to_string();
        let tail = || keys.iter().chain(args).copied();
        let mut cmd: Vec<&str> = vec!["EVALSHA", script.sha1(), &numkeys];
        cmd.extend(tail());
        match self.command(&cmd).await {
            Err(BackendError::Rejected { code, .. }) if code == "NOSCRIPT" => {
                let mut cmd: Vec<&str> = vec!["EVAL", script.source(), &numkeys];
                cmd.extend(tail());
                self.command(&cmd).await
            }
            other => other,
        }
    }

    async fn post(&self, path: &str, body: &Value) -> Result<(u16, Value), BackendError> {
        let url = format!("{}/{path}", self.cfg.base_url.trim_end_matches('/'));
        let bytes = serde_json::to_vec(body).map_err(|e| BackendError::Decode(e.to_string()))?;
        let req = HttpRequest::post(url, bytes, self.cfg.timeout_ms)
            .header("Content-Type", "application/json")
            .header("Authorization", format!("Bearer {}", self.cfg.token));
        let resp = self
            .http
            .send(req)
            .await
            .map_err(BackendError::from_transport)?;
        match serde_json::from_slice::<Value>(&resp.body) {
            Ok(v) => Ok((resp.status, v)),
            Err(_) if resp.status >= 300 => Err(status_error(
                resp.status,
                format!("HTTP{}", resp.status),
                String::from_utf8_lossy(&resp.body).into_owned(),
            )),
            Err(_) => Err(BackendError::decode(
                "redis: response is not JSON",
                &resp.body,
            )),
        }
    }
}

fn strings<S: AsRef<str>>(args: &[S]) -> Value {
    Value::Array(
        args.iter()
            .map(|a| Value::String(a.as_ref().to_owned()))
            .collect(),
    )
}

/// Decodes one `{"result"}` / `{"error"}` object; the error code is the first word of Redis' text.
fn entry(status: u16, mut v: Value) -> Result<Value, BackendError> {
    if let Some(err) = v.get("error") {
        let message = err.as_str().map_or_else(|| err.to_string(), str::to_owned);
        let code = message
            .split_whitespace()
            .next()
            .unwrap_or("ERR")
            .to_owned();
        // A Redis error inside a 200 pipeline entry is still a rejection of that command.
        return Err(status_error(
            if status < 300 { 400 } else { status },
            code,
            message,
        ));
    }
    if status >= 300 {
        return Err(status_error(status, format!("HTTP{status}"), v.to_string()));
    }
    v.get_mut("result")
        .map(Value::take)
        .ok_or_else(|| BackendError::Decode(format!("redis: no result in {v}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn script_sha1_matches_redis() {
        // `redis-cli SCRIPT LOAD "return 1"` prints this digest.
        assert_eq!(
            Script::new("return 1").sha1(),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
    }

    #[test]
    fn entries_decode_results_and_errors() {
        assert_eq!(entry(200, json!({"result": "OK"})), Ok(json!("OK")));
        let e = entry(400, json!({"error": "NOSCRIPT No matching script."})).unwrap_err();
        assert!(matches!(e, BackendError::Rejected { ref code, .. } if code == "NOSCRIPT"));
        assert!(entry(503, json!({"error": "down"}))
            .unwrap_err()
            .is_retryable());
    }
}
