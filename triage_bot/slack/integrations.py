"""Engine health and the weekly digest, as the Slack surfaces show them (`/triage status`,
`/triage digest`, App Home).

Health checks and the digest are built in `triage_bot/health` and `triage_bot/digest` (issue 5). This module is
the only place the Slack adapter touches them, and it answers plainly when they are absent or not
configured ("No engines configured", "No digest yet") instead of failing. Sources, first found wins:

- engine health: a `triage_bot.health.engine_status()` hook (objects with `name`, `state`, optionally
  `kind`, `checked_at`, `detail`); else the engines in engines.yaml (`triage_bot.health.config`) with
  the latest check the history holds for each (`engine_checks`, written by the health poller).
- digest: a `triage_bot.digest.last_digest()` hook (None, a string, or an object with `text` and
  optionally `blocks`, `created_at`); else the digest of the last 7 days built on demand with
  `triage_bot.digest.build_digest` / `digest_blocks` / `digest_text` from the history.

Either source may also be given explicitly (tests, other deployments): `Integrations(status, digest)`.
Text from these sources quotes names from pastes, so live mentions in it are neutralised here.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from triage_bot.slack.text import escape, truncate

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore
    from triage_bot.history.queries import MuteInfo

log = logging.getLogger(__name__)

_LIVE = re.compile(r"<([!@][^<>]*)>")
STATE_EMOJI = {
    "up": ":large_green_circle:",
    "degraded": ":large_yellow_circle:",
    "down": ":red_circle:",
    "stuck": ":red_circle:",
    "unknown": ":white_circle:",
}
NO_ENGINES = (
    "No engines configured. List the engines to watch in an `engines.yaml` and point "
    "`TRIAGE_ENGINES` at it; see docs/slack-setup.md."
)
NO_HEALTH = "Health checks are not available in this build of the bot."
NO_QUIET = "No mutes and no maintenance windows: every failure is answered and every alert is sent."
NO_DIGEST = "No digest yet: the first weekly digest is built on its schedule (default Monday 09:00)."
DIGEST_DAYS = 7


@dataclass(frozen=True)
class EngineLine:
    name: str
    state: str
    kind: str = ""
    checked_at: datetime | None = None
    detail: str = ""
    maintenance: str = ""  # the window's reason when the engine is in a maintenance window now

    def mrkdwn(self) -> str:
        emoji = STATE_EMOJI.get(self.state, ":white_circle:")
        parts = [f"{emoji} *{escape(self.name)}*"]
        if self.kind:
            parts.append(escape(self.kind))
        parts.append(escape(self.state))
        if self.checked_at is not None:
            parts.append(f"checked {self.checked_at:%Y-%m-%d %H:%M UTC}")
        if self.maintenance:  # planned: its alerts are held back and its checks count as no downtime
            parts.append(f":wrench: in maintenance ({escape(self.maintenance)})")
        line = " · ".join(parts)
        if self.detail:
            line += f" — {escape(truncate(self.detail, 200))}"
        return line


@dataclass(frozen=True)
class DigestView:
    """A digest ready to show: the fallback text and its blocks."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)


def mute_line(mute: MuteInfo) -> str:
    """`#3` engine `vllm` · until 2025-06-02 14:00 UTC · by U123 (`/triage mutes`, status, App Home)."""
    what = f"`{escape(mute.signature_id)}`" if mute.signature_id else f"engine `{escape(mute.engine or '')}`"
    return f"`#{mute.id}` {what} · until {mute.until:%Y-%m-%d %H:%M} UTC · by {escape(mute.created_by)}"


def _window_reason(window: Any) -> str:
    return "" if window is None else (window.reason or "planned")


def neutralise(value: Any) -> Any:
    """Every string in a block structure with `<!…>` / `<@…>` made inert."""
    if isinstance(value, str):
        return _LIVE.sub(lambda m: f"&lt;{m.group(1)}&gt;", value)
    if isinstance(value, list):
        return [neutralise(v) for v in value]
    if isinstance(value, dict):
        return {k: neutralise(v) for k, v in value.items()}
    return value


def _hook(module: str, name: str) -> Callable[..., Any] | None:
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    except Exception as exc:  # a half-configured module must not take the Slack app down
        log.warning("cannot load %s.%s: %s", module, name, exc)
        return None
    return found if callable(found) else None


