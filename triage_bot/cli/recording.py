"""Record a CLI triage in the incident history (source `cli`), as the Slack surfaces do."""

from __future__ import annotations

import logging

import click

from triage_bot.answer import Answer

log = logging.getLogger(__name__)

CLI_TARGET = "cli"
RECORD_MIN_CONFIDENCE = 0.5  # a low-confidence guess is shown, not filed as an incident


def record_cli_answer(answer: Answer) -> None:
    """Best effort: the answer is already printed, so a history problem is a warning, not a failure."""
    if answer.match is None or answer.match.confidence < RECORD_MIN_CONFIDENCE:
        return
    m = answer.match
    try:
        from triage_bot.history import Observation, open_store
        from triage_bot.history.migrate import ensure_upgraded
        from triage_bot.settings import Settings

        ensure_upgraded(Settings.from_env().database_url)
        store = open_store()
        result = store.record(
            Observation(
                signature_id=m.id,
                engine=m.engine,
                target=CLI_TARGET,
                severity=m.severity,
                source="cli",
                excerpt=m.line,
                confidence=m.confidence,
                values=m.values,
            )
        )
    except Exception as exc:
        click.echo(f"warning: not recorded in the history ({exc})", err=True)
        return
    if result.spooled:
        click.echo("note: the database is unreachable; the record waits in the local spool", err=True)
    elif not result.is_new:
        click.echo(
            f"seen before: incident #{result.incident_id}, {result.occurrence_count} occurrences", err=True
        )
