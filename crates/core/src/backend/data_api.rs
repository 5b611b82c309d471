//! MongoDB Data API (Atlas v1 dialect; FerretDB and the local stack speak it too).
//!
//! Requests go out as `application/ejson` (so `{"$date":…}` becomes a real BSON date); responses
//! are asked for as relaxed JSON and passed through [`ejson::normalize`], so callers always see
//! plain numbers and `{"$date": ms}` whatever the server emits.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::http::{HttpClient, HttpRequest};
use super::{ejson, status_error, BackendError};

/// How the API key is presented; servers differ (Atlas: `apiKey`, FerretDB: HTTP Basic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataApiAuth {
    /// `apiKey: <key>` header (Atlas).
    ApiKey,
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// `Authorization: Basic base64(username:key)` (FerretDB).
    Basic {
        /// User name; the key is the password.
        username: String,
    },
}

/// Where and how to reach the Data API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataApiConfig {
    /// Base URL up to (not including) `/action/…`, e.g. `http://127.0.0.1:8078`.
    pub base_url: String,
    /// The secret (API key, bearer token or Basic password).
    pub api_key: String,
    /// `dataSource` sent in every body (cluster name on Atlas).
    pub data_source: String,
    /// `database` sent in every body.
    pub database: String,
    /// Header scheme for [`Self::api_key`].
    pub auth: DataApiAuth,
    /// Per-request deadline in ms (0 = the HTTP client's default).
    pub timeout_ms: u32,
}

/// Optional parts of a `find`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FindOptions {
    /// Fields to include/exclude (`{"origins": {"$slice": 3}}` works too).
    pub projection: Option<Value>,
    /// Ordered sort spec, e.g. `{"revision": -1, "_id": -1}`.
    pub sort: Option<Value>,
    /// Maximum documents (the Data API returns them in one response: batch size = limit).
    pub limit: Option<u32>,
    /// Documents to skip first.
    pub skip: Option<u32>,
}

/// Result of `updateOne`/`updateMany`.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateResult {
    /// Documents the filter matched.
    pub matched: u64,
    /// Documents actually changed.
    pub modified: u64,
    /// `_id` of the inserted document when an upsert inserted.
    pub upserted_id: Option<Value>,
}

/// A Data API client over any [`HttpClient`].
#[derive(Debug, Clone)]
pub struct DataApiClient<H> {
    http: H,
    cfg: DataApiConfig,
    auth_header: (String, String),
}

impl<H: HttpClient> DataApiClient<H> {
    /// Builds a client; the auth header is computed once.
    pub fn new(http: H, cfg: DataApiConfig) -> Self {
        let auth_header = match &cfg.auth {
            DataApiAuth::ApiKey => ("apiKey".to_owned(), cfg.api_key.clone()),
            DataApiAuth::Bearer => (
                "Authorization".to_owned(),
                format!("Bearer {}", cfg.api_key),
            ),
            DataApiAuth::Basic { username } => {
                let raw = format!("{username}:{}", cfg.api_key);
                let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
                ("Authorization".to_owned(), format!("Basic {b64}"))
            }
        };
        Self {
            http,
            cfg,
            auth_header,
        }
    }

    /// The configuration this client was built with.
    pub fn config(&self) -> &DataApiConfig {
        &self.cfg
    }

