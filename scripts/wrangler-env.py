"""Prints one setting of a wrangler.toml environment, for the operating scripts.

    python3 scripts/wrangler-env.py ENV FIELD      FIELD: bucket | kv_id | kv_key | name | check
    python3 scripts/wrangler-env.py ENV var NAME   the environment's variable NAME (empty if unset)

`check` prints the JSON that `cargo run --profile assets --bin check-config -- --wrangler-env FILE` reads: the
environment's vars and the ids of its bindings. WRANGLER_TOML names another file than the repo's
wrangler.toml (tests).

ENV is staging or production ([env.ENV]) or "" for the top level (local development). Bindings
and vars are read from the environment itself, as wrangler does (they are not inherited).
"""
import json
import os
import sys
import tomllib
from pathlib import Path

env, field = sys.argv[1], sys.argv[2]
config = tomllib.loads(Path(os.environ.get("WRANGLER_TOML") or
                             Path(__file__).resolve().parent.parent / "wrangler.toml").read_text())
section = config if env == "" else config.get("env", {}).get(env)
if section is None:
    sys.exit(f"wrangler.toml has no [env.{env}]")


def binding(kind, name):
    for b in section.get(kind, []):
        if b.get("binding") == name:
            return b
    sys.exit(f"[env.{env}] has no {kind} binding {name}")


if field == "bucket":
    print(binding("r2_buckets", "IPDB_BUCKET")["bucket_name"])
elif field == "kv_id":
    print(binding("kv_namespaces", "IPDB_CONFIG")["id"])
elif field == "kv_key":
    print(section.get("vars", {}).get("IPDB_KV_KEY", "ipdb/current"))
elif field == "var":
    print(section.get("vars", {}).get(sys.argv[3], ""))
elif field == "name":
    print(section.get("name") or (config["name"] + (f"-{env}" if env else "")))
elif field == "check":
    ids = {}
    for kind, key in (("kv_namespaces", "id"), ("d1_databases", "database_id"), ("hyperdrive", "id")):
        for b in section.get(kind, []):
            ids[f"{kind} {b.get('binding')} {key}"] = str(b.get(key, ""))
    print(json.dumps({"env": env or "(top level)", "vars": section.get("vars", {}), "ids": ids}))
else:
    sys.exit(f"unknown field {field}")
