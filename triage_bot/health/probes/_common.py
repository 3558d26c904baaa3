"""Pieces every probe shares: Prometheus text parsing, the health step, the generation step.

Prometheus text is parsed with prometheus_client's own parser, but only over the lines of the
families a probe asks for: a vLLM /metrics page is mostly histogram buckets the rules never read,
and skipping them keeps a pass over a thousand engines cheap. Samples are matched on name plus
labels, never on line order, and `_created` series are ignored.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from prometheus_client.parser import text_string_to_metric_families

from triage_bot.health.observation import MetricsSnapshot, Observation
from triage_bot.health.probes import Http, ProbeError, Response

if TYPE_CHECKING:
    from triage_bot.health.config import EngineConfig

_METRIC_LINE = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(?:\{|\s)")


class NotPrometheus(ValueError):
    """The body is not Prometheus text exposition."""


@dataclass
class Samples:
    """Sample values by sample name, each a list of (labels, value)."""

    by_name: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=lambda: defaultdict(list))

    def has(self, name: str) -> bool:
        return bool(self._rows(name))

    def _rows(self, name: str) -> list[tuple[dict[str, str], float]]:
        # the parser names a counter's samples <name>_total even when the page omits it (Triton)
        return self.by_name.get(name) or self.by_name.get(name + "_total") or []

    def total(self, name: str, **labels: str) -> float | None:
        """Sum over every label set (data-parallel ranks, models) matching `labels`; None if absent."""
        rows = [v for lab, v in self._rows(name) if all(lab.get(k) == x for k, x in labels.items())]
        return sum(rows) if rows else None

    def maximum(self, name: str, **labels: str) -> float | None:
        rows = [v for lab, v in self._rows(name) if all(lab.get(k) == x for k, x in labels.items())]
        return max(rows) if rows else None

    def first_total(self, *names: str) -> tuple[float | None, str | None]:
        """The first of several names (new before old) that is present, and which one it was."""
        for name in names:
            value = self.total(name)
            if value is not None:
                return value, name
        return None, None


def parse_prometheus(body: bytes | str, wanted: Iterable[str]) -> Samples:
    """Parse the sample lines whose names start with one of `wanted` (plus their HELP/TYPE lines)."""
    text = body.decode("utf-8", errors="strict") if isinstance(body, bytes) else body
    prefixes = tuple(wanted)
    kept: list[str] = []
    first = True
    for line in text.splitlines():
        if not line.strip():
            continue
        if first:
            first = False
            if not (line.startswith("#") or _METRIC_LINE.match(line)):
                raise NotPrometheus("not Prometheus text")
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE") and parts[2].startswith(prefixes):
                kept.append(line)
            continue
        if line.startswith(prefixes):
            kept.append(line)
    samples = Samples()
    try:
        for family in text_string_to_metric_families("\n".join(kept) + "\n"):
            for sample in family.samples:
                if sample.name.endswith("_created"):
                    continue
                samples.by_name[sample.name].append((dict(sample.labels), float(sample.value)))
    except (ValueError, TypeError, IndexError) as exc:
        raise NotPrometheus(f"unparseable metrics: {str(exc)[:80]}") from None
    return samples


def describe_status(response: Response) -> str:
    snippet = response.text().strip().splitlines()[0][:120] if response.body.strip() else ""
    return f"HTTP {response.status}" + (f" {snippet}" if snippet else "")


def new_observation(engine: EngineConfig, now: datetime) -> Observation:
    return Observation(engine=engine.name, kind=engine.kind, checked_at=now, health="error")


async def health_step(http: Http, engine: EngineConfig, obs: Observation, path: str) -> Response | None:
    """GET the health endpoint and set obs.health; a non-2xx answer is an http_error."""
    try:
        response = await http.get(engine.base_url + path, engine.headers())
    except ProbeError as exc:
        obs.health = exc.verdict  # type: ignore[assignment]
        obs.detail = exc.detail
        return None
    obs.health_status = response.status
    obs.health_elapsed_s = response.elapsed_s
    if response.ok:
        obs.health = "ok"
        obs.detail = f"{path} HTTP {response.status}"
    else:
        obs.health = "http_error"
        obs.detail = f"{path} {describe_status(response)}"
    return response


async def get_step(http: Http, engine: EngineConfig, url: str) -> tuple[Response | None, str | None]:
    """A GET whose failure is a reason string rather than an exception."""
    try:
        response = await http.get(url, engine.headers())
    except ProbeError as exc:
        return None, exc.detail
    return response, None


async def generate_get_step(http: Http, engine: EngineConfig, obs: Observation, path: str) -> None:
    """The engines whose 1-token probe is itself a GET (/health_generate)."""
    response, error = await get_step(http, engine, engine.base_url + path)
    if response is None:
        obs.generate, obs.generate_detail = "failed", f"{path}: {error}"
    elif response.ok:
        obs.generate, obs.generate_detail = "ok", f"{path} HTTP {response.status}"
    else:
        obs.generate, obs.generate_detail = "failed", f"{path} {describe_status(response)}"


async def metrics_step(
    http: Http,
    engine: EngineConfig,
    obs: Observation,
    url: str,
    *,
    label: str,
    read: Callable[[bytes], MetricsSnapshot],
    unreadable: str,
    missing: str,
    status_hints: dict[int, str] | None = None,
) -> None:
    """Fetch and read an engine's metrics; every way that can fail becomes `obs.metrics_error`.

    The probes differ only in where the metrics live, how they are read and what to say when the
    engine's own readings are absent, so each passes those and shares the rest.
    """
    response, error = await get_step(http, engine, url)
    if response is None:
        obs.metrics_error = f"{label}: {error}"
        return
    if not response.ok:
        obs.metrics_error = (status_hints or {}).get(
            response.status
        ) or f"{label} {describe_status(response)}"
        return
    try:
        snapshot = read(response.body)
    except (ValueError, UnicodeDecodeError) as exc:  # NotPrometheus is a ValueError
        obs.metrics_error = f"{unreadable} ({str(exc)[:60]})"
        return
    if not snapshot.has_core:
        obs.metrics_error = missing
        return
    obs.metrics = snapshot
