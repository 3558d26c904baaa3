"""The CLI's side of recording a triage (source `cli`): opening the history, and what it says on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from triage_bot.triage_and_record import Origin, Outcome

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore

CLI_ORIGIN = Origin("cli", target="cli")


def open_history() -> HistoryStore:
    """The history, imported only when called: SQLAlchemy and the models cost a one-line triage
    about 0.2 s, and `--no-record` or a paste with no match needs none of it."""
    from triage_bot.history.migrate import open_upgraded_store

    return open_upgraded_store()


def report(outcome: Outcome) -> None:
    """Best effort: the answer is printed either way, so a history problem is a warning, not a failure."""
    if outcome.not_recorded:
        click.echo(f"warning: not recorded in the history ({outcome.not_recorded})", err=True)
        return
    if outcome.recall is None:
        return
    result = outcome.recall.result
    if result.spooled:
        click.echo("note: the database is unreachable; the record waits in the local spool", err=True)
    elif not result.is_new:
        click.echo(
            f"seen before: incident #{result.incident_id}, {result.occurrence_count} occurrences", err=True
        )
