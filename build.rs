//! The OpenAPI document, rendered natively at build time by `egn_http::openapi::document()`: the
//! worker serves it as a constant, so none of the code that builds it is in the wasm (it was
//! the largest single part of it). Cargo reruns this when egn-http (a build dependency) changes.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let doc = egn_http::openapi::document().to_string();
    let out =
        std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("openapi.json");
    std::fs::write(out, doc).expect("write openapi.json");
}
