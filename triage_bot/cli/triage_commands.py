"""`triage-bot triage`: one paste in, one answer out; or a JSONL batch."""

from __future__ import annotations

import json
import sys
from typing import IO

import click

from triage_bot.core import Triager, default_triager

MAX_FILE_BYTES = 8 * 1024 * 1024


def _read(source: IO[bytes]) -> bytes:
    data = source.read(MAX_FILE_BYTES + 1)
    return data[:MAX_FILE_BYTES]


@click.command()
@click.argument("file", required=False, type=click.File("rb"), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option(
    "--jsonl",
    "jsonl",
    type=click.File("r", encoding="utf-8", errors="replace"),
    help='Batch: each input line {"case", "text"}; one output line per case.',
)
@click.option("--no-record", is_flag=True, help="Do not record the match in the incident history.")
def triage(file: IO[bytes] | None, as_json: bool, jsonl: IO[str] | None, no_record: bool) -> None:
    """Triage an error from FILE (or '-' / stdin)."""
    triager = default_triager()
    if jsonl is not None:
        _batch(triager, jsonl)
        return
    if file is None:
        if sys.stdin.isatty():
            raise click.UsageError("give a FILE, '-' for stdin, or --jsonl IN")
        file = sys.stdin.buffer
    from triage_bot.cli.recording import CLI_ORIGIN, open_history, report
    from triage_bot.triage_and_record import GUESS_CONFIDENCE, triage_and_record

    outcome = triage_and_record(
        triager,
        open_history,  # opened (and the history's modules imported) only when there is a match to record
        _read(file),
        CLI_ORIGIN,
        record=not no_record,
        min_confidence=GUESS_CONFIDENCE,
    )
    if as_json:
        click.echo(json.dumps(outcome.answer.to_dict(), ensure_ascii=False, indent=2))
    else:
        from triage_bot.render.terminal import print_answer

        print_answer(outcome.answer)
    report(outcome)


def _batch(triager: Triager, stream: IO[str]) -> None:
    """One output line per input line, in order; a bad line gets an error row, never a stop."""
    for number, line in enumerate(stream, start=1):
        line = line.strip()
        if not line:
            continue
        case = None
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                raise TypeError("each line must be a JSON object")
            case = item.get("case")
            if "text" not in item:
                raise TypeError('missing "text"')
            text = item["text"]
            if not isinstance(text, str):
                raise TypeError('"text" must be a string')
        except (json.JSONDecodeError, TypeError) as exc:
            click.echo(json.dumps({"case": case, "line": number, "error": f"bad input line: {exc}"}))
            continue
        result = triager.match(text)
        primary = result.primary
        engine = result.engine
        if primary is not None and primary.sig.engine not in ("generic", "any"):
            engine = primary.sig.engine
        click.echo(
            json.dumps(
                {
                    "case": case,
                    "id": primary.sig.id if primary else None,
                    "engine": engine,
                    "confidence": round(primary.confidence, 3) if primary else 0.0,
                    "passive": result.passive,
                },
                ensure_ascii=False,
            )
        )
