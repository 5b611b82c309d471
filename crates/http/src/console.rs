//! The web console's static files: which names may be served, as what, and the headers that
//! keep its pages to their own scripts.

/// Content-Security-Policy of every console response: scripts, styles and requests from this
/// origin only, no inline script, no plugins, no framing.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
frame-ancestors 'none'";

/// The content type of a console file (`/www/{file}`), or `None` for a name that is not a
/// plain file name of a served kind (so no other asset, e.g. geo tiles, is reachable).
#[must_use]
pub fn content_type(file: &str) -> Option<&'static str> {
    let ok = !file.is_empty()
        && file.len() <= 64
        && !file.starts_with('.')
        && file
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    if !ok {
        return None;
    }
    match file.rsplit_once('.')?.1 {
        "js" => Some("text/javascript; charset=utf-8"),
        "css" => Some("text/css; charset=utf-8"),
        "bin" => Some("application/octet-stream"),
        "svg" => Some("image/svg+xml"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_of_served_kinds() {
        assert_eq!(
            content_type("app.js"),
            Some("text/javascript; charset=utf-8")
        );
        assert_eq!(
            content_type("outline.bin"),
            Some("application/octet-stream")
        );
        for bad in [
            "",
            "..",
            ".env",
            "../geo/index.bin",
            "a/b.js",
            "x.mmdb",
            "index.html",
            "a%2e.js",
            "noext",
        ] {
            assert_eq!(content_type(bad), None, "{bad}");
        }
    }
}
