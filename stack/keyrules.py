"""The gateway's API-key rule: the worker's secret rule (crates/core/src/config/secrets.rs), ported.

A key is refused when it is shorter than 32 bytes, reads like a placeholder, equals or contains a
default published in this repository, or has fewer than 128 bits of estimated entropy (a repeated
character, a run like `0123`, a repeated chunk or a dictionary word counts for little).
`tests/fixtures/secret_samples.json` holds samples with the verdict and estimate both
implementations must give (checked by a Rust test and a pytest), so the two cannot drift apart.

Generate a key: `python3 -c 'import secrets; print(secrets.token_urlsafe(48))'` or
`openssl rand -base64 48`.
"""
import math

MIN_KEY_BYTES = 32
MIN_KEY_BITS = 128
PLACEHOLDERS = ("replace", "example", "changeme", "change-me", "change_me", "your-", "<", "todo", "xxxx")
# The local stack's defaults: published, never a production key.
PUBLISHED = ("local-dev-data-api-key", "local-dev-redis-token", "local-dev-redis-readonly-token")
WORDS = (
    "access", "account", "admin", "alpha", "api", "app", "auth", "bench", "beta", "bridge",
    "change", "char", "chars", "character", "characters", "cloud", "console", "data", "default",
    "demo", "deploy", "dev", "development", "dragon", "edge", "example", "football", "gateway",
    "geo", "hello", "hs256", "ingest", "inbox", "key", "keys", "leak", "least", "legacy", "letmein",
    "local", "localhost", "long", "master", "monkey", "mongo", "mongodb", "must", "new", "not",
    "notify", "old", "ops", "pass", "passw0rd", "password", "primary", "prod", "production",
    "qwerty", "random", "redis", "replace", "rest", "rotated", "secret", "secure", "service",
    "shadow", "smoke", "staging", "sunshine", "super", "test", "testing", "the", "token", "trustno1",
    "user", "value", "welcome", "with", "worker", "your",
)
WORD_BITS = 11.0
SEPARATORS = b"-_. /:"


def estimate_bits(s):
    """Estimated entropy in bits; the same algorithm as `estimate_bits` in crates/core/src/config/secrets.rs."""
    b = s.encode()[:256]
    lower = b.lower()
    bits = 0.0
    i = 0
    n = len(b)
    while i < n:
        word = max((len(w) for w in WORDS if lower.startswith(w.encode(), i)), default=0)
        if word >= 3:
            bits += WORD_BITS
            i += word
            continue
        repeat = 0
        for length in range(min(n - i, i), 2, -1):
            if lower[i:i + length] in lower[:i]:
                repeat = length
                break
        if repeat:
            bits += max(math.log2(i), 1.0) + math.log2(repeat)
            i += repeat
            continue
        c = b[i]
        if i > 0 and c == b[i - 1]:
            bits += 1.0
        elif i > 0 and abs(c - b[i - 1]) == 1 and chr(c).isascii() and chr(c).isalnum():
            bits += 2.0
        elif c in SEPARATORS:
            bits += 2.0
        elif 48 <= c <= 57:
            bits += math.log2(10)
        elif (65 <= c <= 90) or (97 <= c <= 122):
            bits += math.log2(26)
        else:
            bits += 5.0
        i += 1
    return int(bits)


def weakness(key):
    """Why `key` is refused (never containing the key), or None."""
    low = key.lower()
    if any(low == p or p in low for p in PUBLISHED):
        return "equals or contains a value published in this repository"
    marker = next((m for m in PLACEHOLDERS if m in low), None)
    if marker:
        return f"still a placeholder (contains {marker!r})"
    if len(key.encode()) < MIN_KEY_BYTES:
        return f"shorter than {MIN_KEY_BYTES} bytes ({len(key.encode())})"
    bits = estimate_bits(key)
    if bits < MIN_KEY_BITS:
        return (f"about {bits} bits of estimated entropy, fewer than {MIN_KEY_BITS} (a repeated character, a "
                "run or a dictionary word counts for little)")
    return None
