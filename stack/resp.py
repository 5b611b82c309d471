"""A tiny RESP2 client (keeps the raw error text and simple-vs-bulk distinction,
which redis-py's parser drops)."""
import socket
import threading


class RedisReplyError(Exception):
    """An error reply; str() is the full text, e.g. 'NOSCRIPT No matching script...'."""


class Simple(bytes):
    """A simple-string reply (+OK, +PONG, +QUEUED)."""


def _arg(a):
    if isinstance(a, bytes):
        return a
    return str(a).encode()


def encode_command(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = _arg(a)
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Connection:
    def __init__(self, host, port, timeout=30):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb")

    def send(self, commands):
        self.sock.sendall(b"".join(encode_command(c) for c in commands))

    def read(self):
        """Read one reply. Error replies are *returned* as RedisReplyError."""
        line = self.rfile.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed by redis")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return Simple(rest)
        if kind == b"-":
            return RedisReplyError(rest.decode("utf-8", "replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.rfile.read(n + 2)
            if len(data) != n + 2:
                raise ConnectionError("short read from redis")
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ConnectionError(f"bad RESP type byte {kind!r}")

    def close(self):
        try:
            self.rfile.close()
            self.sock.close()
        except OSError:
            pass


class Pool:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self._free = []
        self._lock = threading.Lock()

    def run(self, commands):
        """Send commands in one write, return the list of replies (in order)."""
        with self._lock:
            conn = self._free.pop() if self._free else None
        if conn is None:
            conn = Connection(self.host, self.port)
        try:
            conn.send(commands)
            replies = [conn.read() for _ in commands]
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._free.append(conn)
        return replies

    def close(self):
        with self._lock:
            conns, self._free = self._free, []
        for c in conns:
            c.close()
