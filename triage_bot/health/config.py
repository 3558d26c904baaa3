"""`engines.yaml`: which engines the bot polls, how, and when a reading counts as bad.

Validated with pydantic (unknown keys are errors, names unique, kinds must have a probe module),
so a typo fails at start-up with its location instead of an engine silently never being checked.
Secrets never live in the file: `auth_header_env` names an environment variable, read at load
time so a missing one fails fast, and kept out of every repr and log line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from triage_bot.health.probes import available_kinds, get_probe

DEFAULT_PATH = Path("engines.yaml")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class ConfigError(ValueError):
    """engines.yaml cannot be used; the message says where and why."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Thresholds(Strict):
    """When a reading is bad, and how many readings it takes to open or close an incident."""

    kv_cache: float = Field(default=0.95, gt=0, le=1.0)  # KV usage fraction at or above which it is saturated
    waiting: int = Field(default=20, ge=0)  # queue starvation: waiting above this while nothing runs
    consecutive: int = Field(default=3, ge=1, le=1000)  # N bad checks in a row open an incident
    recover: int = Field(default=2, ge=1, le=1000)  # M good checks in a row resolve it
    preemptions_per_min: float = Field(default=30.0, gt=0)  # preemption/retraction storm rate
    failure_rate: float = Field(default=0.05, gt=0, le=1.0)  # failed / finished requests between checks
    failure_min_requests: int = Field(default=20, ge=1)  # fewer finished requests: too few to judge
    flap_transitions: int = Field(default=4, ge=1)  # K: more good<->bad flips than this in the window...
    flap_window: int = Field(default=20, ge=2, le=10_000)  # ...of this many checks is "flapping"
    sglang_health_s: float = Field(default=20.0, gt=0)  # SGLang's own SGLANG_HEALTH_CHECK_TIMEOUT


class EngineConfig(Strict):
    name: str
    kind: str
    base_url: str
    model: str | None = None
    auth_header_env: str | None = None
    generate_probe: bool = False
    timeout_s: float | None = Field(default=None, gt=0, le=600)
    metrics_url: str | None = (
        None  # full URL when metrics live elsewhere (Triton :8002, trtllm /prometheus/metrics)
    )
    thresholds: Thresholds = Field(default_factory=Thresholds)

    _auth_value: str | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError(f"name {value!r} must be 1-64 letters, digits, '.', '_' or '-'")
        return value

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        kinds = available_kinds()
        if value not in kinds:
            raise ValueError(f"kind {value!r} has no probe; known kinds: {', '.join(kinds)}")
        return value

    @field_validator("base_url", "metrics_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} must be an http(s) URL with a host")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError(
                f"{value!r} must not carry a query, fragment or credentials (use auth_header_env)"
            )
        return value.rstrip("/")

    @field_validator("auth_header_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError(f"auth_header_env {value!r} is not an environment variable name")
        return value

    @model_validator(mode="after")
    def _generate_supported(self) -> EngineConfig:
        if self.generate_probe and not get_probe(self.kind).SUPPORTS_GENERATE:
            raise ValueError(f"generate_probe is not supported for kind {self.kind!r}")
        return self

    @property
    def timeout(self) -> float:
        """The whole-check deadline: the engine's own, or its kind's default (SGLang's health takes ~20 s)."""
        return self.timeout_s if self.timeout_s is not None else get_probe(self.kind).DEFAULT_TIMEOUT_S

    def headers(self) -> dict[str, str]:
        """Request headers; the auth value is never part of repr() or model_dump()."""
        return {"Authorization": self._auth_value} if self._auth_value else {}

    def resolve_auth(self, environ: Mapping[str, str]) -> None:
        if self.auth_header_env is None:
            return
        raw = environ.get(self.auth_header_env, "").strip()
        if not raw:
            raise ConfigError(
                f"engine {self.name}: environment variable {self.auth_header_env} is empty or unset"
            )
        self._auth_value = raw if " " in raw else f"Bearer {raw}"


class WeeklyWindow(Strict):
    days: list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] = Field(min_length=1)
    start: time = Field(alias="from")
    end: time = Field(alias="to")
    timezone: str = "UTC"

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("timezone")
    @classmethod
    def _tz(cls, value: str) -> str:
        _zone(value)
        return value


