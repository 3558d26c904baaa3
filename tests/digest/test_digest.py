"""The weekly digest as a person sees it: the numbers, the Block Kit, the PNG and its series."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image
from slack_sdk import WebClient

from triage_bot.cli.main import cli
from triage_bot.digest import build_digest, digest_blocks, limit_problems, render_png
from triage_bot.digest.chart import OTHER, PALETTE, TRACK, engine_colors
from triage_bot.digest.message import environment
from triage_bot.history import HistoryStore, Sighting
from triage_bot.history.db import make_engine, make_session_factory
from triage_bot.history.models import Base
from triage_bot.slack.config import SlackConfig
from triage_bot.slack.delivery import Delivery
from triage_bot.slack.outputs import post_digest
from triage_bot.testing.slack_standin import BOT_TOKEN, SlackStandin

END = datetime(2025, 6, 9, 7, 0, tzinfo=UTC)  # Monday 09:00 in Berlin: the digest covers Mon 2 – Sun 8 June
TZ = "Europe/Berlin"


def _at(day: int, hour: int, month: int = 6) -> datetime:
    return datetime(2025, month, day, hour, 0, tzinfo=UTC)


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[HistoryStore, str]:
    url = f"sqlite:///{tmp_path / 'digest.sqlite3'}"
    engine = make_engine(url)
    Base.metadata.create_all(engine)
    store = HistoryStore(make_session_factory(engine), clock=lambda: END)

    def incident(
        sig: str,
        kind: str,
        target: str,
        at: datetime,
        *,
        repeats: int = 0,
        ack: float | None = None,
        fix: float | None = None,
    ) -> int:
        result = store.record(
            Sighting(sig, kind, target=target, source="health", excerpt=f"{sig} on {target}", seen_at=at)
        )
        for i in range(repeats):
            store.record(
                Sighting(sig, kind, target=target, source="health", seen_at=at + timedelta(minutes=i + 1))
            )
        if ack is not None:
            store.acknowledge(result.incident_id, "U1", at=at + timedelta(minutes=ack))
        if fix is not None:
            store.resolve(result.incident_id, "U1", "restarted", at=at + timedelta(minutes=fix))
        return result.incident_id

    # the week before: two vLLM incidents, resolved
    incident("health.engine_down", "vllm", "llama-prod", _at(27, 10, 5), ack=5, fix=30)
    incident("health.kv_cache_saturated", "vllm", "llama-prod", _at(28, 10, 5), fix=60)
    # this week (local days Mon 2 .. Sun 8)
    incident("health.engine_down", "vllm", "llama-prod", _at(2, 8), repeats=3, ack=2, fix=20)  # recurring
    incident("health.stuck_generation", "vllm", "llama-b", _at(2, 9), ack=10, fix=90)
    incident("vllm.kv_cache_no_memory", "vllm", "C0TEAM", _at(2, 12))
    incident("health.engine_down", "vllm", "llama-b", _at(4, 12), fix=15)
    incident("health.queue_starvation", "sglang", "qwen", _at(3, 9), ack=1, fix=40)
    incident("sglang.kv_pool_full_retract", "sglang", "C0TEAM", _at(3, 15))
    incident("health.engine_down", "trtllm", "trt-a", _at(8, 20), fix=5)  # Sunday 22:00 local
    for i in range(20):
        store.record_check(
            "llama-prod", "down" if i < 2 else "up", 12.0, checked_at=_at(3, 0) + timedelta(minutes=i)
        )
        store.record_check("qwen", "up", 900.0, checked_at=_at(3, 0) + timedelta(minutes=i))
    return store, url


def test_digest_numbers(seeded) -> None:
    store, _ = seeded
    d = build_digest(store, end=END, days=7, tz=TZ)
    assert next(day.isoformat() for day in d.days) == "2025-06-02" and len(d.days) == 7
    assert d.per_day == {
        "vllm": [3, 0, 1, 0, 0, 0, 0],
        "sglang": [0, 2, 0, 0, 0, 0, 0],
        "trtllm": [0, 0, 0, 0, 0, 0, 1],
    }
    assert d.numbers.incidents == 7 and d.numbers.recurring == 1 and d.previous.incidents == 2
    times = {t.signature_id: t for t in d.times}
    assert (
        times["health.stuck_generation"].mttr_s == 90 * 60 and times["health.stuck_generation"].mtta_s == 600
    )
    assert times["health.engine_down"].resolved == 3
    assert {u.engine: u.ratio for u in d.numbers.uptime} == {"llama-prod": 0.9, "qwen": 1.0}


def test_digest_png_opens_and_shows_the_expected_series(seeded) -> None:
    store, _ = seeded
    d = build_digest(store, end=END, days=7, tz=TZ)
    png = render_png(d)
    image = Image.open(io.BytesIO(png))
    image.load()
    assert image.format == "PNG" and image.size[0] >= 1000 and image.size[1] >= 900
    series = json.loads(image.text["triage-digest"])
    assert series["incidents_per_day"]["vllm"] == [3, 0, 1, 0, 0, 0, 0]
    assert series["top_signatures"]["health.engine_down · vllm"] == 2
    assert series["top_signatures"]["health.engine_down · trtllm"] == 1
    assert series["new_vs_recurring"] == {"this": [6, 1], "previous": [2, 0]}
    assert series["trend"]["incidents"] == [2, 7]
    assert series["uptime_percent"] == {"llama-prod": 90.0, "qwen": 100.0}
    assert series["mtta_mttr_minutes"]["health.stuck_generation"] == [10.0, 90.0]
    # the engines' bars are really drawn, in their colours
    rgb = image.convert("RGB")
    counts = {c: n for n, c in rgb.getcolors(maxcolors=1 << 20)}
    for engine, color in series["colors"].items():
        wanted = tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))
        assert counts.get(wanted, 0) > 200, f"no bars in {engine}'s colour {color}"
    # at most three panels, so that the chart still reads as a Slack thumbnail
    assert series["panels"] == [
        "Incidents per day by engine",
        "Top signatures (incidents)",
        "Uptime per engine (from the checks)",
    ]
    # colours follow the knowledge base's engine order, not this week's ranking
    assert series["colors"] == {"vllm": PALETTE[0], "sglang": PALETTE[1], "trtllm": PALETTE[2]}
    assert series["top_signature_engines"]["health.engine_down · trtllm"] == "trtllm"


def test_an_engine_keeps_its_colour_whatever_its_rank_this_week() -> None:
    known = ["vllm", "sglang", "trtllm"]
    quiet_week = engine_colors(["trtllm"], known)
    busy_week = engine_colors(["trtllm", "sglang", "vllm"], known)  # trtllm first by incidents
    assert quiet_week["trtllm"] == busy_week["trtllm"] == PALETTE[2]
    # engines the knowledge base does not know take free colours in name order, and keep them
    other = engine_colors(["zeta", "alpha", "vllm"], known)
    assert other == {"vllm": PALETTE[0], "alpha": PALETTE[3], "zeta": PALETTE[4]}
    assert engine_colors([f"e{i}" for i in range(len(PALETTE) + 1)])[f"e{len(PALETTE)}"] == OTHER


def test_an_engine_at_zero_uptime_still_has_a_row_on_a_zero_based_axis(seeded) -> None:
    store, _ = seeded
    for i in range(10):
        store.record_check("dead", "down", 0.0, checked_at=_at(4, 0) + timedelta(minutes=i))
    image = Image.open(io.BytesIO(render_png(build_digest(store, end=END, days=7, tz=TZ))))
    image.load()
    assert json.loads(image.text["triage-digest"])["uptime_percent"]["dead"] == 0.0
    counts = {c: n for n, c in image.convert("RGB").getcolors(maxcolors=1 << 20)}
    track = tuple(int(TRACK[i : i + 2], 16) for i in (1, 3, 5))
    # the grey 0-100% track is what remains visible of a 0% row (and of the 10% missing at 90%)
    assert counts.get(track, 0) > 2000


def test_the_digest_lists_the_answers_reported_wrong_and_what_people_chose(seeded) -> None:
    store, _ = seeded
    kv = next(i.id for i in store.history(signature_id="vllm.kv_cache_no_memory"))
    for user, right in (("U1", "vllm.max_model_len_exceeds_kv_cache"), ("U2", None)):
        store.record_feedback(kv, user, "wrong_match", correct_signature_id=right, at=_at(5, 10))
    d = build_digest(store, end=END, days=7, tz=TZ)
    assert d.to_json()["wrong_matches"] == [
        {
            "signature_id": "vllm.kv_cache_no_memory",
            "reports": 2,
            "chosen": {"none": 1, "vllm.max_model_len_exceeds_kv_cache": 1},
        }
    ]
    text = json.dumps(digest_blocks(d))
    assert (
        "`vllm.kv_cache_no_memory`: 2 reports; people chose none of the known failures (1), "
        "`vllm.max_model_len_exceeds_kv_cache` (1)"
    ) in text
    before = build_digest(store, end=END - timedelta(days=7), days=7, tz=TZ)
    assert "no answer was reported wrong this week" in json.dumps(digest_blocks(before))


def test_digest_blocks_fit_slack_and_post_with_the_chart(seeded) -> None:
    store, _ = seeded
    d = build_digest(store, end=END, days=7, tz=TZ)
    blocks = digest_blocks(d)
    assert limit_problems(blocks) == []
    text = json.dumps(blocks)
    assert "health.engine_down" in text and "llama-prod" in text and "90.00%" in text
    # plurals: one incident, one occurrence (it said "1 occurrences")
    assert re.search(r"`trtllm`: 1 incident \(1 new, 0 recurring\), 1 occurrence(?!s)", text), text
    assert "`sglang`: 2 incidents (2 new, 0 recurring), 2 occurrences" in text
    with SlackStandin() as slack:
        delivery = Delivery(
            SlackConfig(bot_token=BOT_TOKEN, api_url=slack.api_url),
            None,
            WebClient(token=BOT_TOKEN, base_url=slack.api_url),
        )
        result = post_digest(delivery, "C0DIGEST", d)
        assert slack.bodies("files.completeUploadExternal"), "the chart went up with files_upload_v2"
        upload = next(iter(slack.uploads.values()))
    assert upload[:8] == b"\x89PNG\r\n\x1a\n"
    assert result["chart"]


def test_limits_hold_with_huge_histories_and_names_are_never_templates(seeded) -> None:
    store, _ = seeded
    d = build_digest(store, end=END, days=7, tz=TZ)
    from dataclasses import replace

    from triage_bot.history import GroupCount

    hostile = [
        GroupCount(f"<!channel> {{{{ 7*7 }}}} {i}" + "x" * 150, "health.engine_down", incidents=i)
        for i in range(400)
    ]
    d.numbers = replace(d.numbers, by_engine=hostile, by_signature=hostile)
    blocks = digest_blocks(d)
    assert limit_problems(blocks) == []
    text = json.dumps(blocks)
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text
    assert "{{ 7*7 }}" in text and " 49 " not in text
    assert environment().is_safe_attribute  # the sandbox


def test_cli_digest_dry_run_writes_json_and_png(seeded, tmp_path: Path, monkeypatch) -> None:
    _, url = seeded
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("TRIAGE_SPOOL_PATH", str(tmp_path / "spool.jsonl"))
    png = tmp_path / "digest.png"
    result = CliRunner().invoke(
        cli, ["digest", "--dry-run", "--json", "--png", str(png), "--tz", TZ, "--end", END.isoformat()]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["digest"]["numbers"]["incidents"] == 7
    assert limit_problems(data["blocks"]) == []
    assert Image.open(png).format == "PNG"
    text = CliRunner().invoke(cli, ["digest", "--dry-run", "--tz", TZ, "--end", END.isoformat()])
    assert text.exit_code == 0, text.output
    assert "By engine\n• vllm: 4 incidents" in text.output  # for a terminal: no *bold* or `code` marks
    assert "*" not in text.output and "`" not in text.output and "&lt;" not in text.output


def test_write_png_for_inspection(seeded, tmp_path: Path) -> None:
    """Keeps a copy of the chart when TRIAGE_DIGEST_PNG names a path (for looking at it)."""
    import os

    target = os.environ.get("TRIAGE_DIGEST_PNG")
    if not target:
        pytest.skip("set TRIAGE_DIGEST_PNG=/path/file.png to keep the chart")
    store, _ = seeded
    Path(target).write_bytes(render_png(build_digest(store, end=END, days=7, tz=TZ)))
