"""A local console that answers pasted errors: the bot without Slack, for a first look or a laptop.

A paste arrives as a burst of lines; the console waits until the burst stops (a short quiet
period) and answers the whole paste, so multi-line tracebacks with blank lines stay together.
`/triage help | faq <question> | engines | <text>` lines work as in Slack.
"""

from __future__ import annotations

import functools
import os
import select
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from rich.console import Console

from triage_bot import subcommands
from triage_bot.core import Triager, default_triager
from triage_bot.faq import search
from triage_bot.history.migrate import open_upgraded_store
from triage_bot.render.terminal import print_answer
from triage_bot.triage_and_record import GUESS_CONFIDENCE, Origin, triage_and_record

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    from triage_bot.history import HistoryStore

    History: TypeAlias = HistoryStore | Callable[[], HistoryStore | None] | None

CONSOLE_ORIGIN = Origin("cli", target="console")  # recorded as the CLI is: the console is a CLI surface

QUIET_SECONDS = 0.3
# /triage subcommands that need the Slack workspace or a server; the CLI equivalent for each
SLACK_ONLY = {
    "status": "triage-bot check --engines engines.yaml --json",
    "digest": "triage-bot digest --dry-run [--png PATH]",
    "resolve": "the Resolved button in Slack",
    "mute": "/triage mute in Slack",
    "unmute": "/triage unmute in Slack",
}
MAX_PASTE_BYTES = 4 * 1024 * 1024

HELP = """Paste an engine error (any length) and the bot answers when the paste ends.
Commands:
  /triage <text>           triage the text after the command
  /triage faq <question>   answer a question from the FAQ
  /triage engines          compare the engines
  /triage search <words>   find signatures by words
  /triage history [engine] [days]   incidents seen recently (default: 7 days)
  /triage mutes            the mutes in force
  /triage help             this help
  quit                     leave (or Ctrl-D)"""


def read_pastes(stream: BinaryIO, quiet: float = QUIET_SECONDS) -> Iterator[bytes]:
    """Yield one paste per burst of input; the last one at end of input."""
    fd = stream.fileno()
    buffer = bytearray()
    while True:
        timeout = quiet if buffer else None
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            yield bytes(buffer)
            buffer.clear()
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            if buffer.strip():
                yield bytes(buffer)
            return
        if len(buffer) < MAX_PASTE_BYTES:
            buffer.extend(chunk[: MAX_PASTE_BYTES - len(buffer)])


def handle(triager: Triager, paste: str, console: Console, history: History = None) -> bool:
    """Answer one paste, recorded in the history like a CLI triage; False when the user asked to leave."""
    text = paste.strip()
    if not text:
        return True
    if text in ("quit", "exit", ":q"):
        return False
    if text.lower() in ("help", "?", "/help"):  # a bare word, not a paste to triage
        console.print(HELP, markup=False)
        return True
    if text.startswith("/triage"):
        rest = text[len("/triage") :].strip()
        word, _, args = rest.partition(" ")
        if word in ("", "help"):
            console.print(HELP, markup=False)
            return True
        if word == "faq" and args.strip():
            hits = search(triager.kb, args)
            if not hits:
                console.print("No FAQ entry matches that question.")
            for hit in hits[:1]:
                console.print(f"[bold]{hit.question}[/bold]", highlight=False)
                console.print(hit.answer, markup=False)
            return True
        if word == "faq" and not args.strip():
            console.print(
                "Usage: /triage faq <question>, e.g. /triage faq what does --mem-fraction-static mean"
            )
            return True
        if word in ("history", "mutes", "search"):
            _subcommand(triager, word, args, console, history)
            return True
        if word in SLACK_ONLY:
            console.print(f"/triage {word} is a Slack command; here, run: {SLACK_ONLY[word]}", markup=False)
            return True
        if word == "engines":
            from triage_bot.render.terminal import engines_table

            console.print(engines_table(triager.kb))
            return True
        text = rest
    outcome = triage_and_record(triager, history, text, CONSOLE_ORIGIN, min_confidence=GUESS_CONFIDENCE)
    print_answer(outcome.answer, console)
    line = outcome.record_line()  # as the CLI says it (a spooled record included)
    if line:
        console.print(line, markup=False, highlight=False)
    return True


def _subcommand(triager: Triager, word: str, args: str, console: Console, history: History) -> None:
    """The read-only subcommands, decided by triage_bot/subcommands.py as in Slack, in plain text."""
    if word == "search":
        found = subcommands.search_signatures(triager.kb, args)
        for sig, _score in found:
            console.print(
                f"{sig.id}  {sig.title} ({sig.engine}, {sig.severity})", markup=False, highlight=False
            )
        if not found:
            console.print(
                "No signature matches those words." if args.strip() else "Usage: /triage search <words>"
            )
        return
    try:
        store = history() if callable(history) else history
    except Exception as exc:
        console.print(f"The incident history cannot be opened: {exc}", markup=False)
        return
    if word == "history":
        incidents = subcommands.incidents(store, triager.kb, args)
        if isinstance(incidents, subcommands.Outcome):
            console.print(_said(incidents), markup=False)
            return
        for inc in incidents.rows:
            console.print(
                f"#{inc.id}  {inc.signature_id} · {inc.engine} · {inc.status} · {inc.occurrence_count}× · "
                f"last {inc.last_seen:%Y-%m-%d %H:%M} · {inc.target}",
                markup=False,
                highlight=False,
            )
        if not incidents.rows:
            console.print(f"No incidents in the last {incidents.days:g} days.")
        return
    mutes = subcommands.mutes(store)
    if isinstance(mutes, subcommands.Outcome):
        console.print(_said(mutes), markup=False)
        return
    for mute in mutes:
        what = mute.signature_id or f"engine {mute.engine}"
        console.print(
            f"#{mute.id}  {what} until {mute.until:%Y-%m-%d %H:%M} UTC, by {mute.created_by}", markup=False
        )
    if not mutes:
        console.print("No mutes in force: every failure is answered.")


def _said(outcome: subcommands.Outcome) -> str:
    if outcome.kind == "no_history":
        return "The incident history is not configured: set DATABASE_URL and run triage-bot db upgrade."
    if outcome.kind == "bad_days":
        return "Days must be more than 0."
    if outcome.kind == "unknown_engine":
        return f"No engine {outcome.detail!r}; use one of {', '.join(outcome.known)}."
    return "The incident history's database is not answering; try again in a minute."


def run_console(
    stream: BinaryIO | None = None, console: Console | None = None, history: History = open_upgraded_store
) -> None:
    console = console or Console()
    stream = stream or sys.stdin.buffer
    triager = default_triager()
    if callable(history):  # opened on the first paste that records, then kept (not once per paste);
        history = functools.cache(history)  # a failure to open is not kept: the next paste tries again
    if os.isatty(stream.fileno()):
        console.print("[bold]triage-bot console[/bold] — paste an error; /triage help for commands.")
    try:
        for paste in read_pastes(stream):
            if not handle(triager, paste.decode("utf-8", errors="replace"), console, history):
                break
    except KeyboardInterrupt:  # Ctrl-C leaves the console as `quit` does: no "Aborted!", exit 0
        console.print()
