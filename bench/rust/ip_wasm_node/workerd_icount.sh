#!/usr/bin/env bash
# Instructions that workerd itself executes for REPS passes of the IP table workload (200 000
# addresses each, IP_FAMILY as in run.sh), under callgrind: `workerd_icount.sh WASM REPS` prints
# the total for 8 warm-up passes plus one request of REPS passes; run.sh subtracts REPS=0 from
# REPS=5.
# The same bare module as run.mjs, served by workerd directly (a generated capnp config), so
# the count is of workerd's own V8 and its code for this wasm, with nothing timed.
set -euo pipefail
W=$(realpath "$1"); REPS=$2
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
B="$ROOT/node_modules/@cloudflare/workerd-linux-64/bin/workerd"
T=$(mktemp -d); trap 'pkill -f "workerd serve $T/cfg.capnp" || true; rm -rf "$T"' EXIT
cp "$ROOT"/assets/ip/country/*.bin "$T/"; cp "$W" "$T/m.wasm"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 - "$T" "$PORT" <<'PY'
import os, sys
t, port = sys.argv[1], sys.argv[2]
pages = sorted(f for f in os.listdir(t) if f.startswith("page-"))
imports = "\n".join(f'import p{i} from "{p}";' for i, p in enumerate(pages))
open(f"{t}/w.mjs", "w").write(f'''const FAMILY = {os.environ.get('IP_FAMILY', '0')};
import wasmMod from "m.wasm";
import dir from "dir.bin";
{imports}
const pages = [{",".join(f"p{i}" for i in range(len(pages)))}];
let x;
function init() {{
  x = new WebAssembly.Instance(wasmMod, {{}}).exports;
  const put = (b) => {{ const u = new Uint8Array(b); const p = x.alloc(u.length); new Uint8Array(x.memory.buffer, p, u.length).set(u); return [p, u.length]; }};
  if (x.open(...put(dir)) < 0) throw new Error("directory refused");
  pages.forEach((b, i) => {{ if (!x.page(i, ...put(b))) throw new Error("page " + i); }});
  x.gen(200000, Number(FAMILY));
}}
export default {{ fetch(req) {{
  if (!x) init();
  return new Response(String(x.run(Number(new URL(req.url).searchParams.get("reps")))));
}} }};
''')
mods = ['(name = "w.mjs", esModule = embed "w.mjs")', '(name = "m.wasm", wasm = embed "m.wasm")',
        '(name = "dir.bin", data = embed "dir.bin")'] + [f'(name = "{p}", data = embed "{p}")' for p in pages]
open(f"{t}/cfg.capnp", "w").write(f'''using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .w)],
  sockets = [(name = "http", address = "127.0.0.1:{port}", http = (), service = "main")],
);
const w :Workerd.Worker = (modules = [{", ".join(mods)}], compatibilityDate = "2025-01-01");
''')
PY
valgrind --tool=callgrind --smc-check=all --callgrind-out-file=/dev/null "$B" serve "$T/cfg.capnp" > "$T/vg.out" 2>&1 &
VG=$!
U="http://127.0.0.1:$PORT/?reps"
get() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1]).read()' "$1"; }
for _ in $(seq 300); do get "$U=0" 2>/dev/null && break; sleep 1; done
for _ in 1 2 3 4 5 6 7 8; do get "$U=1"; done  # tier-up to the optimising compiler
get "$U=$REPS"
pkill -TERM -f "workerd serve $T/cfg.capnp"; wait "$VG" || true
awk '/Collected/ {print $4}' "$T/vg.out"