    /// Runs any action with extra body fields; returns the normalized response object.
    ///
    /// # Errors
    /// [`BackendError`] by status class; a unique-index violation is [`BackendError::DuplicateKey`].
    pub async fn action(
        &self,
        action: &str,
        collection: &str,
        fields: Map<String, Value>,
    ) -> Result<Value, BackendError> {
        let mut body = Map::with_capacity(fields.len() + 3);
        body.insert("dataSource".into(), self.cfg.data_source.clone().into());
        body.insert("database".into(), self.cfg.database.clone().into());
        body.insert("collection".into(), collection.into());
        body.extend(fields);
        let bytes = serde_json::to_vec(&Value::Object(body))
            .map_err(|e| BackendError::Decode(e.to_string()))?;
        let url = format!(
            "{}/action/{action}",
            self.cfg.base_url.trim_end_matches('/')
        );
        let req = HttpRequest::post(url, bytes, self.cfg.timeout_ms)
            .header("Content-Type", "application/ejson")
            .header("Accept", "application/json")
            .header(&self.auth_header.0, self.auth_header.1.clone());
        let resp = self
            .http
            .send(req)
            .await
            .map_err(BackendError::from_transport)?;
        let parsed: Option<Value> = serde_json::from_slice(&resp.body).ok();
        if !(200..300).contains(&resp.status) {
            return Err(error_from(resp.status, parsed.as_ref(), &resp.body));
        }
        match parsed {
            Some(v @ Value::Object(_)) => Ok(ejson::normalize(v)),
            _ => Err(BackendError::decode(
                &format!("{action}: expected a JSON object"),
                &resp.body,
            )),
        }
    }

    /// `find`: all matching documents (one round trip; `limit` is the batch size).
    ///
    /// # Errors
    /// See [`Self::action`].
    pub async fn find(
        &self,
        collection: &str,
        filter: &Value,
        opts: &FindOptions,
    ) -> Result<Vec<Value>, BackendError> {
        let mut f = fields(&[("filter", Some(filter.clone()))]);
        put(&mut f, "projection", opts.projection.clone());
        put(&mut f, "sort", opts.sort.clone());
        put(&mut f, "limit", opts.limit.map(Value::from));
        put(&mut f, "skip", opts.skip.map(Value::from));
        documents(self.action("find", collection, f).await?)
    }

    /// `findOne`: the first match (by `sort` if given) or `None`.
    ///
    /// # Errors
    /// See [`Self::action`].
    pub async fn find_one(
        &self,
        collection: &str,
        filter: &Value,
        projection: Option<&Value>,
        sort: Option<&Value>,
    ) -> Result<Option<Value>, BackendError> {
        let f = fields(&[
            ("filter", Some(filter.clone())),
            ("projection", projection.cloned()),
            ("sort", sort.cloned()),
        ]);
        let mut resp = self.action("findOne", collection, f).await?;
        match resp.get_mut("document").map(Value::take) {
            Some(Value::Null) | None => Ok(None),
            Some(d @ Value::Object(_)) => Ok(Some(d)),
            Some(_) => Err(BackendError::Decode(
                "findOne: `document` is not an object".into(),
            )),
        }
    }

    /// `insertOne`: returns the `insertedId`.
    ///
    /// # Errors
    /// See [`Self::action`].
    pub async fn insert_one(
        &self,
        collection: &str,
        document: &Value,
    ) -> Result<Value, BackendError> {
        let mut resp = self
            .action(
                "insertOne",
                collection,
                fields(&[("document", Some(document.clone()))]),
            )
            .await?;
        resp.get_mut("insertedId")
            .map(Value::take)
            .ok_or_else(|| BackendError::Decode("insertOne: no insertedId".into()))
    }

    /// `updateOne`, optionally upserting.
    ///
    /// # Errors
    /// See [`Self::action`].
    pub async fn update_one(
        &self,
        collection: &str,
        filter: &Value,
        update: &Value,
        upsert: bool,
    ) -> Result<UpdateResult, BackendError> {
        self.update("updateOne", collection, filter, update, upsert)
            .await
    }

    /// `updateMany`, optionally upserting.
    ///
    /// # Errors
    /// See [`Self::action`].
    pub async fn update_many(
        &self,
        collection: &str,
        filter: &Value,
        update: &Value,
        upsert: bool,
    ) -> Result<UpdateResult, BackendError> {
        self.update("updateMany", collection, filter, update, upsert)
            .await
    }

