"""The one Web API client configuration: base URL, timeout and retry handlers, set in one place.

Bolt copies `base_url` and `retry_handlers` from `app.client` into the client it builds for each
request, so configuring this one client is enough for every listener (and the stand-in in tests).
slack_sdk only retries connection errors by default, once; a 429 would surface as an error and
the reply would be lost. Here a 429 is retried after its `Retry-After`, as are 500/503 and
dropped connections, and whatever still fails goes to the outbox (`bot.slack.delivery`).
"""

from __future__ import annotations

import logging

from slack_sdk import WebClient
from slack_sdk.http_retry import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler, RetryHandler
from slack_sdk.http_retry.builtin_handlers import ServerErrorRetryHandler
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.webhook import WebhookClient

from bot.slack.config import SlackConfig

TIMEOUT_S = 10


def retry_handlers(config: SlackConfig) -> list[RetryHandler]:
    """Rate limits (honouring Retry-After), server errors and connection errors, with backoff."""
    backoff = BackoffRetryIntervalCalculator(backoff_factor=0.5)
    handlers: list[RetryHandler] = []
    if config.rate_limit_retries:
        handlers.append(RateLimitErrorRetryHandler(max_retry_count=config.rate_limit_retries))
    if config.server_error_retries:
        handlers.append(ServerErrorRetryHandler(max_retry_count=config.server_error_retries,
                                                interval_calculator=backoff))
    if config.connection_retries:
        handlers.append(ConnectionErrorRetryHandler(max_retry_count=config.connection_retries,
                                                    interval_calculator=backoff))
    return handlers


def web_client(config: SlackConfig, token: str | None = None) -> WebClient:
    return WebClient(
        token=token if token is not None else config.bot_token,
        base_url=config.api_url,
        timeout=TIMEOUT_S,
        retry_handlers=retry_handlers(config),
        logger=logging.getLogger("bot.slack.web"),
    )


def webhook_client(config: SlackConfig, url: str) -> WebhookClient:
    """A client for a `response_url`, with the same retries as the Web API client."""
    return WebhookClient(url, timeout=TIMEOUT_S, retry_handlers=retry_handlers(config))
