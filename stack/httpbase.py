"""Shared HTTP plumbing: keep-alive ThreadingHTTPServer, body limits, JSON replies,
and the /__stats + /__faults endpoints common to both servers."""
import json
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from .faults import FaultError, Faults
from .stats import Stats

DRAIN_LIMIT = 16 * 1024 * 1024  # read & discard oversized bodies up to this, then reply 413


class BodyTooLarge(Exception):
    pass


class Request:
    __slots__ = ("method", "path", "query", "headers", "body")

    def __init__(self, method, path, query, headers, body):
        self.method, self.path, self.query, self.headers, self.body = method, path, query, headers, body

    def header(self, name, default=None):
        return self.headers.get(name, default)


class Response:
    __slots__ = ("status", "body", "content_type", "headers")

    def __init__(self, status, body, content_type="application/json", headers=None):
        self.status, self.body, self.content_type, self.headers = status, body, content_type, headers


def json_response(status, obj, headers=None):
    return Response(status, json.dumps(obj, separators=(",", ":")).encode(), headers=headers)


class App:
    """Base for the two servers. Subclasses implement `handle(req) -> (label, Response)`."""

    name = "app"

    def __init__(self, max_body, verbose=False):
        self.max_body = max_body
        self.verbose = verbose
        self.stats = Stats()
        self.faults = Faults()

    def error(self, status, message, code=None):
        raise NotImplementedError

    def admin(self, req):
        """Dev-only endpoints under /__ (no auth, loopback only by default)."""
        p, m = req.path, req.method
        if p == "/__health" and m == "GET":
            return json_response(200, {"ok": True, "server": self.name})
        if p == "/__stats" and m == "GET":
            return json_response(200, self.stats.snapshot())
        if p == "/__stats/reset" and m == "POST":
            self.stats.reset()
            return json_response(200, {"ok": True})
        if p == "/__faults":
            if m == "GET":
                return json_response(200, self.faults.snapshot())
            if m == "DELETE":
                self.faults.clear()
                return json_response(200, {"ok": True})
            if m in ("POST", "PUT"):
                try:
                    self.faults.configure(json.loads(req.body or b"null"))
                except (ValueError, FaultError) as e:
                    return self.error(400, f"invalid fault spec: {e}", "InvalidParameter")
                return json_response(200, {"ok": True, **self.faults.snapshot()})
        return None

    def apply_delay(self, plan):
        if plan.delay_ms:
            time.sleep(plan.delay_ms / 1000.0)

    def fault_response(self, plan):
        return self.error(plan.status, f"injected fault ({plan.fail})", "InjectedFault")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "local-stack/1"
    sys_version = ""

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        if self.server.app.verbose:
            sys.stderr.write("[%s] %s\n" % (self.server.app.name, fmt % args))

    def _read_body(self):
        limit = self.server.app.max_body
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks, total = [], 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > limit:
                    self.close_connection = True
                    raise BodyTooLarge()
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > limit:
            if length <= DRAIN_LIMIT:
                remaining = length
                while remaining > 0:
                    got = self.rfile.read(min(remaining, 65536))
                    if not got:
                        break
                    remaining -= len(got)
            else:
                self.close_connection = True
            raise BodyTooLarge()
        return self.rfile.read(length) if length else b""

    def _handle(self):
        app = self.server.app
        url = urlsplit(self.path)
        try:
            body = self._read_body()
        except BodyTooLarge:
            resp = app.error(413, f"request body exceeds {app.max_body} bytes", "RequestTooLarge")
            app.stats.record("<too-large>", 413)
            return self._send(resp)
        except (ValueError, OSError):
            self.close_connection = True
            return self._send(app.error(400, "malformed request body", "InvalidParameter"))
        req = Request(self.command, url.path, parse_qs(url.query), self.headers, body)
        resp = app.admin(req) if url.path.startswith("/__") else None
        if resp is None:
            app.stats.begin()
            try:
                label, resp = app.handle(req)
            except Exception as e:  # noqa: BLE001 - last-resort 500
                label, resp = "<error>", app.error(500, f"internal error: {type(e).__name__}: {e}", "InternalServerError")
            finally:
                app.stats.end()
            app.stats.record(label, resp.status, body)
        self._send(resp)

    def _send(self, resp):
        try:
            self.send_response(resp.status)
            self.send_header("Content-Type", resp.content_type)
            self.send_header("Content-Length", str(len(resp.body)))
            for k, v in (resp.headers or {}).items():
                self.send_header(k, v)
            if self.close_connection:
                self.send_header("Connection", "close")
            # headers + body in one send(): avoids Nagle/delayed-ACK stalls on keep-alive connections
            self._headers_buffer.append(b"\r\n" + resp.body)
            self.flush_headers()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # client gave up (e.g. its timeout fired during a delay fault)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, host, port, app):
        self.app = app
        super().__init__((host, port), Handler)

    def handle_error(self, request, client_address):
        if self.app.verbose:
            super().handle_error(request, client_address)

    @property
    def url(self):
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"
