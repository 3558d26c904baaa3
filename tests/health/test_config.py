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


def test_an_overnight_window_belongs_to_the_day_it_starts_and_says_when_it_ends() -> None:
    config = parse_engines(
        {
            "engines": [{"name": "a", "kind": "vllm", "base_url": "http://h:1"}],
            "maintenance": [
                {
                    "engines": ["a"],
                    "weekly": {"days": ["sat"], "from": "23:00", "to": "01:00"},
                    "reason": "backup",
                }
            ],
        }
    )
    sat_night, sun_morning = datetime(2025, 6, 7, 23, 30, tzinfo=UTC), datetime(2025, 6, 8, 0, 30, tzinfo=UTC)
    sat_morning = datetime(2025, 6, 7, 0, 30, tzinfo=UTC)  # the tail of Friday night, which is not listed
    assert config.in_maintenance("a", sat_night) and config.in_maintenance("a", sun_morning)
    assert not config.in_maintenance("a", sat_morning)
    [window] = config.maintenance
    assert window.describe(sat_night) == (
        "a: every sat 23:00–01:00 UTC (backup) · in force now, until 2025-06-08 01:00 UTC"
    )
    assert window.describe(sat_morning) == "a: every sat 23:00–01:00 UTC (backup)"


def test_a_one_off_window_is_shown_until_it_is_over() -> None:
    config = parse_engines(
        {
            "engines": [{"name": "a", "kind": "vllm", "base_url": "http://h:1"}],
            "maintenance": [
                {"engines": ["*"], "start": "2025-06-02T10:00:00Z", "end": "2025-06-02T12:00:00Z"}
            ],
        }
    )
    [window] = config.maintenance
    before, during = datetime(2025, 6, 1, 9, tzinfo=UTC), datetime(2025, 6, 2, 11, tzinfo=UTC)
    assert window.describe(before) == "every engine: 2025-06-02 10:00 – 2025-06-02 12:00 UTC"
    assert window.describe(
        during
    ) is not None and "in force now, until 2025-06-02 12:00 UTC" in window.describe(during)
    assert window.describe(datetime(2025, 6, 2, 12, tzinfo=UTC)) is None
