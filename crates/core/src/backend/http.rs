//! The one HTTP seam: clients build an [`HttpRequest`], an [`HttpClient`] sends it.
//!
//! On wasm the worker adapter implements [`HttpClient`] over `worker::Fetch`; natively
//! [`super::native::UreqClient`] does, so the same clients run in integration tests.

/// An HTTP request as plain data (no platform types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// Upper-case method, e.g. `"POST"`.
    pub method: String,
    /// Absolute URL.
    pub url: String,
    /// Header name/value pairs, sent in order.
    pub headers: Vec<(String, String)>,
    /// Raw body (empty for none).
    pub body: Vec<u8>,
    /// Whole-request deadline in milliseconds (0 = the client's default).
    pub timeout_ms: u32,
}

impl HttpRequest {
    /// A `GET` with no headers yet.
    #[must_use]
    pub fn get(url: impl Into<String>, timeout_ms: u32) -> Self {
        Self {
            method: "GET".into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout_ms,
        }
    }

    /// A `POST` with a body and no headers yet.
    #[must_use]
    pub fn post(url: impl Into<String>, body: Vec<u8>, timeout_ms: u32) -> Self {
        Self {
            method: "POST".into(),
            url: url.into(),
            headers: Vec::new(),
            body,
            timeout_ms,
        }
    }

    /// Adds a header (builder style).
    #[must_use]
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }
}

/// Status and body of a completed exchange (any status, including 4xx/5xx).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// HTTP status code.
    pub status: u16,
    /// Raw body.
    pub body: Vec<u8>,
    /// Response headers the callers read (lower-case names), e.g. `cache-control`.
    pub headers: Vec<(String, String)>,
}

impl HttpResponse {
    /// A header's value by lower-case name.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Response headers worth keeping (others are dropped to keep responses small).
pub const KEPT_HEADERS: &[&str] = &["cache-control", "content-type", "content-length"];

/// The request never produced a response (connect/read failure or deadline).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", if *.timed_out { "timed out" } else { "transport error" })]
pub struct TransportError {
    /// True when the deadline fired (the server may still have applied the request).
    pub timed_out: bool,
    /// Human-readable cause.
    pub message: String,
}

/// Sends one request. No `Send` bound: the worker runtime is single-threaded.
#[allow(async_fn_in_trait)]
pub trait HttpClient {
    /// Performs the exchange; HTTP error statuses are `Ok`, only transport failures are `Err`.
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, TransportError>;
}

impl<T: HttpClient + ?Sized> HttpClient for &T {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, TransportError> {
        (**self).send(req).await
    }
}
