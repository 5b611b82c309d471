"""Upstash-compatible Redis REST bridge in front of a real redis-server.

Endpoints: POST / (JSON array command), GET|POST /cmd/arg/... (path form),
POST /pipeline, POST /multi-exec. Auth: `Authorization: Bearer <token>` or `?_token=`.
"""
import base64
import json
from urllib.parse import unquote

from .httpbase import App, json_response
from .resp import Pool, RedisReplyError, Simple

# Commands that would corrupt pooled connections or kill the server.
DENIED = {
    "select", "multi", "exec", "discard", "watch", "unwatch", "subscribe", "psubscribe",
    "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "monitor", "quit", "reset",
    "hello", "auth", "shutdown", "sync", "psync", "replicaof", "slaveof", "client",
}
WRITE_FLAGS = {"write", "may_replicate", "admin"}
# Not flagged `write` by redis (they may or may not write), but refused for the read-only token.
RO_DENIED = {"eval", "evalsha", "fcall", "publish", "spublish", "script|flush", "script|kill",
             "function|load", "function|delete", "function|flush", "function|restore"}


class BadRequest(Exception):
    pass


def _load_flags(pool):
    """name -> set(flags), including 'container|sub' entries, from COMMAND."""
    (reply,) = pool.run([["COMMAND"]])
    flags = {}

    def add(entry):
        name = entry[0].decode().lower()
        flags[name] = {f.decode() for f in entry[2]}
        if len(entry) > 9 and entry[9]:
            for sub in entry[9]:
                add(sub)

    for entry in reply:
        add(entry)
    return flags


def _to_arg(v):
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, bool):
        return b"true" if v else b"false"
    if isinstance(v, (int, float)):
        return str(v).encode()
    raise BadRequest("ERR command arguments must be strings or numbers")


def _command(value):
    if not isinstance(value, list) or not value:
        raise BadRequest("ERR command must be a non-empty JSON array")
    if not isinstance(value[0], str):
        raise BadRequest("ERR command name must be a string")
    return [_to_arg(v) for v in value]


def _encode(value, b64):
    """RESP value -> JSON value, Upstash style."""
    if isinstance(value, bytes):
        if b64:
            # Upstash sends the +OK status plain; @upstash/redis special-cases "OK".
            if isinstance(value, Simple) and value == b"OK":
                return "OK"
            return base64.b64encode(value).decode("ascii")
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [_encode(v, b64) for v in value]
    if isinstance(value, RedisReplyError):  # nested error (e.g. inside EXEC); rare
        return str(value)
    return value  # int or None


def _entry(value, b64):
    if isinstance(value, RedisReplyError):
        return {"error": str(value)}
    return {"result": _encode(value, b64)}


