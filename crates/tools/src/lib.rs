//! Build-time and operator tools over the core: the asset builder's geo pipeline (GeoJSON
//! source, index builder, outline, the point-in-polygon oracle the index is checked against),
//! the binaries (`build-assets`, `ipdb-check`, `check-config`) and the fuzz
//! targets. Native only: none of it is in the worker's wasm.
#![cfg(not(target_arch = "wasm32"))]

pub mod build_stamp;
pub mod fuzzing;

/// The core's geo reader plus the build-time side that writes what it reads.
pub mod geo {
    pub use egn_core::geo::*;

    pub mod build;
    #[doc(hidden)]
    pub mod fixture;
    pub mod oracle;
    pub mod outline;
    pub mod source;
    pub mod zones;
}