    async fn update(
        &self,
        action: &str,
        collection: &str,
        filter: &Value,
        update: &Value,
        upsert: bool,
    ) -> Result<UpdateResult, BackendError> {
        let mut f = fields(&[
            ("filter", Some(filter.clone())),
            ("update", Some(update.clone())),
        ]);
        if upsert {
            f.insert("upsert".into(), true.into());
        }
        let mut resp = self.action(action, collection, f).await?;
        Ok(UpdateResult {
            matched: count(&resp, "matchedCount")?,
            modified: count(&resp, "modifiedCount")?,
            upserted_id: resp
                .get_mut("upsertedId")
                .map(Value::take)
                .filter(|v| !v.is_null()),
        })
    }

    /// `deleteOne`: returns `deletedCount` (0 or 1).
    ///
    /// # Errors
    /// See [`Self::action`].
    pub async fn delete_one(&self, collection: &str, filter: &Value) -> Result<u64, BackendError> {
        self.delete("deleteOne", collection, filter).await
    }

    /// `deleteMany`: returns `deletedCount`.
    ///
    /// # Errors
    /// See [`Self::action`].
    pub async fn delete_many(&self, collection: &str, filter: &Value) -> Result<u64, BackendError> {
        self.delete("deleteMany", collection, filter).await
    }

    async fn delete(
        &self,
        action: &str,
        collection: &str,
        filter: &Value,
    ) -> Result<u64, BackendError> {
        let f = fields(&[("filter", Some(filter.clone()))]);
        let resp = self.action(action, collection, f).await?;
        count(&resp, "deletedCount")
    }

    /// `aggregate`: the pipeline's output documents.
    ///
    /// # Errors
    /// See [`Self::action`].
    pub async fn aggregate(
        &self,
        collection: &str,
        pipeline: &Value,
    ) -> Result<Vec<Value>, BackendError> {
        documents(
            self.action(
                "aggregate",
                collection,
                fields(&[("pipeline", Some(pipeline.clone()))]),
            )
            .await?,
        )
    }

    /// `createIndexes` (local-stack extension; idempotent): returns the index names.
    ///
    /// # Errors
    /// See [`Self::action`]; servers without the action answer 404 → `Rejected`.
    pub async fn create_indexes(
        &self,
        collection: &str,
        indexes: &[Value],
    ) -> Result<Vec<String>, BackendError> {
        let resp = self
            .action(
                "createIndexes",
                collection,
                fields(&[("indexes", Some(Value::from(indexes.to_vec())))]),
            )
            .await?;
        let names = resp
            .get("createdIndexes")
            .and_then(Value::as_array)
            .ok_or_else(|| BackendError::Decode("createIndexes: no createdIndexes".into()))?;
        Ok(names
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect())
    }
}

fn fields(pairs: &[(&str, Option<Value>)]) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in pairs {
        put(&mut m, k, v.clone());
    }
    m
}

fn put(m: &mut Map<String, Value>, k: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(k.to_owned(), v);
    }
}

fn count(resp: &Value, key: &str) -> Result<u64, BackendError> {
    resp.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| BackendError::Decode(format!("missing {key} in {resp}")))
}

fn documents(mut resp: Value) -> Result<Vec<Value>, BackendError> {
    match resp.get_mut("documents").map(Value::take) {
        Some(Value::Array(docs)) => Ok(docs),
        _ => Err(BackendError::Decode("expected `documents` array".into())),
    }
}

/// Maps an error response; Atlas reports duplicates as E11000 text, the stack as 409/`DuplicateKey`.
fn error_from(status: u16, parsed: Option<&Value>, raw: &[u8]) -> BackendError {
    let get = |k: &str| {
        parsed
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let message = get("error")
        .unwrap_or_else(|| String::from_utf8_lossy(&raw[..raw.len().min(200)]).into_owned());
    let code = get("error_code").unwrap_or_else(|| format!("HTTP{status}"));
    if code == "DuplicateKey" || (status < 500 && message.contains("E11000")) {
        return BackendError::DuplicateKey { message };
    }
    status_error(status, code, message)
}

/// Why a probe `find` shows the deployment cannot use its Data API (see [`probe_problem`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeProblem {
    /// `DATA_API_URL` answers 404: it does not lead to `/action/…`.
    NotFound,
    /// The key is refused (401/403).
    Unauthorized,
    /// It cannot be reached, or does not answer in time.
    Unavailable,
}

