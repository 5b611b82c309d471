//! Reading files of the static-assets binding.

use super::ApiResult;
use egn_http::ApiError;
use worker::Env;

/// Static-assets binding (wrangler.toml `[assets]`).
pub const ASSETS: &str = "ASSETS";

/// Fetches `path` from the assets directory; any failure is a 503 `asset_unavailable`.
pub async fn fetch_asset(env: &Env, path: &str) -> ApiResult<Vec<u8>> {
    fetch_optional(env, path)
        .await?
        .ok_or_else(|| ApiError::asset_unavailable(format!("asset {path} answered 404")))
}

/// Like [`fetch_asset`], with `None` for a file that does not exist.
pub async fn fetch_optional(env: &Env, path: &str) -> ApiResult<Option<Vec<u8>>> {
    let unavailable = |m: String| ApiError::asset_unavailable(m);
    let assets = env
        .assets(ASSETS)
        .map_err(|e| unavailable(format!("ASSETS binding: {e}")))?;
    let mut resp = assets
        .fetch(format!("https://assets.invalid/{path}"), None)
        .await
        .map_err(|e| unavailable(format!("fetching {path}: {e}")))?;
    if resp.status_code() == 404 {
        return Ok(None);
    }
    if resp.status_code() != 200 {
        return Err(unavailable(format!(
            "asset {path} answered {}",
            resp.status_code()
        )));
    }
    resp.bytes()
        .await
        .map(Some)
        .map_err(|e| unavailable(format!("reading {path}: {e}")))
}

/// A 503 `asset_corrupt` for an asset that failed validation; logged once per failure.
pub fn corrupt(path: &str, e: impl std::fmt::Display) -> ApiError {
    worker::console_error!("asset {path} rejected: {e}");
    ApiError::asset_corrupt(path, e)
}
