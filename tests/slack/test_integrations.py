"""`/triage status`, `/triage digest` and App Home with the real health config and digest modules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.slack_env import KV_ERROR, start_env, stop_env
from triage_bot.slack.integrations import Integrations
from triage_bot.testing import slack_requests as req

ENGINES = """\
engines:
  - name: llama-prod
    kind: vllm
    base_url: http://127.0.0.1:9/
  - name: qwen-sglang
    kind: sglang
    base_url: http://127.0.0.1:9/
"""


def _blocks_text(body: dict) -> str:
    return json.dumps(body["blocks"], ensure_ascii=False)


def test_status_without_engines_yaml_says_none_are_configured(
    slack, triager, history, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIAGE_ENGINES", str(tmp_path / "missing.yaml"))
    env = start_env(slack, triager, history, integrations=Integrations(history=history))
    try:
        env.command("status")
        env.settle()
        assert "No engines configured" in _blocks_text(slack.bodies("response_url")[0])
    finally:
        stop_env(env)


def test_status_shows_each_engines_latest_check(
    slack, triager, history, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "engines.yaml").write_text(ENGINES, encoding="utf-8")
    monkeypatch.setenv("TRIAGE_ENGINES", str(tmp_path / "engines.yaml"))
    history.record_check("llama-prod", "up", details={"health": "ok", "detail": ""})
    history.record_check("llama-prod", "down", details={"health": "refused", "detail": "connection refused"})
    env = start_env(slack, triager, history, integrations=Integrations(history=history))
    try:
        env.command("status")
        env.settle()
        text = _blocks_text(slack.bodies("response_url")[0])
        assert ":red_circle: *llama-prod* · vllm · down · checked " in text and "— connection refused" in text
        assert ":white_circle: *qwen-sglang* · sglang · unknown — not checked yet" in text
    finally:
        stop_env(env)


def test_digest_is_built_from_the_history(slack, triager, history) -> None:
    env = start_env(slack, triager, history, integrations=Integrations(history=history))
    try:
        env.event(req.message(KV_ERROR))
        env.settle()
        env.command("digest")
        env.event(req.app_home_opened())
        env.settle()
        [response] = slack.bodies("response_url")
        assert response["text"].startswith("Weekly digest: ") and " incidents, " in response["text"]
        assert response["blocks"][0]["type"] == "header"
        home = _blocks_text(slack.bodies("views.publish")[0]["view"])
        assert "Weekly digest: " in home
    finally:
        stop_env(env)


def test_status_and_app_home_show_the_mutes_and_maintenance_windows(
    slack, triager, history, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mute or a maintenance window silences alerts; status and App Home say so beside the health
    (`mute vllm 2h` used to swallow every vLLM alert where no view showed it)."""
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    windows = f"""\
maintenance:
  - engines: [llama-prod]
    start: {(now - timedelta(hours=1)).isoformat()}
    end: {(now + timedelta(hours=1)).isoformat()}
    reason: driver upgrade
  - engines: ["*"]
    start: {(now - timedelta(days=3)).isoformat()}
    end: {(now - timedelta(days=2)).isoformat()}
    reason: long over
"""
    (tmp_path / "engines.yaml").write_text(ENGINES + windows, encoding="utf-8")
    monkeypatch.setenv("TRIAGE_ENGINES", str(tmp_path / "engines.yaml"))
    history.mute(engine="vllm", until=now + timedelta(hours=2), by="U_ADMIN", reason="noisy")
    env = start_env(slack, triager, history, integrations=Integrations(history=history, clock=lambda: now))
    try:
        env.command("status")
        env.event(req.app_home_opened())
        env.settle()
        for text in (
            _blocks_text(slack.bodies("response_url")[0]),
            _blocks_text(slack.bodies("views.publish")[0]["view"]),
        ):
            assert "*llama-prod* · vllm · unknown · :wrench: in maintenance (driver upgrade)" in text
            assert "*qwen-sglang* · sglang · unknown —" in text  # no window on this one
            assert "Mutes and maintenance" in text
            assert "Mute `#1` engine `vllm` · until " in text and "by U_ADMIN" in text
            assert "Maintenance: llama-prod: " in text and "(driver upgrade) · in force now, until " in text
            assert "long over" not in text
    finally:
        stop_env(env)


def test_app_home_says_when_nothing_is_silenced(slack, triager, history, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TRIAGE_ENGINES", str(tmp_path / "missing.yaml"))
    env = start_env(slack, triager, history, integrations=Integrations(history=history))
    try:
        env.event(req.app_home_opened())
        env.settle()
        assert "No mutes and no maintenance windows" in _blocks_text(slack.bodies("views.publish")[0]["view"])
    finally:
        stop_env(env)