class MaintenanceWindow(Strict):
    """A time when an engine is expected to be sick: checks are recorded, no incident is opened."""

    engines: list[str] = Field(min_length=1)  # names, or ["*"]
    start: datetime | None = None
    end: datetime | None = None
    weekly: WeeklyWindow | None = None
    reason: str = ""

    @model_validator(mode="after")
    def _shape(self) -> MaintenanceWindow:
        one_off = self.start is not None and self.end is not None
        if one_off == (self.weekly is not None):
            raise ValueError("a maintenance window needs either start+end or weekly, not both")
        if one_off and _aware(self.end) <= _aware(self.start):  # type: ignore[arg-type]
            raise ValueError("maintenance end must be after start")
        return self

    def covers(self, engine: str, when: datetime) -> bool:
        if "*" not in self.engines and engine not in self.engines:
            return False
        return self.ends(when) is not None

    def ends(self, when: datetime) -> datetime | None:
        """When the occurrence in force at `when` ends, or None when none is in force then."""
        if self.start is not None and self.end is not None:
            return _aware(self.end) if _aware(self.start) <= when < _aware(self.end) else None
        assert self.weekly is not None
        w = self.weekly
        local = when.astimezone(_zone(w.timezone))
        now_t = local.time().replace(tzinfo=None)
        today = WEEKDAYS[local.weekday()] in w.days
        yesterday = WEEKDAYS[(local.weekday() - 1) % 7] in w.days
        if w.start < w.end:
            inside, ends_on = today and w.start <= now_t < w.end, local.date()
        elif now_t >= w.start:  # an overnight window, evening part: it ends tomorrow
            inside, ends_on = today, local.date() + timedelta(days=1)
        else:  # overnight, morning part: it began on a listed day, yesterday
            inside, ends_on = yesterday and now_t < w.end, local.date()
        return datetime.combine(ends_on, w.end, tzinfo=local.tzinfo) if inside else None

    def describe(self, when: datetime) -> str | None:
        """One plain line for status and App Home ("… in force until 04:00 UTC"), or None for a
        one-off window that is over."""
        who = "every engine" if "*" in self.engines else ", ".join(self.engines)
        why = f" ({self.reason})" if self.reason else ""
        if self.start is not None and self.end is not None:
            if _aware(self.end) <= when:
                return None
            span = f"{_aware(self.start):%Y-%m-%d %H:%M} – {_aware(self.end):%Y-%m-%d %H:%M %Z}"
        else:
            assert self.weekly is not None
            w = self.weekly
            span = f"every {', '.join(w.days)} {w.start:%H:%M}–{w.end:%H:%M} {w.timezone}"
        ends = self.ends(when)
        now = f" · in force now, until {ends:%Y-%m-%d %H:%M %Z}" if ends is not None else ""
        return f"{who}: {span}{why}{now}"


class PollerLimits(Strict):
    concurrency: int = Field(default=64, ge=1, le=10_000)
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)


class EnginesFile(Strict):
    engines: list[EngineConfig] = Field(default_factory=list)
    maintenance: list[MaintenanceWindow] = Field(default_factory=list)
    poller: PollerLimits = Field(default_factory=PollerLimits)

    @model_validator(mode="after")
    def _unique(self) -> EnginesFile:
        seen: set[str] = set()
        for engine in self.engines:
            if engine.name in seen:
                raise ValueError(f"engine name {engine.name!r} is used twice")
            seen.add(engine.name)
        names = seen | {"*"}
        for window in self.maintenance:
            unknown = set(window.engines) - names
            if unknown:
                raise ValueError(f"maintenance names unknown engines: {sorted(unknown)}")
        return self

    def in_maintenance(self, engine: str, when: datetime) -> MaintenanceWindow | None:
        for window in self.maintenance:
            if window.covers(engine, when):
                return window
        return None


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown timezone {name!r}") from exc


def parse_engines(
    data: object, environ: Mapping[str, str] | None = None, source: str = "engines.yaml"
) -> EnginesFile:
    """Validate parsed YAML; every problem is reported with its path in the file."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping with an 'engines' list")
    try:
        config = EnginesFile.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(part) for part in err["loc"])
            if err["loc"][:1] == ("engines",) and len(err["loc"]) > 1 and isinstance(err["loc"][1], int):
                engines = data.get("engines") or []
                idx = err["loc"][1]
                if idx < len(engines) and isinstance(engines[idx], dict) and engines[idx].get("name"):
                    where += f" ({engines[idx]['name']})"
            lines.append(f"{source}: {where}: {err['msg']}")
        raise ConfigError("\n".join(lines)) from None
    env = os.environ if environ is None else environ
    for engine in config.engines:
        engine.resolve_auth(env)
    return config


def load_engines(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> EnginesFile:
    """Read and validate engines.yaml (default: $TRIAGE_ENGINES, then ./engines.yaml)."""
    env = os.environ if environ is None else environ
    target = Path(path or env.get("TRIAGE_ENGINES") or DEFAULT_PATH)
    try:
        text = target.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {target}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{target}: not valid YAML: {exc}") from None
    return parse_engines(data, env, str(target))
