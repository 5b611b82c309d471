//! Query strings as form-urlencoded pairs (`%3A` and `+` decoded), shared by every route.

use crate::ApiError;
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

/// A count parameter of the `/__bench/*` routes: `default` when absent, at most `max`.
///
/// # Errors
/// 400 `invalid_parameter` for a value that is not a number or over `max`.
pub fn count(query: &str, name: &str, default: usize, max: usize) -> Result<usize, ApiError> {
    let n = param(query, name)
        .map(|v| v.parse::<usize>())
        .transpose()
        .map_err(|_| ApiError::invalid_parameter(format!("{name} must be a number")))?
        .unwrap_or(default);
    if n > max {
        return Err(ApiError::invalid_parameter(format!(
            "{name} is at most {max}"
        )));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_default_parse_and_stay_bounded() {
        assert_eq!(super::count("a=1", "n", 7, 10).unwrap(), 7);
        assert_eq!(super::count("n=10", "n", 7, 10).unwrap(), 10);
        let e = super::count("n=11", "n", 7, 10).unwrap_err();
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("invalid_parameter", "n is at most 10")
        );
        let e = super::count("n=x", "n", 7, 10).unwrap_err();
        assert_eq!(e.message, "n must be a number");
    }
}
