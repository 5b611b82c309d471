// The wasm side of run.sh: loads the table into the bare module and times the same passes as
// examples/native.rs (IP_FAMILY=4|6: one family only). `node run.mjs WASM` prints min and median ns/lookup over 15 passes of
// 1 M addresses; `node run.mjs WASM icount REPS` runs REPS passes of 200 000 (callgrind).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../assets/ip/country");
const { instance } = await WebAssembly.instantiate(readFileSync(process.argv[2]), {});
const x = instance.exports;
const FAMILY = Number(process.env.IP_FAMILY || 0);
const put = (bytes) => { const p = x.alloc(bytes.length); new Uint8Array(x.memory.buffer, p, bytes.length).set(bytes); return p; };
const d = readFileSync(`${dir}/dir.bin`);
const pages = x.open(put(d), d.length);
if (pages < 0) throw new Error("directory refused");
for (let i = 0; i < pages; i++) {
  const b = readFileSync(`${dir}/page-${String(i).padStart(3, "0")}.bin`);
  if (!x.page(i, put(b), b.length)) throw new Error(`page ${i} refused`);
}
if (process.argv[3] === "icount") {
  x.gen(200_000, FAMILY);
  for (let k = 0; k < 4; k++) x.run(1); // optimised tier before the counted passes
  x.run(Number(process.argv[4]));
} else {
  const N = 1_000_000;
  x.gen(N, FAMILY);
  x.run(1);
  const v = [];
  for (let k = 0; k < 15; k++) { const t = performance.now(); x.run(3); v.push(((performance.now() - t) * 1e6) / (3 * N)); }
  v.sort((a, b) => a - b);
  console.log(v[0].toFixed(1), v[7].toFixed(1));
}
