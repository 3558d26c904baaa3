"""`triage-bot history`: list incidents from the history, as text or JSON."""

from __future__ import annotations

import json

import click


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
    from sqlalchemy.exc import ArgumentError, DBAPIError

    from triage_bot.history import StorageUnavailable, open_store

    try:
        store = open_store(url)
    except (ArgumentError, ValueError) as error:
        raise click.ClickException(f"bad database URL: {error}") from None
    try:
        rows = store.history(engine=engine, signature_id=signature_id, status=status, days=days, limit=limit)
    except StorageUnavailable as error:
        raise click.ClickException(str(error)) from None
    except DBAPIError as error:
        text = str(error.orig)
        if "no such table" in text or "does not exist" in text:
            raise click.ClickException(
                "the history tables do not exist yet: run `triage-bot db upgrade`"
            ) from None
        raise
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
