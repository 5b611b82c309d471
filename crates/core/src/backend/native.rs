//! Native [`HttpClient`] over `ureq` (plain HTTP; used by tests and tools against the local stack).

use std::time::Duration;

use super::http::{HttpClient, HttpRequest, HttpResponse, TransportError};

/// Responses larger than this are refused (the stack caps bodies at 1 MiB; list pages are smaller).
const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// Blocking `ureq` agent behind the async trait; its futures complete on first poll.
#[derive(Debug, Clone)]
pub struct UreqClient {
    agent: ureq::Agent,
    default_timeout_ms: u32,
}

impl UreqClient {
    /// A keep-alive agent; `default_timeout_ms` applies when a request sets `timeout_ms = 0`.
    #[must_use]
    pub fn new(default_timeout_ms: u32) -> Self {
        let agent = ureq::Agent::config_builder()
            // 4xx/5xx are data for the backend clients, not transport failures.
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            agent,
            default_timeout_ms,
        }
    }
}

impl Default for UreqClient {
    fn default() -> Self {
        Self::new(10_000)
    }
}

impl HttpClient for UreqClient {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, TransportError> {
        let fail = |e: &dyn std::fmt::Display, timed_out| TransportError {
            timed_out,
            message: e.to_string(),
        };
        let mut builder = ureq::http::Request::builder()
            .method(req.method.as_str())
            .uri(&req.url);
        for (k, v) in &req.headers {
            builder = builder.header(k, v);
        }
        let request = builder.body(req.body).map_err(|e| fail(&e, false))?;
        let ms = if req.timeout_ms == 0 {
            self.default_timeout_ms
        } else {
            req.timeout_ms
        };
        let request = self
            .agent
            .configure_request(request)
            .timeout_global(Some(Duration::from_millis(u64::from(ms))))
            .build();
        let mut resp = self
            .agent
            .run(request)
            .map_err(|e| fail(&e, matches!(e, ureq::Error::Timeout(_))))?;
        let status = resp.status().as_u16();
        let headers = super::http::KEPT_HEADERS
            .iter()
            .filter_map(|n| {
                let v = resp.headers().get(*n)?.to_str().ok()?;
                Some(((*n).to_owned(), v.to_owned()))
            })
            .collect();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec()
            .map_err(|e| fail(&e, matches!(e, ureq::Error::Timeout(_))))?;
        Ok(HttpResponse {
            status,
            body,
            headers,
        })
    }
}

/// Drives a future whose I/O is blocking (like [`UreqClient`]'s) to completion on this thread.
///
/// # Panics
/// If the future returns `Pending` (it would need a real executor).
pub fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("block_on: future is not ready (needs a real executor)"),
    }
}
