"""`build_scheduler` from the environment alone: engines.yaml, DATABASE_URL, Slack, channels."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.support.fleet import FAST, engine_entry
from triage_bot.history.db import make_engine
from triage_bot.history.models import Base
from triage_bot.scheduler import build_scheduler
from triage_bot.slack.outputs import scheduler_outputs
from triage_bot.testing.fake_engines import Mode
from triage_bot.testing.slack_standin import BOT_TOKEN, SlackStandin


def test_the_bot_scheduler_checks_alerts_and_posts_the_digest(fakes, tmp_path: Path) -> None:
    down = fakes.add("vllm", name="llama-prod", mode=Mode.REFUSED, **FAST)
    fine = fakes.add("sglang", name="qwen", **FAST)
    engines = tmp_path / "engines.yaml"
    engines.write_text(
        yaml.safe_dump({"engines": [engine_entry(down), engine_entry(fine)]}), encoding="utf-8"
    )
    db = tmp_path / "bot.sqlite3"
    Base.metadata.create_all(make_engine(f"sqlite:///{db}"))
    with SlackStandin() as slack:
        env = {
            "DATABASE_URL": f"sqlite:///{db}",
            "TRIAGE_SPOOL_PATH": str(tmp_path / "spool.jsonl"),
            "TRIAGE_ENGINES": str(engines),
            "TRIAGE_CHECK_INTERVAL_S": "1",
            "TRIAGE_LEADER_POLL_S": "0.2",
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_API_URL": slack.api_url,
            "TRIAGE_ALERT_CHANNEL": "C0ALERTS",
            "TRIAGE_DIGEST_CHANNEL": "C0DIGEST",
        }
        scheduler = build_scheduler(environ=env, outputs=lambda store: scheduler_outputs(env, store=store))
        assert set(scheduler.jobs) == {"health_check", "weekly_digest", "retention_prune"}
        scheduler.start()
        try:
            posted = slack.wait_for("chat.postMessage", 1, timeout=15)
            assert posted[0]["channel"] == "C0ALERTS" and "engine llama-prod is down" in posted[0]["text"]
            scheduler.jobs["weekly_digest"].func()  # what the Monday 09:00 run does
            scheduler.jobs["retention_prune"].func()
        finally:
            scheduler.shutdown()
        digests = [b for b in slack.bodies("chat.postMessage") if b["channel"] == "C0DIGEST"]
        assert len(digests) == 1 and "Weekly digest" in digests[0]["text"]
        assert slack.bodies("files.completeUploadExternal")
    assert (tmp_path / "bot.sqlite3.scheduler.lock").exists()
