//! Every secret-looking value written anywhere in this repository's examples, docs, scripts and
//! tests must be refused by the deployed worker's check (`config::secrets::check_secret`): copied
//! into a deployment, it answers 503 config_invalid instead of serving with a public secret.
//! A new strong-looking literal fails this test until its file is added to
//! `config::secrets::PUBLISHED_FILES` (or the value is drawn at run time instead).

use std::path::{Path, PathBuf};

use egn_core::config::secrets::{check_secret, published, secret_looking_values};

const SKIP_DIRS: &[&str] = &[
    ".git",
    "target",
    "node_modules",
    ".venv",
    "build",
    "assets",
    ".wrangler",
    "fuzz",
    "src",
];
const EXTENSIONS: &[&str] = &[
    "md",
    "json",
    "example",
    "toml",
    "mjs",
    "js",
    "ts",
    "py",
    "sh",
    "kt",
    "kts",
    "yml",
    "yaml",
    "txt",
    "service",
    "conf",
    "env",
    "Caddyfile",
    "Dockerfile",
];

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !SKIP_DIRS.contains(&name.as_str()) {
                walk(&p, out);
            }
        } else if name != "package-lock.json"
            && name != "Cargo.lock"
            && (EXTENSIONS
                .iter()
                .any(|x| name.ends_with(&format!(".{x}")) || name == *x)
                || name.starts_with(".dev.vars"))
        {
            out.push(p);
        }
    }
}

#[test]
fn every_secret_looking_value_in_the_repository_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("secrets.example.json"))
            && files.iter().any(|f| f.ends_with("tests/js/harness.mjs")),
        "the walk reaches the examples and the tests"
    );
    let mut seen = 0;
    let mut passing = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for v in secret_looking_values(&text) {
            seen += 1;
            if check_secret(&v).is_ok() {
                passing.push(format!(
                    "{}: {v}",
                    f.strip_prefix(root).unwrap_or(f).display()
                ));
            }
        }
    }
    assert!(
        seen >= 10,
        "found only {seen} candidates: is the extractor broken?"
    );
    assert!(
        passing.is_empty(),
        "values a deployed worker would accept, published in the repository (add the file to \
         PUBLISHED_FILES or draw the value at run time):\n  {}",
        passing.join("\n  ")
    );
}

#[test]
fn the_published_list_is_extracted_from_the_files() {
    let list: Vec<&str> = published().iter().map(|(v, _)| *v).collect();
    for v in [
        "local-dev-service-token",
        "local-dev-redis-readonly-token",
        "test-hs256-secret-of-at-least-32-characters",
        "replace-with-a-long-random-token",
    ] {
        assert!(list.contains(&v), "{v} not in {list:?}");
    }
}
