//! Summary templates: `notificationType` → text, parsed once and checked by `cargo test`.
//!
//! `{actor}` is the rendered sender list; every other `{name}` must be one of the template's
//! declared arguments, which events of that type are then required to carry (checked at the
//! boundary through [`required_args`]). So rendering never meets an unknown or missing
//! placeholder, and a typo in the table fails a unit test rather than a request.

use std::sync::LazyLock;

/// The table: type, text, the `messageArguments` it names.
const TEMPLATES: &[(&str, &str, &[&str])] = &[
    ("like", "{actor} liked your post", &[]),
    ("comment", "{actor} commented on your post", &[]),
    ("follow", "{actor} started following you", &[]),
    ("mention", "{actor} mentioned you", &[]),
    ("reply", "{actor} replied: {excerpt}", &["excerpt"]),
];
/// For types without a template of their own.
const FALLBACK: (&str, &str, &[&str]) = ("", "{actor} sent you a notification", &[]);

/// A parsed template piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Literal text.
    Text(&'static str),
    /// The sender list ("Ana and 3 others").
    Actor,
    /// A message argument.
    Arg(&'static str),
}

/// Why a template is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(String);

fn parse(kind: &str, text: &'static str, args: &[&str]) -> Result<Vec<Piece>, TemplateError> {
    let err = |m: String| Err(TemplateError(format!("template {kind:?}: {m}")));
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return err("unmatched '}'".into());
        }
        let Some(len) = rest[open + 1..].find(['{', '}']) else {
            return err("unclosed '{'".into());
        };
        let name = &rest[open + 1..open + 1 + len];
        if rest.as_bytes()[open + 1 + len] == b'{'
            || name.is_empty()
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return err(format!("bad placeholder near {:?}", &rest[open..]));
        }
        if open > 0 {
            out.push(Piece::Text(&rest[..open]));
        }
        out.push(match name {
            "actor" => Piece::Actor,
            n if args.contains(&n) => Piece::Arg(n),
            n => return err(format!("unknown placeholder {{{n}}}")),
        });
        rest = &rest[open + len + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    if !out.contains(&Piece::Actor) {
        return err("no {actor}".into());
    }
    Ok(out)
}

type Parsed = Vec<(&'static str, Vec<Piece>, &'static [&'static str])>;

fn parse_all() -> Result<Parsed, TemplateError> {
    TEMPLATES
        .iter()
        .chain(std::iter::once(&FALLBACK))
        .map(|&(k, t, a)| Ok((k, parse(k, t, a)?, a)))
        .collect()
}

// The table is a constant that `cargo test` parses, so this cannot fail in a build that passed.
static PARSED: LazyLock<Parsed> = LazyLock::new(|| parse_all().unwrap_or_default());

/// Validates the table (the configuration calls it at start; the error names the template).
///
/// # Errors
/// The first invalid template.
pub fn check_templates() -> Result<(), TemplateError> {
    parse_all().map(|_| ())
}

/// The pieces and arguments of a type's template (the fallback for unknown types).
pub(crate) fn template(kind: &str) -> (&'static [Piece], &'static [&'static str]) {
    PARSED
        .iter()
        .find(|(k, _, _)| *k == kind && !k.is_empty())
        .or_else(|| PARSED.last())
        .map_or((&[], &[]), |(_, p, a)| (p.as_slice(), *a))
}

/// The fallback template's pieces.
pub(crate) fn fallback() -> &'static [Piece] {
    PARSED.last().map_or(&[], |(_, p, _)| p.as_slice())
}

/// The `messageArguments` an event of this type must carry.
#[must_use]
pub fn required_args(notification_type: &str) -> &'static [&'static str] {
    template(notification_type).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_valid() {
        check_templates().unwrap();
        assert_eq!(PARSED.len(), TEMPLATES.len() + 1);
        assert_eq!(required_args("reply"), ["excerpt"]);
        assert!(required_args("unknown-kind").is_empty());
        assert_eq!(
            template("reply").0,
            [
                Piece::Actor,
                Piece::Text(" replied: "),
                Piece::Arg("excerpt")
            ]
        );
    }

    #[test]
    fn typos_and_unknown_placeholders_are_errors() {
        for (text, args) in [
            ("{actr} liked", &[][..]),
            ("{actor} liked {post", &[]),
            ("{actor} liked post}", &[]),
            ("{actor} {}", &[]),
            ("{actor} {a b}", &[]),
            ("{actor} {a{b}", &[]),
            ("nobody liked it", &[]),
            ("{actor} {post}", &["postt"]),
        ] {
            assert!(parse("t", text, args).is_err(), "{text}");
        }
        assert!(parse("t", "{actor} on {post}", &["post"]).is_ok());
    }
}
