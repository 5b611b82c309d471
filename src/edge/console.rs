//! Serving the web console: its page and its files from the assets binding, each with the
//! console's Content-Security-Policy.

use super::{assets, internal, ApiResult};
use egn_http::console;
use egn_http::ApiError;
use worker::{Env, Headers, Response};

/// `GET /`: the console page.
pub async fn page(env: &Env) -> ApiResult<Response> {
    let bytes = assets::fetch_asset(env, "www/index.html").await?;
    respond(bytes, "text/html; charset=utf-8")
}

/// `GET /www/{file}`: one of the console's files; anything else is a 404.
pub async fn file(env: &Env, name: &str) -> ApiResult<Response> {
    let not_found = || ApiError::not_found(&format!("/www/{name}"));
    let ctype = console::content_type(name).ok_or_else(not_found)?;
    let bytes = assets::fetch_optional(env, &format!("www/{name}"))
        .await?
        .ok_or_else(not_found)?;
    respond(bytes, ctype)
}

fn respond(bytes: Vec<u8>, ctype: &str) -> ApiResult<Response> {
    let headers = Headers::new();
    let set = |k: &str, v: &str| headers.set(k, v).map_err(internal);
    set("content-type", ctype)?;
    set("content-security-policy", console::CSP)?;
    set("x-content-type-options", "nosniff")?;
    set("referrer-policy", "no-referrer")?;
    // Revalidated on every load: a deploy is seen at once, and the files are small.
    set("cache-control", "no-cache")?;
    Ok(Response::from_bytes(bytes)
        .map_err(internal)?
        .with_headers(headers))
}
