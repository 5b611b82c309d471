"""Loopback micro-benchmark for the local stack (bounded; stops by itself).

    .venv/bin/python -m bench.probes.stack_loopback [--requests 20000] [--threads 1,4]

Prints bridge SET/GET req/s + p50/p99 over HTTP keep-alive, redis-benchmark against the same
redis-server (overhead ratio), and Data API find/updateOne ops/s.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_stack():
    proc = subprocess.Popen([sys.executable, "-m", "stack", "--redis-rest-port", "0", "--data-api-port", "0",
                             "--exit-with-parent"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    return proc, json.loads(proc.stdout.readline())


def run_load(base, headers, make_body, path, total, threads):
    """`total` requests split over `threads` keep-alive connections; returns (req/s, latencies ms)."""
    u = urlsplit(base)
    per = total // threads
    lats = [[] for _ in range(threads)]
    errors = []

    def worker(i):
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        out = lats[i]
        for n in range(per):
            body = make_body(i, n)
            t0 = time.perf_counter()
            conn.request("POST", path(i, n) if callable(path) else path, body=body, headers=headers)
            resp = conn.getresponse()
            resp.read()
            out.append((time.perf_counter() - t0) * 1000)
            if resp.status >= 300:
                errors.append(resp.status)
        conn.close()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, e.g. HTTP {errors[0]}")
    all_lats = sorted(x for lst in lats for x in lst)
    return per * threads / elapsed, all_lats


def pct(lats, p):
    return lats[min(len(lats) - 1, int(len(lats) * p / 100))]


def redis_benchmark(redis_url, n, clients):
    exe = shutil.which("redis-benchmark")
    if not exe:
        return {}
    u = urlsplit(redis_url)
    out = subprocess.run([exe, "-h", u.hostname, "-p", str(u.port), "-t", "set,get", "-n", str(n), "-c",
                          str(clients), "-q"], capture_output=True, text=True, timeout=300).stdout
    res = {}
    for line in out.replace("\r", "\n").splitlines():
        m = re.match(r"^(SET|GET): ([\d.]+) requests per second(?:, p50=([\d.]+) msec)?", line.strip())
        if m:
            res[m.group(1)] = (float(m.group(2)), m.group(3))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--threads", default="1,4")
    ap.add_argument("--api-requests", type=int, default=3000)
    args = ap.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    proc, info = start_stack()
    try:
        rh = {"Authorization": "Bearer " + info["redis_token"], "Content-Type": "application/json"}
        print(f"# bridge: {info['redis_rest_url']}  redis: {info['redis_url']}  cpus: {os.cpu_count()}")
        bridge = {}
        for t in threads:
            for cmd in ("SET", "GET"):
                def body(i, n, cmd=cmd):
                    k = f"bench:{i}:{n % 1000}"
                    return json.dumps([cmd, k] + (["value-xxxxxxxx"] if cmd == "SET" else [])).encode()
                rps, lats = run_load(info["redis_rest_url"], rh, body, "/", args.requests, t)
                bridge[(cmd, t)] = rps
                print(f"bridge {cmd:3} threads={t}: {rps:8.0f} req/s  p50={pct(lats, 50):.3f} ms  "
                      f"p99={pct(lats, 99):.3f} ms  (n={len(lats)})")
        for clients, n in ((50, 100000), (1, 20000)):
            rb = redis_benchmark(info["redis_url"], n, clients)
            for cmd, (rps, p50) in rb.items():
                best = max(v for (c, _), v in bridge.items() if c == cmd)
                print(f"redis-benchmark {cmd} -c {clients} -n {n}: {rps:9.0f} req/s p50={p50} ms  "
                      f"-> overhead ratio vs best bridge {cmd}: {rps / best:.1f}x")
        ah = {"apiKey": info["data_api_key"], "Content-Type": "application/json"}
        base = {"dataSource": "local", "database": "bench", "collection": "c"}
        seed = json.dumps({**base, "documents": [{"_id": i, "grp": i % 50, "n": 0} for i in range(1000)]})
        run_load(info["data_api_url"], ah, lambda i, n: seed.encode(), "/action/insertMany", 1, 1)
        find = lambda i, n: json.dumps({**base, "filter": {"grp": n % 50}, "limit": 10}).encode()
        upd = lambda i, n: json.dumps({**base, "filter": {"_id": (i * 7919 + n) % 1000},
                                       "update": {"$inc": {"n": 1}}}).encode()
        for name, fn in (("find", find), ("updateOne", upd)):
            for t in threads:
                rps, lats = run_load(info["data_api_url"], ah, fn, "/action/" + name, args.api_requests, t)
                print(f"data-api {name:9} threads={t}: {rps:7.0f} ops/s  p50={pct(lats, 50):.3f} ms  "
                      f"p99={pct(lats, 99):.3f} ms  (n={len(lats)}, 1000-doc collection, mongomock)")
        delay_fault(info, ah, base)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)


def delay_fault(info, headers, base, delay_ms=1500, timeout_s=0.3):
    """How soon a client's own timeout fires while a `delay` fault holds its request (a timing,
    so measured here rather than asserted in stack/tests)."""
    u = urlsplit(info["data_api_url"])
    rule = json.dumps({"rules": [{"match": "find", "mode": "delay", "delay_ms": delay_ms, "count": 1}]})
    admin = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    admin.request("POST", "/__faults", rule, {"Content-Type": "application/json"})
    admin.getresponse().read()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout_s)
    t0 = time.monotonic()
    try:
        conn.request("POST", "/action/find", json.dumps({**base, "filter": {}}), headers)
        conn.getresponse().read()
        outcome = "answered (no timeout!)"
    except (TimeoutError, OSError, http.client.HTTPException):
        outcome = "timed out"
    print(f"delay fault {delay_ms} ms, client timeout {timeout_s} s: {outcome} after "
          f"{(time.monotonic() - t0) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
