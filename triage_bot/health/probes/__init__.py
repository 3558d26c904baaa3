"""One probe module per engine kind: a new kind is one new file here, found by its name, or a
module an installed package names (triage_bot/plugins.py).

A probe module defines `KIND`; `ENGINE`, the knowledge base's engine whose recovery texts fit it
(None when none does); `WORDS`, what names it in an alert's labels; `SUPPORTS_GENERATE`,
`DEFAULT_TIMEOUT_S` and `async def probe(http, engine, now) -> Observation`. It only ever calls
`http.get` (and `http.post_json` for a 1-token completion probe): the bot reads engines, it never
changes them. Modules whose name starts with `_` are helpers, not kinds.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from datetime import datetime
from functools import cache, lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from triage_bot import plugins

if TYPE_CHECKING:
    from triage_bot.health.config import EngineConfig
    from triage_bot.health.observation import Observation


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    elapsed_s: float

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class ProbeError(Exception):
    """A request that produced no usable response; `verdict` is the Observation.health value."""

    verdict = "error"

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


class Refused(ProbeError):
    verdict = "refused"


class TimedOut(ProbeError):
    verdict = "timeout"


class BadResponse(ProbeError):
    """Not HTTP, or a body over the size cap."""

    verdict = "bad_response"


class Http(Protocol):
    async def get(self, url: str, headers: dict[str, str]) -> Response: ...

    async def post_json(self, url: str, payload: dict[str, Any], headers: dict[str, str]) -> Response: ...


class ProbeModule(Protocol):
    KIND: str
    ENGINE: str | None
    WORDS: tuple[str, ...]
    SUPPORTS_GENERATE: bool
    DEFAULT_TIMEOUT_S: float

    async def probe(self, http: Http, engine: EngineConfig, now: datetime) -> Observation: ...


@lru_cache(maxsize=1)
def _modules() -> dict[str, str]:
    return plugins.modules(plugins.PROBES, __name__, __path__)


def available_kinds() -> tuple[str, ...]:
    return tuple(sorted(_modules()))


@cache
def get_probe(kind: str) -> ProbeModule:
    name = _modules().get(kind)
    if name is None:
        raise KeyError(f"no probe for engine kind {kind!r}")
    module: ModuleType = importlib.import_module(name)
    return module


def engine_of(kind: str) -> str | None:
    """The knowledge base's engine a probe kind serves; None for an unknown kind or none."""
    try:
        return get_probe(kind).ENGINE
    except KeyError:
        return None
