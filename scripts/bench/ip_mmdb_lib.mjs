// IP -> country with npm mmdb-lib (Reader.get), same addresses as examples/ip_report.rs.
// Usage: node ip_mmdb_lib.mjs OUT_DIR DB.mmdb...   prints "database<TAB>median ns" lines.
import fs from "node:fs";
import { Reader } from "mmdb-lib";

const [out, ...dbs] = process.argv.slice(2);
const ips = fs.readFileSync(`${out}/ips.txt`, "utf8").trim().split("\n");
for (const p of dbs) {
  const r = new Reader(fs.readFileSync(p));
  for (let i = 0; i < 20000; i++) r.get(ips[i]); // JIT warm-up
  const ns = [];
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < ips.length; i += 1000) {
      const t = process.hrtime.bigint();
      for (let k = i; k < i + 1000; k++) r.get(ips[k]);
      ns.push(Number(process.hrtime.bigint() - t) / 1000);
    }
  }
  ns.sort((a, b) => a - b);
  console.log(`${p}\t${ns[ns.length >> 1].toFixed(0)}`);
}
