"""The one Web API client configuration: base URL, timeout and retry handlers, set in one place.

Bolt copies `base_url` and `retry_handlers` from `app.client` into the client it builds for each
request, so configuring this one client is enough for every listener (and the stand-in in tests).
slack_sdk only retries connection errors by default, once; a 429 would surface as an error and
the reply would be lost. Here a 429 is retried after its `Retry-After`, as are 500/503 and
dropped connections, and whatever still fails goes to the outbox (`triage_bot.slack.delivery`).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from slack_sdk import WebClient
from slack_sdk.http_retry import ConnectionErrorRetryHandler, RetryHandler
from slack_sdk.http_retry.builtin_handlers import ServerErrorRetryHandler
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.webhook import WebhookClient

from triage_bot.slack.config import SlackConfig

INLINE_WAIT_MAX_S = 3.0  # a longer Retry-After waits in the outbox, not in a worker thread
DEFAULT_RETRY_AFTER_S = 1.0


def parse_retry_after(value: str | None, now: datetime | None = None) -> float:
    """Seconds to wait from a `Retry-After` header in every form it takes: delta-seconds ("30"),
    a decimal some proxies send ("1.5"), or an HTTP date (RFC 9110). Anything else, negative or
    missing: a second."""
    if not value:
        return DEFAULT_RETRY_AFTER_S
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return DEFAULT_RETRY_AFTER_S
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())  # a date past: now
    if seconds != seconds or seconds < 0 or seconds == float("inf"):  # NaN, negative, infinite
        return DEFAULT_RETRY_AFTER_S
    return seconds


def header(headers: Any, name: str) -> str | None:
    """A header's value from slack_sdk's headers (a dict of str or of lists), any case."""
    for key, value in (headers or {}).items():
        if str(key).lower() == name:
            return str(value[0] if isinstance(value, list) and value else value)
    return None


class RateLimitHandler(RetryHandler):
    """A 429 is retried after its Retry-After when that is short; a longer wait is not slept in
    the worker: the 429 surfaces, and the reply waits in the outbox until it is due."""

    def _can_retry(self, *, state: Any, request: Any, response: Any = None, error: Any = None) -> bool:
        if response is None or response.status_code != 429:
            return False
        return parse_retry_after(header(response.headers, "retry-after")) <= INLINE_WAIT_MAX_S

    def prepare_for_next_attempt(
        self, *, state: Any, request: Any, response: Any = None, error: Any = None
    ) -> None:
        if response is None:
            raise error
        state.next_attempt_requested = True
        time.sleep(parse_retry_after(header(response.headers, "retry-after")))
        state.increment_current_attempt()


def retry_handlers(config: SlackConfig) -> list[RetryHandler]:
    """Rate limits (honouring Retry-After), server errors and connection errors, with backoff."""
    backoff = BackoffRetryIntervalCalculator(backoff_factor=0.5)
    handlers: list[RetryHandler] = []
    if config.rate_limit_retries:
        handlers.append(RateLimitHandler(max_retry_count=config.rate_limit_retries))
    if config.server_error_retries:
        handlers.append(
            ServerErrorRetryHandler(max_retry_count=config.server_error_retries, interval_calculator=backoff)
        )
    if config.connection_retries:
        handlers.append(
            ConnectionErrorRetryHandler(
                max_retry_count=config.connection_retries, interval_calculator=backoff
            )
        )
    return handlers


def web_client(config: SlackConfig, token: str | None = None) -> WebClient:
    return WebClient(
        token=token if token is not None else config.bot_token,
        base_url=config.api_url,
        timeout=config.timeout_s,
        retry_handlers=retry_handlers(config),
        logger=logging.getLogger("triage_bot.slack.web"),
    )


def webhook_client(config: SlackConfig, url: str) -> WebhookClient:
    """A client for a `response_url`, with the same retries as the Web API client."""
    return WebhookClient(url, timeout=config.timeout_s, retry_handlers=retry_handlers(config))
