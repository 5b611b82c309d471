#!/usr/bin/env bash
# Native vs node-V8 wasm on the IP table lookup (the core crate's lookup; see Cargo.toml).
#   bash bench/rust/ip_wasm_node/run.sh            6 interleaved rounds: min and median ns
#   IP_FAMILY=4 (or 6) bash …/run.sh [--icount]        the same on one address family only
#   bash bench/rust/ip_wasm_node/run.sh --icount   instructions per lookup under callgrind (valgrind):
#                                                     native, node's V8, and workerd itself
#                                                     (workerd_icount.sh)
# Needs the built assets (bash scripts/build-assets.sh). Timings on a shared VM vary by tens of
# percent between rounds; instruction counts do not.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="$PWD/../../../target/ip-wasm-node"
cargo build -q --offline --release --target wasm32-unknown-unknown
cargo build -q --offline --release --example native
W="$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/ip_wasm_node.wasm"
N="$CARGO_TARGET_DIR/release/examples/native"
if [ "${1:-}" = "--icount" ]; then
  ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | awk '/Collected/ {print $4}'; }
  n1=$(ir "$N" icount 1); n5=$(ir "$N" icount 5)
  # --no-liftoff: without it every counted pass ran V8's baseline code (there is no on-stack
  # replacement for wasm and a single-threaded V8 never installed the optimised code).
  w1=$(ir --smc-check=all node --single-threaded --no-liftoff run.mjs "$W" icount 1)
  w5=$(ir --smc-check=all node --single-threaded --no-liftoff run.mjs "$W" icount 5)
  d0=$(bash workerd_icount.sh "$W" 0); d5=$(bash workerd_icount.sh "$W" 5)
  python3 -c "n=($n5-$n1)/8e5; w=($w5-$w1)/8e5; d=($d5-$d0)/1e6
print(f'instructions/lookup: native {n:.0f} | wasm in node V8 {w:.0f} ({w/n:.2f}x) | wasm in workerd {d:.0f} ({d/n:.2f}x)')"
  exit
fi
for _ in 1 2 3 4 5 6; do echo "$("$N") $(node run.mjs "$W")"; done | python3 -c '
import sys, statistics as st
r = [list(map(float, l.split())) for l in sys.stdin]
nmin, wmin = min(x[0] for x in r), min(x[2] for x in r)
nmed, wmed = st.median(x[1] for x in r), st.median(x[3] for x in r)
print(f"native min {nmin:.1f} median {nmed:.1f} ns | wasm (node V8) min {wmin:.1f} median {wmed:.1f} ns | ratio min {wmin/nmin:.2f} median {wmed/nmed:.2f}")'
