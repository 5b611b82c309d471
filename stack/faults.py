"""Fault injection rules shared by both servers.

A rule: {"match": name|"*", "mode": "fail_before"|"fail_after"|"delay",
(on the Data API a name is the action, or the action on one collection: "updateOne:notifications")
         "probability": 1.0, "count": N|null, "delay_ms": 0, "status": 503}
"""
import random
import threading

MODES = ("fail_before", "fail_after", "delay")


class FaultError(ValueError):
    pass


class Plan:
    """What to do with one request: optional delay, then optional failure."""

    __slots__ = ("delay_ms", "fail", "status")

    def __init__(self):
        self.delay_ms = 0
        self.fail = None  # None | "fail_before" | "fail_after"
        self.status = 503


NO_FAULT = Plan()


def _rule(spec):
    if not isinstance(spec, dict):
        raise FaultError("each rule must be an object")
    mode = spec.get("mode")
    if mode not in MODES:
        raise FaultError(f"mode must be one of {', '.join(MODES)}")
    match = spec.get("match", "*")
    if not isinstance(match, str) or not match:
        raise FaultError("match must be a non-empty string")
    prob = spec.get("probability", 1.0)
    count = spec.get("count")
    status = spec.get("status", 503)
    delay = spec.get("delay_ms", 0)
    for key, val in (("probability", prob), ("delay_ms", delay)):
        if isinstance(val, bool) or not isinstance(val, (int, float)) or val < 0:
            raise FaultError(f"{key} must be a non-negative number")
    if prob > 1:
        raise FaultError("probability must be <= 1")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise FaultError("count must be a non-negative integer")
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise FaultError("status must be an HTTP error status (400-599)")
    return {"match": match.lower(), "mode": mode, "probability": float(prob),
            "count": count, "delay_ms": delay, "status": status, "fired": 0}


class Faults:
    def __init__(self):
        self._lock = threading.Lock()
        self._rules = []
        self._rng = random.Random()
        self._seed = None

    def configure(self, body):
        if not isinstance(body, dict) or not isinstance(body.get("rules"), list):
            raise FaultError('body must be {"rules": [...], "seed": optional}')
        rules = [_rule(r) for r in body["rules"]]
        seed = body.get("seed")
        with self._lock:
            self._rules = rules
            self._seed = seed
            self._rng = random.Random(seed)

    def clear(self):
        with self._lock:
            self._rules = []
            self._seed = None

    def snapshot(self):
        with self._lock:
            return {"rules": [dict(r) for r in self._rules], "seed": self._seed}

    def plan(self, names):
        """Roll the dice for a request whose names (lowercase) are `names`."""
        if not self._rules:
            return NO_FAULT
        plan = Plan()
        fired = False
        with self._lock:
            for rule in self._rules:
                if rule["match"] != "*" and rule["match"] not in names:
                    continue
                if rule["count"] is not None and rule["count"] <= 0:
                    continue
                if rule["mode"] != "delay" and plan.fail:
                    continue  # one failure per request is enough
                if rule["probability"] < 1.0 and self._rng.random() >= rule["probability"]:
                    continue
                if rule["count"] is not None:
                    rule["count"] -= 1
                rule["fired"] += 1
                fired = True
                if rule["mode"] == "delay":
                    plan.delay_ms += rule["delay_ms"]
                else:
                    plan.fail = rule["mode"]
                    plan.status = rule["status"]
        return plan if fired else NO_FAULT
