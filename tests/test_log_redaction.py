"""The logging filter: message, arguments, tracebacks and escaped bodies are redacted."""

from __future__ import annotations

import io
import logging

from tests.support.secrets import SECRET_FORMS
from triage_bot.log_redaction import RedactingFilter, install


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
    assert [s for _, s in SECRET_FORMS if s in out or s[len(s) // 2:] in out] == []
    assert "pasted: " in out and "Traceback" in out  # the record itself is kept


def test_a_body_logged_as_escaped_json_is_read_back_before_redaction() -> None:
    import json

    logger, stream = _logger()
    logger.info("body: %s", json.dumps({"text": "\n".join(line for line, _ in SECRET_FORMS)}))
    out = stream.getvalue()
    assert [s for _, s in SECRET_FORMS if s in out or s[len(s) // 2:] in out] == []


def test_install_is_idempotent_and_a_bad_format_string_keeps_the_record() -> None:
    logger, stream = _logger()
    install(logger)
    assert sum(isinstance(f, RedactingFilter) for f in logger.handlers[0].filters) == 1
    logger.warning("%d items for token=%s", "not-a-number", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789")
    assert "hf_AbCd" not in stream.getvalue() and "items" in stream.getvalue()
