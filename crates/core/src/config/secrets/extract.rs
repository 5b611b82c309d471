//! Finding secret-looking values in text. Shared, by `#[path]`, with the crate's build script,
//! which extracts the published values from [`PUBLISHED_FILES`] at build time: only std here.

/// Published values shorter than this are only refused when equal, not when contained (a short
/// string can occur by chance inside a random one).
pub const MIN_CONTAINED_LEN: usize = 8;

/// Files, relative to the repository root, whose secret-looking values are published with this
/// repository. The first is the bulk-secrets example: every value of it counts, whatever its name.
pub const PUBLISHED_FILES: &[&str] = &[
    "secrets.example.json",
    ".dev.vars.example",
    "stack/__main__.py",
    "stack/gateway.py",
    "README.md",
    "docs/deploy.md",
    "docs/mongodb-gateway.md",
    "tests/js/harness.mjs",
    "tests/js/gateway.mjs",
    "tests/js/smoke.test.mjs",
    "stack/tests/conftest.py",
];

/// Secret-looking values in `text`: a quoted literal (or the value of `NAME=value`) of at least
/// 8 characters, without spaces, that follows a name containing `secret`, `token`, `key` or
/// `password` (`"SERVICE_TOKEN": "…"`, `SERVICE_TOKEN="…"`, `redis_token = "…"`, `KEY = '…'`).
pub fn secret_looking_values(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let q = b[i];
            let (start, end) = if q == b'"' || q == b'\'' || q == b'`' {
                match line[i + 1..].find(q as char) {
                    Some(n) => (i + 1, i + 1 + n),
                    None => break,
                }
            } else if q == b'=' && i + 1 < b.len() && !matches!(b[i + 1], b' ' | b'"' | b'\'') {
                // NAME=value (shell, env files), up to the next space.
                let n = line[i + 1..]
                    .find([' ', ';', '&'])
                    .unwrap_or(line.len() - i - 1);
                (i + 1, i + 1 + n)
            } else {
                i += 1;
                continue;
            };
            let value = &line[start..end];
            let before = if q == b'=' { &line[..=i] } else { &line[..i] };
            if value.len() >= MIN_CONTAINED_LEN
                && !value.contains(['$', '{', '}', '<', '>', ' ', '\\', '(', ')', '*'])
                && follows_secret_name(before)
            {
                out.push(value.to_owned());
            }
            // A literal's closing quote is not the next one's opening quote.
            i = end + 1;
        }
    }
    out
}

/// Whether `before` (the text in front of a literal) ends with a secret-like name and separators.
fn follows_secret_name(before: &str) -> bool {
    let trimmed = before.trim_end_matches([' ', '\t', '"', '\'', ':', '=', ',']);
    if trimmed.len() == before.len() || before.len() - trimmed.len() > 6 {
        return false;
    }
    let name: String = trimmed
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<String>()
        .to_ascii_lowercase();
    ["secret", "token", "key", "password", "passwd"]
        .iter()
        .any(|w| name.contains(w))
}