class Integrations:
    """Reads engine health and the digest; every failure becomes a sentence, not an error."""

    def __init__(
        self,
        engine_status: Callable[[], Any] | None = None,
        last_digest: Callable[[], Any] | None = None,
        *,
        history: HistoryStore | None = None,
        discover: bool = True,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ):
        self.history = history
        self.clock = clock
        self._engine_status = engine_status
        self._last_digest = last_digest
        if discover and engine_status is None:
            self._engine_status = (
                _hook("triage_bot.health", "engine_status") or self._engines_from_checks_source()
            )
        if discover and last_digest is None:
            self._last_digest = _hook("triage_bot.digest", "last_digest") or self._digest_builder_source()

    # -- default sources -------------------------------------------------------------------

    def _engines_from_checks_source(self) -> Callable[[], Any] | None:
        load = _hook("triage_bot.health.config", "load_engines")
        if load is None:
            return None

        def engines_from_checks() -> list[EngineLine]:
            try:
                found = load()
            except Exception as exc:  # no engines.yaml (the usual case) or an invalid one
                log.info("no engines configured: %s", exc)
                return []
            configured, now = found.engines, self.clock()
            checks = self._latest_checks()
            lines = []
            for engine in configured:
                check = checks.get(engine.name)
                detail, state = "", check.state if check else "unknown"
                if check is not None and isinstance(check.details, dict):
                    # the finding in words when there is one ("stuck: ... flat while 3 wait"), else the probe's
                    detail = str(check.details.get("summary") or check.details.get("detail") or "")
                    if check.details.get("state") == "stuck":  # not serving, though /health says 200
                        state = "stuck"
                lines.append(
                    EngineLine(
                        engine.name,
                        state,
                        engine.kind,
                        check.checked_at if check else None,
                        detail if check else "not checked yet",
                        _window_reason(found.in_maintenance(engine.name, now)),
                    )
                )
            return lines

        return engines_from_checks

    def _latest_checks(self) -> dict[str, Any]:
        """The newest `engine_checks` row per engine (read-only; the poller writes them)."""
        if self.history is None:
            return {}
        from sqlalchemy import func, select

        from triage_bot.history.models import EngineCheck

        newest = (
            select(EngineCheck.engine, func.max(EngineCheck.checked_at).label("at"))
            .group_by(EngineCheck.engine)
            .subquery()
        )
        stmt = select(EngineCheck).join(
            newest, (EngineCheck.engine == newest.c.engine) & (EngineCheck.checked_at == newest.c.at)
        )
        try:
            with self.history.session_factory() as session:
                return {check.engine: check for check in session.scalars(stmt)}
        except Exception as exc:
            log.warning("cannot read the latest engine checks: %s", exc)
            return {}

    def _digest_builder_source(self) -> Callable[[], Any] | None:
        build = _hook("triage_bot.digest", "build_digest")
        blocks = _hook("triage_bot.digest", "digest_blocks")
        text = _hook("triage_bot.digest", "digest_text")
        if build is None or blocks is None or text is None or self.history is None:
            return None

        def digest_of_the_week() -> DigestView:
            digest = build(self.history, days=DIGEST_DAYS)
            return DigestView(text(digest), blocks(digest, chart_note=False))

        return digest_of_the_week

    # -- what the surfaces call ------------------------------------------------------------

    def quiet_periods(self) -> tuple[list[str], str]:
        """(mrkdwn lines, the sentence when there are none): the mutes in force and the maintenance
        windows in force or to come. A mute swallowed every vLLM alert where nobody could see it."""
        lines: list[str] = []
        if self.history is not None:
            try:
                lines += [f"Mute {mute_line(m)}" for m in self.history.active_mutes()]
            except Exception as exc:
                log.warning("cannot read the mutes: %s", exc)
                lines.append(f"The mutes could not be read ({type(exc).__name__}).")
        load = _hook("triage_bot.health.config", "load_engines")
        if load is not None:
            try:
                windows = load().maintenance
            except Exception:  # no engines.yaml: no windows (engines() says so already)
                windows = []
            now = self.clock()
            for window in windows:
                said = window.describe(now)
                if said is not None:
                    lines.append(f":wrench: Maintenance: {escape(said)}")
        return lines, NO_QUIET

    def engines(self) -> tuple[list[EngineLine], str]:
        """(engine lines, the sentence to show when there are none)."""
        if self._engine_status is None:
            return [], NO_HEALTH
        try:
            raw = list(self._engine_status() or [])
        except Exception as exc:
            log.warning("engine status failed: %s", exc)
            return [], f"Engine health could not be read ({type(exc).__name__}); the bot's logs have details."
        lines = [
            r
            if isinstance(r, EngineLine)
            else EngineLine(
                str(getattr(r, "name", "?")),
                str(getattr(r, "state", "unknown")),
                str(getattr(r, "kind", "") or ""),
                getattr(r, "checked_at", None),
                str(getattr(r, "detail", "") or ""),
                str(getattr(r, "maintenance", "") or ""),
            )
            for r in raw
        ]
        return lines, NO_ENGINES

    def digest(self) -> tuple[DigestView | None, str]:
        """(the digest to show or None, the sentence to show when there is none)."""
        if self._last_digest is None:
            return None, NO_DIGEST
        try:
            found = self._last_digest()
        except Exception as exc:
            log.warning("the digest failed: %s", exc)
            return None, f"The digest could not be built ({type(exc).__name__}); the bot's logs have details."
        if found is None:
            return None, NO_DIGEST
        if isinstance(found, str):
            view = DigestView(found)
        elif isinstance(found, DigestView):
            view = found
        else:
            text = str(getattr(found, "text", "") or "")
            when = getattr(found, "created_at", None)
            if when is not None:
                text = f"_Built {when:%Y-%m-%d %H:%M UTC}_\n{text}"
            view = DigestView(text, list(getattr(found, "blocks", None) or []))
        if not view.text and not view.blocks:
            return None, NO_DIGEST
        return DigestView(neutralise(view.text), neutralise(view.blocks)), NO_DIGEST
