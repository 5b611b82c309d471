// The bench build for the probes that call `/__bench/*`, which only a build with the cargo
// feature `bench` has (the deployed build/ answers them 404). Importing this builds
// build-bench/, or finds it up to date; `benchWorker(options)` are startWorker's (or
// workerOptions') options for it, with the second lock, ENABLE_BENCH, turned on.
import { execFileSync } from "node:child_process";
import { BENCH_BUILD, ROOT } from "../../tests/js/harness.mjs";

// The build's progress goes to stderr: a probe's stdout is its report.
execFileSync("bash", ["scripts/build-worker.sh", "--bench"], { cwd: ROOT, stdio: ["ignore", process.stderr, process.stderr] });

export { BENCH_BUILD };

export const benchWorker = (options = {}) => ({
  ...options,
  buildDir: BENCH_BUILD,
  bindings: { ENABLE_BENCH: "true", ...options.bindings },
});
