// ns/lookup of mmdb-lib (npm), the JavaScript reader, on the same address mix as
// bench/rust/examples/ip_bench.rs (75% IPv4 uniform, 25% IPv6 in dense allocations), for each database.
// Usage: node bench/probes/ip_mmdb_lib.mjs NAME=FILE.mmdb…   Prints markdown rows.
import fs from "node:fs";
import { Reader } from "mmdb-lib";

function addresses(n) {
  let x = 0x9e3779b97f4a7c15n;
  const M = (1n << 64n) - 1n;
  const next = () => {
    x ^= (x << 13n) & M; x ^= x >> 7n; x ^= (x << 17n) & M;
    return x;
  };
  const dense = [0x2001, 0x2400, 0x2600, 0x2a00, 0x2a02, 0x2c0f];
  const out = [];
  for (let i = 0; i < n; i++) {
    if (i % 4 === 3) {
      const hi = dense[Number(next() % 6n)];
      const r = next();
      const segs = [hi, Number((r >> 48n) & 0xffffn), Number((r >> 32n) & 0xffffn), Number((r >> 16n) & 0xffffn)];
      out.push(`${segs.map((s) => s.toString(16)).join(":")}::`);
    } else {
      const v = Number(next() >> 32n);
      out.push([v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join("."));
    }
  }
  return out;
}

const ips = addresses(300_000);
console.log("| database | `mmdb-lib` ns/lookup (node " + process.version + ") |");
console.log("|---|---:|");
for (const arg of process.argv.slice(2)) {
  const [name, file] = arg.split("=");
  const reader = new Reader(fs.readFileSync(file));
  const runs = [];
  for (let round = 0; round < 7; round++) {
    const t = process.hrtime.bigint();
    let hits = 0;
    for (const ip of ips) if (reader.get(ip)) hits++;
    runs.push(Number(process.hrtime.bigint() - t) / ips.length);
    if (hits === 0) throw new Error("no hits");
  }
  runs.sort((a, b) => a - b);
  console.log(`| ${name} | ${runs[runs.length >> 1].toFixed(0)} |`);
}
