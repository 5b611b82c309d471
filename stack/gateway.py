"""`python -m stack.gateway`: the Data API gateway to put in front of MongoDB in production.

An ASGI app served by uvicorn. It shares every action with the dev emulator (`stack.data_api.DataApi`)
but has no development endpoints at all (/__stats, /__faults, /__ttl answer 404 like any unknown
path), needs API keys (several at once for rotation, compared in constant time), limits body size and
per-request time, answers `GET /healthz` after a database `ping`, logs one JSON line per request
(never a key or a body) and shuts down gracefully on SIGTERM/SIGINT (in-flight requests finish).

Fit for a caller on the public internet (put TLS in front: docs/mongodb-gateway.md): keys of at
least 32 bytes with ~128 bits of estimated entropy (stack/keyrules.py; generate one with
`python3 -c 'import secrets; print(secrets.token_urlsafe(48))'`), failed authentications limited
per client address (then 429 with Retry-After; callers with a valid key are never slowed), and
in production mode (the default) only the allowlisted databases and collections, with server-side
JavaScript ($where, $function, $accumulator) and cross-collection stages ($out, $merge, $lookup,
$graphLookup, $unionWith) refused anywhere in a body (403 naming the operator).

Configuration (environment; the flags override):

    MONGODB_URI                 required (mongodb:// or mongodb+srv://)
    GATEWAY_API_KEYS            comma-separated keys, named key0, key1, ... in the logs
    GATEWAY_API_KEYS_FILE       file, one key per line: "<name> <key>" or "<key>"; '#' comments
    GATEWAY_HOST / GATEWAY_PORT 127.0.0.1 / 8080
    GATEWAY_MAX_BODY            1048576 bytes (larger: 413)
    GATEWAY_REQUEST_TIMEOUT_S   10 (read + database work; over it: 504, and pymongo's own
                                client-side timeout stops the operation)
    GATEWAY_POOL_SIZE           32 = pymongo maxPoolSize = worker threads running database calls
    GATEWAY_MODE                production (default) | development (allowlists optional; never on
                                the internet)
    GATEWAY_DATABASES           allowlist, required in production; admin/local/config and system.*
                                are always refused
    GATEWAY_COLLECTIONS         allowlist, required in production: every collection the worker
                                uses, as `check-config --collections` prints them, e.g.
                                notifications,notifications_dead,notifications_preferences,notifications_erasures,notifications_senders
    GATEWAY_AUTH_FAILURES       10 failed authentications per client address per minute, then 429
                                with Retry-After until the budget refills (0 = off: development
                                mode only)
    GATEWAY_AUTH_TRACKED_MAX    100000 addresses tracked at most (the fullest buckets are dropped)
    GATEWAY_TRUSTED_PROXIES     comma-separated peer addresses (your TLS proxy, cloudflared) whose
                                X-Forwarded-For (rightmost entry) names the client; default none
    GATEWAY_LIMIT_CONCURRENCY   1024 open connections+requests; beyond: 503 (uvicorn)
    GATEWAY_GRACEFUL_TIMEOUT_S  20 s for in-flight requests at shutdown
    GATEWAY_HTTP                httptools (default) | h11
    GATEWAY_ENGINE              pymongo (default) | mongomock-patch (TESTS ONLY: pymongo.MongoClient
                                patched by mongomock; no server, data in memory, MONGODB_URI optional)
"""
import argparse
import asyncio
import concurrent.futures
import datetime
import functools
import json
import logging
import logging.config
import math
import os
import signal
import sys
import threading
import time

import pymongo
import uvicorn

from . import keyrules
from .data_api import ROUTE, DataApi, KeyRing, error_response
from .httpbase import Request, json_response

DEFAULT_TEST_URI = "mongodb://gateway-test.invalid:27017"
BACKSTOP_S = 0.25  # asyncio deadline = pymongo deadline + this
DRAIN_LIMIT = 16 * 1024 * 1024  # oversized bodies up to this are read and discarded (keep-alive survives)
log = logging.getLogger("gateway")


class ConfigError(Exception):
    pass


# -- configuration -------------------------------------------------------------------------------
def _read_key_file(path):
    keys = []
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ConfigError(f"cannot read GATEWAY_API_KEYS_FILE {path}: {e.strerror}") from None
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) == 1:
            keys.append((f"file{n}", parts[0]))
        elif len(parts) == 2:
            keys.append((parts[0], parts[1]))
        else:
            raise ConfigError(f"{path}:{n}: expected '<name> <key>' or '<key>'")
    return keys


