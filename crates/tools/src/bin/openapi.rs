//! `cargo run -p egn-tools --bin openapi > openapi.json` prints the OpenAPI document the worker
//! serves at `/openapi.json` (the same value, pretty-printed: the worker serves `src/openapi.json`,
//! which `tests/docs.rs` keeps equal to `egn_http::openapi::document`), for tools that cannot ask
//! a running worker.

fn main() {
    let doc = egn_http::openapi::document();
    let text = serde_json::to_string_pretty(&doc).expect("a JSON value serializes");
    println!("{text}");
}
