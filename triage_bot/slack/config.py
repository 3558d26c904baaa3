"""Slack's settings: the tokens, the channels, the retries and the inbox, read once at start-up.

A subclass of the one settings system (`triage_bot.settings.EnvSettings`, pydantic-settings), kept
apart from the core's `Settings` so the Slack adapter can be configured and tested without
touching the history's configuration. A bad value fails at start-up naming its variable.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self

from pydantic import BeforeValidator, Field, model_validator

from triage_bot.settings import EnvSettings, env

DEFAULT_API_URL = "https://slack.com/api/"


class SlackConfigError(ValueError):
    """A Slack setting that cannot be used; the message names the variable."""


def _ids(raw: Any) -> Any:
    """`U1,U2` (commas, semicolons or spaces) from the environment; a set from code."""
    if isinstance(raw, str):
        return frozenset(
            part.strip() for part in raw.replace(";", ",").replace(" ", ",").split(",") if part.strip()
        )
    return raw


def _replica() -> str:
    return os.environ.get("HOSTNAME") or socket.gethostname()


Seconds = Annotated[float, Field(ge=0, le=60)]


class SlackConfig(EnvSettings):
    error: ClassVar[type[ValueError]] = SlackConfigError

    bot_token: str = env("SLACK_BOT_TOKEN", "", "xoxb-…; without it serve opens the local console")
    app_token: str = env("SLACK_APP_TOKEN", "", "xapp-…: Socket Mode")
    signing_secret: str = env("SLACK_SIGNING_SECRET", "", "HTTP mode: verifies every request")
    api_url: str = env("SLACK_API_URL", DEFAULT_API_URL)
    admins: Annotated[frozenset[str], BeforeValidator(_ids)] = env("TRIAGE_ADMINS", frozenset())
    alert_channel: str = env("TRIAGE_ALERT_CHANNEL", "")
    digest_channel: str = env("TRIAGE_DIGEST_CHANNEL", "")
    file_max_bytes: int = env("TRIAGE_FILE_MAX_BYTES", 2 * 1024 * 1024, ge=1)
    files_per_message: int = env("TRIAGE_FILES_PER_MESSAGE", 3, ge=1)
    reply_to_bots: bool = env("TRIAGE_REPLY_TO_BOTS", False)
    workers: int = env("TRIAGE_SLACK_WORKERS", 8, ge=1)  # threads for the slow work after each ack
    rate_limit_retries: int = env("TRIAGE_SLACK_RATE_LIMIT_RETRIES", 3, ge=0)
    connection_retries: int = env("TRIAGE_SLACK_CONNECTION_RETRIES", 2, ge=0)
    server_error_retries: int = env("TRIAGE_SLACK_SERVER_ERROR_RETRIES", 2, ge=0)
    outbox_interval_s: int = env("TRIAGE_OUTBOX_INTERVAL_S", 15, ge=1)
    # each Web API call; a post that timed out is looked for before it is sent again
    timeout_s: int = env("TRIAGE_SLACK_TIMEOUT_S", 10, ge=1)
    # Slack takes about one message per second per channel
    channel_pace_s: Seconds = env("TRIAGE_SLACK_CHANNEL_PACE_S", 1.0)
    replica_id: str = env("TRIAGE_REPLICA_ID", default_factory=_replica)
    inbox_path: str = env("TRIAGE_INBOX_PATH", "")  # the local inbox (used while the database is away)
    inbox_lease_s: int = env(
        "TRIAGE_INBOX_LEASE_S", 120, ge=1
    )  # a claimed request not done by then runs again
    inbox_grace_s: int = env(
        "TRIAGE_INBOX_GRACE_S", 30, ge=1
    )  # a request nobody claimed this long runs anywhere
    inbox_sweep_s: Seconds = env("TRIAGE_INBOX_SWEEP_S", 2.0)
    max_queue: int = env("TRIAGE_SLACK_MAX_QUEUE", 200, ge=1)  # jobs waiting or running; beyond, the inbox
    command: str = env("TRIAGE_SLASH_COMMAND", "/triage")
    # POST /alertmanager: the bearer token (or basic-auth password) it must carry
    alertmanager_token: str = env("TRIAGE_ALERTMANAGER_TOKEN", "")
    shortcut_callback_id: str = "triage_message"

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.bot_token and not self.bot_token.startswith("xox"):
            raise SlackConfigError("SLACK_BOT_TOKEN must be a bot token (xoxb-…)")
        if self.app_token and not self.app_token.startswith("xapp-"):
            raise SlackConfigError("SLACK_APP_TOKEN must be an app-level token (xapp-…)")
        if self.signing_secret and not self.signing_secret.strip():
            raise SlackConfigError("SLACK_SIGNING_SECRET is blank")
        if not self.api_url.startswith(("http://", "https://")):
            raise SlackConfigError(f"SLACK_API_URL must be an http(s) URL, got {self.api_url!r}")
        if self.alertmanager_token and len(self.alertmanager_token) < 16:
            raise SlackConfigError("TRIAGE_ALERTMANAGER_TOKEN must be at least 16 characters")
        if self.alertmanager_token and not self.alert_channel:
            raise SlackConfigError(
                "TRIAGE_ALERTMANAGER_TOKEN needs TRIAGE_ALERT_CHANNEL: where alerts are posted"
            )
        if not self.command.startswith("/"):
            raise SlackConfigError(f"TRIAGE_SLASH_COMMAND must start with '/', got {self.command!r}")
        # slack_sdk joins method names onto the base URL: without the trailing slash the last
        # path segment (e.g. /api) would be replaced
        if not self.api_url.endswith("/"):
            self.__dict__["api_url"] = self.api_url + "/"
        return self

    def local_inbox_path(self, spool_path: Path) -> Path:
        """Where the local inbox lives: TRIAGE_INBOX_PATH, else beside the spool."""
        return Path(self.inbox_path) if self.inbox_path else spool_path.with_name("triage-bot.inbox.sqlite3")

    @property
    def has_slack(self) -> bool:
        return bool(self.bot_token)

    @property
    def socket_mode(self) -> bool:
        return bool(self.bot_token and self.app_token)

    def is_admin(self, user_id: str | None) -> bool:
        return bool(user_id) and user_id in self.admins
