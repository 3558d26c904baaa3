"""Configuration from the environment and an optional `.env` file: one system (pydantic-settings).

`EnvSettings` is the base of the core's `Settings`, Slack's `SlackConfig` and the scheduler's
`SchedulerSettings`. Each field names its environment variable, so adding a setting is one new
field: `from_env` reads, converts and validates it with the others, and a bad value fails at
start-up naming the variable instead of half-working later. The environment wins over `.env`, so a
deployment can override a checked-in development file. `variables()` lists what a class reads;
a test checks that docs/configuration.md documents every one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, Self

from dotenv import dotenv_values
from pydantic import Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)


class SettingsError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")


def env(name: str, default: Any = PydanticUndefined, description: str = "", **kwargs: Any) -> Any:
    """A field read from the environment variable `name` (or `.env`)."""
    if "default_factory" in kwargs:
        return Field(validation_alias=name, description=description, **kwargs)
    return Field(default, validation_alias=name, description=description, **kwargs)


class EnvSettings(BaseSettings):
    """The one settings system (pydantic-settings): the core, Slack and the scheduler each declare
    their fields on a subclass, each field naming its variable. The environment wins over `.env`;
    empty values count as unset; a bad value raises `error`, whose message names the variable."""

    model_config = SettingsConfigDict(
        frozen=True, populate_by_name=True, extra="ignore", env_ignore_empty=True, env_file_encoding="utf-8"
    )
    error: ClassVar[type[ValueError]] = SettingsError

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise self.error(self._describe(exc)) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Construction reads nothing by itself: `Settings(x=...)` in a test or a library holds what it
        was given and the defaults; `from_env` is the one place the environment comes in."""
        return (init_settings,)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, env_file: str | Path | None = ".env") -> Self:
        """Settings from `environ` (default `os.environ`) over the values in `env_file` (python-dotenv)."""
        values: dict[str, str | None] = {}
        if env_file is not None and Path(env_file).is_file():
            values.update(dotenv_values(env_file, encoding="utf-8"))
        values.update(os.environ if environ is None else environ)
        names = cls.variables()
        return cls(**{k: v.strip() for k, v in values.items() if k in names and v is not None and v.strip()})

    @classmethod
    def variables(cls) -> dict[str, FieldInfo]:
        """Every variable this class reads, with its field (docs/configuration.md lists them all)."""
        return {
            str(f.validation_alias): f
            for f in cls.model_fields.values()
            if isinstance(f.validation_alias, str)
        }

    @classmethod
    def _describe(cls, exc: ValidationError) -> str:
        by_field = {name: str(f.validation_alias or name) for name, f in cls.model_fields.items()}
        problems = []
        for error in exc.errors():
            where = str(error["loc"][0]) if error["loc"] else ""
            name = by_field.get(where, where)
            message = str(error.get("ctx", {}).get("error") or error["msg"]).removeprefix("Value error, ")
            if error["type"] == "value_error" or not name:
                problems.append(message)
            else:
                problems.append(f"{name}={error.get('input')!r}: {message}")
        return "; ".join(problems)


def default_data_dir() -> Path:
    """The user's data directory for the bot (platformdirs: ~/.local/share/triage-bot on Linux).

    Local state (the SQLite history, the spool, the local inbox) lives here unless configured, never
    in the directory a command happens to run in."""
    import platformdirs

    return Path(platformdirs.user_data_dir("triage-bot", appauthor=False))


class Settings(EnvSettings):
    """The core's settings: where the history and the local state live, and the logs."""

    # data_dir and spool_path are None only until _fill_and_check fills them: a Path to every reader
    data_dir: Path = env("TRIAGE_DATA_DIR", None, validate_default=False)
    database_url: str = env("DATABASE_URL", "")
    dedup_window_hours: float = env("TRIAGE_DEDUP_WINDOW_HOURS", 6.0, gt=0)
    retention_days: int = env("TRIAGE_RETENTION_DAYS", 90, gt=0, le=36_500)
    spool_path: Path = env("TRIAGE_SPOOL_PATH", None, validate_default=False)
    spool_max_records: int = env("TRIAGE_SPOOL_MAX_RECORDS", 10_000, gt=0)
    spool_max_bytes: int = env("TRIAGE_SPOOL_MAX_BYTES", 64 * 1024 * 1024, gt=0)
    log_level: str = env("TRIAGE_LOG_LEVEL", "INFO")
    log_format: str = env("TRIAGE_LOG_FORMAT", "text")

    @model_validator(mode="after")
    def _fill_and_check(self) -> Self:
        # defaults that depend on data_dir are filled here, so TRIAGE_DATA_DIR moves all of them
        data_dir = self.data_dir or default_data_dir()
        self.__dict__["data_dir"] = data_dir
        if not self.database_url.strip():
            self.__dict__["database_url"] = f"sqlite:///{data_dir / 'triage-bot.sqlite3'}"
        if self.__dict__["spool_path"] is None:  # the raw value: None until filled here
            self.__dict__["spool_path"] = data_dir / "triage-bot.spool.jsonl"
        level = self.log_level.upper()
        if level not in LOG_LEVELS:
            raise SettingsError(
                f"TRIAGE_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {self.log_level!r}"
            )
        self.__dict__["log_level"] = level
        if self.log_format.lower() not in LOG_FORMATS:
            raise SettingsError(
                f"TRIAGE_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, got {self.log_format!r}"
            )
        self.__dict__["log_format"] = self.log_format.lower()
        return self

    @property
    def dedup_window(self) -> timedelta:
        return timedelta(hours=self.dedup_window_hours)
