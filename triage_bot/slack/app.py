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
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slack_bolt import App

from triage_bot import metrics
from triage_bot.core import Triager, default_triager
from triage_bot.readiness import Readiness, database_check
from triage_bot.slack.client import web_client
from triage_bot.slack.commands import Commands
from triage_bot.slack.config import SlackConfig, SlackConfigError
from triage_bot.slack.delivery import Delivery
from triage_bot.slack.files import FileReader
from triage_bot.slack.inbox import Inbox
from triage_bot.slack.integrations import Integrations
from triage_bot.slack.outbox import SlackStore
from triage_bot.slack.triage import TriageJob

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore

log = logging.getLogger(__name__)


class _ClientTokenNotice(logging.Filter):
    """bolt reads SLACK_BOT_TOKEN itself and then warns that our client's token wins: expected here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("As you gave `client` as well")


BOLT_LOGGER = logging.getLogger("triage_bot.slack.bolt")
BOLT_LOGGER.addFilter(_ClientTokenNotice())


class WorkTracker(ThreadPoolExecutor):
    """A thread pool that knows how much work is in flight (for graceful shutdown and tests), with
    a bound: past `limit` jobs waiting or running, a job is not queued (its request waits in the
    inbox, where the sweeper finds it once there is room), so a burst cannot grow memory without end."""

    def __init__(self, max_workers: int, limit: int = 0):
        super().__init__(max_workers=max_workers, thread_name_prefix="triage-slack")
        self.limit = limit
        self.refused = 0
        self._in_flight = 0
        self._idle = threading.Condition()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._idle:
            if self.limit and self._in_flight >= self.limit:
                self.refused += 1
                refused: Future[Any] = Future()
                refused.set_result(None)
                log.warning("work queue full (%s jobs): the request waits in the inbox", self._in_flight)
                return refused
            self._in_flight += 1
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self._done)
        return future

    @property
    def room(self) -> int:
        with self._idle:
            return max(0, self.limit - self._in_flight) if self.limit else 1_000

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
    history: HistoryStore | None
    store: SlackStore | None
    integrations: Integrations
    surfaces: Surfaces
    executor: WorkTracker
    inbox: Inbox | None = None
    _bot_user_id: str | None = None

    def bot_user_id(self) -> str:
        """The bot's own user id (auth.test once), for requests run again from the inbox."""
        if self._bot_user_id is None:
            try:
                self._bot_user_id = str(self.delivery.client.auth_test().get("user_id") or "")
            except Exception:
                return ""
        return self._bot_user_id


@dataclass
class SlackBot:
    app: App
    deps: Deps
    readiness: Readiness = field(default_factory=Readiness)
    alertmanager: Any | None = None  # triage_bot.health.alertmanager.AlertmanagerReceiver, with a token
    _stop: threading.Event = field(default_factory=threading.Event)
    _inbox_thread: threading.Thread | None = None

    @property
    def delivery(self) -> Delivery:
        return self.deps.delivery

    def wait_idle(self, timeout: float = 30.0) -> bool:
        return self.deps.executor.wait_idle(timeout)

    def start_sweepers(self) -> None:
        """The outbox sweeper, and the inbox sweeper that runs what nobody finished."""
        self.watch_metrics()
        self.deps.delivery.start_sweeper()
        if self.deps.inbox is None or self._inbox_thread is not None:
            return
        self._inbox_thread = threading.Thread(target=self._sweep_inbox_loop, name="slack-inbox", daemon=True)
        self._inbox_thread.start()

    def watch_metrics(self) -> None:
        """/metrics reads this bot's outbox and the history's spool at each scrape."""
        delivery, history = self.deps.delivery, self.deps.history
        metrics.watch(metrics.OUTBOX_DEPTH, delivery.pending_in_memory, where="memory")
        if delivery.store is not None:
            metrics.watch(metrics.OUTBOX_DEPTH, delivery.store.pending, where="database")
        spool = getattr(history, "spool", None)
        if spool is not None:
            metrics.watch(metrics.SPOOL_DEPTH, lambda: len(spool))

    def sweep_inbox(self) -> int:
        """Run (on the executor) the requests left unfinished; how many were taken."""
        from triage_bot.slack.listeners import run_once

        inbox, executor = self.deps.inbox, self.deps.executor
        if inbox is None or not executor.room:
            return 0
        orphans = inbox.orphans(limit=min(50, executor.room))
        for orphan in orphans:
            log.warning("inbox: running %s %s again (left unfinished)", orphan.kind, orphan.key)
            executor.submit(run_once, self.deps, orphan.kind, orphan.body, replay=True)
        return len(orphans)

    def _sweep_inbox_loop(self) -> None:
        last_prune = 0.0
        while not self._stop.wait(self.deps.config.inbox_sweep_s):
            try:
                self.sweep_inbox()
                if time.monotonic() - last_prune > 600 and self.deps.inbox is not None:
                    self.deps.inbox.prune()
                    last_prune = time.monotonic()
            except Exception:  # the sweeper must outlive any one bad row
                log.exception("inbox sweep failed")

    def close(self, timeout: float = 10.0) -> None:
        """Finish the work in flight, then stop the sweepers."""
        self._stop.set()
        if not self.deps.executor.wait_idle(timeout):
            log.warning(
                "stopping with %s Slack jobs still running (their requests stay in the inbox)",
                self.deps.executor.in_flight,
            )
        self.deps.delivery.stop()
        if self._inbox_thread is not None:
            self._inbox_thread.join(timeout)
        self.deps.executor.shutdown(wait=False)
        if self.deps.inbox is not None:
            self.deps.inbox.close()


