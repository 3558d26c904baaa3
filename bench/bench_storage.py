"""Incident history speed on SQLite and PostgreSQL: write throughput and query latency at scale.

Writes go through the real `HistoryStore.record` path (validation, redaction of a ~1 KB paste,
dedup upsert, occurrence insert, one transaction each), from one writer and from 8 writer
processes (replicas). Queries run against a history of 1,000,000 occurrences spread over 90 days
(about 3,000 incidents, 8 engines checked once a minute for a week), bulk-loaded directly
because recording a million pastes one by one would only measure the write path again.

PostgreSQL is the server at TRIAGE_BENCH_PG_URL (default: the test server, 127.0.0.1:5432/test);
the benchmark works in a schema of its own and drops it. `run(quick=True)` uses small sizes so it
can serve as a smoke test; its numbers are not the published ones.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import secrets
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, bindparam, create_engine, insert, text

from triage_bot.history import HistoryStore, Sighting
from triage_bot.history.db import make_engine
from triage_bot.history.fingerprint import fingerprint
from triage_bot.history.models import Base, EngineCheck, Incident, Occurrence

PG_URL = os.environ.get("TRIAGE_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
ENGINES = ["vllm", "sglang", "trtllm"]
SIGNATURES = [
    f"{prefix}.signature_{i}" for prefix in ("vllm", "sglang", "trtllm", "generic") for i in range(12)
]
TARGETS = [f"model-{i}" for i in range(8)]
PASTE = (
    "(VllmWorkerProcess pid=2421) ERROR 10-14 12:32:47 multiproc_worker_utils.py:233] Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 229, in determine_num_available_blocks\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.88 GiB. GPU 3 has a total capacity of 21.96 GiB\n"
    "HF_TOKEN=hf_aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz5 vllm serve meta-llama/Llama-3.1-70B-Instruct --tp 4\n"
) * 3


def _observation(rng: random.Random) -> Sighting:
    return Sighting(
        rng.choice(SIGNATURES[:20]),
        rng.choice(ENGINES),
        rng.choice(TARGETS),
        channel="C0BENCH",
        user="U0BENCH",
        excerpt=PASTE,
        confidence=0.9,
        values={"gib": 1.88, "gpu": 3},
    )


# -- writes --------------------------------------------------------------------------------------


def _write_single(url: str, n: int) -> float:
    store = HistoryStore.from_url(url)
    rng = random.Random(1)
    observations = [_observation(rng) for _ in range(n)]
    store.record(observations[0])  # connect and warm up outside the clock
    start = time.perf_counter()
    for obs in observations[1:]:
        store.record(obs)
    return (n - 1) / (time.perf_counter() - start)


def _writer(url: str, n: int, seed: int, barrier: Any) -> None:
    store = HistoryStore.from_url(url)
    rng = random.Random(seed)
    observations = [_observation(rng) for _ in range(n)]
    store.record(_observation(rng))
    barrier.wait(timeout=120)
    for obs in observations:
        store.record(obs)


def _write_concurrent(url: str, writers: int, per_writer: int) -> float:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(writers + 1)
    children = [context.Process(target=_writer, args=(url, per_writer, i, barrier)) for i in range(writers)]
    for child in children:
        child.start()
    barrier.wait(timeout=120)
    start = time.perf_counter()
    for child in children:
        child.join()
    elapsed = time.perf_counter() - start
    if any(child.exitcode for child in children):
        raise RuntimeError("a writer process failed")
    return writers * per_writer / elapsed


# -- a large history -------------------------------------------------------------------------------


def _bulk_load(engine: Engine, occurrences: int, checks: int, now: datetime) -> None:
    """~1 incident per 330 occurrences, 90 days, a few resolved, checks every minute per engine."""
    rng = random.Random(7)
    n_incidents = max(30, occurrences // 330)
    incidents, spans = [], []
    for i in range(n_incidents):
        sig, eng, tgt = rng.choice(SIGNATURES), rng.choice(ENGINES), rng.choice(TARGETS)
        first = now - timedelta(days=90) + timedelta(seconds=rng.uniform(0, 89 * 86400))
        last = first + timedelta(hours=rng.uniform(0.1, 30))
        resolved = rng.random() < 0.7
        incidents.append(
            {
                "id": i + 1,
                "fingerprint": fingerprint(sig, eng, tgt),
                "active_key": None,
                "signature_id": sig,
                "engine": eng,
                "target": tgt,
                "status": "resolved" if resolved else "open",
                "severity": "high",
                "source": "slack",
                "first_seen": first,
                "last_seen": last,
                "occurrence_count": 1,
                "is_recurring": rng.random() < 0.4,
                "acknowledged_at": first + timedelta(minutes=rng.uniform(1, 90)),
                "acknowledged_by": "U1",
                "resolved_at": last + timedelta(hours=1) if resolved else None,
                "resolved_by": "U1" if resolved else None,
            }
        )
        spans.append((first, (last - first).total_seconds()))
    counts = [0] * n_incidents
    with engine.begin() as connection:
        connection.execute(insert(Incident), incidents)
    batch: list[dict[str, Any]] = []
    for _ in range(occurrences):
        i = rng.randrange(n_incidents)
        counts[i] += 1
        first, span = spans[i]
        batch.append(
            {
                "incident_id": i + 1,
                "key": uuid.uuid4().hex,
                "seen_at": first + timedelta(seconds=rng.uniform(0, span)),
                "source": "slack",
                "channel": "C0BENCH",
                "thread_ts": "1700000000.000100",
                "user_id": "U0BENCH",
                "excerpt": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.88 GiB.",
                "excerpt_truncated": False,
                "excerpt_bytes": 72,
                "confidence": 0.9,
                "values": {"gib": 1.88},
            }
        )
        if len(batch) == 20_000:
            with engine.begin() as connection:
                connection.execute(insert(Occurrence), batch)
            batch = []
    table = Incident.__table__
    with engine.begin() as connection:
        if batch:
            connection.execute(insert(Occurrence), batch)
        connection.execute(
            table.update().where(table.c.id == bindparam("iid")).values(occurrence_count=bindparam("n")),
            [{"iid": i + 1, "n": n} for i, n in enumerate(counts) if n > 1],
        )
    names = [f"engine-{i}" for i in range(8)]
    rows = []
    for k in range(checks):
        rows.append(
            {
                "engine": names[k % 8],
                "checked_at": now - timedelta(minutes=k // 8),
                "state": "down" if rng.random() < 0.01 else "up",
                "latency_ms": rng.uniform(5, 50),
                "details": {},
            }
        )
        if len(rows) == 20_000:
            with engine.begin() as connection:
                connection.execute(insert(EngineCheck), rows)
            rows = []
    with engine.begin() as connection:
        if rows:
            connection.execute(insert(EngineCheck), rows)
    # Statistics, the visibility map and a checkpoint, as a long-running database would have them
    # (otherwise the checkpoint after a 1M-row load lands in the middle of the query timings).
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("VACUUM ANALYZE"))
            with contextlib.suppress(Exception):  # CHECKPOINT needs a privileged role
                connection.execute(text("CHECKPOINT"))
        else:
            connection.execute(text("ANALYZE"))


def _latency(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()  # warm the caches, as a long-running bot would have them
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def _queries(url: str, now: datetime, repeat: int) -> list[tuple[str, float, float]]:
    store = HistoryStore.from_url(url)
    store.clock = lambda: now
    week = (now - timedelta(days=7), now)
    month = (now - timedelta(days=30), now)
    cases: list[tuple[str, Callable[[], object]]] = [
        ("history: last 7 days, 100 rows", lambda: store.history(days=7)),
        ("history: engine=vllm, 30 days", lambda: store.history(engine="vllm", days=30)),
        ("history: one signature, 90 days", lambda: store.history(signature_id=SIGNATURES[3], days=90)),
        (
            "seen before? (signature, engine, target)",
            lambda: store.seen_before(SIGNATURES[3], "vllm", "model-1"),
        ),
        ("digest numbers: 7 days", lambda: store.digest_numbers(*week)),
        ("digest numbers: 30 days", lambda: store.digest_numbers(*month)),
        ("uptime: 8 engines, 7 days", lambda: store.uptime(*week)),
    ]
    return [(name, *_latency(fn, repeat)) for name, fn in cases]


# -- one backend ---------------------------------------------------------------------------------


def _backend(name: str, url: str, sizes: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {"name": name}
    engine = make_engine(url)
    Base.metadata.create_all(engine)
    result["single"] = _write_single(url, sizes["single"])
    result["concurrent"] = _write_concurrent(url, 8, sizes["per_writer"])
    with engine.begin() as connection:
        for table in ("occurrences", "engine_checks", "feedback", "posted_messages", "incidents"):
            connection.execute(text(f"DELETE FROM {table}"))
    now = datetime.now(UTC)
    start = time.perf_counter()
    _bulk_load(engine, sizes["occurrences"], sizes["checks"], now)
    result["load_s"] = time.perf_counter() - start
    result["queries"] = _queries(url, now, sizes["repeat"])
    store = HistoryStore.from_url(url)
    store.clock = lambda: now
    start = time.perf_counter()
    pruned = store.prune(60)
    result["prune"] = (pruned.occurrences, time.perf_counter() - start)
    engine.dispose()
    return result


def run(quick: bool = False) -> str:
    sizes = (
        {"single": 200, "per_writer": 50, "occurrences": 20_000, "checks": 8_000, "repeat": 5}
        if quick
        else {"single": 3_000, "per_writer": 500, "occurrences": 1_000_000, "checks": 80_640, "repeat": 20}
    )
    results, notes = [], []
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        results.append(_backend("SQLite (WAL)", f"sqlite:///{Path(tmp) / 'bench.sqlite3'}", sizes))
    schema = f"triage_bench_{os.getpid()}_{secrets.token_hex(3)}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
    try:
        with admin.connect() as connection:
            version = connection.execute(text("SHOW server_version")).scalar_one()
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as error:
        notes.append(f"PostgreSQL skipped: {str(getattr(error, 'orig', error)).strip().splitlines()[0]}")
    else:
        try:
            url = f"{PG_URL}{'&' if '?' in PG_URL else '?'}options={quote(f'-csearch_path={schema}')}"
            results.append(_backend(f"PostgreSQL {version.split()[0]}", url, sizes))
        finally:
            with admin.connect() as connection:
                connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    admin.dispose()
    return _markdown(results, sizes, quick, notes)


def _markdown(results: list[dict[str, Any]], sizes: dict[str, int], quick: bool, notes: list[str]) -> str:
    lines = ["## Incident history (storage)", ""]
    if quick:
        lines += ["**QUICK RUN (smoke test): small sizes, not the published figures.**", ""]
    lines += [
        f"Writes: `HistoryStore.record` with a {len(PASTE)}-byte paste (redacted, dedup upsert, one "
        f"transaction each), 60 fingerprints. Single writer: {sizes['single']:,} records; "
        f"8 writer processes: {sizes['per_writer']:,} records each. Queries: {sizes['occurrences']:,} "
        f"occurrences over 90 days and {sizes['checks']:,} engine checks; median and p95 of "
        f"{sizes['repeat']} runs after one warm-up.",
        "",
        "| backend | records/s, 1 writer | records/s, 8 writers | bulk load of the history (s) |",
        "|---|---:|---:|---:|",
    ]
    for r in results:
        lines.append(f"| {r['name']} | {r['single']:,.0f} | {r['concurrent']:,.0f} | {r['load_s']:.1f} |")
    lines += ["", "| query | " + " | ".join(f"{r['name']} median / p95 (ms)" for r in results) + " |"]
    lines.append("|---|" + "---:|" * len(results))
    for i, (name, *_rest) in enumerate(results[0]["queries"] if results else []):
        cells = [f"{r['queries'][i][1]:.1f} / {r['queries'][i][2]:.1f}" for r in results]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = [f"{r['prune'][1] * 1000:.0f} ms ({r['prune'][0]:,} rows)" for r in results]
    lines.append("| prune to 60 days (once) | " + " | ".join(cells) + " |")
    lines += ["", *(f"- {note}" for note in notes)]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    import sys

    print(run(quick="--quick" in sys.argv))
