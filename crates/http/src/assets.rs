//! Reading the static-assets binding, as a port: the adapter fetches a file, this decides what a
//! missing or failed read answers (503 `asset_unavailable`, with the words the log shows).

use crate::ApiError;
use egn_core::geo::TileSource;

/// Why the assets binding could not give a file (the texts are the 503's log detail).
#[derive(Debug, thiserror::Error)]
pub enum AssetError {
    /// The binding is missing.
    #[error("ASSETS binding: {0}")]
    Binding(String),
    /// The fetch itself failed.
    #[error("fetching {path}: {cause}")]
    Fetch {
        /// The asset.
        path: String,
        /// The runtime's words.
        cause: String,
    },
    /// The binding answered neither 200 nor 404.
    #[error("asset {path} answered {status}")]
    Status {
        /// The asset.
        path: String,
        /// Its status.
        status: u16,
    },
    /// The body could not be read.
    #[error("reading {path}: {cause}")]
    Read {
        /// The asset.
        path: String,
        /// The runtime's words.
        cause: String,
    },
}

impl From<AssetError> for ApiError {
    fn from(e: AssetError) -> Self {
        ApiError::asset_unavailable(e.to_string())
    }
}

/// The static-assets binding (wrangler.toml `[assets]`).
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait Assets {
    /// The file at `path` (no leading slash), `None` when it does not exist (a 404).
    async fn read(&self, path: &str) -> Result<Option<Vec<u8>>, AssetError>;
}

/// A file that must exist.
///
/// # Errors
/// 503 `asset_unavailable` when it cannot be read or does not exist.
pub async fn required(assets: &impl Assets, path: &str) -> Result<Vec<u8>, ApiError> {
    assets.read(path).await?.ok_or_else(|| {
        ApiError::asset_unavailable(
            AssetError::Status {
                path: path.to_owned(),
                status: 404,
            }
            .to_string(),
        )
    })
}

/// The geo tiles, read from the assets.
pub struct Tiles<'a, A>(pub &'a A);

impl<A: Assets> TileSource for Tiles<'_, A> {
    type Error = ApiError;
    async fn fetch(&self, path: &str) -> Result<Vec<u8>, ApiError> {
        required(self.0, path).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egn_core::backend::native::block_on;

    struct One(Result<Option<Vec<u8>>, ()>);

    impl Assets for One {
        async fn read(&self, path: &str) -> Result<Option<Vec<u8>>, AssetError> {
            self.0.clone().map_err(|()| AssetError::Status {
                path: path.into(),
                status: 500,
            })
        }
    }

    #[test]
    fn a_missing_or_failed_asset_is_unavailable_with_its_words() {
        let e = block_on(required(&One(Ok(None)), "manifest.json")).unwrap_err();
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("asset_unavailable", "asset manifest.json answered 404")
        );
        let e = block_on(required(&One(Err(())), "geo/t/1.bin")).unwrap_err();
        assert_eq!(e.message, "asset geo/t/1.bin answered 500");
        assert_eq!(e.status(), 503);
        let ok = block_on(required(&One(Ok(Some(b"x".to_vec()))), "a")).unwrap();
        assert_eq!(ok, b"x");
    }
}
