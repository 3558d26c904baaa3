"""Send what the bot owes Slack; keep what Slack did not take in the outbox and send it later.

`Delivery.call` makes one Web API call through the configured client (which already retried
429s after their Retry-After, 5xx and dropped connections). If the call still fails for a
reason that passes (rate limit, Slack or the network down) the call is stored in the outbox and
`None` is returned; the sweeper (`Delivery.sweep`, run on a timer by `start_sweeper`) sends it
later. A permanent refusal (`not_in_channel`, `channel_not_found`, …) is not retried: it is
logged and returned to the caller, which may tell the user. A message Slack rejects for its
blocks is sent again as text only, so the user still gets the answer.

When the outbox itself cannot be written (the database is away too), the call waits in a small
in-memory queue that the sweeper also drains: nothing is dropped while the process lives, and
anything dropped past the queue's bound is logged at ERROR.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web import SlackResponse

from triage_bot import metrics
from triage_bot.readiness import Status
from triage_bot.slack.client import header, parse_retry_after, webhook_client
from triage_bot.slack.config import SlackConfig
from triage_bot.slack.inbox import REPLAY
from triage_bot.slack.outbox import OutboxItem, SlackStore

log = logging.getLogger(__name__)

TRANSIENT_ERRORS = frozenset(
    {
        "ratelimited",
        "rate_limited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "team_added_to_org",
    }
)
AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"})
MEMORY_QUEUE_MAX = 1000
PACE_INLINE_MAX_S = 3.0  # a longer wait for the channel's next slot waits in the outbox
REPLY_EVENT = "triage_reply"  # message metadata event_type: carries the reply's idempotency key
POSTS = frozenset({"chat.postMessage"})
NOT_KEPT = frozenset({"views.open"})  # its trigger_id expires in seconds: a later retry cannot succeed
RESPONSE_URL = "response_url"
UPLOAD = "files_upload_v2"  # getUploadURLExternal → upload → completeUploadExternal


@dataclass(frozen=True)
class Failure:
    """A call Slack refused for good (not retried)."""

    error: str

    def __bool__(self) -> bool:
        return False


def _error_of(exc: Exception) -> tuple[str, bool, float | None]:
    """(error text, transient?, Retry-After seconds)."""
    if isinstance(exc, SlackApiError):
        response = exc.response
        status = getattr(response, "status_code", 200)
        error = str(response.get("error", "")) if hasattr(response, "get") else ""
        raw = header(getattr(response, "headers", {}), "retry-after")
        retry_after = parse_retry_after(raw) if raw is not None else None
        transient = status == 429 or status >= 500 or error in TRANSIENT_ERRORS
        return f"{status} {error}".strip(), transient, retry_after
    if isinstance(exc, URLError | OSError | TimeoutError | SlackRequestError):
        return f"{type(exc).__name__}: {exc}", True, None
    return f"{type(exc).__name__}: {exc}", False, None


def _timed_out(exc: Exception) -> bool:
    """The call may have reached Slack and landed: the answer was lost, not the request."""
    text = f"{type(exc).__name__} {exc}".lower()
    return isinstance(exc, TimeoutError | URLError | OSError | SlackRequestError) and (
        "timed out" in text or "timeout" in text
    )


class Delivery:
    """Web API calls and response_url posts, with the outbox behind them."""

    def __init__(self, config: SlackConfig, store: SlackStore | None, client: WebClient):
        self.config = config
        self.store = store
        self.client = client
        self._memory: collections.deque[tuple[str, dict[str, Any]]] = collections.deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_refusal: str | None = None  # a refusal of our credentials, until a call lands again
        self._next_slot: dict[str, float] = {}  # channel -> monotonic time of its next free slot
        self._paced_until = 0.0  # monotonic time until which paced posts may wait in the outbox

    # -- sending ---------------------------------------------------------------------------

    def call(
        self, method: str, client: WebClient | None = None, *, keep: bool = True, **kwargs: Any
    ) -> SlackResponse | Failure | None:
        """Send now; on a passing failure keep it for later and return None (with `keep=False`: a
        Failure, and the caller tries again itself); on refusal a Failure."""
        try:
            response = self._send(method, kwargs, client)
            self._landed()
            return response
        except Exception as exc:
            error, transient, retry_after = _error_of(exc)
            # a bounded label: Slack's error code (or HTTP status), else the exception's type
            code = error.split(" ", 1)[-1] if isinstance(exc, SlackApiError) else type(exc).__name__
            metrics.CHAT_API_ERRORS.labels(method, code[:40] or "error").inc()
            if method in POSTS and _timed_out(exc) and (earlier := self.already_posted(kwargs, client)):
                log.warning("%s timed out but had landed (found by its key): not posted again", method)
                return earlier
            if transient and not keep:
                return Failure(error.split(" ", 1)[-1])
            if transient and method not in NOT_KEPT:
                self._keep(method, kwargs, error, retry_after)
                return None
            if error.endswith("invalid_blocks") and kwargs.get("blocks"):
                log.error("Slack rejected the blocks of a %s (%s); sending the text only", method, error)
                fallback = {k: v for k, v in kwargs.items() if k != "blocks"}
                return self.call(method, client, keep=keep, **fallback)
            log.error(
                "Slack refused %s to %s: %s", method, kwargs.get("channel") or kwargs.get("user_id"), error
            )
            if error.split(" ", 1)[-1] in AUTH_ERRORS:
                self.last_refusal = error.split(" ", 1)[-1]
            return Failure(error.split(" ", 1)[-1])

    def _landed(self) -> None:
        self.last_refusal = None

    def post(
        self,
        channel: str,
        message_kwargs: dict[str, Any],
        thread_ts: str | None = None,
        client: WebClient | None = None,
        key: str | None = None,
    ) -> SlackResponse | Failure | None:
        """Post a message, paced per channel; `key` makes it idempotent: it travels as message
        metadata, and a retry after a timeout first looks for a message that carries it."""
        kwargs = {"channel": channel, **message_kwargs}
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        # never let Slack turn @names or #channels in our text into live links
        kwargs.setdefault("link_names", False)
        kwargs.setdefault("unfurl_links", False)
        kwargs.setdefault("unfurl_media", False)
        if key:
            kwargs["metadata"] = {"event_type": REPLY_EVENT, "event_payload": {"key": key[:200]}}
            if REPLAY.get() and (earlier := self.already_posted(kwargs, client)):
                log.info("a reply for %s was posted before the crash: not posted again", key)
                return earlier
        wait = self._take_slot(channel)
        if wait is None:
            self._keep("chat.postMessage", kwargs, "paced: the channel's next slot", PACE_INLINE_MAX_S)
            self._paced_until = time.monotonic() + 60
            return None
        if wait > 0:
            time.sleep(wait)
        return self.call("chat.postMessage", client, **kwargs)

    def _take_slot(self, channel: str) -> float | None:
        """Take this channel's next free slot and return the seconds until it; None (and nothing
        taken) when it is further off than a worker may wait."""
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_slot.get(channel, 0.0))
            if slot - now > PACE_INLINE_MAX_S:
                return None
            self._next_slot[channel] = slot + self.config.channel_pace_s
            if len(self._next_slot) > 10_000:  # forget channels whose slot is long past
                self._next_slot = {c: t for c, t in self._next_slot.items() if t > now}
            return slot - now

    def already_posted(self, kwargs: dict[str, Any], client: WebClient | None = None) -> SlackResponse | None:
        """The message an earlier try of this post left in Slack (its metadata key), if any: a
        timed-out call may have landed."""
        key = ((kwargs.get("metadata") or {}).get("event_payload") or {}).get("key")
        if not key:
            return None
        client = client or self.client
        try:
            if kwargs.get("thread_ts"):
                found = client.api_call(
                    "conversations.replies",
                    params={
                        "channel": kwargs["channel"],
                        "ts": kwargs["thread_ts"],
                        "include_all_metadata": True,
                        "limit": 200,
                    },
                )
            else:
                found = client.api_call(
                    "conversations.history",
                    params={"channel": kwargs["channel"], "include_all_metadata": True, "limit": 50},
                )
        except Exception as exc:
            log.warning("cannot look for an earlier try of a reply (%s); posting it", exc)
            return None
        for message in found.get("messages") or []:
            payload = (message.get("metadata") or {}).get("event_payload") or {}
            if payload.get("key") == key:  # answered as chat.postMessage answers: the caller reads its ts
                return SlackResponse(
                    client=client,
                    http_verb="POST",
                    api_url=found.api_url,
                    req_args={},
                    data={
                        "ok": True,
                        "channel": kwargs["channel"],
                        "ts": message.get("ts"),
                        "message": message,
                    },
                    headers={},
                    status_code=200,
                )
        return None

    def upload(
        self,
        channel: str,
        thread_ts: str | None,
        filename: str,
        content: str,
        title: str,
        client: WebClient | None = None,
    ) -> SlackResponse | Failure | None:
        """Share a text file in a channel (thread), e.g. the full answer when the message had to be cut."""
        kwargs: dict[str, Any] = {
            "channel": channel,
            "filename": filename,
            "content": content,
            "title": title,
        }
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        return self.call(UPLOAD, client, **kwargs)

    def respond(self, response_url: str, body: dict[str, Any]) -> bool:
        """POST to a response_url (ephemeral replies to commands and clicks); kept on failure."""
        try:
            self._send(RESPONSE_URL, {"url": response_url, "body": body}, None)
            return True
        except Exception as exc:
            error, transient, retry_after = _error_of(exc)
            if transient:
                self._keep(RESPONSE_URL, {"url": response_url, "body": body}, error, retry_after)
            else:
                log.error("response_url refused the reply: %s", error)
            return False

    def slack_status(self) -> Status:
        """Readiness: unready while Slack refuses our token; the outbox backlog is reported."""
        waiting = self.pending_in_memory()
        if self.last_refusal:
            return Status(False, f"Slack refused our credentials ({self.last_refusal})")
        return Status(True, f"ok ({waiting} replies waiting in memory)" if waiting else "ok")

    def _send(self, method: str, kwargs: dict[str, Any], client: WebClient | None) -> SlackResponse:
        if method == RESPONSE_URL:
            response = webhook_client(self.config, kwargs["url"]).send_dict(kwargs["body"])
            if response.status_code == 429 or response.status_code >= 500:
                raise SlackRequestError(f"response_url answered {response.status_code}")
            if response.status_code >= 400:
                raise ValueError(f"response_url answered {response.status_code}: {response.body[:200]}")
            return response  # type: ignore[return-value]
        client = client or self.client
        if method == UPLOAD:
            return client.files_upload_v2(**kwargs)
        json_methods = {
            "chat.postMessage",
            "chat.postEphemeral",
            "chat.update",
            "views.publish",
            "views.open",
        }
        if method in json_methods:
            return client.api_call(method, json=kwargs)
        return client.api_call(method, params=kwargs)

    def _keep(self, method: str, kwargs: dict[str, Any], error: str, retry_after: float | None) -> None:
        if self.store is not None:
            try:
                row = self.store.add(method, kwargs, error, delay=retry_after or 0.0)
                log.warning("Slack did not take %s (%s): kept in the outbox as #%s", method, error, row)
                return
            except Exception as store_error:
                log.error("the outbox is unavailable (%s); keeping %s in memory", store_error, method)
        with self._lock:
            if len(self._memory) >= MEMORY_QUEUE_MAX:
                dropped = self._memory.popleft()
                log.error("in-memory outbox full: dropped the oldest %s", dropped[0])
            self._memory.append((method, kwargs))

    # -- retrying --------------------------------------------------------------------------

    def sweep(self, limit: int = 50, now: datetime | None = None) -> int:
        """Retry what is due (by `now`, default the present); return how many calls landed."""
        landed = 0
        with self._lock:
            memory = list(self._memory)
            self._memory.clear()
        for method, kwargs in memory:
            try:
                self._send(method, kwargs, None)
                landed += 1
            except Exception as exc:
                error, transient, retry_after = _error_of(exc)
                if transient:
                    self._keep(method, kwargs, error, retry_after)
                else:
                    log.error("gave up %s from the in-memory outbox: %s", method, error)
        if self.store is None:
            return landed
        try:
            items = self.store.claim_due(limit, now)
        except Exception as exc:
            log.warning("cannot read the outbox (%s); will try again", exc)
            return landed
        for item in items:
            landed += self._retry(item)
        return landed

    def _retry(self, item: OutboxItem) -> int:
        assert self.store is not None
        payload = dict(item.payload)
        if item.method in POSTS:
            wait = self._take_slot(str(payload.get("channel", "")))
            if wait is None:
                self.store.defer(item, PACE_INLINE_MAX_S)  # the channel's pace: not a failed try
                self._paced_until = time.monotonic() + 60
                return 0
            if wait > 0:
                time.sleep(wait)
            if self.already_posted(payload):  # an earlier try timed out after landing
                self.store.sent(item.id)
                return 1
        try:
            self._send(item.method, payload, None)
        except Exception as exc:
            error, transient, retry_after = _error_of(exc)
            if transient:
                state = self.store.retry_later(item, error, retry_after)
                if state == "dead":
                    log.error(
                        "outbox #%s (%s) given up after %s tries: %s",
                        item.id,
                        item.method,
                        item.attempts + 1,
                        error,
                    )
            else:
                log.error("outbox #%s (%s) refused by Slack: %s", item.id, item.method, error)
                self.store.give_up(item, error)
            return 0
        self.store.sent(item.id)
        log.info("outbox #%s (%s) delivered after %s tries", item.id, item.method, item.attempts + 1)
        return 1

    def start_sweeper(self) -> None:
        """Retry the outbox every `outbox_interval_s` in a daemon thread."""
        if self._thread is not None:
            return

        def loop() -> None:
            # paced posts are due within seconds: sweep every second while some wait
            while not self._stop.wait(
                1.0 if time.monotonic() < self._paced_until else self.config.outbox_interval_s
            ):
                try:
                    self.sweep()
                except Exception:  # the sweeper must outlive any one bad row
                    log.exception("outbox sweep failed")

        self._thread = threading.Thread(target=loop, name="slack-outbox", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def pending_in_memory(self) -> int:
        with self._lock:
            return len(self._memory)


def wait_for_outbox(delivery: Delivery, timeout: float = 10.0, now: datetime | None = None) -> bool:
    """Sweep until nothing is pending (tests and shutdown); `now` moves the clock past the backoff."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        delivery.sweep(now=now)
        pending = delivery.pending_in_memory() + (delivery.store.pending() if delivery.store else 0)
        if not pending:
            return True
        time.sleep(0.1)
    return False
