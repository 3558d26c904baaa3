"""The weekly digest's numbers, from the incident history.

Most figures come straight from `HistoryStore.digest_numbers` (this week and the week before, for
the trend). Two things the digest shows are not in it, and are computed here over the history's
tables with two narrow queries: incidents per day by engine (days in the team's timezone, so
"Monday" means their Monday) and MTTA/MTTR per signature.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import or_, select

from triage_bot.history import DigestNumbers, GroupCount, HistoryStore
from triage_bot.history.figures import WrongMatch
from triage_bot.history.models import Incident


@dataclass(frozen=True)
class SignatureTimes:
    signature_id: str
    acknowledged: int
    resolved: int
    mtta_s: float | None
    mttr_s: float | None


@dataclass
class Digest:
    start: datetime
    end: datetime
    timezone: str
    days: list[date]
    numbers: DigestNumbers
    previous: DigestNumbers
    per_day: dict[str, list[int]]  # engine -> incidents opened on each of `days`
    times: list[SignatureTimes] = field(default_factory=list)
    wrong: list[WrongMatch] = field(default_factory=list)  # signatures reported as wrong answers

    @property
    def top_signatures(self) -> list[GroupCount]:
        return self.numbers.by_signature[:5]

    def trend(self, now: float | None, before: float | None) -> float | None:
        """Relative change against the previous period (None when there is nothing to compare)."""
        if now is None or before is None or before == 0:
            return None
        return (now - before) / before

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "timezone": self.timezone,
            "days": [d.isoformat() for d in self.days],
            "numbers": self.numbers.to_json(),
            "previous": self.previous.to_json(),
            "incidents_per_day": self.per_day,
            "top_signatures": [g.to_json() for g in self.top_signatures],
            "times_by_signature": [t.__dict__ for t in self.times],
            "wrong_matches": [w.to_json() for w in self.wrong],
            "trend": {
                "incidents": self.trend(self.numbers.incidents, self.previous.incidents),
                "occurrences": self.trend(self.numbers.occurrences, self.previous.occurrences),
                "mttr": self.trend(self.numbers.mttr_seconds, self.previous.mttr_seconds),
            },
        }


def period(end: datetime | None, days: int, tz: str) -> tuple[datetime, datetime, list[date]]:
    """The `days` whole local days before `end`'s local midnight (a Monday-09:00 run covers Mon..Sun)."""
    zone = ZoneInfo(tz)
    end = (end or datetime.now(UTC)).astimezone(zone)
    last_midnight = datetime.combine(end.date(), time(0), tzinfo=zone)
    start_day = end.date() - timedelta(days=days)
    start = datetime.combine(start_day, time(0), tzinfo=zone)
    day_list = [start_day + timedelta(days=i) for i in range(days)]
    return start.astimezone(UTC), last_midnight.astimezone(UTC), day_list


def _per_day(
    session: Any, start: datetime, end: datetime, days: list[date], zone: ZoneInfo
) -> dict[str, list[int]]:
    index = {d: i for i, d in enumerate(days)}
    out: dict[str, list[int]] = defaultdict(lambda: [0] * len(days))
    rows = session.execute(
        select(Incident.engine, Incident.first_seen).where(
            Incident.first_seen >= start, Incident.first_seen < end
        )
    )
    for engine, first_seen in rows:
        local = (
            first_seen.astimezone(zone).date()
            if first_seen.tzinfo
            else first_seen.replace(tzinfo=UTC).astimezone(zone).date()
        )
        i = index.get(local)
        if i is not None:
            out[engine][i] += 1
    return dict(sorted(out.items(), key=lambda kv: -sum(kv[1])))


def _times(session: Any, start: datetime, end: datetime, top: int = 10) -> list[SignatureTimes]:
    acks: dict[str, list[float]] = defaultdict(list)
    fixes: dict[str, list[float]] = defaultdict(list)
    rows = session.execute(
        select(
            Incident.signature_id, Incident.first_seen, Incident.acknowledged_at, Incident.resolved_at
        ).where(
            or_(
                (Incident.acknowledged_at >= start) & (Incident.acknowledged_at < end),
                (Incident.resolved_at >= start) & (Incident.resolved_at < end),
            )
        )
    )
    for sig, first, acked, resolved in rows:
        if acked is not None and start <= acked < end:
            acks[sig].append(max(0.0, (acked - first).total_seconds()))
        if resolved is not None and start <= resolved < end:
            fixes[sig].append(max(0.0, (resolved - first).total_seconds()))
    sigs = sorted(set(acks) | set(fixes), key=lambda s: (-(len(fixes[s]) + len(acks[s])), s))[:top]
    return [
        SignatureTimes(
            s,
            len(acks[s]),
            len(fixes[s]),
            sum(acks[s]) / len(acks[s]) if acks[s] else None,
            sum(fixes[s]) / len(fixes[s]) if fixes[s] else None,
        )
        for s in sigs
    ]


def build_digest(
    store: HistoryStore, *, end: datetime | None = None, days: int = 7, tz: str = "UTC", top: int = 5
) -> Digest:
    """Everything the digest shows, for the `days` local days before `end` (default: now)."""
    start, stop, day_list = period(end, days, tz)
    numbers = store.digest_numbers(start, stop, top=top)
    previous = store.digest_numbers(start - (stop - start), start, top=top)
    zone = ZoneInfo(tz)
    with store.session_factory() as session:
        per_day = _per_day(session, start, stop, day_list, zone)
        times = _times(session, start, stop)
    wrong = store.wrong_matches(start, stop)
    return Digest(start, stop, tz, day_list, numbers, previous, per_day, times, wrong)
