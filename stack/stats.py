"""Per-endpoint request counters (dev-only observability)."""
import threading
from collections import Counter


class Stats:
    def __init__(self):
        self._lock = threading.Lock()
        self._requests = Counter()
        self._status = Counter()

    def record(self, label, status):
        with self._lock:
            self._requests[label] += 1
            self._status[str(status)] += 1

    def snapshot(self):
        with self._lock:
            return {
                "requests": dict(self._requests),
                "status": dict(self._status),
                "total": sum(self._requests.values()),
            }

    def reset(self):
        with self._lock:
            self._requests.clear()
            self._status.clear()
