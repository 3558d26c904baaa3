"""Slack settings from the environment, in one frozen dataclass the app factory receives.

Kept apart from `triage_bot.settings` (the storage settings) so the Slack adapter can be configured and
tested without touching the history's configuration. Every value is read once, at start-up, and
a bad value fails there naming its variable instead of half-working later.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_API_URL = "https://slack.com/api/"


class SlackConfigError(ValueError):
    """A Slack setting that cannot be used; the message names the variable."""


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SlackConfigError(f"{name}={raw!r}: expected a number of seconds") from None
    if not 0 <= value <= 60:
        raise SlackConfigError(f"{name} must be between 0 and 60, got {raw}")
    return value


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SlackConfigError(f"{name}={raw!r}: expected an integer") from None
    if value < minimum:
        raise SlackConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise SlackConfigError(f"{name}={raw!r}: expected true/false")


def _ids(raw: str) -> frozenset[str]:
    return frozenset(part.strip() for part in raw.replace(";", ",").replace(" ", ",").split(",") if part.strip())


@dataclass(frozen=True)
class SlackConfig:
    bot_token: str = ""
    app_token: str = ""  # xapp-…: Socket Mode
    signing_secret: str = ""  # HTTP mode
    api_url: str = DEFAULT_API_URL
    admins: frozenset[str] = field(default_factory=frozenset)
    alert_channel: str = ""
    digest_channel: str = ""
    file_max_bytes: int = 2 * 1024 * 1024
    files_per_message: int = 3
    reply_to_bots: bool = False
    workers: int = 8  # threads for the slow work after each ack
    rate_limit_retries: int = 3
    connection_retries: int = 2
    server_error_retries: int = 2
    outbox_interval_s: int = 15
    timeout_s: int = 10  # each Web API call; a post that timed out is looked for before it is sent again
    channel_pace_s: float = 1.0  # Slack takes about one message per second per channel
    replica_id: str = field(default_factory=lambda: os.environ.get("HOSTNAME") or socket.gethostname())
    inbox_path: str = ""  # the local inbox (used while the database is away); default: beside the spool
    inbox_lease_s: int = 120  # a claimed request not done by then is run again by any replica
    inbox_grace_s: int = 30  # a request nobody claimed for this long is run by any replica
    inbox_sweep_s: float = 2.0
    max_queue: int = 200  # jobs waiting or running; beyond it a request waits in the inbox
    command: str = "/triage"
    alertmanager_token: str = ""  # POST /alertmanager: the bearer token (or basic-auth password) it must carry
    shortcut_callback_id: str = "triage_message"

    def __post_init__(self) -> None:
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
            raise SlackConfigError("TRIAGE_ALERTMANAGER_TOKEN needs TRIAGE_ALERT_CHANNEL: where alerts are posted")
        if not self.command.startswith("/"):
            raise SlackConfigError(f"TRIAGE_SLASH_COMMAND must start with '/', got {self.command!r}")
        # slack_sdk joins method names onto the base URL: without the trailing slash the last
        # path segment (e.g. /api) would be replaced
        if not self.api_url.endswith("/"):
            object.__setattr__(self, "api_url", self.api_url + "/")

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

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, env_file: str | Path | None = ".env") -> SlackConfig:
        """Settings from `environ` (default `os.environ`) over those in `env_file`, as `triage_bot.settings` reads them."""
        env: dict[str, str] = {}
        if environ is None and env_file is not None and Path(env_file).is_file():
            from triage_bot.settings import read_env_file

            env.update(read_env_file(Path(env_file)))
        env.update(os.environ if environ is None else environ)
        return cls(
            bot_token=env.get("SLACK_BOT_TOKEN", "").strip(),
            app_token=env.get("SLACK_APP_TOKEN", "").strip(),
            signing_secret=env.get("SLACK_SIGNING_SECRET", "").strip(),
            api_url=env.get("SLACK_API_URL", "").strip() or DEFAULT_API_URL,
            admins=_ids(env.get("TRIAGE_ADMINS", "")),
            alert_channel=env.get("TRIAGE_ALERT_CHANNEL", "").strip(),
            digest_channel=env.get("TRIAGE_DIGEST_CHANNEL", "").strip(),
            file_max_bytes=_int(env, "TRIAGE_FILE_MAX_BYTES", cls.file_max_bytes),
            files_per_message=_int(env, "TRIAGE_FILES_PER_MESSAGE", cls.files_per_message),
            reply_to_bots=_bool(env, "TRIAGE_REPLY_TO_BOTS", cls.reply_to_bots),
            workers=_int(env, "TRIAGE_SLACK_WORKERS", cls.workers),
            rate_limit_retries=_int(env, "TRIAGE_SLACK_RATE_LIMIT_RETRIES", cls.rate_limit_retries, 0),
            connection_retries=_int(env, "TRIAGE_SLACK_CONNECTION_RETRIES", cls.connection_retries, 0),
            server_error_retries=_int(env, "TRIAGE_SLACK_SERVER_ERROR_RETRIES", cls.server_error_retries, 0),
            outbox_interval_s=_int(env, "TRIAGE_OUTBOX_INTERVAL_S", cls.outbox_interval_s),
            timeout_s=_int(env, "TRIAGE_SLACK_TIMEOUT_S", cls.timeout_s, 1),
            channel_pace_s=_float(env, "TRIAGE_SLACK_CHANNEL_PACE_S", cls.channel_pace_s),
            replica_id=env.get("TRIAGE_REPLICA_ID", "").strip() or env.get("HOSTNAME", "").strip() or socket.gethostname(),
            inbox_path=env.get("TRIAGE_INBOX_PATH", "").strip(),
            inbox_lease_s=_int(env, "TRIAGE_INBOX_LEASE_S", cls.inbox_lease_s),
            inbox_grace_s=_int(env, "TRIAGE_INBOX_GRACE_S", cls.inbox_grace_s),
            inbox_sweep_s=_float(env, "TRIAGE_INBOX_SWEEP_S", cls.inbox_sweep_s),
            max_queue=_int(env, "TRIAGE_SLACK_MAX_QUEUE", cls.max_queue),
            command=env.get("TRIAGE_SLASH_COMMAND", "").strip() or cls.command,
            alertmanager_token=env.get("TRIAGE_ALERTMANAGER_TOKEN", "").strip(),
        )
