"""The job every surface shares: a Slack message (text and files) in, an answer recorded in the
history and built as a message out.

Surfaces differ only in where the reply goes and whether silence is allowed (the passive channel
listener answers only a passive, high-confidence match; the explicit surfaces always answer), so
that decision stays in the listeners and everything else is here, once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slack_sdk import WebClient

from triage_bot.answer import Answer
from triage_bot.core import Triager
from triage_bot.slack.blocks import Message, Repeat, answer_message, repeat_message
from triage_bot.slack.files import FileReader
from triage_bot.slack.text import escape, from_slack
from triage_bot.triage_and_record import Origin, Outcome, triage_and_record

if TYPE_CHECKING:
    from triage_bot.history import HistoryStore

log = logging.getLogger(__name__)


@dataclass
class Triaged:
    """An answer plus what the history said about it."""

    answer: Answer
    incident_id: int | None = None
    repeat: Repeat | None = None  # an open incident seen again
    muted_until: str | None = None
    notes: list[str] = field(default_factory=list)  # mrkdwn lines under the title

    def full_text(self) -> str:
        """The whole answer as plain text (the terminal rendering), for a message that had to be cut."""
        import io

        from rich.console import Console

        from triage_bot.render.terminal import print_answer

        buffer = io.StringIO()
        print_answer(self.answer, Console(file=buffer, width=100, color_system=None, force_terminal=False))
        return buffer.getvalue()

    def message(self, *, short_repeat: bool = False, buttons: bool = True) -> Message:
        if short_repeat and self.repeat is not None:
            return repeat_message(self.answer, self.repeat)
        return answer_message(
            self.answer, incident_id=self.incident_id, repeat=self.repeat, notes=self.notes, buttons=buttons
        )


class TriageJob:
    """Triage text and attached files; record matches in the history (when there is one)."""

    def __init__(self, triager: Triager, history: HistoryStore | None, files: FileReader):
        self.triager = triager
        self.history = history
        self.files = files

    def gather(
        self, client: WebClient, wire_text: str, files: list[dict[str, Any]] | None
    ) -> tuple[str, list[str]]:
        """The plain text to triage (message + readable files) and the problems with unreadable files."""
        text = from_slack(wire_text or "")
        problems: list[str] = []
        if files:
            read = self.files.read(client, files)
            problems = read.problems
            if read.text:
                text = f"{text}\n{read.text}" if text.strip() else read.text
        return text, problems

    def run(
        self,
        text: str,
        *,
        channel: str | None,
        thread_ts: str | None,
        user: str | None,
        key: str | None = None,
        record: bool | Callable[[Answer], bool] = True,
    ) -> Triaged:
        origin = Origin("slack", channel=channel, thread_ts=thread_ts, user=user, key=key)
        outcome = triage_and_record(self.triager, self.history, text, origin, record=record)
        return triaged_from(outcome)


def triaged_from(outcome: Outcome) -> Triaged:
    """The Slack view of an outcome: the incident's number, the repeat and the lines under the title."""
    triaged = Triaged(outcome.answer, incident_id=outcome.incident_id)
    recall = outcome.recall
    if recall is None:
        return triaged
    if recall.result.muted:
        until = recall.mute.until.strftime("%Y-%m-%d %H:%M UTC") if recall.mute is not None else "muted"
        triaged.muted_until = until
        triaged.notes.append(f"This failure is muted until {escape(until)}.")
    previous = recall.previous
    if outcome.repeats_open_incident and recall.incident is not None:
        triaged.repeat = Repeat(
            count=recall.result.occurrence_count,
            since=recall.incident.first_seen,
            last_resolved_by=previous.last_resolved_by if previous else None,
            last_resolved_at=previous.last_resolved_at if previous else None,
            last_resolution=previous.last_resolution if previous else None,
            incident_id=recall.incident.id,
        )
    elif recall.result.is_recurring and previous is not None and not outcome.repeats_open_incident:
        line = escape(
            f"Seen before: {previous.incidents} earlier incident{'s' if previous.incidents != 1 else ''}"
        )
        line += f" since {previous.first_seen:%Y-%m-%d}"
        if previous.last_resolved_by:
            # the resolver's id as inert text, as in a repeat: a recurrence must not ping them
            line += f", last resolved by {escape(previous.last_resolved_by)}"
            if previous.last_resolved_at:
                line += f" on {previous.last_resolved_at:%Y-%m-%d %H:%M UTC}"
            if previous.last_resolution:
                line += f": how: {escape(previous.last_resolution[:200])}"
        triaged.notes.append(line + ".")
    return triaged
