"""The logging filter: message, arguments, tracebacks and escaped bodies are redacted."""

from __future__ import annotations

import io
import json
import logging

import pytest

from tests.support.secrets import SECRET_FORMS
from triage_bot.log_redaction import CHATTY, RedactingFilter, configure, install
from triage_bot.settings import SettingsError


def _logger() -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    logger = logging.getLogger("test.redaction")
    logger.handlers = [logging.StreamHandler(stream)]
    logger.propagate = False
    install(logger)
    return logger, stream


def test_every_secret_form_is_redacted_in_messages_arguments_and_tracebacks() -> None:
    logger, stream = _logger()
    for line, _ in SECRET_FORMS:
        logger.warning("pasted: %s", line)
        try:
            raise ValueError(line)
        except ValueError:
            logger.exception("failed on %r", {"text": line})
    out = stream.getvalue()
    assert [s for _, s in SECRET_FORMS if s in out or s[len(s) // 2 :] in out] == []
    assert "pasted: " in out and "Traceback" in out  # the record itself is kept


def test_a_body_logged_as_escaped_json_is_read_back_before_redaction() -> None:

    logger, stream = _logger()
    logger.info("body: %s", json.dumps({"text": "\n".join(line for line, _ in SECRET_FORMS)}))
    out = stream.getvalue()
    assert [s for _, s in SECRET_FORMS if s in out or s[len(s) // 2 :] in out] == []


def test_install_is_idempotent_and_a_bad_format_string_keeps_the_record() -> None:
    logger, stream = _logger()
    install(logger)
    assert sum(isinstance(f, RedactingFilter) for f in logger.handlers[0].filters) == 1
    logger.warning("%d items for token=%s", "not-a-number", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789")
    assert "hf_AbCd" not in stream.getvalue() and "items" in stream.getvalue()


@pytest.fixture
def root_logging():
    """configure() replaces the root logger's handlers: put the test runner's back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    chatty = {name: logging.getLogger(name).level for name in CHATTY}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, old in chatty.items():
        logging.getLogger(name).setLevel(old)


def test_json_logs_are_one_redacted_object_per_line(root_logging, monkeypatch) -> None:
    monkeypatch.setenv("TRIAGE_LOG_FORMAT", "json")
    stream = io.StringIO()
    configure(stream=stream)
    secret = SECRET_FORMS[0][1]
    logging.getLogger("triage_bot.test").warning("pasted %s", SECRET_FORMS[0][0])
    try:
        raise RuntimeError(SECRET_FORMS[0][0])
    except RuntimeError:
        logging.getLogger("triage_bot.test").exception("it failed")
    lines = stream.getvalue().splitlines()
    records = [json.loads(line) for line in lines]  # every line is a whole JSON object
    assert [r["level"] for r in records] == ["WARNING", "ERROR"]
    assert records[0]["logger"] == "triage_bot.test" and records[0]["message"].startswith("pasted ")
    assert "time" in records[0] and "Traceback" in records[1]["exc_info"]
    assert secret not in stream.getvalue() and secret[len(secret) // 2 :] not in stream.getvalue()


def test_the_level_comes_from_triage_log_level_and_httpx_lines_are_off_unless_debug(
    root_logging, monkeypatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setenv("TRIAGE_LOG_LEVEL", "warning")
    configure(stream=stream)
    logging.getLogger("triage_bot.test").info("not shown")
    logging.getLogger("triage_bot.test").warning("shown")
    assert stream.getvalue().count("\n") == 1 and "shown" in stream.getvalue()

    stream = io.StringIO()
    monkeypatch.setenv("TRIAGE_LOG_LEVEL", "INFO")
    configure(stream=stream)
    logging.getLogger("httpx").info(
        'HTTP Request: POST https://slack.com/api/chat.postMessage "HTTP/1.1 200 OK"'
    )
    logging.getLogger("triage_bot.test").info("answered")
    assert "HTTP Request" not in stream.getvalue() and "answered" in stream.getvalue()

    stream = io.StringIO()
    configure(level="DEBUG", fmt="text", stream=stream)
    logging.getLogger("httpx").info("HTTP Request: GET /health")
    assert "HTTP Request" in stream.getvalue()


@pytest.mark.parametrize(("name", "value"), [("TRIAGE_LOG_LEVEL", "LOUD"), ("TRIAGE_LOG_FORMAT", "xml")])
def test_a_bad_log_setting_is_refused_naming_the_variable(
    root_logging, monkeypatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=name):
        configure()