def load_keys(env):
    keys = [(f"key{i}", k.strip()) for i, k in enumerate(env.get("GATEWAY_API_KEYS", "").split(",")) if k.strip()]
    if env.get("GATEWAY_API_KEYS_FILE"):
        keys += _read_key_file(env["GATEWAY_API_KEYS_FILE"])
    if not keys:
        raise ConfigError("no API keys: set GATEWAY_API_KEYS (comma-separated) or GATEWAY_API_KEYS_FILE")
    names = [n for n, _ in keys]
    if len(set(names)) != len(names):
        raise ConfigError("API key names must be unique")
    for name, value in keys:
        why = keyrules.weakness(value)
        if why:
            raise ConfigError(f"API key {name}: {why}; generate one with "
                              "python3 -c 'import secrets; print(secrets.token_urlsafe(48))'")
    return keys


class AuthLimiter:
    """Failed authentications per client address: a token bucket of `limit` failures refilled
    over `window` seconds. An address whose bucket is empty gets 429 (before its key is even
    looked at, so guessing stays slow); a success costs nothing. `clock` is injectable (tests).

    Memory: one dict entry (address -> [tokens, last]) per address with a recent failure; at
    `max_tracked` the entries that have refilled are dropped, then the oldest.
    """

    def __init__(self, limit=10, window=60.0, max_tracked=100_000, clock=time.monotonic):
        self.limit, self.window, self.max_tracked, self.clock = float(limit), float(window), max_tracked, clock
        self.buckets = {}

    def _level(self, entry, now):
        return min(self.limit, entry[0] + (now - entry[1]) * self.limit / self.window)

    def retry_after(self, addr):
        """Seconds until `addr` may try again (0: it may now)."""
        entry = self.buckets.get(addr)
        if entry is None:
            return 0
        level = self._level(entry, self.clock())
        return 0 if level >= 1 else math.ceil((1 - level) * self.window / self.limit)

    def failed(self, addr):
        now = self.clock()
        entry = self.buckets.pop(addr, None)
        level = self.limit if entry is None else self._level(entry, now)
        self.buckets[addr] = [max(level - 1, 0.0), now]  # re-inserted: the dict's order is recency
        if len(self.buckets) > self.max_tracked:
            self._evict(now)

    def _evict(self, now):
        for addr in [a for a, e in self.buckets.items() if self._level(e, now) >= self.limit]:
            del self.buckets[addr]
        while len(self.buckets) > self.max_tracked:
            del self.buckets[next(iter(self.buckets))]


class NoLimiter:
    """No failed-auth limit (GATEWAY_AUTH_FAILURES=0, development mode only)."""

    def retry_after(self, addr):
        return 0

    def failed(self, addr):
        pass


