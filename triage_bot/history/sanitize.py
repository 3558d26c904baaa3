"""Make untrusted input storable: valid text, redacted, capped, with sane timestamps.

Everything that reaches the history comes from pastes, engines or clocks we do not control. The
database would reject some of it (PostgreSQL refuses NUL bytes and lone surrogates, JSON refuses
NaN) and some of it would quietly poison queries (a timestamp in 9999 keeps an incident "recent"
forever). Each function here turns such input into a clear `ValueError` or a safe, visible value;
none drops data without saying so.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, overload

from triage_bot.redaction import redact, redact_value

log = logging.getLogger(__name__)

EXCERPT_CAP_BYTES = 16 * 1024
"""Stored excerpts hold at most this many bytes of UTF-8, the truncation marker included."""
REDACT_INPUT_CAP_BYTES = 4 * 1024 * 1024
"""Longer pastes are cut (at a line end) before redaction, which bounds its cost."""
NOTE_CAP_BYTES = 4 * 1024
VALUES_CAP_BYTES = 64 * 1024
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
"""Observations before this are clock errors: the bot did not exist."""
FUTURE_SKEW = timedelta(days=1)
"""Observations later than now + this are clock errors."""

SIGNATURE_ID_RE = re.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_]+)+$")
_SEVERITIES = ("critical", "high", "medium", "low", "info")
_SOURCES = ("slack", "health", "cli")


def utcnow() -> datetime:
    return datetime.now(UTC)


def clean_text(value: str | bytes) -> str:
    """Valid UTF-8 text without NUL: undecodable bytes and lone surrogates become U+FFFD."""
    if isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", errors="replace")
    else:
        text = str(value)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates, e.g. from os.fsdecode of bad bytes
            try:
                text = text.encode("utf-8", "surrogateescape").decode("utf-8", errors="replace")
            except UnicodeEncodeError:
                text = text.encode("utf-8", "replace").decode("utf-8")
    return text.replace("\x00", "\ufffd")


def cap_utf8(text: str, cap: int) -> tuple[str, bool]:
    """`text` cut to at most `cap` bytes of UTF-8 on a character boundary, and whether it was cut."""
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text, False
    return data[:cap].decode("utf-8", errors="ignore"), True


@dataclass(frozen=True, slots=True)
class Excerpt:
    text: str
    truncated: bool
    original_bytes: int


def prepare_excerpt(value: str | bytes | None, cap: int = EXCERPT_CAP_BYTES) -> Excerpt:
    """Clean, redact, then cap; redacting before cutting means a cut never exposes half a secret."""
    text = clean_text(value or "")
    original = len(text.encode("utf-8"))
    text, cut = cap_utf8(text, REDACT_INPUT_CAP_BYTES)
    if cut and "\n" in text:
        text = text[
            : text.rindex("\n")
        ]  # a secret never spans lines, except key blocks (redacted to the end)
    text = redact(text)
    text, over = cap_utf8(text, cap)
    truncated = cut or over
    if truncated:
        marker = f"\n…[truncated: {original} bytes, first {cap} kept]"
        text, _ = cap_utf8(text, cap - len(marker.encode("utf-8")))
        text += marker
    return Excerpt(text, truncated, original)


def note(value: str | bytes | None, cap: int = NOTE_CAP_BYTES) -> str | None:
    """Free text written by people (resolution notes, mute reasons): cleaned, redacted, capped."""
    if value is None:
        return None
    text = redact(clean_text(value))
    text, cut = cap_utf8(text, cap)
    return text + "…" if cut else text


@overload
def identifier(value: str | None, name: str, limit: int, *, default: str) -> str: ...
@overload
def identifier(value: str | None, name: str, limit: int, *, default: None = None) -> str | None: ...
def identifier(value: str | None, name: str, limit: int, *, default: str | None = None) -> str | None:
    """A short id (engine, channel, user, ts): cleaned; too long is an error, not a silent cut."""
    if value is None or not str(value).strip():
        return default
    text = clean_text(value).strip()
    if len(text) > limit:
        raise ValueError(f"{name} is longer than {limit} characters ({len(text)})")
    return text


def signature_id(value: str) -> str:
    text = clean_text(value or "").strip()
    if len(text) > 128 or not SIGNATURE_ID_RE.match(text):
        raise ValueError(
            f"signature id must look like 'engine.name' (lowercase, dots, underscores): {text[:80]!r}"
        )
    return text


def choice(value: str, name: str, allowed: tuple[str, ...]) -> str:
    text = clean_text(value or "").strip().lower()
    if text not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {text[:40]!r}")
    return text


def severity(value: str) -> str:
    return choice(value, "severity", _SEVERITIES)


def source(value: str) -> str:
    return choice(value, "source", _SOURCES)


def confidence(value: float | None) -> float | None:
    """A score in [0, 1]; NaN becomes None and out-of-range values are clamped (and logged)."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"confidence must be a number, got {str(value)[:40]!r}") from None
    if math.isnan(number):
        log.warning("confidence is NaN; stored as unknown")
        return None
    if not 0.0 <= number <= 1.0:
        log.warning("confidence %r is outside [0, 1]; clamped", number)
    return min(1.0, max(0.0, number))


