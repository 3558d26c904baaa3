"""What the `/triage` subcommands do, apart from how a surface shows it: read the arguments, ask
the history, and say what happened as an outcome a surface renders.

The Slack adapter (slack/commands.py) turns outcomes into messages; the decisions (what an
argument means, what counts as unknown, when a change only waits in the spool) are made here,
once, so a second surface cannot answer the same words differently.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore, IncidentSummary, MuteInfo
    from triage_bot.kb.loader import KnowledgeBase
    from triage_bot.kb.schema import Signature

log = logging.getLogger(__name__)

HISTORY_LIMIT = 25
MAX_DAYS = 365
MAX_DURATION = timedelta(days=366)
HISTORY_ENGINES = (
    "generic",
)  # besides the knowledge base's engines and the probes' kinds: what incidents are filed under
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(m|min|mins|minutes?|h|hrs?|hours?|d|days?|w|weeks?)$")
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 604800}

Kind = Literal[
    "no_history",  # the history is not configured
    "unavailable",  # the database did not answer (the cause is in the log)
    "usage",  # the arguments do not say what to do
    "bad_days",
    "unknown_engine",
    "bad_duration",
    "unknown_signature",
    "refused",  # the history refused the change; `detail` says why in words meant for users
    "not_found",
    "queued",  # the database is away: the change waits in the spool
    "already",  # nothing to change (already resolved, mute not in force)
    "done",
]


@dataclass(frozen=True)
class Outcome:
    """What a subcommand did: its kind, the number it acted on, and what a surface may show."""

    kind: Kind
    number: int | None = None
    detail: str = ""  # plain text, never markup
    known: tuple[str, ...] = ()  # unknown_engine: the engines the filter takes


@dataclass(frozen=True)
class Incidents:
    """The incidents `history` asked for."""

    engine: str | None
    days: float
    rows: list[IncidentSummary] = field(default_factory=list)

    @property
    def cut(self) -> bool:
        return len(self.rows) == HISTORY_LIMIT


@dataclass(frozen=True)
class MuteTarget:
    signature_id: str | None
    engine: str | None
    duration: timedelta


def parse_duration(text: str) -> timedelta | None:
    """`30m`, `2h`, `1d`, `1w`; None when not understood, zero, or longer than a year."""
    match = _DURATION.match(text.strip().lower())
    if not match:
        return None
    seconds = float(match.group(1)) * _UNITS[match.group(2)[0]]
    if not 0 < seconds <= MAX_DURATION.total_seconds():
        return None
    return timedelta(seconds=seconds)


def parse_number(args: str) -> int | None:
    """The number of an incident or a mute, written `42` or `#42`; None for anything else."""
    raw = args.strip().lstrip("#")
    return int(raw) if raw.isdigit() else None


def history_engines(kb: KnowledgeBase) -> list[str]:
    """What incidents are filed under: the knowledge base's engines, the probes' kinds, generic."""
    from triage_bot.health.probes import available_kinds

    return list(dict.fromkeys([*kb.engines, *available_kinds(), *HISTORY_ENGINES]))


def incidents(history: HistoryStore | None, kb: KnowledgeBase, args: str) -> Incidents | Outcome:
    """`history [engine] [days]`: an engine filter and a number of days (`30`, `30d`), in any order."""
    if history is None:
        return Outcome("no_history")
    engine: str | None = None
    days = 7.0
    for token in args.split():
        cleaned = token.lower().removesuffix("d")
        if cleaned.replace(".", "", 1).isdigit():
            days = min(float(cleaned), MAX_DAYS)
        else:
            engine = token.lower()
    if days <= 0:
        return Outcome("bad_days")
    known = history_engines(kb)
    if engine is not None and engine not in known:
        # a typo must not read as "no incidents": say what the filter takes
        return Outcome("unknown_engine", detail=engine, known=tuple(known))
    try:
        rows = history.history(engine=engine, days=days, limit=HISTORY_LIMIT)
    except Exception:
        log.exception("the incident history cannot be read")
        return Outcome("unavailable")
    return Incidents(engine, days, rows)


def resolve(history: HistoryStore | None, args: str, user: str) -> Outcome:
    """`resolve <incident> [how it was fixed]`: the words after the number are the resolution note,
    which the next "seen before" line shows."""
    if history is None:
        return Outcome("no_history")
    from triage_bot.history import IncidentNotFound

    first, _, note = args.strip().partition(" ")
    note = note.strip()
    return _numbered_change(
        first, lambda n: history.resolve(n, by=user, note=note or None), IncidentNotFound, "incident", note
    )


def _numbered_change(
    args: str, change: Callable[[int], bool | None], missing: type[Exception], what: str, detail: str = ""
) -> Outcome:
    """A change to the incident or mute numbered in `args`: `change` returns True when made, False
    when there was nothing to change, None when it waits in the spool; `missing` means no such number."""
    number = parse_number(args)
    if number is None:
        return Outcome("usage")
    try:
        changed = change(number)
    except missing:
        return Outcome("not_found", number)
    except Exception:
        log.exception("%s %s could not be changed", what, number)
        return Outcome("unavailable", number)
    if changed is None:
        return Outcome("queued", number, detail=detail)
    return Outcome("done" if changed else "already", number, detail=detail)


def mute_target(kb: KnowledgeBase, args: str) -> MuteTarget | Outcome:
    """`mute <signature|engine> <duration>`: a known signature id, or else an engine name."""
    parts = args.split()
    if len(parts) < 2:
        return Outcome("usage")
    target, duration = parts[0].strip(), parse_duration("".join(parts[1:]))
    if duration is None:
        return Outcome("bad_duration")
    if kb.get(target) is not None:
        return MuteTarget(target, None, duration)
    if "." in target:
        return Outcome("unknown_signature", detail=target)
    return MuteTarget(None, target.lower(), duration)


def mute(
    history: HistoryStore | None, kb: KnowledgeBase, args: str, user: str
) -> tuple[Outcome, MuteTarget | None]:
    if history is None:
        return Outcome("no_history"), None
    target = mute_target(kb, args)
    if isinstance(target, Outcome):
        return target, None
    try:
        history.mute(
            signature_id=target.signature_id,
            engine=target.engine,
            duration=target.duration,
            by=user,
            reason=f"/triage mute by {user}",
        )
    except (ValueError, OverflowError) as exc:
        # the history's own validation messages are written for users; anything else stays in the log
        said = str(exc) if isinstance(exc, ValueError) and "mute" in str(exc) else "that end is out of range"
        return Outcome("refused", detail=said), target
    except Exception:
        log.exception("the mute could not be saved")
        return Outcome("unavailable"), target
    return Outcome("done"), target


def mutes(history: HistoryStore | None) -> list[MuteInfo] | Outcome:
    if history is None:
        return Outcome("no_history")
    try:
        return history.active_mutes()
    except Exception:
        log.exception("the mutes cannot be read")
        return Outcome("unavailable")


def unmute(history: HistoryStore | None, args: str) -> Outcome:
    if history is None:
        return Outcome("no_history")
    return _numbered_change(args, history.unmute, ValueError, "mute")


def search_signatures(kb: KnowledgeBase, words: str, limit: int = 5) -> list[tuple[Signature, float]]:
    """Signatures whose id, title or canonical messages best match the words."""
    from rapidfuzz import fuzz, process, utils

    words = words.strip()[:300]
    if not words:
        return []
    keys = [f"{s.id} {s.title} {' '.join(s.messages[:3])}" for s in kb.signatures]
    found = process.extract(words, keys, scorer=fuzz.WRatio, processor=utils.default_process, limit=limit * 3)
    lowered = set(words.lower().split())
    ranked = []
    for _key, score, index in found:
        sig = kb.signatures[index]
        overlap = len(lowered & set(re.split(r"[\s._]+", f"{sig.id} {sig.title}".lower())))
        ranked.append((sig, min(100.0, score + 5 * overlap)))
    ranked.sort(key=lambda pair: pair[1], reverse=True)
    return [(s, score) for s, score in ranked if score >= 50][:limit]
