"""Local backend stack: real redis-server + Upstash-style REST bridge + Atlas Data API (v1) emulator.

Run with ``python -m stack`` (see stack/README.md).
"""