class Config:
    def __init__(self, env, args):
        def num(name, default, cast=int, minimum=1):
            raw = env.get(name, "")
            try:
                val = cast(raw) if raw else default
            except ValueError:
                raise ConfigError(f"{name} must be a number, got {raw!r}") from None
            if val < minimum:
                raise ConfigError(f"{name} must be >= {minimum}")
            return val

        self.engine = args.engine or env.get("GATEWAY_ENGINE") or "pymongo"
        if self.engine not in ("pymongo", "mongomock-patch"):
            raise ConfigError(f"GATEWAY_ENGINE must be pymongo or mongomock-patch, got {self.engine!r}")
        self.uri = env.get("MONGODB_URI", "")
        if not self.uri:
            if self.engine != "mongomock-patch":
                raise ConfigError("MONGODB_URI is required (e.g. mongodb+srv://user:pass@cluster.example.net/)")
            self.uri = DEFAULT_TEST_URI
        self.keys = load_keys(env)
        self.host = args.host or env.get("GATEWAY_HOST") or "127.0.0.1"
        self.port = args.port if args.port is not None else num("GATEWAY_PORT", 8080, minimum=0)
        self.max_body = num("GATEWAY_MAX_BODY", 1024 * 1024)
        self.timeout = num("GATEWAY_REQUEST_TIMEOUT_S", 10.0, float, minimum=0.001)
        self.pool_size = num("GATEWAY_POOL_SIZE", 32)
        self.limit_concurrency = num("GATEWAY_LIMIT_CONCURRENCY", 1024)
        self.graceful_timeout = num("GATEWAY_GRACEFUL_TIMEOUT_S", 20.0, float, minimum=0)
        self.http = env.get("GATEWAY_HTTP") or "httptools"
        if self.http not in ("httptools", "h11"):
            raise ConfigError("GATEWAY_HTTP must be httptools or h11")
        self.mode = env.get("GATEWAY_MODE") or "production"
        if self.mode not in ("production", "development"):
            raise ConfigError(f"GATEWAY_MODE must be production or development, got {self.mode!r}")
        self.databases = [d.strip() for d in env.get("GATEWAY_DATABASES", "").split(",") if d.strip()] or None
        self.collections = [c.strip() for c in env.get("GATEWAY_COLLECTIONS", "").split(",") if c.strip()] or None
        if self.mode == "production":
            missing = [n for n, v in (("GATEWAY_DATABASES", self.databases), ("GATEWAY_COLLECTIONS", self.collections))
                       if not v]
            if missing:
                raise ConfigError(f"production mode needs {' and '.join(missing)} (the worker's database; its "
                                  "collections as `check-config --collections` prints them, e.g. "
                                  "notifications,notifications_dead,notifications_preferences,notifications_erasures,notifications_senders)")
        # 0 turns the limiter off: development mode only (benchmarks compare with and without it).
        self.auth_failures = num("GATEWAY_AUTH_FAILURES", 10, minimum=0 if self.mode == "development" else 1)
        self.auth_tracked_max = num("GATEWAY_AUTH_TRACKED_MAX", 100_000)
        self.trusted_proxies = frozenset(p.strip() for p in env.get("GATEWAY_TRUSTED_PROXIES", "").split(",")
                                         if p.strip())


def make_client(cfg):
    """pymongo.MongoClient with the pool sized from configuration.

    With the test engine, mongomock.patch replaces pymongo.MongoClient while the client is made, so
    the very same call runs (and returns a mongomock client holding its data in memory)."""
    kwargs = {"maxPoolSize": cfg.pool_size, "appname": "data-api-gateway", "serverSelectionTimeoutMS":
              int(min(cfg.timeout, 30) * 1000), "tz_aware": False}
    if cfg.engine == "mongomock-patch":
        import mongomock
        from pymongo.uri_parser import parse_uri
        with mongomock.patch(servers=tuple(parse_uri(cfg.uri)["nodelist"])):
            return pymongo.MongoClient(cfg.uri, **kwargs), threading.RLock()  # mongomock is not thread-safe
    return pymongo.MongoClient(cfg.uri, **kwargs), None


# -- logging -------------------------------------------------------------------------------------
class JsonFormatter(logging.Formatter):
    def format(self, record):
        out = {"ts": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
               .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
               "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
        out.update(getattr(record, "fields", {}))
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": JsonFormatter}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
    "loggers": {
        "gateway": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "uvicorn.error": {"level": "WARNING"},
        "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
    },
}


def _event(msg, level=logging.INFO, **fields):
    log.log(level, msg, extra={"fields": fields})


# -- ASGI app ------------------------------------------------------------------------------------
class _Headers(dict):
    """Lower-cased ASGI headers with the case-insensitive `get` that DataApi expects."""

    def get(self, name, default=None):
        return dict.get(self, name.lower(), default)


class _TooLarge(Exception):
    def __init__(self, drained):
        self.drained = drained


