"""Build the bolt App: one configured client, the jobs the listeners share, and every surface.

`build(config, ...)` is the only constructor; the CLI, the tests and the benchmark all use it, so
what is tested is what runs. Choices that matter:
- `process_before_response=True` with lazy listeners: the ack runs inline on the request thread
  (no executor hop, no 10 ms polling) and all work runs after it on our executor, so a busy
  executor can never delay an ack past Slack's 3 seconds.
- Request verification is on whenever there is an HTTP endpoint; it is off only in Socket Mode
  without a signing secret, where no HTTP request can reach the app.
- The executor is ours (`WorkTracker`) so shutdown and tests can wait for work in flight.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from slack_bolt import App

from bot.core import Triager, default_triager
from bot.readiness import Readiness, database_check
from bot.slack.client import web_client
from bot.slack.commands import Commands
from bot.slack.config import SlackConfig, SlackConfigError
from bot.slack.delivery import Delivery
from bot.slack.files import FileReader
from bot.slack.integrations import Integrations
from bot.slack.store import SlackStore
from bot.slack.triage import TriageJob

log = logging.getLogger(__name__)


class _ClientTokenNotice(logging.Filter):
    """bolt reads SLACK_BOT_TOKEN itself and then warns that our client's token wins: expected here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("As you gave `client` as well")


BOLT_LOGGER = logging.getLogger("bot.slack.bolt")
BOLT_LOGGER.addFilter(_ClientTokenNotice())


class WorkTracker(ThreadPoolExecutor):
    """A thread pool that knows how much work is in flight (for graceful shutdown and tests)."""

    def __init__(self, max_workers: int):
        super().__init__(max_workers=max_workers, thread_name_prefix="triage-slack")
        self._in_flight = 0
        self._idle = threading.Condition()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._idle:
            self._in_flight += 1
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self._done)
        return future

    def _done(self, _future: Future[Any]) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    @property
    def in_flight(self) -> int:
        with self._idle:
            return self._in_flight

    def wait_idle(self, timeout: float = 30.0) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)


@dataclass
class Surfaces:
    """What the app registered, checked against manifest.yml by a test."""

    events: set[str] = field(default_factory=set)
    commands: set[str] = field(default_factory=set)
    shortcuts: set[str] = field(default_factory=set)
    actions: set[str] = field(default_factory=set)
    views: set[str] = field(default_factory=set)


@dataclass
class Deps:
    """What the listeners share."""

    config: SlackConfig
    job: TriageJob
    commands: Commands
    delivery: Delivery
    history: Any | None
    store: SlackStore | None
    integrations: Integrations
    surfaces: Surfaces
    executor: WorkTracker


@dataclass
class SlackBot:
    app: App
    deps: Deps
    readiness: Readiness = field(default_factory=Readiness)

    @property
    def delivery(self) -> Delivery:
        return self.deps.delivery

    def wait_idle(self, timeout: float = 30.0) -> bool:
        return self.deps.executor.wait_idle(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Finish the work in flight, then stop the outbox sweeper."""
        if not self.deps.executor.wait_idle(timeout):
            log.warning("stopping with %s Slack jobs still running", self.deps.executor.in_flight)
        self.deps.delivery.stop()
        self.deps.executor.shutdown(wait=False)


def open_history() -> Any | None:
    """The incident history on DATABASE_URL, or None (logged) when it cannot be opened."""
    try:
        from bot.history import HistoryStore

        return HistoryStore.from_settings()
    except Exception as exc:
        log.error("the incident history is unavailable (%s): answering without it", exc)
        return None


def build(config: SlackConfig, *, triager: Triager | None = None, history: Any | None = None,
          integrations: Integrations | None = None, http: bool = True,
          use_history: bool = True) -> SlackBot:
    """The app with every surface registered. `history=None` opens DATABASE_URL unless `use_history` is False."""
    from bot.slack.listeners import register_all

    if not config.bot_token:
        raise SlackConfigError("SLACK_BOT_TOKEN is required to run the Slack app")
    if http and not config.signing_secret:
        raise SlackConfigError("SLACK_SIGNING_SECRET is required in HTTP mode (it verifies Slack's requests)")
    if history is None and use_history:
        history = open_history()
    store: SlackStore | None = None
    if history is not None:
        store = SlackStore(history.session_factory)
        try:
            store.ensure_schema()
        except Exception as exc:
            log.error("cannot create the Slack outbox tables (%s): failed replies are kept in memory", exc)
            store = None
    client = web_client(config)
    executor = WorkTracker(config.workers)
    app = App(
        name="triage-bot",
        client=client,  # carries the token; bolt calls auth.test with it once, here
        signing_secret=config.signing_secret or None,
        request_verification_enabled=bool(config.signing_secret) or http,
        process_before_response=True,
        listener_executor=executor,
        logger=BOLT_LOGGER,
    )
    triager = triager or default_triager()
    job = TriageJob(triager, history, FileReader(config.file_max_bytes, config.files_per_message, config.api_url))
    integrations = integrations or Integrations(history=history)
    deps = Deps(
        config=config, job=job, commands=Commands(job, history, config, integrations),
        delivery=Delivery(config, store, client), history=history, store=store, integrations=integrations,
        surfaces=Surfaces(), executor=executor,
    )
    register_all(app, deps)
    bot = SlackBot(app, deps)
    if history is not None:
        bot.readiness.add("database", database_check(history))
    bot.readiness.add("slack", deps.delivery.slack_status)
    return bot