def json_values(value: Any, cap: int = VALUES_CAP_BYTES) -> dict[str, Any]:
    """Extracted values as a JSON object: redacted, NaN/inf as strings, oversized ones previewed."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        value = {"value": value}
    safe: dict[str, Any] = redact_value(_json_safe(value))
    encoded = json.dumps(safe, ensure_ascii=False, allow_nan=False)
    if len(encoded.encode("utf-8")) <= cap:
        return safe
    preview, _ = cap_utf8(encoded, 4096)
    log.warning("extracted values are %d bytes (cap %d); stored a preview", len(encoded), cap)
    return {"_truncated": True, "_bytes": len(encoded.encode("utf-8")), "_preview": preview}


def _json_safe(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_json_safe(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return clean_text(repr(value))


def record_id(value: Any, name: str = "id") -> int:
    """Ids arrive from buttons and commands (`/triage resolve 12`): only a positive 63-bit integer."""
    if isinstance(value, bool | float):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {str(value)[:40]!r}") from None
    if not 0 < number < 2**63:
        raise ValueError(f"{name} must be between 1 and 2**63-1, got {number}")
    return number


def as_utc(value: datetime, name: str) -> datetime:
    """An aware UTC datetime; a naive one is taken to be UTC already."""
    if not isinstance(value, datetime):
        raise ValueError(f"{name} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{name} {value!r} is out of range") from None


def observed_at(
    value: datetime | None, name: str, now: datetime | None = None
) -> tuple[datetime, str | None]:
    """When something happened: a clock error (before 2000, or over a day ahead) becomes now.

    Returns the time to store and, when it was replaced, the original as text so it stays visible.
    """
    now = now or utcnow()
    if value is None:
        return now, None
    try:
        stamp = as_utc(value, name)
    except ValueError:
        stamp = None
    if stamp is not None and EARLIEST <= stamp <= now + FUTURE_SKEW:
        return stamp, None
    original = value.isoformat() if isinstance(value, datetime) else repr(value)
    log.warning("%s %s is not a plausible time; stored as now (%s)", name, original, now.isoformat())
    return now, original


def period(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """A query window: both ends UTC, start before end, inside 1970..9000."""
    start, end = as_utc(start, "start"), as_utc(end, "end")
    low, high = datetime(1970, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC)
    if not (low <= start < end <= high):
        raise ValueError(f"period must satisfy 1970 <= start < end <= 9000, got {start} .. {end}")
    return start, end


def days_back(days: float | None, now: datetime, limit: int = 36_500) -> datetime | None:
    """The start of 'the last N days'; N must be in (0, limit]."""
    if days is None:
        return None
    try:
        number = float(days)
    except (TypeError, ValueError):
        number = math.nan
    if not 0 < number <= limit:  # NaN fails too
        raise ValueError(f"days must be a number greater than 0 and at most {limit}, got {str(days)[:40]!r}")
    return now - timedelta(days=number)