class GatewayApp:
    """ASGI application. Database work runs in a thread pool of `pool_size` threads."""

    def __init__(self, client, keys, max_body=1024 * 1024, timeout=10.0, pool_size=32, lock=None, databases=None,
                 engine="pymongo", collections=None, limiter=None, trusted_proxies=frozenset()):
        self.client = client
        self.api = DataApi(client, KeyRing(keys), lock=lock, databases=databases, deny_system=True,
                           collections=collections, deny_operators=True)
        self.limiter = limiter if limiter is not None else AuthLimiter()
        self.trusted_proxies = trusted_proxies
        self.max_body, self.timeout, self.engine = max_body, timeout, engine
        self.pool = concurrent.futures.ThreadPoolExecutor(pool_size, thread_name_prefix="db")

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            return await self._http(scope, receive, send)
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    _event("shutting down: in-flight requests finished, closing the pool")
                    self.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=False)
        self.client.close()

    async def _read_body(self, headers, receive):
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            if int(length) > DRAIN_LIMIT:
                raise _TooLarge(False)
            await self._drain(receive)
            raise _TooLarge(True)
        chunks, total = [], 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                raise ConnectionResetError("client disconnected")
            chunk = msg.get("body", b"")
            total += len(chunk)
            if total > self.max_body:
                raise _TooLarge(False)
            chunks.append(chunk)
            if not msg.get("more_body"):
                return b"".join(chunks)

    @staticmethod
    async def _drain(receive):
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect" or not msg.get("more_body"):
                return

    def _run(self, fn, deadline):
        # pymongo's client-side operation timeout (CSOT): the database call itself gives up at the
        # deadline (and tells the server via maxTimeMS) instead of running on after we answered 504.
        with pymongo.timeout(max(deadline - time.monotonic(), 0.001)):
            return fn()

    async def _in_pool(self, fn, deadline):
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self.pool, self._run, fn, deadline)
        # pymongo normally gives up first (-> 503/504 from DataApi); this is the backstop for work
        # that is not a database call or a pool so busy the call has not even started.
        return await asyncio.wait_for(fut, max(deadline - time.monotonic(), 0.001) + BACKSTOP_S)

    def _health(self):
        try:
            self.client.admin.command("ping")
            return 200, {"ok": True, "database": "ok", "engine": self.engine}
        except Exception as e:  # noqa: BLE001 - any failure means "not healthy"
            _event("health check failed", logging.WARNING, error=type(e).__name__, detail=str(e)[:300])
            return 503, {"ok": False, "database": type(e).__name__, "engine": self.engine}

    def _client_addr(self, scope, headers):
        """The caller's address: the peer, or, behind a trusted proxy, the rightmost address of
        X-Forwarded-For (the one that proxy appended)."""
        peer = (scope.get("client") or ("", 0))[0]
        if peer in self.trusted_proxies:
            forwarded = [a.strip() for a in (headers.get("x-forwarded-for") or "").split(",") if a.strip()]
            if forwarded:
                return forwarded[-1]
        return peer

    async def _http(self, scope, receive, send):
        t0 = time.monotonic()
        deadline = t0 + self.timeout
        headers = _Headers((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"])
        method, path = scope["method"], scope["path"]
        label, key_name, bytes_in, extra = None, None, 0, {}
        close = False
        addr = self._client_addr(scope, headers)
        retry_after = 0
        try:
            if path != "/healthz" and ROUTE.match(path) and (retry_after := self.limiter.retry_after(addr)):
                label = "auth_limited"
                await self._drain(receive)
                resp = error_response(429, "too many failed authentications from this address; retry later",
                                      "TooManyRequests")
            elif path == "/healthz":
                label = "healthz"
                if method not in ("GET", "HEAD"):
                    resp = error_response(405, "use GET", "MethodNotAllowed")
                else:
                    status, obj = await self._in_pool(self._health, t0 + min(self.timeout, 5.0))
                    resp = json_response(status, obj)
            else:
                route = ROUTE.match(path)
                label = route.group(1) if route else None  # for the log if the call never returns
                body = await asyncio.wait_for(self._read_body(headers, receive), self.timeout)
                bytes_in = len(body)
                req = Request(method, path, scope.get("query_string", b""), headers, body)
                label, resp, key_name = await self._in_pool(functools.partial(self.api.handle, req), deadline)
                if resp.status == 401:
                    self.limiter.failed(addr)
        except _TooLarge as e:
            close = not e.drained
            resp = error_response(413, f"request body exceeds {self.max_body} bytes", "RequestTooLarge")
        except (asyncio.TimeoutError, TimeoutError):
            close = True
            resp = error_response(504, f"request exceeded {self.timeout:g} s", "Timeout")
            if label == "healthz":
                resp = json_response(503, {"ok": False, "database": "Timeout", "engine": self.engine})
        except ConnectionResetError:
            _event("request", method=method, path=path, status=499, duration_ms=_ms(t0), key=key_name)
            return
        except Exception as e:  # noqa: BLE001 - last-resort 500, details only in the log
            extra["error"], extra["detail"] = type(e).__name__, str(e)[:300]
            resp = error_response(500, "internal error", "InternalServerError")
        hdrs = [(b"content-type", resp.content_type.encode()), (b"content-length", str(len(resp.body)).encode())]
        if close:
            hdrs.append((b"connection", b"close"))
        if retry_after:
            hdrs.append((b"retry-after", str(retry_after).encode()))
        await send({"type": "http.response.start", "status": resp.status, "headers": hdrs})
        await send({"type": "http.response.body", "body": resp.body if method != "HEAD" else b""})
        if resp.status >= 400 and resp.content_type == "application/json":
            try:
                extra["error_code"] = json.loads(resp.body).get("error_code")
            except ValueError:
                pass
        client = scope.get("client") or ("", 0)
        _event("request", method=method, path=path, action=label, status=resp.status, duration_ms=_ms(t0),
               key=key_name, client=addr or client[0], bytes_in=bytes_in, bytes_out=len(resp.body), **extra)


def _ms(t0):
    return round((time.monotonic() - t0) * 1000, 2)


# -- process -------------------------------------------------------------------------------------
class _Server(uvicorn.Server):
    def __init__(self, config, on_started):
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets=None):
        await super().startup(sockets)
        if self.started:
            self._on_started(self)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m stack.gateway", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("--host", help="bind address [GATEWAY_HOST, default 127.0.0.1]")
    p.add_argument("--port", type=int, help="port, 0 = free port [GATEWAY_PORT, default 8080]")
    p.add_argument("--engine", choices=("pymongo", "mongomock-patch"), help="[GATEWAY_ENGINE]; mongomock-patch is for tests")
    p.add_argument("--ready-file", help="write the startup JSON line here too (removed on exit)")
    p.add_argument("--exit-with-parent", action="store_true", help="stop when the parent process dies (tests)")
    return p.parse_args(argv)


def main(argv=None, env=None):
    args = parse_args(argv)
    env = os.environ if env is None else env
    logging.config.dictConfig(LOG_CONFIG)
    try:
        cfg = Config(env, args)
    except ConfigError as e:
        sys.stderr.write(f"data-api-gateway: configuration error: {e}\n")
        return 2
    if cfg.engine == "mongomock-patch":
        _event("TEST ENGINE: pymongo.MongoClient is patched by mongomock; data lives in memory. Never use in "
               "production.", logging.WARNING)
    client, lock = make_client(cfg)
    if cfg.mode == "development":
        _event("DEVELOPMENT MODE: no database/collection allowlist is required. Never put this gateway on a "
               "network in this mode.", logging.WARNING)
    limiter = AuthLimiter(cfg.auth_failures, 60.0, cfg.auth_tracked_max) if cfg.auth_failures else NoLimiter()
    app = GatewayApp(client, cfg.keys, cfg.max_body, cfg.timeout, cfg.pool_size, lock, cfg.databases, cfg.engine,
                     collections=cfg.collections, limiter=limiter, trusted_proxies=cfg.trusted_proxies)
    uconf = uvicorn.Config(app, host=cfg.host, port=cfg.port, http=cfg.http, loop="asyncio", lifespan="on",
                           access_log=False, log_config=None, server_header=False, date_header=True,
                           limit_concurrency=cfg.limit_concurrency, timeout_keep_alive=30,
                           timeout_graceful_shutdown=cfg.graceful_timeout)

    def started(server):
        sock = server.servers[0].sockets[0]
        host, port = sock.getsockname()[:2]
        info = {"data_api_url": f"http://{host}:{port}", "engine": cfg.engine, "mode": cfg.mode,
                "pool_size": cfg.pool_size,
                "keys": [n for n, _ in cfg.keys], "pid": os.getpid()}
        line = json.dumps(info)
        if args.ready_file:
            tmp = args.ready_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(line + "\n")
            os.replace(tmp, args.ready_file)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        _event("listening", url=info["data_api_url"], engine=cfg.engine, pool_size=cfg.pool_size,
               keys=info["keys"], http=cfg.http)

    server = _Server(uconf, started)
    # uvicorn re-raises the signal that stopped it once it is done; answering it ourselves makes a
    # graceful SIGTERM/SIGINT stop exit 0 (what systemd and container runtimes expect).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    if args.exit_with_parent:
        parent = os.getppid()

        def watch():
            while not server.should_exit:
                if os.getppid() != parent:
                    server.should_exit = True
                time.sleep(0.5)
        threading.Thread(target=watch, daemon=True).start()
    try:
        server.run()
    finally:
        if args.ready_file:
            try:
                os.unlink(args.ready_file)
            except OSError:
                pass
    if not server.started:
        return 1
    _event("stopped")
    return 0

if __name__ == "__main__":
    sys.exit(main())