def open_history() -> HistoryStore | None:
    """The incident history on DATABASE_URL, or None (logged) when it cannot be opened."""
    try:
        from triage_bot.history import HistoryStore

        return HistoryStore.from_settings()
    except Exception as exc:
        log.error("the incident history is unavailable (%s): answering without it", exc)
        return None


def open_inbox(config: SlackConfig, history: HistoryStore | None) -> Inbox | None:
    """The durable inbox: on the history's database, with its local fallback beside the spool."""
    from datetime import timedelta

    from triage_bot.history.db import missing_tables
    from triage_bot.settings import Settings
    from triage_bot.slack.inbox import inbox_metadata, local_engine

    try:
        path = config.local_inbox_path(Settings.from_env().spool_path)
        shared = history.session_factory.kw["bind"] if history is not None else None
        if shared is not None:
            try:
                missing = missing_tables(shared, inbox_metadata)  # migration 0004 creates it
            except Exception as exc:
                missing = [f"unreadable ({exc})"]
            if missing:
                log.error(
                    "the shared inbox table is missing (%s; run `triage-bot db upgrade`): "
                    "the local inbox takes every request",
                    ", ".join(missing),
                )
                shared = None
        return Inbox(
            shared,
            local_engine(path),
            replica=config.replica_id,
            lease=timedelta(seconds=config.inbox_lease_s),
            pending_grace=timedelta(seconds=config.inbox_grace_s),
        )
    except Exception as exc:
        log.error("the inbox is unavailable (%s): a crash after an ack can lose that request", exc)
        return None


def build(
    config: SlackConfig,
    *,
    triager: Triager | None = None,
    history: HistoryStore | None = None,
    integrations: Integrations | None = None,
    http: bool = True,
    use_history: bool = True,
) -> SlackBot:
    """The app with every surface registered. `history=None` opens DATABASE_URL unless `use_history` is False."""
    from triage_bot.slack.listeners import register_all

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
            store.check_schema()
        except Exception as exc:
            log.error("the Slack outbox is unavailable (%s): failed replies are kept in memory", exc)
            store = None
    client = web_client(config)
    executor = WorkTracker(config.workers, config.max_queue)
    inbox = open_inbox(config, history)
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
    job = TriageJob(
        triager, history, FileReader(config.file_max_bytes, config.files_per_message, config.api_url)
    )
    integrations = integrations or Integrations(history=history)
    deps = Deps(
        config=config,
        job=job,
        commands=Commands(job, history, config, integrations),
        delivery=Delivery(config, store, client),
        history=history,
        store=store,
        integrations=integrations,
        surfaces=Surfaces(),
        executor=executor,
        inbox=inbox,
    )
    register_all(app, deps)
    bot = SlackBot(app, deps)
    if config.alertmanager_token and history is not None:
        from triage_bot.health.alertmanager import AlertmanagerReceiver
        from triage_bot.slack.outputs import SlackNotifier

        bot.alertmanager = AlertmanagerReceiver(
            history, SlackNotifier(deps.delivery, config.alert_channel), triager
        )
    if history is not None:
        bot.readiness.add("database", database_check(history))
    bot.readiness.add("slack", deps.delivery.slack_status)
    return bot
