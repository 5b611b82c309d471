//! Whether an asset build would only rewrite what the output directory already holds.
//!
//! Every wrangler build runs the builder (each `deploy --dry-run`, `wrangler dev`, the workerd
//! tests' builds), and a full build takes ~13 CPU-s. The builder is deterministic, so a build
//! whose builder binary, arguments and input files are byte-for-byte those of the last one
//! writes the same bytes: it can stop before reading anything, provided the outputs are still
//! the ones that build wrote. The stamp (`.build-stamp` in the output directory) holds the
//! digest of the inputs and of the manifest written; a match also needs every file the manifest
//! lists to have its recorded SHA-256, so an edited or deleted asset is rebuilt.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};

const STAMP_FILE: &str = ".build-stamp";

pub struct Stamp {
    inputs: String,
}

fn sha256_hex(bytes: &[u8]) -> String {
    egn_core::ip::hex(&Sha256::digest(bytes))
}

impl Stamp {
    /// The digest of the builder's executable `exe`, `args` and the bytes of every file in
    /// `inputs`.
    pub fn new(exe: &Path, inputs: &[PathBuf], args: &[&str]) -> io::Result<Stamp> {
        let mut h = Sha256::new();
        let mut part = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        part(&std::fs::read(exe)?);
        for a in args {
            part(a.as_bytes());
        }
        for path in inputs {
            part(path.to_string_lossy().as_bytes());
            part(&std::fs::read(path)?);
        }
        Ok(Stamp {
            inputs: egn_core::ip::hex(&h.finalize()),
        })
    }

    /// True when `out` holds the outputs of a build from the same inputs, intact.
    pub fn matches(&self, out: &Path) -> io::Result<bool> {
        let Ok(saved) = std::fs::read_to_string(out.join(STAMP_FILE)) else {
            return Ok(false);
        };
        let Some((inputs, manifest_sha)) = saved.trim().split_once(' ') else {
            return Ok(false);
        };
        let Ok(manifest) = std::fs::read(out.join("manifest.json")) else {
            return Ok(false);
        };
        if inputs != self.inputs || sha256_hex(&manifest) != manifest_sha {
            return Ok(false);
        }
        let Ok(manifest) = serde_json::from_slice::<Value>(&manifest) else {
            return Ok(false);
        };
        let mut files: Vec<&Value> = ["geo", "tz", "ip"]
            .iter()
            .filter_map(|s| manifest[*s]["files"].as_array())
            .flatten()
            .collect();
        files.push(&manifest["outline"]["file"]);
        for f in files {
            let (Some(path), Some(sha)) = (f["path"].as_str(), f["sha256"].as_str()) else {
                return Ok(false);
            };
            match std::fs::read(out.join(path)) {
                Ok(bytes) if sha256_hex(&bytes) == sha => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Records a finished build in `out` (after its manifest is written).
    pub fn write(&self, out: &Path) -> io::Result<()> {
        let manifest = std::fs::read(out.join("manifest.json"))?;
        let text = format!("{} {}\n", self.inputs, sha256_hex(&manifest));
        std::fs::write(out.join(STAMP_FILE), text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory with an "executable", one input and a built output listed in a
    /// manifest, as `build-assets` leaves them.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("build-stamp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("out/geo")).unwrap();
        std::fs::write(dir.join("exe"), b"builder v1").unwrap();
        std::fs::write(dir.join("input"), b"polygons").unwrap();
        std::fs::write(dir.join("out/geo/index.bin"), b"index").unwrap();
        let manifest = serde_json::json!({
            "geo": { "files": [{ "path": "geo/index.bin", "sha256": sha256_hex(b"index") }] },
            "outline": { "file": { "path": "geo/index.bin", "sha256": sha256_hex(b"index") } },
        });
        std::fs::write(dir.join("out/manifest.json"), manifest.to_string()).unwrap();
        dir
    }

    fn stamp(dir: &Path, args: &[&str]) -> Stamp {
        Stamp::new(&dir.join("exe"), &[dir.join("input")], args).unwrap()
    }

    #[test]
    fn same_inputs_and_intact_outputs_match() {
        let dir = scratch("match");
        let out = dir.join("out");
        assert!(
            !stamp(&dir, &["dbip"]).matches(&out).unwrap(),
            "no stamp yet"
        );
        stamp(&dir, &["dbip"]).write(&out).unwrap();
        assert!(stamp(&dir, &["dbip"]).matches(&out).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn any_changed_input_builder_argument_or_output_rebuilds() {
        let dir = scratch("changes");
        let out = dir.join("out");
        stamp(&dir, &["dbip"]).write(&out).unwrap();
        assert!(
            !stamp(&dir, &["iptoasn"]).matches(&out).unwrap(),
            "argument"
        );
        std::fs::write(dir.join("input"), b"polygons, repaired").unwrap();
        assert!(!stamp(&dir, &["dbip"]).matches(&out).unwrap(), "input");
        stamp(&dir, &["dbip"]).write(&out).unwrap();
        std::fs::write(dir.join("exe"), b"builder v2").unwrap();
        assert!(!stamp(&dir, &["dbip"]).matches(&out).unwrap(), "builder");
        stamp(&dir, &["dbip"]).write(&out).unwrap();
        std::fs::write(out.join("geo/index.bin"), b"edited").unwrap();
        assert!(
            !stamp(&dir, &["dbip"]).matches(&out).unwrap(),
            "output edited"
        );
        std::fs::remove_file(out.join("geo/index.bin")).unwrap();
        assert!(
            !stamp(&dir, &["dbip"]).matches(&out).unwrap(),
            "output gone"
        );
        std::fs::write(out.join("geo/index.bin"), b"index").unwrap();
        assert!(stamp(&dir, &["dbip"]).matches(&out).unwrap(), "restored");
        std::fs::write(out.join("manifest.json"), b"{}").unwrap();
        assert!(!stamp(&dir, &["dbip"]).matches(&out).unwrap(), "manifest");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
