//! `check-config` prints the Data API collections the configuration uses, from the one list in
//! `egn_core::notify::Collections`: the gateway's allowlist is written from this output.

use std::process::Command;

fn check_config(vars: &str, extra: &[&str]) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("check-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("env-{}.json", extra.len()));
    std::fs::write(
        &file,
        format!(r#"{{"env": "t", "vars": {vars}, "ids": {{}}}}"#),
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_check-config"))
        .arg("--wrangler-env")
        .arg(&file)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_collections_follow_notify_collection() {
    let only = check_config(r#"{"NOTIFY_COLLECTION": "inbox"}"#, &["--collections"]);
    assert!(only.status.success());
    assert_eq!(
        String::from_utf8(only.stdout).unwrap(),
        "inbox,inbox_dead,inbox_preferences,inbox_erasures,inbox_senders\n"
    );
    let full = check_config("{}", &[]);
    assert!(full.status.success());
    let said = String::from_utf8(full.stderr).unwrap();
    let list = egn_core::notify::NotifyConfig::default()
        .collections()
        .all()
        .join(",");
    assert!(
        said.contains(&format!("GATEWAY_COLLECTIONS={list}")),
        "{said}"
    );
}
