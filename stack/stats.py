"""Per-endpoint request counters (dev-only observability)."""
import json
import threading
from collections import Counter


class Stats:
    def __init__(self):
        self._lock = threading.Lock()
        self._requests = Counter()
        self._status = Counter()
        self._errors = Counter()
        self._last = {}
        self._in_flight = 0

    def begin(self):
        """A request started (before any fault delay), so tests can wait for a drained server."""
        with self._lock:
            self._in_flight += 1

    def end(self):
        with self._lock:
            self._in_flight -= 1

    def record(self, label, status, body=b""):
        """Counts a finished request and keeps its body as the label's last (tests read e.g. a
        find's `limit` from it)."""
        with self._lock:
            self._requests[label] += 1
            self._status[str(status)] += 1
            if status >= 400:
                # Per label: e.g. an EVALSHA answered NOSCRIPT, after which the client sends EVAL.
                self._errors[label] += 1
            self._last[label] = body

    def snapshot(self):
        with self._lock:
            last = dict(self._last)
            snap = {
                "requests": dict(self._requests),
                "status": dict(self._status),
                "errors": dict(self._errors),
                "total": sum(self._requests.values()),
                "in_flight": self._in_flight,
            }
        snap["last"] = {k: _decode(v) for k, v in last.items()}
        return snap

    def reset(self):
        with self._lock:
            self._requests.clear()
            self._status.clear()
            self._errors.clear()
            self._last.clear()


def _decode(body):
    try:
        return json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")
