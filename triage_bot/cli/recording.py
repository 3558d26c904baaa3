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
    line = outcome.record_line()
    if line:
        click.echo(line, err=True)
