//! Query strings as form-urlencoded pairs (`%3A` and `+` decoded), shared by every route.

use std::borrow::Cow;

/// All `key=value` pairs in order.
pub fn pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    form_urlencoded::parse(query.as_bytes())
}

/// The first value of `name`.
pub fn param(query: &str, name: &str) -> Option<String> {
    pairs(query)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}
