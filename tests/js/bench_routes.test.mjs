// `/__bench/*` is compiled only into the bench build (cargo feature `bench`, build-bench/): the
// deployed build/ answers those paths exactly as it answers any unknown path, whatever
// ENABLE_BENCH says (the harness turns it on for every worker it starts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { startWorker, BENCH_BUILD } from "./harness.mjs";

// Everything a client sees of an answer, with the request id (new on every request) masked.
async function seen(w, method, p) {
  const r = await fetch(w.base + p, { method, headers: { origin: "https://app.example" } });
  const rid = r.headers.get("x-request-id");
  const headers = Object.fromEntries([...r.headers].filter(([k]) => !["x-request-id", "date"].includes(k)));
  return { status: r.status, headers, body: (await r.text()).replaceAll(rid, "RID") };
}

test("the deployed build answers /__bench/* as an unknown route: 404 not_found, even with ENABLE_BENCH=true", async () => {
  const w = await startWorker({ bindings: { ENABLE_BENCH: "true" } });
  try {
    for (const [method, p] of [["GET", "/__bench/noop"], ["POST", "/__bench/geo"], ["GET", "/__bench/ip?n=1"], ["GET", "/__bench/auth"], ["OPTIONS", "/__bench/noop"]]) {
      const got = await seen(w, method, p);
      // An unknown path of the same length, so that even Content-Length must agree.
      const unknown = await seen(w, method, p.replace("/__bench/", "/__other/"));
      assert.equal(got.status, 404, `${method} ${p}`);
      assert.deepEqual({ ...got, body: got.body.replace("/__bench/", "/__other/") }, unknown, `${method} ${p}`);
      if (method !== "OPTIONS") assert.equal(JSON.parse(got.body).error.code, "not_found");
    }
  } finally {
    await w.stop();
  }
});

// The bench build itself is made by the bench probes, not by the suite (a second release wasm
// build): checked when present.
const benchBuilt = existsSync(path.join(BENCH_BUILD, "index.js"));
test("the bench build serves /__bench/* only with ENABLE_BENCH=true", { skip: !benchBuilt && "no build-bench/ (bash scripts/build-worker.sh --bench)" }, async () => {
  for (const [flag, status] of [["true", 200], ["false", 404]]) {
    const w = await startWorker({ buildDir: BENCH_BUILD, bindings: { ENABLE_BENCH: flag } });
    try {
      const r = await fetch(`${w.base}/__bench/noop`);
      assert.equal(r.status, status, `ENABLE_BENCH=${flag}`);
      if (status === 200) assert.deepEqual(await r.json(), { ok: true });
      else assert.equal((await r.json()).error.code, "not_found");
    } finally {
      await w.stop();
    }
  }
});
