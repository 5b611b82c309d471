"""Data API throughput under concurrency: dev emulator vs the production gateway, same run (bounded).

    .venv/bin/python -m bench.probes.gateway_throughput [--clients 32] [--requests 3000] [--max-seconds 30]
                                           [--gateway-http httptools,h11] [--rounds 3]

Loopback only. Each server gets a 1000-document collection, then `--clients` keep-alive connections
(one thread each) send `find` (filter on a 50-value field, limit 10) and `updateOne` (`$inc` by _id)
until `--requests` are done or `--max-seconds` pass; then the same with a wrong key (401 before
any database work: what the HTTP layer itself costs). Servers take turns, `--rounds` times (so
load from elsewhere on the machine hits them alike), and the median per server and action is printed. Behind both servers is mongomock (the gateway
uses its test engine, pymongo.MongoClient patched by mongomock): the figures measure the HTTP layers
and the shared Data API code, not MongoDB.
"""
import argparse
import http.client
import json
import secrets
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = secrets.token_hex(32)  # the gateway refuses weak keys; a fixed one would be published


def _start(cmd, env=None):
    proc = subprocess.Popen([sys.executable, "-m", *cmd], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    return proc, json.loads(proc.stdout.readline())


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_load(url, key, make_body, path, total, clients, max_seconds, expect=None):
    host, port = url.split("//")[1].split(":")
    lats = [[] for _ in range(clients)]
    errors = []
    deadline = time.perf_counter() + max_seconds
    per = total // clients
    start = threading.Barrier(clients + 1)

    def worker(i):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {"apiKey": key, "Content-Type": "application/json"}
        out = lats[i]
        start.wait()
        for n in range(per):
            if time.perf_counter() > deadline:
                break
            body = make_body(i, n)
            t0 = time.perf_counter()
            conn.request("POST", path, body=body, headers=headers)
            resp = conn.getresponse()
            resp.read()
            out.append((time.perf_counter() - t0) * 1000)
            if (resp.status != expect) if expect else resp.status >= 300:
                errors.append(resp.status)
        conn.close()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in ts:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, e.g. HTTP {errors[0]}")
    done = sorted(x for lst in lats for x in lst)
    return len(done) / elapsed, done


def pct(lats, p):
    return lats[min(len(lats) - 1, int(len(lats) * p / 100))]


def bench_server(name, url, key, args):
    base = {"dataSource": "bench", "database": "bench", "collection": "c"}
    seed = json.dumps({**base, "documents": [{"_id": i, "grp": i % 50, "n": 0} for i in range(1000)]}).encode()
    run_load(url, key, lambda i, n: seed, "/action/insertMany", 1, 1, 60)
    find = lambda i, n: json.dumps({**base, "filter": {"grp": n % 50}, "limit": 10}).encode()  # noqa: E731
    upd = lambda i, n: json.dumps({**base, "filter": {"_id": (i * 7919 + n) % 1000},  # noqa: E731
                                   "update": {"$inc": {"n": 1}}}).encode()
    out = {}
    # "401": a request with a wrong key, answered before any database work: the HTTP layer's own cost.
    for action, fn in (("find", find), ("updateOne", upd), ("401", find)):
        path, k, expect = ("/action/find", "wrong-key-0123456789", 401) if action == "401" else ("/action/" + action, key, None)
        rps, lats = run_load(url, k, fn, path, args.requests, args.clients, args.max_seconds, expect)
        out[action] = rps
        print(f"{name:30} {action:9} clients={args.clients}: {rps:6.0f} ops/s  p50={pct(lats, 50):6.1f} ms  "
              f"p99={pct(lats, 99):6.1f} ms  (n={len(lats)})", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=3000, help="per action, server and round")
    ap.add_argument("--max-seconds", type=float, default=30, help="per action and server")
    ap.add_argument("--gateway-http", default="httptools", help="comma-separated: httptools,h11")
    ap.add_argument("--pool-size", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"# loopback, cpus: {os.cpu_count()}, load avg: {os.getloadavg()[0]:.1f}, "
          f"mongomock behind both servers (not MongoDB)", flush=True)
    servers = [("dev (http.server)", ["stack", "--redis-rest-port", "0", "--data-api-port", "0", "--ttl-interval", "0",
                                      "--exit-with-parent"], None)]
    for http_impl in args.gateway_http.split(","):
        servers.append((f"gateway (uvicorn+{http_impl})", ["stack.gateway", "--port", "0", "--exit-with-parent"], {
            "GATEWAY_ENGINE": "mongomock-patch", "GATEWAY_API_KEYS": KEY, "GATEWAY_HTTP": http_impl,
            "GATEWAY_POOL_SIZE": str(args.pool_size), "GATEWAY_MODE": "development",
            # the "401" load measures the HTTP layer: no failed-auth limit in the way
            "GATEWAY_AUTH_FAILURES": "0"}))
    results = {}
    for _ in range(args.rounds):
        for name, cmd, env in servers:
            proc, info = _start(cmd, env)
            try:
                key = info.get("data_api_key", KEY)
                for action, rps in bench_server(name, info["data_api_url"], key, args).items():
                    results.setdefault((name, action), []).append(rps)
            finally:
                _stop(proc)
    print(f"# median of {args.rounds} rounds, {args.clients} clients, load avg now {os.getloadavg()[0]:.1f}")
    for (name, action), vals in results.items():
        print(f"{name:30} {action:9} {statistics.median(vals):6.0f} ops/s   rounds: "
              + " ".join(f"{v:.0f}" for v in vals))

if __name__ == "__main__":
    main()