class RedisRestApp(App):
    name = "redis-rest"

    def __init__(self, redis_host, redis_port, token, readonly_token, max_body, verbose=False):
        super().__init__(max_body, verbose)
        self.pool = Pool(redis_host, redis_port)
        self.token = token
        self.readonly_token = readonly_token
        self.flags = _load_flags(self.pool)

    def error(self, status, message, code=None):
        return json_response(status, {"error": message})

    # -- helpers -------------------------------------------------------------
    def _auth(self, req):
        """Return 'rw', 'ro' or None."""
        auth = req.header("Authorization", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        if token is None and "_token" in req.query:
            token = req.query["_token"][0]
        if token and token == self.token:
            return "rw"
        if token and self.readonly_token and token == self.readonly_token:
            return "ro"
        return None

    def _is_write(self, cmd):
        name = cmd[0].decode("utf-8", "replace").lower()
        flags = self.flags.get(name)
        if flags is None:
            return False  # unknown command: let redis reject it
        if len(cmd) > 1:
            sub = name + "|" + cmd[1].decode("utf-8", "replace").lower()
            if sub in RO_DENIED:
                return True
            flags = self.flags.get(sub, flags)
        return name in RO_DENIED or bool(flags & WRITE_FLAGS)

    def _check(self, cmd, role):
        """Return an error string if the command may not run, else None."""
        name = cmd[0].decode("utf-8", "replace").lower()
        if name in DENIED:
            return f"ERR Command is not available: '{name}'"
        if role == "ro" and self._is_write(cmd):
            return f"NOPERM this user has no permissions to run the '{name}' command"
        return None

    # -- dispatch ------------------------------------------------------------
    def handle(self, req):
        path = req.path
        if path == "/pipeline" or path == "/multi-exec":
            label = path[1:]
        elif path == "/":
            label = "<command>"
        else:
            label = "<path>"
        role = self._auth(req)
        if role is None:
            return label, json_response(401, {"error": "Unauthorized"})
        b64 = req.header("Upstash-Encoding", "").lower() == "base64"
        try:
            if path in ("/pipeline", "/multi-exec"):
                if req.method != "POST":
                    return label, self.error(405, "ERR use POST")
                cmds = self._parse_json(req.body)
                if not isinstance(cmds, list) or not cmds:
                    raise BadRequest("ERR body must be a non-empty JSON array of commands")
                cmds = [_command(c) for c in cmds]
                if path == "/pipeline":
                    return label, self._pipeline(cmds, role, b64)
                return label, self._multi_exec(cmds, role, b64)
            if path == "/":
                if req.method != "POST":
                    return label, json_response(200, {"result": "local-stack redis-rest bridge"})
                cmd = _command(self._parse_json(req.body))
            else:
                parts = path[1:].rstrip("/").split("/") if path != "/" else []
                cmd = [unquote(p).encode() for p in parts]
                if req.method == "POST" and req.body:
                    cmd.append(req.body)
            label = cmd[0].decode("utf-8", "replace").lower()
            return label, self._single(cmd, role, b64)
        except BadRequest as e:
            return label, self.error(400, str(e))
        except (ConnectionError, OSError) as e:
            return label, self.error(503, f"ERR redis unavailable: {e}")

    def _parse_json(self, body):
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError) as e:
            raise BadRequest(f"ERR failed to parse JSON body: {e}") from None

    def _names(self, cmds):
        return {c[0].decode("utf-8", "replace").lower() for c in cmds}

    def _single(self, cmd, role, b64):
        err = self._check(cmd, role)
        if err:
            return self.error(403 if err.startswith("NOPERM") else 400, err)
        plan = self.faults.plan(self._names([cmd]))
        self.apply_delay(plan)
        if plan.fail == "fail_before":
            return self.fault_response(plan)
        (reply,) = self.pool.run([cmd])
        if plan.fail == "fail_after":
            return self.fault_response(plan)
        if isinstance(reply, RedisReplyError):
            return self.error(400, str(reply))
        return json_response(200, {"result": _encode(reply, b64)})

    def _pipeline(self, cmds, role, b64):
        plan = self.faults.plan(self._names(cmds) | {"pipeline"})
        self.apply_delay(plan)
        if plan.fail == "fail_before":
            return self.fault_response(plan)
        checks = [self._check(c, role) for c in cmds]
        allowed = [c for c, err in zip(cmds, checks) if not err]
        replies = iter(self.pool.run(allowed) if allowed else [])
        out = [{"error": err} if err else _entry(next(replies), b64) for err in checks]
        if plan.fail == "fail_after":
            return self.fault_response(plan)
        return json_response(200, out)

    def _multi_exec(self, cmds, role, b64):
        for c in cmds:
            err = self._check(c, role)
            if err:
                return self.error(403 if err.startswith("NOPERM") else 400, err)
        plan = self.faults.plan(self._names(cmds) | {"multi-exec"})
        self.apply_delay(plan)
        if plan.fail == "fail_before":
            return self.fault_response(plan)
        replies = self.pool.run([[b"MULTI"], *cmds, [b"EXEC"]])
        queued, exec_reply = replies[1:-1], replies[-1]
        for r in queued:
            if isinstance(r, RedisReplyError):
                return self.error(400, str(r))  # EXECABORT: nothing applied
        if isinstance(exec_reply, RedisReplyError):
            return self.error(400, str(exec_reply))
        if plan.fail == "fail_after":
            return self.fault_response(plan)
        return json_response(200, [_entry(r, b64) for r in exec_reply])
