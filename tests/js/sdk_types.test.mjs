// The SDK's committed types (clients/ts/src/schema.ts) are what openapi-typescript renders from
// the document the compiled worker serves: an API change without regenerated types fails here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startWorker } from "./harness.mjs";
import { renderTypes, SCHEMA_PATH } from "../../clients/ts/scripts/types.mjs";

test("clients/ts/src/schema.ts matches the served /openapi.json (regenerate: node clients/ts/scripts/types.mjs)", async () => {
  const w = await startWorker();
  try {
    const r = await fetch(`${w.base}/openapi.json`);
    assert.equal(r.status, 200);
    const want = await renderTypes(await r.text());
    const have = readFileSync(SCHEMA_PATH, "utf8");
    if (have !== want) {
      const a = have.split("\n"), b = want.split("\n");
      const i = a.findIndex((line, n) => line !== b[n]);
      assert.fail(`schema.ts is stale from line ${i + 1}:\n  committed: ${a[i]}\n  served:    ${b[i]}`);
    }
  } finally {
    await w.stop();
  }
});
