"""`triage-bot history` and `triage-bot feedback`: read the incident history, as text or JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

import click

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore

T = TypeVar("T")


def read_history(url: str | None, read: Callable[[HistoryStore], T]) -> T:
    """Run one read against the history, with each way it can fail said as one line."""
    from sqlalchemy.exc import ArgumentError, DBAPIError

    from triage_bot.history import StorageUnavailable, open_store

    try:
        store = open_store(url)
    except (ArgumentError, ValueError) as error:
        raise click.ClickException(f"bad database URL: {error}") from None
    try:
        return read(store)
    except StorageUnavailable as error:
        raise click.ClickException(str(error)) from None
    except DBAPIError as error:
        text = str(error.orig)
        if "no such table" in text or "does not exist" in text:
            raise click.ClickException(
                "the history tables do not exist yet: run `triage-bot db upgrade`"
            ) from None
        raise


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of incidents.")
@click.option("--engine", help="Only this engine (vllm, sglang, trtllm, ...).")
@click.option("--signature", "signature_id", help="Only this signature id.")
@click.option("--status", type=click.Choice(["open", "acknowledged", "resolved", "muted", "active"]))
@click.option(
    "--days",
    type=click.FloatRange(min=0, min_open=True, max=36500),
    default=None,
    help="Only incidents seen in the last N days.",
)
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True)
@click.option("--url", help="Database URL (default: DATABASE_URL).")
def history(
    as_json: bool,
    engine: str | None,
    signature_id: str | None,
    status: str | None,
    days: float | None,
    limit: int,
    url: str | None,
) -> None:
    """List incidents, most recently seen first."""
    rows = read_history(
        url,
        lambda store: store.history(
            engine=engine, signature_id=signature_id, status=status, days=days, limit=limit
        ),
    )
    if as_json:
        click.echo(json.dumps([row.to_json() for row in rows], indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo("no incidents")
        return
    for row in rows:
        flags = " recurring" if row.is_recurring else ""
        click.echo(
            f"#{row.id:<6} {row.last_seen:%Y-%m-%d %H:%M}Z  {row.status:<12} {row.engine:<8} "
            f"{row.signature_id}  ×{row.occurrence_count}  {row.target}{flags}"
        )


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per report.")
@click.option(
    "--days",
    type=click.FloatRange(min=0, min_open=True, max=36500),
    default=30,
    show_default=True,
    help="Feedback given in the last N days.",
)
@click.option(
    "--all", "all_kinds", is_flag=True, help="Every kind (helpful, resolved), not only wrong matches."
)
@click.option("--url", help="Database URL (default: DATABASE_URL).")
def feedback(as_json: bool, days: float, all_kinds: bool, url: str | None) -> None:
    """Wrong-match reports with what people chose instead, and the paste: material for the knowledge base."""
    from triage_bot.history.models import FEEDBACK_KINDS

    kinds = FEEDBACK_KINDS if all_kinds else ("wrong_match",)
    since = datetime.now(UTC) - timedelta(days=days)
    rows = read_history(url, lambda store: store.feedback_records(since, kinds))
    if as_json:
        click.echo(json.dumps([row.to_json() for row in rows], indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo(f"no feedback in the last {days:g} days")
        return
    for row in rows:
        said = (
            f"{row.signature_id} -> {row.correct_signature_id or 'none of them'}"
            if row.kind == "wrong_match"
            else row.signature_id
        )
        click.echo(f"#{row.incident_id:<6} {row.at:%Y-%m-%d %H:%M}Z  {row.kind:<11} {said}  by {row.user_id}")
