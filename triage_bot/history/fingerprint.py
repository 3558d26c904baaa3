"""The dedup key of an incident: signature id + engine + target, never the text.

The text of the same failure differs every time (pids, timestamps, sizes), so deduplicating on it
would open a new incident per paste. The parts are normalised and hashed so the key has a fixed
length that a unique index can hold, and the version prefix lets the scheme change later without
merging old and new keys.
"""

from __future__ import annotations

import hashlib

_VERSION = "v1"


def fingerprint(signature_id: str, engine: str, target: str) -> str:
    """A 64-hex-digit key; case and surrounding spaces do not matter."""
    parts = [_VERSION, *(part.strip().casefold() for part in (signature_id, engine, target))]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
