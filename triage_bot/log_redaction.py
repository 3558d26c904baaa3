"""Logs never carry a secret: every record is redacted on its way to a handler.

Libraries log what they are given: bolt logs the whole body of a request whose signature fails,
httpx logs URLs, an exception's text can quote a paste. A filter on every handler of the root
logger (where all loggers propagate) renders each record's message, traceback and stack and
replaces it with the redacted text (`triage_bot.redaction`), so no library needs to be trusted.
"""

from __future__ import annotations

import logging
import sys
from typing import IO

from triage_bot.redaction import redact

_ESCAPES = (("\\\\", "\x00"), ("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r"), ('\\"', '"'), ("\x00", "\\"))


def unescape(text: str) -> str:
    """A JSON body or a repr() logged as one string, with its escapes read back: `\\n` breaks a
    line and `\\"` is a quote again, so rules that look at line starts and quotes can see them."""
    for escaped, plain in _ESCAPES:
        text = text.replace(escaped, plain)
    return text


class RedactingFilter(logging.Filter):
    """Render the record once, redact it, and keep only the redacted text."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the record
            message = f"{record.msg!r} {record.args!r}"
        if "\\" in message:
            message = unescape(message)
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
            record.exc_info = None  # the formatter would render the raw traceback again
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Put the filter on every handler of `logger` (default: the root logger), once each."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


# Libraries that log a line per request or per job run: at INFO they drown the bot's own lines
# (about 450 of 539 lines in 3 minutes were httpx's), so they speak only from WARNING up unless the
# bot itself runs at DEBUG.
CHATTY = (
    "httpx",
    "httpcore",
    "urllib3",
    "slack_sdk.socket_mode",
    "apscheduler.executors.default",
    "apscheduler.scheduler",
)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JSON_FIELDS = {"asctime": "time", "levelname": "level", "name": "logger"}


def formatter(fmt: str) -> logging.Formatter:
    """`text` for a terminal, `json` (python-json-logger: one object per line) for a log pipeline."""
    if fmt == "json":
        from pythonjsonlogger.json import JsonFormatter

        return JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s", rename_fields=JSON_FIELDS)
    return logging.Formatter(TEXT_FORMAT)


def configure(level: str | None = None, fmt: str | None = None, stream: IO[str] | None = None) -> None:
    """The bot's logging: one redacted stderr handler on the root logger, at TRIAGE_LOG_LEVEL in
    TRIAGE_LOG_FORMAT unless given. Raises SettingsError on a bad value."""
    if level is None or fmt is None:
        from triage_bot.settings import Settings

        settings = Settings.from_env()
        level, fmt = level or settings.log_level, fmt or settings.log_format
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter(fmt))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    quiet = logging.getLevelName(level) > logging.DEBUG
    for name in CHATTY:
        logging.getLogger(name).setLevel(logging.WARNING if quiet else logging.NOTSET)
    install()
