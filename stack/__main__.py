"""`python -m stack`: start redis-server, the Upstash REST bridge and the Data API emulator."""
import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from .data_api import DataApiApp
from .httpbase import Server
from .redis_rest import RedisRestApp
from .ttl import TtlMonitor

DEFAULTS = {
    "redis_token": "local-dev-redis-token",
    "redis_readonly_token": "local-dev-redis-readonly-token",
    "data_api_key": "local-dev-data-api-key",
}
PR_SET_PDEATHSIG = 1


def parse_args(argv=None):
    env = os.environ.get
    p = argparse.ArgumentParser(prog="python -m stack", description=__doc__)
    p.add_argument("--host", default=env("STACK_HOST", "127.0.0.1"))
    p.add_argument("--redis-rest-port", type=int, default=int(env("STACK_REDIS_REST_PORT", "8079")),
                   help="0 = pick a free port")
    p.add_argument("--data-api-port", type=int, default=int(env("STACK_DATA_API_PORT", "8078")),
                   help="0 = pick a free port")
    p.add_argument("--redis-port", type=int, default=int(env("STACK_REDIS_PORT", "0")),
                   help="port of the spawned redis-server (0 = free port)")
    p.add_argument("--redis-server", default=env("STACK_REDIS_SERVER", "redis-server"))
    p.add_argument("--redis-token", default=env("STACK_REDIS_TOKEN", DEFAULTS["redis_token"]))
    p.add_argument("--redis-readonly-token",
                   default=env("STACK_REDIS_READONLY_TOKEN", DEFAULTS["redis_readonly_token"]))
    p.add_argument("--data-api-key", default=env("STACK_DATA_API_KEY", DEFAULTS["data_api_key"]))
    p.add_argument("--data-source", default=env("STACK_DATA_SOURCE", "local"))
    p.add_argument("--database", default=env("STACK_DATABASE", "app"))
    p.add_argument("--max-body", type=int, default=int(env("STACK_MAX_BODY", str(1024 * 1024))),
                   help="max request body in bytes (default 1 MiB)")
    p.add_argument("--ttl-interval", type=float, default=float(env("STACK_TTL_INTERVAL", "1")),
                   help="seconds between TTL monitor passes (0 disables the thread)")
    p.add_argument("--ready-file", help="also write the startup JSON line to this file")
    p.add_argument("--exit-with-parent", action="store_true",
                   help="stop when the process that started us dies (used by tests)")
    p.add_argument("--verbose", action="store_true", help="log requests to stderr")
    return p.parse_args(argv)


def _pdeathsig():
    """Runs in the redis-server child: die with SIGKILL if the stack process dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    os.setpgrp()  # Ctrl-C in a terminal reaches us only; we stop redis ourselves


def _free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _redis_ping(host, port):
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(args, tmpdir):
    for _ in range(3):
        port = args.redis_port or _free_port(args.host)
        proc = subprocess.Popen(
            [args.redis_server, "--port", str(port), "--bind", args.host, "--save", "", "--appendonly", "no",
             "--dir", tmpdir, "--logfile", os.path.join(tmpdir, "redis.log"), "--daemonize", "no"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=_pdeathsig, close_fds=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if _redis_ping(args.host, port):
                return proc, port
            time.sleep(0.02)
        stop_process(proc)
        if args.redis_port:
            break
    raise RuntimeError("redis-server did not start; see " + os.path.join(tmpdir, "redis.log"))


def stop_process(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv=None):
    args = parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    if args.host not in ("127.0.0.1", "::1", "localhost"):
        sys.stderr.write(f"stack: WARNING: binding {args.host}: /__faults, /__stats and /__ttl answer anyone "
                         "without authentication. This is a development tool; serve MongoDB with "
                         "`python -m stack.gateway` instead.\n")
    if os.environ.get("MONGODB_URI"):
        sys.stderr.write("stack: MONGODB_URI set: the dev emulator will use it (development only; the "
                         "production gateway is `python -m stack.gateway`).\n")
    tmpdir = tempfile.mkdtemp(prefix="stack-redis-")
    redis_proc, servers, monitor = None, [], None
    try:
        redis_proc, redis_port = start_redis(args, tmpdir)
        rest = RedisRestApp(args.host, redis_port, args.redis_token, args.redis_readonly_token,
                            args.max_body, args.verbose)
        data = DataApiApp(args.data_api_key, args.max_body, os.environ.get("MONGODB_URI"), args.verbose)
        servers = [Server(args.host, args.redis_rest_port, rest), Server(args.host, args.data_api_port, data)]
        for srv in servers:
            threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
        if args.ttl_interval > 0:
            monitor = TtlMonitor(data, args.ttl_interval)
            monitor.start()
        info = {
            "redis_rest_url": servers[0].url, "redis_token": args.redis_token,
            "redis_readonly_token": args.redis_readonly_token,
            "data_api_url": servers[1].url, "data_api_key": args.data_api_key,
            "data_source": args.data_source, "database": args.database,
            "redis_url": f"redis://{args.host}:{redis_port}", "mongo_mode": data.mode, "pid": os.getpid(),
            "redis_pid": redis_proc.pid, "tmp_dir": tmpdir,
        }
        line = json.dumps(info)
        if args.ready_file:
            tmp = args.ready_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(line + "\n")
            os.replace(tmp, args.ready_file)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        parent = os.getppid()
        while not stop.wait(0.5):
            if redis_proc.poll() is not None:
                sys.stderr.write("stack: redis-server exited unexpectedly\n")
                return 1
            if args.exit_with_parent and os.getppid() != parent:
                break
        return 0
    finally:
        if monitor:
            monitor.stop()
        for srv in servers:
            srv.shutdown()
            srv.server_close()
        if redis_proc:
            stop_process(redis_proc)
        shutil.rmtree(tmpdir, ignore_errors=True)
        if args.ready_file:
            try:
                os.unlink(args.ready_file)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main())