/// What `/healthz` reports about a probe `find` (one document, matching nothing in particular):
/// `None` when the Data API answered it, else the problem and a message naming the variable to
/// fix (never a secret's value). A 404 means the base URL does not lead to `/action/…`: every
/// call of the deployment would be a 404.
#[must_use]
pub fn probe_problem<T>(result: &Result<T, BackendError>) -> Option<(ProbeProblem, String)> {
    match result {
        Ok(_) => None,
        Err(BackendError::Rejected { status: 404, .. }) => Some((
            ProbeProblem::NotFound,
            "DATA_API_URL answers 404 to POST {DATA_API_URL}/action/find: it must be the base URL \
             just before /action, e.g. https://host or https://host/app/<app-id>/endpoint/data/v1"
                .to_owned(),
        )),
        Err(BackendError::Rejected {
            status: status @ (401 | 403),
            code,
            ..
        }) => Some((
            ProbeProblem::Unauthorized,
            format!(
                "the Data API refused DATA_API_KEY (HTTP {status} {code}); check DATA_API_KEY, \
                 DATA_API_AUTH and the gateway's database/collection allowlist"
            ),
        )),
        Err(BackendError::Unavailable {
            status, timed_out, ..
        }) => Some((
            ProbeProblem::Unavailable,
            match (status, timed_out) {
                (_, true) => "the Data API did not answer in time".to_owned(),
                (Some(s), _) => format!("the Data API answered HTTP {s}"),
                (None, _) => "the Data API could not be reached (DATA_API_URL)".to_owned(),
            },
        )),
        // It answered (a 400 on an odd filter still proves the URL and the key).
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicate_key_is_recognised_in_both_dialects() {
        let stack = json!({"error": "Duplicate key error: E11000", "error_code": "DuplicateKey"});
        assert!(matches!(
            error_from(409, Some(&stack), b""),
            BackendError::DuplicateKey { .. }
        ));
        let atlas = json!({"error": "Failed to update: E11000 duplicate key error collection", "error_code": "GeneralError"});
        assert!(matches!(
            error_from(400, Some(&atlas), b""),
            BackendError::DuplicateKey { .. }
        ));
        let bad = json!({"error": "Unknown modifier: $bogus", "error_code": "InvalidParameter"});
        assert!(matches!(
            error_from(400, Some(&bad), b""),
            BackendError::Rejected { status: 400, .. }
        ));
        assert!(error_from(503, None, b"down").is_retryable());
    }
}

#[cfg(test)]
mod probe_tests {
    use super::*;

    fn rejected(status: u16) -> Result<(), BackendError> {
        Err(BackendError::Rejected {
            status,
            code: "NotFound".into(),
            message: "no route".into(),
        })
    }

    #[test]
    fn probe_names_a_wrong_base_url_a_refused_key_and_an_unreachable_api() {
        assert_eq!(probe_problem(&Ok(())), None);
        assert_eq!(
            probe_problem(&rejected(404)).unwrap().0,
            ProbeProblem::NotFound
        );
        assert!(probe_problem(&rejected(404))
            .unwrap()
            .1
            .contains("DATA_API_URL"));
        assert_eq!(
            probe_problem(&rejected(401)).unwrap().0,
            ProbeProblem::Unauthorized
        );
        assert_eq!(probe_problem(&rejected(400)), None);
        let down: Result<(), _> = Err(BackendError::Unavailable {
            status: None,
            timed_out: false,
            message: "connect".into(),
        });
        assert_eq!(probe_problem(&down).unwrap().0, ProbeProblem::Unavailable);
    }
}
