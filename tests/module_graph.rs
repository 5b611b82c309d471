//! No import cycles between sibling modules, in every crate of the workspace, and the crates'
//! dependency arrows point down: the layering is read off the sources, not kept by
//! convention. For every module of a crate's `src/` (`src/bin/` are separate crates), each
//! path it names (`crate::a::b`, `super::c`, `self::d`, grouped `use` lists included) becomes an
//! edge between the two siblings under their nearest common parent (a child naming its parent's
//! items, or a parent its child's, is how Rust modules work and is not an edge). Comments, each
//! file's trailing `#[cfg(test)]` module and the modules declared `#[cfg(test)] mod x;` (a test
//! module in its own file, a crate's shared test ports) are left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Cycles known and scheduled for removal: (crate, parent module ("" = crate root), a, b).
/// Empty: the last one (`api <-> notify`) went when the service took typed inputs.
const KNOWN: &[(&str, &str, &str, &str)] = &[];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().unwrap() != "bin" {
                files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/a/b.rs` → `["a", "b"]`, `src/a/mod.rs` → `["a"]`, `src/lib.rs` → `[]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of a file without comments and without its trailing test module.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path that starts with `crate::`, `super::` or `self::`, with `{a, b::c}` groups expanded
/// one level (enough for this code base's `use` lines).
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            if at > 0
                && (bytes[at - 1].is_ascii_alphanumeric() || matches!(bytes[at - 1], b'_' | b':'))
            {
                continue;
            }
            let rest = &code[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            let head: Vec<String> = rest[..end]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            if rest[end..].starts_with('{') {
                let close = rest[end..].find('}').map_or(rest.len(), |j| end + j);
                for item in rest[end + 1..close].split(',') {
                    let item = item.split(" as ").next().unwrap().trim();
                    let mut p = head.clone();
                    p.extend(
                        item.split("::")
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned),
                    );
                    out.push(p);
                }
            } else {
                out.push(head);
            }
        }
    }
    out
}

/// Resolves a path named in module `m` to the longest known module it names.
fn target(m: &[String], p: &[String], known: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut abs: Vec<String> = Vec::new();
    let mut rest = p;
    match p.first().map(String::as_str) {
        Some("crate") => rest = &p[1..],
        Some("self") => {
            abs = m.to_vec();
            rest = &p[1..];
        }
        Some("super") => {
            abs = m.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                abs.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    let mut best = abs.clone();
    for seg in rest {
        abs.push(seg.clone());
        if known.contains(&abs) {
            best = abs.clone();
        } else {
            break;
        }
    }
    Some(best)
}

type Edges = BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>;

/// The modules a file declares under `#[cfg(test)]` and keeps in files of their own
/// (`#[cfg(test)]` then `mod x;` or `pub(crate) mod x;` on the next line).
fn test_modules(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0] == "#[cfg(test)]")
        .filter_map(|w| {
            let decl = w[1].strip_suffix(';')?;
            let name = decl
                .strip_prefix("mod ")
                .or_else(|| decl.strip_prefix("pub(crate) mod "))?;
            Some(name.trim().to_owned())
        })
        .collect()
}

#[test]
fn a_test_module_in_its_own_file_is_found() {
    let text = "mod a;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\npub(crate) mod testing;\n#[cfg(test)]\nmod inline {\n}\n";
    assert_eq!(test_modules(text), ["tests", "testing"]);
}

