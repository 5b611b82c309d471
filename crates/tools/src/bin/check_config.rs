//! `cargo run --bin check-config -- --wrangler-env FILE [--secrets FILE]`: the deployed worker's
//! configuration rules, run before anything is uploaded (`scripts/deploy.sh`, also with
//! `--dry-run`). Lists every problem at once, by variable name (never a value), and exits 1 if
//! there is one.
//!
//! `--wrangler-env` is the JSON that `python3 scripts/wrangler-env.py ENV check` prints for one
//! environment of wrangler.toml: `{"env": "staging", "vars": {...}, "ids": {"kv_namespaces
//! IPDB_CONFIG": "..."}}`. `--secrets` is the `wrangler secret bulk` file (format:
//! secrets.example.json). The rules are `egn_core::config::secrets`, the code the worker
//! itself runs, so a deploy this check passes does not answer 503 config_invalid for them.
//!
//! It also prints the Data API collections this configuration uses
//! (`egn_core::notify::Collections`, from `NOTIFY_COLLECTION`): the gateway's
//! `GATEWAY_COLLECTIONS` and its database role must name every one (docs/mongodb-gateway.md).
//! `--collections` prints only that comma-separated list, on stdout, for scripts:
//! `GATEWAY_COLLECTIONS=$(cargo run -q --bin check-config -- --wrangler-env F --collections)`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use egn_core::config::secrets::{self, Refused, Weakness};
use egn_core::config::{missing_secrets, Config, Vars};

#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error("usage: check-config --wrangler-env FILE [--secrets FILE] [--collections]")]
    Usage,
    #[error("cannot read {0}: {1}")]
    Read(String, std::io::Error),
    #[error("{0} is not the expected JSON: {1}")]
    Json(String, String),
}

fn string_map(
    file: &str,
    v: Option<&serde_json::Value>,
) -> Result<BTreeMap<String, String>, CliError> {
    let Some(v) = v else {
        return Ok(BTreeMap::new());
    };
    let obj = v
        .as_object()
        .ok_or_else(|| CliError::Json(file.to_owned(), "expected an object".into()))?;
    obj.iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k.clone(), s.clone())),
            other => Ok((k.clone(), other.to_string())),
        })
        .collect()
}

fn read_json(file: &str) -> Result<serde_json::Value, CliError> {
    let text = std::fs::read_to_string(file).map_err(|e| CliError::Read(file.to_owned(), e))?;
    serde_json::from_str(&text).map_err(|e| CliError::Json(file.to_owned(), e.to_string()))
}

/// A binding id that was never filled in.
fn placeholder_id(id: &str) -> bool {
    secrets::placeholder_in(id).is_some() || id.bytes().all(|b| b == b'0')
}

/// What a run found: the problems, and the collections the configuration uses.
struct Checked {
    problems: Vec<String>,
    collections: String,
}

fn run(args: &[String]) -> Result<(Checked, bool), CliError> {
    let mut env_file = None;
    let mut secrets_file = None;
    let mut only_collections = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--wrangler-env" => env_file = Some(it.next().ok_or(CliError::Usage)?.clone()),
            "--secrets" => secrets_file = Some(it.next().ok_or(CliError::Usage)?.clone()),
            "--collections" => only_collections = true,
            _ => return Err(CliError::Usage),
        }
    }
    let env_file = env_file.ok_or(CliError::Usage)?;
    let env = read_json(&env_file)?;
    let env_name = env["env"].as_str().unwrap_or("?").to_owned();
    let vars = string_map(&env_file, env.get("vars"))?;
    let ids = string_map(&env_file, env.get("ids"))?;
    let secret_values = match &secrets_file {
        Some(f) => string_map(f, Some(&read_json(f)?))?,
        None => BTreeMap::new(),
    };
    let mut problems = Vec::new();
    for (what, id) in &ids {
        if placeholder_id(id) {
            problems.push(format!(
                "{what}: still a placeholder in wrangler.toml [env.{env_name}] (create it and put its id there)"
            ));
        }
    }
    for name in secret_values.keys() {
        if vars.contains_key(name) {
            problems.push(format!(
                "{name}: is a var in wrangler.toml [env.{env_name}.vars]; secrets belong in the --secrets file only"
            ));
        }
    }
    let mut all = vars.clone();
    all.extend(secret_values.clone());
    let get = |n: &str| {
        all.get(n)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    if secrets::is_development(&get) {
        problems.push(format!(
            "{}: {:?} relaxes the secret rules and is for local runs only; remove it from [env.{env_name}.vars]",
            secrets::ENVIRONMENT_VAR,
            secrets::DEVELOPMENT
        ));
    }
    // The deployed rules, whatever ENVIRONMENT says.
    let deployed = |n: &str| {
        if n == secrets::ENVIRONMENT_VAR {
            None
        } else {
            get(n)
        }
    };
    let refused: Vec<Refused> = secrets::refused(&deployed);
    let mut named: Vec<String> = refused.iter().map(|r| r.var.clone()).collect();
    for r in &refused {
        let from = if secret_values.contains_key(&r.var) {
            "the --secrets file".to_owned()
        } else {
            format!("wrangler.toml [env.{env_name}.vars]")
        };
        let hint = match r.weakness {
            Weakness::Placeholder { .. } | Weakness::Published { .. } => "",
            _ => " (generate one: openssl rand -base64 48)",
        };
        problems.push(format!("{r} (in {from}){hint}"));
    }
    // Every other setting the worker parses (secret rules are covered above).
    let dev = |n: &str| {
        if n == secrets::ENVIRONMENT_VAR {
            Some(secrets::DEVELOPMENT.to_owned())
        } else {
            get(n)
        }
    };
    let mut notify = egn_core::notify::NotifyConfig::default();
    match Config::from_vars(&Vars::new(&dev)) {
        Ok(c) => notify = c.notify,
        Err(e) => {
            if !named.contains(&e.var) {
                named.push(e.var.clone());
                problems.push(e.to_string());
            }
            // The list still follows NOTIFY_COLLECTION when another setting is wrong.
            if let Some(c) = get("NOTIFY_COLLECTION") {
                notify.collection = c;
            }
        }
    }
    let collections = notify.collections().all().join(",");
    if secrets_file.is_some() {
        let missing = missing_secrets(|n| get(n).is_some());
        if !missing.is_empty() {
            eprintln!(
                "check-config: note: not in the --secrets file (must already be set on the worker): {}",
                missing.join(", ")
            );
        }
    }
    Ok((
        Checked {
            problems,
            collections,
        },
        only_collections,
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok((c, true)) => {
            println!("{}", c.collections);
            ExitCode::SUCCESS
        }
        Ok((c, false)) if c.problems.is_empty() => {
            eprintln!(
                "check-config: ok; the Data API must serve GATEWAY_COLLECTIONS={} (docs/mongodb-gateway.md)",
                c.collections
            );
            ExitCode::SUCCESS
        }
        Ok((Checked { problems, .. }, false)) => {
            eprintln!(
                "check-config: {} problem(s); nothing was deployed:",
                problems.len()
            );
            for p in &problems {
                eprintln!("  {p}");
            }
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("check-config: {e}");
            ExitCode::from(2)
        }
    }
}
