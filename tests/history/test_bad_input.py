"""Hostile and broken input: a clear error or a safe, visible value; no crash, nothing dropped quietly."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, func, select

from triage_bot.history import EXCERPT_CAP_BYTES, HistoryStore, Sighting
from triage_bot.history.models import Incident, Occurrence, SlackEvent

SIG = "generic.cuda_oom"
SQL = [
    "x' OR '1'='1",
    "'; DROP TABLE incidents; --",
    'vllm" OR 1=1 --',
    "vllm) UNION SELECT * FROM feedback --",
    "%",
    "_",
    "\\",
]
TOKEN = "hf_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDc"


def occurrences(engine: Engine) -> list[Occurrence]:
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        return list(session.scalars(select(Occurrence).order_by(Occurrence.id)))


@pytest.fixture
def seeded(store: HistoryStore, now: datetime) -> int:
    return store.record(Sighting(SIG, "vllm", "llama-prod", seen_at=now)).incident_id  # type: ignore[return-value]


@pytest.mark.parametrize("payload", SQL)
def test_sql_in_every_filter_is_only_data(
    store: HistoryStore, engine: Engine, seeded: int, payload: str
) -> None:
    assert store.history(engine=payload) == []
    assert store.history(signature_id=payload) == []
    assert store.history(target=payload) == []
    assert store.history(engine=payload, signature_id=payload, target=payload, days=1) == []
    assert store.seen_before(payload, payload, payload) is None
    assert store.is_muted(payload, payload, payload) is None
    assert store.find_posted(engine=payload, kind=payload) is None
    for bad in ({"status": payload}, {"days": payload}, {"limit": payload}):
        with pytest.raises(ValueError):
            store.history(**bad)
    with pytest.raises(ValueError):
        store.get_incident(payload)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.resolve(payload, "U1")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.digest_numbers(payload, payload)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.record(Sighting(payload, "vllm"))  # a signature id has a fixed shape
    # Free-form fields store the payload verbatim, as data, and find it again exactly.
    short = payload[:60]
    stored = store.record(Sighting(SIG, short, payload, channel="C1", user=short, excerpt=payload))
    assert [i.id for i in store.history(engine=short)] == [stored.incident_id]
    assert store.mark_event_once(payload) is True and store.mark_event_once(payload) is False
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(Incident)).scalar_one() == 2
        assert connection.execute(select(func.count()).select_from(SlackEvent)).scalar_one() == 1
    assert store.get_incident(seeded) is not None


def test_one_megabyte_excerpt_is_capped_marked_and_redacted(
    store: HistoryStore, engine: Engine, now: datetime
) -> None:
    line = "ERROR 10-14 12:32:47 worker.py:229] torch.OutOfMemoryError: CUDA out of memory.\n"
    text = f"HF_TOKEN={TOKEN}\n" + line * (1_048_576 // len(line)) + f"late secret {TOKEN}\n"
    edge = "A" * (EXCERPT_CAP_BYTES - 60) + TOKEN + " tail" * 100  # a token straddling the cap
    for excerpt in (text, edge):
        result = store.record(Sighting(SIG, "vllm", "llama-prod", excerpt=excerpt, seen_at=now))
        assert result.occurrence_id is not None
    big, straddle = occurrences(engine)
    for occ in (big, straddle):
        assert len(occ.excerpt.encode("utf-8")) <= EXCERPT_CAP_BYTES
        assert occ.excerpt_truncated
        assert "[truncated:" in occ.excerpt
        assert not any(TOKEN[i : i + 8] in occ.excerpt for i in range(len(TOKEN) - 8))
    assert big.excerpt_bytes == len(text.encode("utf-8"))
    assert big.excerpt.startswith("HF_TOKEN=[REDACTED:hf_token]")


def test_short_excerpt_is_kept_whole(store: HistoryStore, engine: Engine, now: datetime) -> None:
    store.record(Sighting(SIG, "vllm", excerpt="RuntimeError: CUDA error: out of memory", seen_at=now))
    [occ] = occurrences(engine)
    assert occ.excerpt == "RuntimeError: CUDA error: out of memory" and not occ.excerpt_truncated


def test_non_utf8_and_nul_text_is_stored_with_replacement_characters(
    store: HistoryStore, engine: Engine, now: datetime
) -> None:
    raw = b"CUDA error \xff\xfe\xc3( at 0x7f3a\x00 end"
    store.record(Sighting(SIG, "vllm", excerpt=raw, seen_at=now))
    store.record(Sighting(SIG, "vllm", excerpt="bad surrogate \udcff here", seen_at=now))
    store.record(
        Sighting(SIG, "vl\x00lm", "tar\ud800get", user="U\x001", excerpt="nul\x00", seen_at=now),
    )
    first, second, third = occurrences(engine)
    assert first.excerpt == "CUDA error \ufffd\ufffd\ufffd( at 0x7f3a\ufffd end"
    assert second.excerpt == "bad surrogate \ufffd here"
    assert third.excerpt == "nul\ufffd" and third.user_id == "U\ufffd1"
    assert [i.engine for i in store.history(engine="vl\x00lm")] == ["vl\ufffdlm"]


def test_odd_values_become_valid_json(store: HistoryStore, engine: Engine, now: datetime) -> None:
    values = {
        "nan": math.nan,
        "inf": math.inf,
        "bytes": b"\xff",
        "when": now,
        "set": {1},
        "nested": {"header": f"Bearer {TOKEN}"},
        "bad\udcffkey": "x",
    }
    store.record(Sighting(SIG, "vllm", values=values, confidence=math.nan, seen_at=now))
    store.record(Sighting(SIG, "vllm", values={"blob": "x" * 200_000}, confidence=7, seen_at=now))
    first, second = occurrences(engine)
    assert first.values["nan"] == "nan" and first.values["inf"] == "inf" and first.values["set"] == [1]
    assert TOKEN not in str(first.values) and first.confidence is None
    assert second.values["_truncated"] is True and second.values["_bytes"] > 200_000
    assert second.confidence == 1.0


@pytest.mark.parametrize(
    "stamp",
    [
        datetime(9999, 12, 31, 23, 59, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5))),  # overflows when made UTC
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2200, 1, 1),
    ],
    ids=["year 9999", "9999 at -05:00", "year 1", "epoch", "naive 2200"],
)
def test_implausible_timestamps_become_now_and_keep_the_original(
    store: HistoryStore, engine: Engine, now: datetime, stamp: datetime
) -> None:
    result = store.record(Sighting(SIG, "vllm", seen_at=stamp))
    [occ] = occurrences(engine)
    assert abs(occ.seen_at - datetime.now(UTC)) < timedelta(minutes=1)
    assert occ.values["_seen_at_original"].startswith(str(stamp.year).zfill(4))
    store.record_check("llama-prod", "up", checked_at=stamp)
    store.resolve(result.incident_id, "U1", at=stamp)
    incident = store.get_incident(result.incident_id)
    assert incident is not None and abs(incident.resolved_at - datetime.now(UTC)) < timedelta(minutes=1)


def test_naive_timestamps_are_utc(store: HistoryStore, now: datetime) -> None:
    naive = (now - timedelta(hours=1)).replace(tzinfo=None)
    result = store.record(Sighting(SIG, "vllm", seen_at=naive))
    incident = store.get_incident(result.incident_id)
    assert incident is not None and incident.first_seen == naive.replace(tzinfo=UTC)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.history(days=0),
        lambda s: s.history(days=-1),
        lambda s: s.history(days=math.nan),
        lambda s: s.history(days=math.inf),
        lambda s: s.history(days=10**9),
        lambda s: s.history(limit=0),
        lambda s: s.history(limit=True),
        lambda s: s.digest_numbers(datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC)),
        lambda s: s.digest_numbers(datetime(2025, 1, 8, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC)),
        lambda s: s.mute(SIG, until=datetime(9999, 1, 1, tzinfo=UTC), by="U1"),
        lambda s: s.resolve(-1, "U1"),
        lambda s: s.resolve(2**70, "U1"),
        lambda s: s.resolve(True, "U1"),
        lambda s: s.record(Sighting(SIG, "v" * 65)),
        lambda s: s.record(Sighting(SIG, "vllm", channel="C" * 65)),
        lambda s: s.record(Sighting(SIG, "vllm", severity="apocalyptic")),
        lambda s: s.record(Sighting(SIG, "vllm", source="email")),
        lambda s: s.record(Sighting(SIG, "vllm", confidence="high")),  # type: ignore[arg-type]
        lambda s: s.record(Sighting("x" * 200 + ".y", "vllm")),
        lambda s: s.record_check("llama-prod", "on fire"),
        lambda s: s.record_feedback(1, "U1", "meh"),
        lambda s: s.find_posted(),
    ],
)
def test_out_of_range_arguments_are_clear_errors(store: HistoryStore, call) -> None:
    with pytest.raises(ValueError) as info:
        call(store)
    assert str(info.value)


def test_nothing_was_written_by_refused_calls(store: HistoryStore, engine: Engine) -> None:
    with pytest.raises(ValueError):
        store.record(Sighting(SIG, "vllm", severity="apocalyptic"))
    assert occurrences(engine) == []
    assert len(store.spool) == 0  # type: ignore[arg-type]
