"""Configuration from the environment and an optional `.env` file, in one typed dataclass.

Each field names its environment variable in its metadata, so adding a setting (Slack, engines,
scheduler) is one new field: `from_env` reads, converts and validates it with the others, and a
bad value fails at start-up naming the variable instead of half-working later. The environment
wins over `.env`, so a deployment can override a checked-in development file.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import timedelta
from pathlib import Path
from typing import Any


class SettingsError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")


def env_field(name: str, default: Any) -> Any:
    """A dataclass field read from the environment variable `name`."""
    return field(default=default, metadata={"env": name})


def default_data_dir() -> Path:
    """The user's data directory for the bot (platformdirs: ~/.local/share/triage-bot on Linux).

    Local state (the SQLite history, the spool, the local inbox) lives here unless configured, never
    in the directory a command happens to run in."""
    import platformdirs

    return Path(platformdirs.user_data_dir("triage-bot", appauthor=False))


@dataclass(frozen=True)
class Settings:
    # Storage (incident history); empty values mean "in data_dir"
    data_dir: Path = env_field("TRIAGE_DATA_DIR", None)  # noqa: RUF009 a field()
    database_url: str = env_field("DATABASE_URL", "")
    dedup_window_hours: float = env_field("TRIAGE_DEDUP_WINDOW_HOURS", 6.0)
    retention_days: int = env_field("TRIAGE_RETENTION_DAYS", 90)
    spool_path: Path = env_field("TRIAGE_SPOOL_PATH", None)  # noqa: RUF009 a field()
    spool_max_records: int = env_field("TRIAGE_SPOOL_MAX_RECORDS", 10_000)
    spool_max_bytes: int = env_field("TRIAGE_SPOOL_MAX_BYTES", 64 * 1024 * 1024)
    # Logs (triage_bot/log_redaction.py)
    log_level: str = env_field("TRIAGE_LOG_LEVEL", "INFO")
    log_format: str = env_field("TRIAGE_LOG_FORMAT", "text")

    def __post_init__(self) -> None:
        # defaults that depend on data_dir are filled here, so TRIAGE_DATA_DIR moves all of them
        if self.data_dir is None:
            object.__setattr__(self, "data_dir", default_data_dir())
        if not self.database_url.strip():
            object.__setattr__(self, "database_url", f"sqlite:///{self.data_dir / 'triage-bot.sqlite3'}")
        if self.spool_path is None:
            object.__setattr__(self, "spool_path", self.data_dir / "triage-bot.spool.jsonl")
        positive = {
            "TRIAGE_DEDUP_WINDOW_HOURS": self.dedup_window_hours,
            "TRIAGE_RETENTION_DAYS": self.retention_days,
            "TRIAGE_SPOOL_MAX_RECORDS": self.spool_max_records,
            "TRIAGE_SPOOL_MAX_BYTES": self.spool_max_bytes,
        }
        for name, value in positive.items():
            if not value > 0:
                raise SettingsError(f"{name} must be greater than 0, got {value!r}")
        level = self.log_level.upper()
        if level not in LOG_LEVELS:
            raise SettingsError(f"TRIAGE_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {self.log_level!r}")
        object.__setattr__(self, "log_level", level)
        if self.log_format.lower() not in LOG_FORMATS:
            raise SettingsError(f"TRIAGE_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, got {self.log_format!r}")
        object.__setattr__(self, "log_format", self.log_format.lower())
        if self.retention_days > 36_500:
            raise SettingsError(f"TRIAGE_RETENTION_DAYS must be at most 36500, got {self.retention_days}")

    @property
    def dedup_window(self) -> timedelta:
        return timedelta(hours=self.dedup_window_hours)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, env_file: str | Path | None = ".env"
    ) -> Settings:
        """Settings from `environ` (default `os.environ`) over the values in `env_file`."""
        values: dict[str, str] = {}
        if env_file is not None and Path(env_file).is_file():
            values.update(read_env_file(Path(env_file)))
        values.update(os.environ if environ is None else environ)
        hints = typing.get_type_hints(cls)
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            name = f.metadata.get("env")
            if name and values.get(name, "").strip():
                kwargs[f.name] = _convert(name, values[name].strip(), hints[f.name])
        return cls(**kwargs)


def _convert(name: str, raw: str, kind: Any) -> Any:
    try:
        if kind is bool:
            if raw.lower() in {"1", "true", "yes", "on"}:
                return True
            if raw.lower() in {"0", "false", "no", "off"}:
                return False
            raise ValueError("expected true/false")
        if kind in (int, float, Path, str):
            return kind(raw)
    except ValueError as exc:
        raise SettingsError(f"{name}={raw!r}: {exc}") from None
    return raw  # optional or composite types: the field converts it in __post_init__


def read_env_file(path: Path) -> dict[str, str]:
    """Parse KEY=VALUE lines (optional `export`, quotes and comments), the common `.env` subset."""
    result: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        result[key.strip()] = value
    return result
