//! `HttpClient` over `worker::Fetch`, with a deadline (AbortController + timer race).

use egn_core::backend::{HttpClient, HttpRequest, HttpResponse, TransportError};
use futures_util::future::{select, Either};
use std::time::Duration;
use worker::{AbortController, Delay, Fetch, Headers, Method, Request, RequestInit};

/// Deadline when a request does not set one.
const DEFAULT_TIMEOUT_MS: u32 = 10_000;

/// Outbound HTTP from the worker (subrequests).
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerHttp;

fn transport(e: impl std::fmt::Display) -> TransportError {
    TransportError {
        timed_out: false,
        message: e.to_string(),
    }
}

impl HttpClient for WorkerHttp {
    async fn send(&self, req: HttpRequest) -> Result<HttpResponse, TransportError> {
        let headers = Headers::new();
        for (k, v) in &req.headers {
            headers.set(k, v).map_err(transport)?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::from(req.method.clone()))
            .with_headers(headers);
        if !req.body.is_empty() {
            init.with_body(Some(js_sys::Uint8Array::from(req.body.as_slice()).into()));
        }
        let request = Request::new_with_init(&req.url, &init).map_err(transport)?;
        let controller = AbortController::default();
        let signal = controller.signal();
        let exchange = Box::pin(async move {
            let mut resp = Fetch::Request(request)
                .send_with_signal(&signal)
                .await
                .map_err(transport)?;
            let status = resp.status_code();
            let headers = egn_core::backend::http::KEPT_HEADERS
                .iter()
                .filter_map(|n| Some(((*n).to_owned(), resp.headers().get(n).ok()??)))
                .collect();
            let body = resp.bytes().await.map_err(transport)?;
            Ok::<_, TransportError>(HttpResponse {
                status,
                body,
                headers,
            })
        });
        let ms = if req.timeout_ms == 0 {
            DEFAULT_TIMEOUT_MS
        } else {
            req.timeout_ms
        };
        let timer = Box::pin(Delay::from(Duration::from_millis(ms as u64)));
        match select(exchange, timer).await {
            Either::Left((result, _)) => result,
            Either::Right(((), _)) => {
                controller.abort();
                Err(TransportError {
                    timed_out: true,
                    message: format!("no response within {ms} ms"),
                })
            }
        }
    }
}
