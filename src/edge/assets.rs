//! Reading files of the static-assets binding (`egn_http::assets` decides what a failure
//! answers).

use egn_http::assets::{AssetError, Assets};
use worker::Env;

/// Static-assets binding (wrangler.toml `[assets]`).
pub const ASSETS: &str = "ASSETS";

/// The file at `path`, `None` for one that does not exist.
pub async fn read(env: &Env, path: &str) -> Result<Option<Vec<u8>>, AssetError> {
    let assets = env
        .assets(ASSETS)
        .map_err(|e| AssetError::Binding(e.to_string()))?;
    let cause = |e: worker::Error| e.to_string();
    let path = path.to_owned();
    let mut resp = match assets
        .fetch(format!("https://assets.invalid/{path}"), None)
        .await
    {
        Ok(r) => r,
        Err(e) => {
            return Err(AssetError::Fetch {
                path,
                cause: cause(e),
            })
        }
    };
    match resp.status_code() {
        404 => Ok(None),
        200 => match resp.bytes().await {
            Ok(b) => Ok(Some(b)),
            Err(e) => Err(AssetError::Read {
                path,
                cause: cause(e),
            }),
        },
        status => Err(AssetError::Status { path, status }),
    }
}

/// The assets binding as the port.
pub struct Files<'a>(pub &'a Env);

impl Assets for Files<'_> {
    async fn read(&self, path: &str) -> Result<Option<Vec<u8>>, AssetError> {
        read(self.0, path).await
    }
}
