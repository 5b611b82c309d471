#!/usr/bin/env bash
# Section: IP -> country for each database (DB-IP Lite default, iptoasn): the compact table vs
# the plain `maxminddb` crate vs `mmdb-lib`, agreement on the probe set, and workerd figures.
# The section itself lives in ip.sh so it can also run alone.
set -euo pipefail
exec bash "$(dirname "$0")/ip.sh" "$@"
