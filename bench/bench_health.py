"""Health checks at fleet scale, and the digest over a large history.

1. One check pass over 1,000 fake engines (vLLM, SGLang, trtllm-serve round-robin; most healthy,
   some hung, refused, dripping or sending 50 MB), the bot pinned to one core and the fakes in a
   separate process on another, so the figure is the bot's own. Timeouts are honoured: a hung
   engine costs its whole deadline. Reported: wall time of a cold pass (new connections) and a
   warm one (keep-alive), CPU time, Python peak allocation and RSS growth.
2. The digest built from a SQLite history holding 1,000,000 occurrences (numbers, Block Kit and
   the PNG, each timed).

Only 127.0.0.1 is ever contacted. `run(quick=True)` uses small sizes (a smoke run).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from triage_bot.health.config import parse_engines
from triage_bot.health.monitor import HealthMonitor

MODES = (
    ["healthy"] * 92
    + ["hang"] * 2
    + ["refused"] * 2
    + ["slow_drip"] * 1
    + ["huge_body"] * 1
    + ["kv_saturated"] * 1
    + ["metrics_missing"] * 1
)
TIMEOUTS = {"vllm": 2.0, "sglang": 3.0, "trtllm": 3.0}


def _rss_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _fleet(count: int) -> tuple[subprocess.Popen[str], list[dict[str, str]]]:
    rng = random.Random(5)
    modes = [rng.choice(MODES) for _ in range(count)]
    for i, kind in enumerate(["vllm", "sglang", "trtllm"] * (count // 3 + 1)):
        if i < count and kind == "sglang" and modes[i] == "hang":
            modes[i] = "healthy"  # a hung SGLang costs its 3 s deadline like any other; keep the mix simple
    cpu = ["--cpu", "1"] if (os.cpu_count() or 1) > 1 else []
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "triage_bot.testing.fake_engines",
            "--count",
            str(count),
            "--kinds",
            "vllm,sglang,trtllm",
            "--modes",
            ",".join(modes),
            *cpu,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, json.loads(line)["engines"]


def bench_pass(count: int) -> str:
    proc, engines = _fleet(count)
    previous = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        if previous is not None:
            os.sched_setaffinity(0, {0})
        config = parse_engines(
            {
                "poller": {"concurrency": 256},
                "engines": [
                    {
                        "name": e["name"],
                        "kind": e["kind"],
                        "base_url": e["base_url"],
                        "timeout_s": TIMEOUTS[e["kind"]],
                    }
                    for e in engines
                ],
            }
        )
        time.sleep(1.0)  # let the fakes queue some iterations (trtllm-serve's /metrics drains)
        monitor = HealthMonitor(config)
        rss0 = _rss_mib()

        async def passes() -> tuple[list[tuple[float, float, list]], int]:
            out = []
            for _ in range(2):
                cpu0, t0 = time.process_time(), time.perf_counter()
                statuses = await monitor.run_once()
                out.append((time.perf_counter() - t0, time.process_time() - cpu0, statuses))
            tracemalloc.start()  # a third pass, traced (tracing slows it down, so it is not timed)
            await monitor.run_once()
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            await monitor.poller.aclose()
            return out, peak

        results, peak = asyncio.run(passes())
        rss1 = _rss_mib()
    finally:
        if previous is not None:
            os.sched_setaffinity(0, previous)
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    (cold, cold_cpu, _), (warm, warm_cpu, statuses) = results
    by_state: dict[str, int] = {}
    for s in statuses:
        by_state[s.state] = by_state.get(s.state, 0) + 1
    slowest = max(s.observation.elapsed_s for s in statuses)
    mode_count: dict[str, int] = {}
    for e in engines:
        mode_count[e["mode"]] = mode_count.get(e["mode"], 0) + 1
    return "\n".join(
        [
            f"**One check pass over {count:,} fake engines** (bot pinned to one core, concurrency 256, "
            f"deadlines {', '.join(f'{k} {v:g} s' for k, v in TIMEOUTS.items())}; fleet modes: "
            f"{', '.join(f'{m} {n}' for m, n in sorted(mode_count.items()))})",
            "",
            "| pass | wall time | CPU time | slowest engine |",
            "|---|---|---|---|",
            f"| cold (new connections) | {cold:.2f} s | {cold_cpu:.2f} s | |",
            f"| warm (keep-alive) | {warm:.2f} s | {warm_cpu:.2f} s | {slowest:.2f} s |",
            "",
            f"Memory: Python peak allocation during a pass {peak / 2**20:.1f} MiB; RSS {rss0:.0f} → {rss1:.0f} MiB after three passes "
            f"(the 50 MB bodies are cut at the 8 MiB cap). States after the warm pass: "
            f"{', '.join(f'{k} {v}' for k, v in sorted(by_state.items()))}.",
        ]
    )


def _seed_history(url: str, occurrences: int, now: datetime) -> tuple[int, int]:
    from sqlalchemy import insert

    from triage_bot.history.db import make_engine
    from triage_bot.history.fingerprint import fingerprint
    from triage_bot.history.models import Base, EngineCheck, Incident, Occurrence

    engine = make_engine(url)
    Base.metadata.create_all(engine)
    rng = random.Random(11)
    kinds = ["vllm", "sglang", "trtllm"]
    sigs = (
        [
            f"health.{s}"
            for s in (
                "engine_down",
                "stuck_generation",
                "kv_cache_saturated",
                "queue_starvation",
                "preemption_storm",
                "metrics_missing",
            )
        ]
        + [f"vllm.sig_{i}" for i in range(12)]
        + [f"sglang.sig_{i}" for i in range(8)]
        + [f"trtllm.sig_{i}" for i in range(4)]
    )
    n_incidents = max(10, occurrences // 50)
    start = now - timedelta(days=14)
    incidents = []
    for i in range(n_incidents):
        first = start + timedelta(seconds=rng.uniform(0, 14 * 86400 - 3600))
        kind, sig, target = rng.choice(kinds), rng.choice(sigs), f"engine-{rng.randrange(100)}"
        resolved = first + timedelta(minutes=rng.uniform(2, 600)) if rng.random() < 0.8 else None
        acked = first + timedelta(minutes=rng.uniform(0.5, 30)) if rng.random() < 0.6 else None
        incidents.append(
            {
                "id": i + 1,
                "fingerprint": fingerprint(sig, kind, target),
                "active_key": None if resolved else f"k{i}",
                "signature_id": sig,
                "engine": kind,
                "target": target,
                "status": "resolved" if resolved else "open",
                "severity": "high",
                "source": "health",
                "first_seen": first,
                "last_seen": first + timedelta(hours=1),
                "occurrence_count": 50,
                "is_recurring": rng.random() < 0.4,
                "previous_incident_id": None,
                "acknowledged_at": acked,
                "resolved_at": resolved,
            }
        )
    with engine.begin() as conn:
        conn.execute(insert(Incident), incidents)
    batch: list[dict] = []
    with engine.begin() as conn:
        for j in range(occurrences):
            inc = incidents[j % n_incidents]
            batch.append(
                {
                    "incident_id": inc["id"],
                    "key": uuid.uuid4().hex,
                    "seen_at": inc["first_seen"] + timedelta(seconds=j % 3600),
                    "source": "health",
                    "excerpt": "engine x is down: connection refused",
                    "excerpt_truncated": False,
                    "excerpt_bytes": 36,
                    "values": {},
                }
            )
            if len(batch) == 50_000:
                conn.execute(insert(Occurrence), batch)
                batch = []
        if batch:
            conn.execute(insert(Occurrence), batch)
        checks = [
            {
                "engine": f"engine-{e}",
                "checked_at": start + timedelta(minutes=5 * k),
                "state": "up" if rng.random() < 0.99 else "down",
                "latency_ms": 10.0,
                "details": {},
            }
            for e in range(50)
            for k in range(14 * 288)
        ]
        for k in range(0, len(checks), 50_000):
            conn.execute(insert(EngineCheck), checks[k : k + 50_000])
    engine.dispose()
    return n_incidents, len(checks)


def bench_digest(occurrences: int) -> str:
    from triage_bot.digest import build_digest, digest_blocks, limit_problems, render_png
    from triage_bot.history import HistoryStore

    now = datetime(2025, 6, 9, 9, 0, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.sqlite3'}"
        t0 = time.perf_counter()
        n_incidents, n_checks = _seed_history(url, occurrences, now)
        seed_s = time.perf_counter() - t0
        store = HistoryStore.from_url(url, clock=lambda: now)
        t0 = time.perf_counter()
        digest = build_digest(store, end=now, days=7, tz="Europe/Berlin")
        numbers_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        blocks = digest_blocks(digest)
        blocks_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        png = render_png(digest)
        png_s = time.perf_counter() - t0
        assert not limit_problems(blocks)
    return "\n".join(
        [
            f"**Digest over {occurrences:,} occurrences** ({n_incidents:,} incidents over 14 days, {n_checks:,} engine checks; "
            f"SQLite; seeding took {seed_s:.1f} s)",
            "",
            "| step | time |",
            "|---|---|",
            f"| numbers (this week + previous week, per day, MTTA/MTTR per signature) | {numbers_s:.2f} s |",
            f"| Block Kit from the sandboxed template | {blocks_s * 1000:.1f} ms |",
            f"| PNG chart (matplotlib Agg, {len(png) / 1024:.0f} KiB) | {png_s:.2f} s |",
            f"| total | {numbers_s + blocks_s + png_s:.2f} s |",
        ]
    )


def run(quick: bool = False) -> str:
    engines = 60 if quick else 1000
    occurrences = 20_000 if quick else 1_000_000
    return "\n\n".join(
        [
            "## Health checks and digest"
            + (" (quick mode: small sizes, not a measurement)" if quick else ""),
            bench_pass(engines),
            bench_digest(occurrences),
        ]
    )


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
