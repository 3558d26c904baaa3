"""One module per Slack surface; each exposes `register(app, deps)`.

Every listener acks at once and does its work in a lazy function (bolt runs it on the app's
executor after the ack), so Slack gets its answer well within 3 seconds whatever the work costs:
file downloads, the database, Slack calls. A surface whose work matters registers through
`durable`: its request is written to the inbox (triage_bot/slack/inbox.py) before the ack, and the
work claims it, so a crash after the ack loses nothing and a retry or replay runs nothing twice.
A new surface is one new module added to SURFACES.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from slack_sdk.web import SlackResponse

from triage_bot import metrics
from triage_bot.slack.inbox import REPLAY

if TYPE_CHECKING:
    from triage_bot.slack.app import Deps
    from triage_bot.slack.blocks import Message
    from triage_bot.slack.delivery import Failure

log = logging.getLogger(__name__)

SURFACES = ("messages", "mentions", "slash_command", "shortcuts", "actions", "views", "home")


def ack_now(ack: Ack) -> None:
    """The whole ack path: nothing slow may run before it."""
    ack()


def logged(func: Callable[..., None]) -> Callable[..., None]:
    """Log a lazy listener's failure with its name (bolt's own log line omits the traceback)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            func(*args, **kwargs)
        except Exception:
            log.exception("%s failed", func.__name__)

    return wrapper


Handler = Callable[[Any, dict[str, Any], WebClient, BoltContext], None]
HANDLERS: dict[str, Handler] = {}  # inbox kind -> the work for one request body (replays use it too)


def durable(deps: Deps, kind: str, handler: Handler) -> tuple[Callable[..., None], Callable[..., None]]:
    """The (ack, lazy) pair of a surface whose request is written down before its ack."""
    HANDLERS[kind] = handler

    def accept(ack: Ack, body: dict[str, Any]) -> None:
        metrics.EVENTS_RECEIVED.labels(kind).inc()
        key = once_key(body)
        if key and deps.inbox is not None:
            deps.inbox.accept(key, kind, body)
        ack()
        metrics.EVENTS_ACKED.labels(kind).inc()

    def work(body: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        run_once(deps, kind, body, client, context)

    return accept, work


def run_once(
    deps: Deps,
    kind: str,
    body: dict[str, Any],
    client: WebClient | None = None,
    context: BoltContext | None = None,
    *,
    replay: bool = False,
) -> None:
    """Claim the request's inbox row, do its work, mark it done; nothing when another run has it.
    A replay's row was claimed by the sweep that found it."""
    key = once_key(body)
    if key and deps.inbox is not None and not replay and deps.inbox.claim(key) is False:
        log.info("%s already handled (retry, replay or another replica)", key)
        metrics.EVENTS_HANDLED.labels(kind, "duplicate").inc()
        return
    token = REPLAY.set(replay)
    try:
        HANDLERS[kind](deps, body, client or deps.delivery.client, context or replay_context(deps, body))
        metrics.EVENTS_HANDLED.labels(kind, "done").inc()
    except Exception:
        # a request whose work raises would raise again: it is logged and not retried
        log.exception("%s work for %s failed", kind, key)
        metrics.EVENTS_HANDLED.labels(kind, "failed").inc()
    finally:
        REPLAY.reset(token)
        if key and deps.inbox is not None:
            deps.inbox.done(key)


def replay_context(deps: Deps, body: dict[str, Any]) -> BoltContext:
    """What a listener reads from bolt's context, for a request run again from the inbox."""
    bot_user = next((a.get("user_id") for a in body.get("authorizations") or [] if a.get("is_bot")), None)
    return BoltContext({"bot_user_id": bot_user or deps.bot_user_id()})


def register_all(app: App, deps: Deps) -> None:
    for name in SURFACES:
        importlib.import_module(f"triage_bot.slack.listeners.{name}").register(app, deps)


def post_answer(
    deps: Deps,
    client: WebClient,
    channel: str,
    thread_ts: str | None,
    message: Message,
    incident_id: int | None,
    engine: str | None,
    full_text: Callable[[], str] | None = None,
    key: str | None = None,
) -> SlackResponse | Failure | None:
    """Post an answer in a channel and remember it, so Resolved and repeats can find it later.

    `key` (the request's once-only key) makes the post idempotent across timeouts and retries.
    When the message had to be cut to fit Slack's limits, the whole answer follows in the thread
    as a text file (`full_text` renders it), so nothing the bot knows is withheld.
    """
    response = deps.delivery.post(channel, message.kwargs(), thread_ts=thread_ts, client=client, key=key)
    if not isinstance(response, SlackResponse):
        return response  # refused for good, or parked in the outbox for a retry
    if incident_id is not None and deps.history is not None:
        try:
            deps.history.record_posted(channel, response["ts"], "answer", incident_id, engine)
        except Exception as exc:
            log.warning("could not remember the posted answer: %s", exc)
    if message.cut and full_text is not None:
        deps.delivery.upload(
            channel,
            thread_ts or response["ts"],
            "triage-answer.txt",
            full_text(),
            "The full answer",
            client=client,
        )
    return response


def once_key(body: dict[str, Any]) -> str | None:
    """What makes a request unique: the event id of an event, the trigger id of a command, a
    shortcut, a click or a submitted view (a replayed request carries the same one)."""
    if body.get("event_id"):
        return str(body["event_id"])
    if body.get("trigger_id"):
        return f"trigger:{body['trigger_id']}"[:255]
    return None
