"""`triage-bot check --engines FILE --json` against fake engines."""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml
from click.testing import CliRunner

from tests.support.fleet import FAST, engine_entry
from triage_bot.cli.main import cli
from triage_bot.testing.fake_engines import Mode


def test_check_prints_each_engines_state(fakes, tmp_path: Path) -> None:
    up = fakes.add("vllm", name="llama-prod", **FAST)
    down = fakes.add("sglang", name="qwen", mode=Mode.REFUSED, **FAST)
    full = fakes.add("trtllm", name="trt-a", mode=Mode.KV_SATURATED, **FAST)
    path = tmp_path / "engines.yaml"
    path.write_text(
        yaml.safe_dump({"engines": [engine_entry(f) for f in (up, down, full)]}), encoding="utf-8"
    )
    time.sleep(0.3)  # trtllm-serve's /metrics drains: give the fake a few iterations to report
    result = CliRunner().invoke(cli, ["check", "--engines", str(path), "--json"])
    assert result.exit_code == 1, result.output  # not every engine is up: scripts can tell
    states = {e["name"]: e for e in json.loads(result.output)}
    assert states["llama-prod"]["state"] == "up"
    assert (
        states["qwen"]["state"] == "down"
        and states["qwen"]["findings"][0]["signature_id"] == "health.engine_down"
    )
    assert states["trt-a"]["state"] == "degraded"
    assert states["trt-a"]["findings"][0]["message"].startswith("engine trt-a KV cache is saturated")
    text = CliRunner().invoke(cli, ["check", "--engines", str(path)])
    assert "qwen" in text.output and "down" in text.output


def test_check_exits_zero_when_every_engine_is_up(fakes, tmp_path: Path) -> None:
    up = fakes.add("vllm", name="llama-prod", **FAST)
    path = tmp_path / "engines.yaml"
    path.write_text(yaml.safe_dump({"engines": [engine_entry(up)]}), encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--engines", str(path), "--json"])
    assert result.exit_code == 0, result.output


def test_check_reports_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "engines.yaml"
    path.write_text("engines:\n  - {name: a, kind: nope, base_url: 'http://127.0.0.1:1'}\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", "--engines", str(path)])
    assert result.exit_code == 2 and "no probe" in result.output
