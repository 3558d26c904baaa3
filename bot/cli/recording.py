"""Record a CLI triage in the incident history when the history store is available."""

from __future__ import annotations

import logging

from bot.answer import Answer

log = logging.getLogger(__name__)


def record_cli_answer(answer: Answer, file_name: str) -> None:
    """Best effort: the history is optional for a CLI user; failing to record must not fail triage."""
    try:
        from bot.history import record_answer  # type: ignore[attr-defined]
    except ImportError:
        return
    try:
        record_answer(answer, source="cli", channel=None, user=None, excerpt=answer.match.line if answer.match else "")
    except Exception as exc:
        log.warning("could not record the triage in the history: %s", exc)