/// parent module → (child → the siblings it names), for one crate's `src/`.
fn sibling_edges(src: &Path) -> Edges {
    let mut all = Vec::new();
    files(src, &mut all);
    let known: BTreeSet<Vec<String>> = all.iter().map(|f| module_of(src, f)).collect();
    let tests: BTreeSet<Vec<String>> = all
        .iter()
        .flat_map(|f| {
            let m = module_of(src, f);
            test_modules(&std::fs::read_to_string(f).unwrap())
                .into_iter()
                .map(move |name| [m.clone(), vec![name]].concat())
        })
        .collect();
    let mut edges = Edges::new();
    for f in &all {
        let m = module_of(src, f);
        if (1..=m.len()).any(|n| tests.contains(&m[..n])) {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        for p in paths(&code) {
            let Some(t) = target(&m, &p, &known) else {
                continue;
            };
            let common = m.iter().zip(&t).take_while(|(a, b)| a == b).count();
            if common == m.len() || common == t.len() {
                continue; // parent ↔ descendant
            }
            edges
                .entry(m[..common].to_vec())
                .or_default()
                .entry(m[common].clone())
                .or_default()
                .insert(t[common].clone());
        }
    }
    edges
}

/// The workspace's crates: the worker (root) and the layers under `crates/`.
const CRATES: &[&str] = &[".", "crates/core", "crates/http", "crates/tools"];

#[test]
fn no_import_cycles_between_sibling_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cycles = Vec::new();
    for krate in CRATES {
        let edges = sibling_edges(&root.join(krate).join("src"));
        if *krate == "." {
            assert!(
                edges
                    .get(&vec!["edge".to_owned()])
                    .is_some_and(|e| !e.is_empty()),
                "the scan sees the adapter's sibling imports: {edges:?}"
            );
        }
        if *krate == "crates/core" {
            assert!(
                edges
                    .get(&vec!["notify".to_owned()])
                    .is_some_and(|e| e.len() > 3),
                "the scan sees the core's sibling imports: {edges:?}"
            );
        }
        for (parent, g) in &edges {
            let parent = parent.join("::");
            for (a, outs) in g {
                for b in outs {
                    if a < b && reaches(g, b, a) {
                        let known = KNOWN.iter().any(|k| {
                            (k.0, k.1, k.2, k.3)
                                == (*krate, parent.as_str(), a.as_str(), b.as_str())
                        });
                        if !known {
                            cycles.push(format!("{krate}, under '{parent}': {a} <-> {b}"));
                        }
                    }
                }
            }
        }
        for (k, parent, a, b) in KNOWN.iter().filter(|k| k.0 == *krate) {
            let g = &edges[&parent
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()];
            assert!(
                g.get(*a).is_some_and(|o| o.contains(*b)) && reaches(g, b, a),
                "{k}: {a} <-> {b} is gone: take it out of KNOWN"
            );
        }
    }
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
}

/// The dependency arrows are the architecture: core names neither `worker` nor the other
/// layers, http only the core, tools never `worker`. (The compiler then enforces the rest: a
/// crate cannot name what it does not depend on.)
#[test]
fn the_layers_depend_only_downward() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let deps = |krate: &str| -> Vec<String> {
        let text = std::fs::read_to_string(root.join(krate).join("Cargo.toml")).unwrap();
        let mut names = Vec::new();
        let mut in_deps = false;
        for line in text.lines() {
            let l = line.trim();
            if l.starts_with('[') {
                in_deps = l.ends_with("dependencies]");
            } else if in_deps && !l.starts_with('#') {
                if let Some((name, _)) = l.split_once('=') {
                    names.push(name.trim().to_owned());
                }
            }
        }
        assert!(!names.is_empty(), "{krate}: no dependencies read");
        names
    };
    let core = deps("crates/core");
    for banned in ["worker", "egn-http", "egn-tools"] {
        assert!(
            !core.iter().any(|d| d == banned),
            "core depends on {banned}"
        );
    }
    let http = deps("crates/http");
    assert!(http.iter().any(|d| d == "egn-core"));
    for banned in ["worker", "egn-tools"] {
        assert!(
            !http.iter().any(|d| d == banned),
            "http depends on {banned}"
        );
    }
    assert!(!deps("crates/tools").iter().any(|d| d == "worker"));
    assert!(
        deps(".").iter().any(|d| d == "worker"),
        "the root is the worker"
    );
}

fn reaches(g: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n.clone()) {
            stack.extend(g.get(&n).into_iter().flatten().cloned());
        }
    }
    false
}

#[test]
fn the_scan_finds_a_cycle_when_there_is_one() {
    // The reader itself, on a made-up pair: `a` names `super::b`, `b` names `crate::x::a`.
    let known: BTreeSet<Vec<String>> = [
        vec![],
        vec!["x".into()],
        vec!["x".into(), "a".into()],
        vec!["x".into(), "b".into()],
    ]
    .into_iter()
    .collect();
    let a = vec!["x".to_owned(), "a".to_owned()];
    let b = vec!["x".to_owned(), "b".to_owned()];
    let pa = paths(&code_of("use super::{b, c as d};\n// use super::z;\n"));
    assert_eq!(pa, [vec!["super", "b"], vec!["super", "c"]]);
    assert_eq!(target(&a, &pa[0], &known), Some(b.clone()));
    let pb = paths("fn f() { crate::x::a::go() }");
    assert_eq!(target(&b, &pb[0], &known), Some(a.clone()));
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]
    .into_iter()
    .collect();
    assert!(reaches(&g, "b", "a"));
    assert!(code_of("use a;\n#[cfg(test)]\nmod tests { use super::x; }")
        .find("super")
        .is_none());
}
