"""The gateway's failed-auth limiter: what it costs callers with a valid key, and its memory.

    .venv/bin/python -m bench.probes.gateway_limiter [--clients 16] [--requests 2000] [--rounds 3]

Two gateway processes in the same run, taking turns `--rounds` times (so load from elsewhere on the
machine hits both alike): one with the limiter off (GATEWAY_AUTH_FAILURES=0, development mode only)
and one with the default limiter, whose table was first filled with 1,000 addresses that failed
(through a trusted-proxy X-Forwarded-For). Both serve authenticated `find` (limit 10 on a
1,000-document collection, mongomock behind: the HTTP layer and the shared Data API code, not
MongoDB). Memory: tracemalloc around 100,000 addresses' failures in one AuthLimiter. Prints a
markdown section.
"""
import argparse
import http.client
import json
import os
import secrets
import statistics
import tracemalloc

from stack import gateway as gw

from .gateway_throughput import _start, _stop, pct, run_load

KEY = secrets.token_hex(32)
BASE = {"dataSource": "bench", "database": "bench", "collection": "c"}


def fill(url, n):
    host, port = url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    body = json.dumps({**BASE, "filter": {}}).encode()
    for i in range(n):
        conn.request("POST", "/action/find", body=body, headers={
            "apiKey": "wrong", "X-Forwarded-For": f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}",
            "Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 401, resp.status
    conn.close()


def memory_per_address(n=100_000):
    lim = gw.AuthLimiter(max_tracked=n)
    addrs = [f"2001:db8::{i:x}" for i in range(n)]  # made before measuring: the caller owns them
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for a in addrs:
        lim.failed(a)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return grown / n


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--max-seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    common = {"GATEWAY_ENGINE": "mongomock-patch", "GATEWAY_API_KEYS": KEY, "GATEWAY_MODE": "development",
              "GATEWAY_TRUSTED_PROXIES": "127.0.0.1"}
    servers = [("limiter off", {**common, "GATEWAY_AUTH_FAILURES": "0"}, 0),
               ("limiter on, 1,000 addresses tracked", common, 1000)]
    find = lambda i, n: json.dumps({**BASE, "filter": {"grp": n % 50}, "limit": 10}).encode()  # noqa: E731
    seed = json.dumps({**BASE, "documents": [{"_id": i, "grp": i % 50} for i in range(1000)]}).encode()
    results = {}
    load0 = os.getloadavg()[0]
    for _ in range(args.rounds):
        for name, env, tracked in servers:
            proc, info = _start(["stack.gateway", "--port", "0", "--exit-with-parent"], env)
            try:
                url = info["data_api_url"]
                run_load(url, KEY, lambda i, n: seed, "/action/insertMany", 1, 1, 60)
                fill(url, tracked)
                rps, lats = run_load(url, KEY, find, "/action/find", args.requests, args.clients, args.max_seconds)
                results.setdefault(name, []).append((rps, pct(lats, 50), pct(lats, 99)))
            finally:
                _stop(proc)
    per_addr = memory_per_address()
    print("## Gateway failed-auth limiter\n")
    print(f"`python -m bench.probes.gateway_limiter`: authenticated `find` through the gateway (uvicorn + httptools, "
          f"mongomock behind it), {args.clients} keep-alive clients on loopback, the two gateways taking turns "
          f"{args.rounds} times in one run (medians). Load average at the start: {load0:.1f}, cpus: "
          f"{os.cpu_count()}.\n")
    print("| gateway | find req/s | p50 ms | p99 ms | rounds (req/s) |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, vals in results.items():
        rps = statistics.median(v[0] for v in vals)
        print(f"| {name} | {rps:.0f} | {statistics.median(v[1] for v in vals):.1f} | "
              f"{statistics.median(v[2] for v in vals):.1f} | {' '.join(f'{v[0]:.0f}' for v in vals)} |")
    print(f"\nLimiter memory: {per_addr:.0f} bytes per tracked address (tracemalloc, 100,000 IPv6 addresses "
          f"with one failure each; the default cap GATEWAY_AUTH_TRACKED_MAX=100000 bounds it).")


if __name__ == "__main__":
    main()
