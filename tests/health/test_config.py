"""engines.yaml validation: mistakes fail at start-up, with their location; secrets stay out of sight."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from triage_bot.health.config import ConfigError, load_engines, parse_engines

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_file_is_valid_as_shipped() -> None:
    """A new user copies the example and it loads with no extra environment."""
    config = load_engines(ROOT / "engines.example.yaml", environ={})
    names = [e.name for e in config.engines]
    assert names == ["llama-prod", "qwen-sglang", "trt-a", "triton-a"]
    assert config.engines[1].timeout == 30 and config.engines[0].timeout == 5


def test_auth_header_comes_from_the_environment_and_stays_out_of_reprs() -> None:
    data = {
        "engines": [
            {
                "name": "llama-prod",
                "kind": "vllm",
                "base_url": "http://127.0.0.1:8000",
                "auth_header_env": "LLAMA_PROD_TOKEN",
            }
        ]
    }
    llama = parse_engines(data, environ={"LLAMA_PROD_TOKEN": "secret-token"}).engines[0]
    assert llama.headers() == {"Authorization": "Bearer secret-token"}
    assert "secret-token" not in repr(llama) and "secret-token" not in str(llama.model_dump())


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"engines": [{"name": "a", "kind": "vllm", "base_url": "http://h:1"}] * 2}, "used twice"),
        ({"engines": [{"name": "a", "kind": "tgi", "base_url": "http://h:1"}]}, "no probe"),
        ({"engines": [{"name": "a", "kind": "vllm", "base_url": "ftp://h"}]}, "http"),
        ({"engines": [{"name": "a", "kind": "vllm", "base_url": "http://u:p@h:1"}]}, "credentials"),
        ({"engines": [{"name": "a b", "kind": "vllm", "base_url": "http://h:1"}]}, "name"),
        ({"engines": [{"name": "a", "kind": "vllm", "base_url": "http://h:1", "timeout": 3}]}, "timeout"),
        (
            {"engines": [{"name": "a", "kind": "triton", "base_url": "http://h:1", "generate_probe": True}]},
            "not supported",
        ),
        (
            {
                "engines": [
                    {"name": "a", "kind": "vllm", "base_url": "http://h:1", "thresholds": {"kv_cache": 1.5}}
                ]
            },
            "kv_cache",
        ),
        (
            {
                "engines": [],
                "maintenance": [
                    {"engines": ["ghost"], "weekly": {"days": ["sun"], "from": "03:00", "to": "04:00"}}
                ],
            },
            "unknown engines",
        ),
        (
            {
                "engines": [
                    {"name": "a", "kind": "vllm", "base_url": "http://h:1", "auth_header_env": "NOPE_TOKEN"}
                ]
            },
            "NOPE_TOKEN",
        ),
    ],
)
def test_mistakes_are_reported_with_their_location(data, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_engines(data, environ={})


def test_weekly_maintenance_windows_use_their_timezone() -> None:
    config = parse_engines(
        {
            "engines": [{"name": "a", "kind": "vllm", "base_url": "http://h:1"}],
            "maintenance": [
                {
                    "engines": ["*"],
                    "weekly": {"days": ["sun"], "from": "03:00", "to": "04:00", "timezone": "Europe/Berlin"},
                }
            ],
        }
    )
    assert config.in_maintenance("a", datetime(2025, 6, 1, 1, 30, tzinfo=UTC))  # 03:30 in Berlin (CEST)
    assert not config.in_maintenance("a", datetime(2025, 6, 1, 3, 30, tzinfo=UTC))


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_engines(tmp_path / "nope.yaml", environ={})
    bad = tmp_path / "bad.yaml"
    bad.write_text("engines: [\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_engines(bad, environ={})
