#!/usr/bin/env bash
# Section: the gateway's failed-auth limiter (issue 25): authenticated find req/s with and without
# it in the same run, and its memory per tracked address.
set -euo pipefail
.venv/bin/python -m bench.probes.gateway_limiter "$@"
