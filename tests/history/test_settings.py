"""Storage settings come from the environment over `.env`, typed and validated at start-up."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from triage_bot.settings import Settings, SettingsError, default_data_dir


def test_defaults_are_a_sqlite_file_in_the_data_dir_and_a_six_hour_window(tmp_path: Path) -> None:
    settings = Settings.from_env({}, env_file=tmp_path / "missing.env")
    assert settings.data_dir == default_data_dir()
    assert settings.data_dir.is_absolute() and settings.data_dir.name == "triage-bot"
    assert settings.database_url == f"sqlite:///{settings.data_dir / 'triage-bot.sqlite3'}"
    assert settings.spool_path == settings.data_dir / "triage-bot.spool.jsonl"
    assert settings.dedup_window == timedelta(hours=6)
    assert settings.retention_days == 90
    assert settings.spool_max_records == 10_000


def test_data_dir_moves_every_local_file_and_explicit_paths_win(tmp_path: Path) -> None:
    moved = Settings.from_env({"TRIAGE_DATA_DIR": str(tmp_path / "state")}, env_file=None)
    assert moved.database_url == f"sqlite:///{tmp_path / 'state' / 'triage-bot.sqlite3'}"
    assert moved.spool_path == tmp_path / "state" / "triage-bot.spool.jsonl"
    explicit = Settings.from_env(
        {
            "TRIAGE_DATA_DIR": str(tmp_path),
            "DATABASE_URL": "sqlite:////srv/h.db",
            "TRIAGE_SPOOL_PATH": "/srv/s",
        },
        env_file=None,
    )
    assert (explicit.database_url, explicit.spool_path) == ("sqlite:////srv/h.db", Path("/srv/s"))


def test_environment_wins_over_env_file(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "# comment\nexport DATABASE_URL='postgresql://u@h/db'\nTRIAGE_DEDUP_WINDOW_HOURS=2 # inline\n"
        "TRIAGE_SPOOL_PATH=/var/spool/triage.jsonl\n"
    )
    settings = Settings.from_env({"TRIAGE_DEDUP_WINDOW_HOURS": "0.5"}, env_file=env_file)
    assert settings.database_url == "postgresql://u@h/db"
    assert settings.dedup_window == timedelta(minutes=30)
    assert settings.spool_path == Path("/var/spool/triage.jsonl")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TRIAGE_DEDUP_WINDOW_HOURS", "six"),
        ("TRIAGE_DEDUP_WINDOW_HOURS", "0"),
        ("TRIAGE_RETENTION_DAYS", "-1"),
        ("TRIAGE_RETENTION_DAYS", "1e9"),
        ("TRIAGE_SPOOL_MAX_RECORDS", "0"),
    ],
)
def test_bad_values_fail_naming_the_variable(name: str, value: str, tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({name: value}, env_file=None)
