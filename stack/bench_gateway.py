"""Data API throughput under concurrency: dev emulator vs the production gateway, same run (bounded).

    .venv/bin/python -m stack.bench_gateway [--clients 32] [--requests 4000] [--max-seconds 30]
                                           [--gateway-http httptools,h11]

Loopback only. Each server gets a 1000-document collection, then `--clients` keep-alive connections
(one thread each) send `find` (filter on a 50-value field, limit 10) and `updateOne` (`$inc` by _id)
until `--requests` are done or `--max-seconds` pass. Behind both servers is mongomock (the gateway
uses its test engine, pymongo.MongoClient patched by mongomock): the figures measure the HTTP layers
and the shared Data API code, not MongoDB.
"""
import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "bench-gateway-key-0123456789"


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


def run_load(url, key, make_body, path, total, clients, max_seconds):
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
            if resp.status >= 300:
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
    for action, fn in (("find", find), ("updateOne", upd)):
        rps, lats = run_load(url, key, fn, "/action/" + action, args.requests, args.clients, args.max_seconds)
        out[action] = rps
        print(f"{name:22} {action:9} clients={args.clients}: {rps:6.0f} ops/s  p50={pct(lats, 50):6.1f} ms  "
              f"p99={pct(lats, 99):6.1f} ms  (n={len(lats)})", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=4000, help="per action and server")
    ap.add_argument("--max-seconds", type=float, default=30, help="per action and server")
    ap.add_argument("--gateway-http", default="httptools", help="comma-separated: httptools,h11")
    ap.add_argument("--pool-size", type=int, default=32)
    args = ap.parse_args(argv)
    print(f"# loopback, cpus: {os.cpu_count()}, mongomock behind both servers (not MongoDB)", flush=True)
    proc, info = _start(["stack", "--redis-rest-port", "0", "--data-api-port", "0", "--ttl-interval", "0",
                         "--exit-with-parent"])
    try:
        bench_server("dev (http.server)", info["data_api_url"], info["data_api_key"], args)
    finally:
        _stop(proc)
    for http_impl in args.gateway_http.split(","):
        proc, info = _start(["stack.gateway", "--port", "0", "--exit-with-parent"], env={
            "GATEWAY_ENGINE": "mongomock-patch", "GATEWAY_API_KEYS": KEY, "GATEWAY_HTTP": http_impl,
            "GATEWAY_POOL_SIZE": str(args.pool_size)})
        try:
            bench_server(f"gateway (uvicorn+{http_impl})", info["data_api_url"], KEY, args)
        finally:
            _stop(proc)


if __name__ == "__main__":
    main()
