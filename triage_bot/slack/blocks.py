"""Block Kit for every message the bot sends, built within Slack's limits.

Limits that Slack enforces by rejecting the whole message (`invalid_blocks`, `msg_too_long`,
`msg_blocks_too_long`): 50 blocks a message, 3,000 characters a section, 150 a header, 75 a button
label, 2,000 a button value, 10 context elements, and in practice about 12,000 characters of block
text in all. A reply that Slack rejects is a reply the user never sees, so every builder here
cuts long parts with a visible marker instead, and the total is budgeted with the optional parts
(FAQ, protocol, docs) dropped first. Every message carries a top-level `text`, the fallback for
notifications and screen readers.

All text is escaped (`triage_bot.slack.text.escape`), the knowledge base's included: a recovery line like
`vllm serve <model>` must not become a link, and a paste must not become a mention.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from triage_bot.answer import Answer, Candidate, confidence_word
from triage_bot.blockkit import (
    MAX_BLOCKS,
    MAX_BUTTON_TEXT,
    MAX_BUTTON_VALUE,
    MAX_CONTEXT_ELEMENTS,
    MAX_HEADER,
    MAX_SECTION,
    limit_problems,
)
from triage_bot.kb.schema import Signature
from triage_bot.redaction import redact
from triage_bot.slack.alerts import ACTION_ACK
from triage_bot.slack.text import code_safe, escape, truncate

MAX_CONTEXT_TEXT = 2000
MAX_FALLBACK = 3000
# Slack rejects a message whose blocks hold more than about 12k characters in all (undocumented);
# stay clearly below it.
MAX_TOTAL_TEXT = 11_000
MORE = "… (cut to fit Slack's message limits)"

ACTION_RESOLVE = "triage_resolve"  # ACTION_ACK comes from triage_bot.slack.alerts (alerts carry it too)
ACTION_WRONG = "triage_wrong_match"
ACTION_HELPFUL = "triage_helpful"
ACTION_POST = "triage_post_to_channel"
ACTION_DETAILS = "triage_details"
ANSWER_ACTIONS = (ACTION_ACK, ACTION_RESOLVE, ACTION_WRONG, ACTION_HELPFUL, ACTION_DETAILS)
ALL_ACTIONS = (*ANSWER_ACTIONS, ACTION_POST)


@dataclass(frozen=True)
class Message:
    """What is posted: the fallback text and the blocks."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    cut: bool = False  # parts were dropped to fit; the full text can follow as a file

    def kwargs(self) -> dict[str, Any]:
        return {"text": self.text, "blocks": self.blocks}


@dataclass(frozen=True)
class Repeat:
    """An open incident seen again: how often, since when, and how it was last resolved."""

    count: int
    since: datetime
    last_resolved_by: str | None = None
    last_resolved_at: datetime | None = None
    incident_id: int | None = None
    last_resolution: str | None = None  # how it was fixed (`resolve N <note>`)


def mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def plain(text: str, limit: int = MAX_SECTION) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(text, limit) or " ", "emoji": True}


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": mrkdwn(truncate(text, MAX_SECTION, MORE))}


def header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": plain(text, MAX_HEADER)}


def context(*parts: str) -> dict[str, Any]:
    elements = [mrkdwn(truncate(p, MAX_CONTEXT_TEXT, MORE)) for p in parts if p][:MAX_CONTEXT_ELEMENTS]
    return {"type": "context", "elements": elements or [mrkdwn(" ")]}


def button(
    label: str, action_id: str, value: dict[str, Any] | str, style: str | None = None
) -> dict[str, Any]:
    raw = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if len(raw) > MAX_BUTTON_VALUE:
        raise ValueError(f"button value of {len(raw)} characters is over Slack's {MAX_BUTTON_VALUE}")
    element: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": plain(label, MAX_BUTTON_TEXT),
        "value": raw,
    }
    if style:
        element["style"] = style
    return element


def code_block(lines: Iterable[str], limit: int = MAX_SECTION) -> str:
    """A ``` block whose closing fence survives any cut."""
    body = code_safe("\n".join(lines))
    return "```" + truncate(body, limit - 6, MORE) + "```"


def _block_text(block: dict[str, Any]) -> int:
    size = len(block.get("text", {}).get("text", "")) if isinstance(block.get("text"), dict) else 0
    return size + sum(
        len(e.get("text", "")) for e in block.get("elements", []) if isinstance(e.get("text"), str)
    )


class _Budget:
    """Collects blocks up to the block count and total text Slack accepts; the rest is dropped with a marker."""

    def __init__(self, max_blocks: int = MAX_BLOCKS, max_text: int = MAX_TOTAL_TEXT, reserve: int = 0):
        self.blocks: list[dict[str, Any]] = []
        self.max_blocks = max_blocks - reserve - 1  # one slot for the "cut" marker
        self.max_text = max_text
        self.used = 0
        self.cut = False

    def add(self, block: dict[str, Any]) -> bool:
        size = _block_text(block)
        if self.cut or len(self.blocks) >= self.max_blocks or self.used + size > self.max_text:
            self.cut = True
            return False
        self.blocks.append(block)
        self.used += size
        return True

    def finish(self, tail: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
        blocks = list(self.blocks)
        if self.cut:
            blocks.append(context(f"_{MORE}_"))
        return blocks + list(tail)


def first_sentence(text: str, limit: int = 300) -> str:
    """One line of cause: the first sentence, whole words, at most `limit` characters."""
    text = " ".join(text.split())
    end = next(
        (
            i + 1
            for i, ch in enumerate(text)
            if ch == "." and (i + 1 == len(text) or text[i + 1] == " ") and i >= 10
        ),
        len(text),
    )
    return truncate(text[:end], limit)


def code_inline(text: str, limit: int) -> str:
    return "`" + truncate(code_safe(text.replace("`", "'")), limit) + "`"


def fix_section(recovery: str, commands: Sequence[str]) -> dict[str, Any] | None:
    """The recovery as one section, prose and `$ ` commands in their order; when it is too long for
    one, the commands alone (the prose is in Details and in the full answer)."""
    if not recovery.strip():
        return None
    parts = [b["text"]["text"] for b in _recovery_blocks(recovery)]
    text = "*Fix*\n" + "\n".join(parts)
    if len(text) <= MAX_SECTION:
        return section(text)
    commands = list(commands) or [line[2:] for line in recovery.splitlines() if line.startswith("$ ")]
    if commands:  # a cut code block keeps its closing fence (code_block)
        return section("*Fix*\n" + code_block(commands, MAX_SECTION - 20))
    return section(truncate("*Fix*\n" + escape(recovery.strip()), MAX_SECTION, MORE))


def details_message(sig: Signature, engine: str | None) -> Message:
    """What the answer leaves behind its Details button: why, the protocol, the FAQ, the docs."""
    budget = _Budget()
    budget.add(section(f"*{escape(sig.title)}* (`{escape(sig.id)}`)"))
    if sig.cause:
        budget.add(section("*Why*\n" + escape(" ".join(sig.cause.split()))))
    if sig.protocol:
        p = sig.protocol
        for title, items in (("Confirm", p.confirm), ("Collect", p.collect), ("Workarounds", p.workarounds)):
            if items:
                budget.add(section(f"*{title}*\n" + "\n".join(f"• {escape(i)}" for i in items)))
        report = p.report.get(engine or "") or p.report.get("default")
        if report:
            budget.add(section("*Upstream report*\n" + escape(report)))
    if sig.faq:
        budget.add(section("*FAQ*\n" + escape(" ".join(sig.faq.split()))))
    if sig.docs:
        budget.add(context("Docs: " + "  ".join(escape(d) for d in list(sig.docs)[:8])))
    return Message(
        text=truncate(f"{sig.title}: details", MAX_FALLBACK), blocks=budget.finish(), cut=budget.cut
    )


def _recovery_blocks(recovery: str) -> list[dict[str, Any]]:
    """Prose lines as text, `$ ` lines grouped into code blocks, in their order."""
    blocks: list[dict[str, Any]] = []
    prose: list[str] = []
    commands: list[str] = []

    def flush_prose() -> None:
        if prose:
            blocks.append(section(escape("\n".join(prose).strip())))
            prose.clear()

    def flush_commands() -> None:
        if commands:
            blocks.append(section(code_block(commands)))
            commands.clear()

    for line in recovery.splitlines():
        if line.startswith("$ "):
            flush_prose()
            commands.append(line[2:])
        elif line.strip():
            flush_commands()
            prose.append(line)
    flush_prose()
    flush_commands()
    return blocks


def _candidates(candidates: Sequence[Candidate]) -> str:
    return "\n".join(f"• `{escape(c.id)}` {escape(c.title)} ({c.confidence:.0%})" for c in candidates)


def answer_actions(
    incident_id: int | None, signature_id: str | None, engine: str | None = None
) -> dict[str, Any]:
    """Acknowledge · Resolved · Wrong match · Helpful · Details; the value carries the incident and the signature."""
    value = {"i": incident_id, "s": signature_id}
    elements = [
        button("Acknowledge", ACTION_ACK, value),
        button("Resolved", ACTION_RESOLVE, value, "primary"),
        button("Wrong match", ACTION_WRONG, value),
        button("Helpful", ACTION_HELPFUL, value),
        button("Details", ACTION_DETAILS, {**value, "e": engine} if engine else value),
    ]
    return {"type": "actions", "block_id": "triage_answer_actions", "elements": elements}


def answer_message(
    answer: Answer,
    *,
    incident_id: int | None = None,
    repeat: Repeat | None = None,
    notes: Sequence[str] = (),
    buttons: bool = True,
) -> Message:
    """The full answer: what failed, how sure, why, the recovery, the FAQ; buttons to close the loop.

    `notes` are mrkdwn lines shown under the title (already escaped by their writer).
    """
    tail: list[dict[str, Any]] = []
    m = answer.match
    if buttons and m is not None:
        tail.append(answer_actions(incident_id, m.id, m.engine))
    budget = _Budget(reserve=len(tail))
    extra = list(notes)  # mrkdwn, escaped by whoever wrote them
    if answer.truncated_input:
        extra.append("The paste was very long; the bot read the start and the end of it.")

    if m is None:
        fallback = "No known signature matched this paste."
        budget.add(section(f"*{fallback}*"))
        if answer.note:
            budget.add(section(":warning: " + escape(answer.note)))
        if answer.candidates:
            budget.add(section("*Nearest candidates*\n" + _candidates(answer.candidates)))
        else:
            budget.add(
                context("Paste the first error line of the log, or try `/triage search &lt;words&gt;`.")
            )
        for note in extra:
            budget.add(context(note))
        return Message(text=fallback, blocks=budget.finish(tail), cut=budget.cut)

    # At 3 a.m. the fix comes first: title and confidence, the command (block 3), one line of cause,
    # the matched line. Why, the protocol, the FAQ and the docs are one click away (Details).
    word = confidence_word(m.confidence)
    summary = f"{m.title} ({m.id}, confidence {m.confidence:.0%})"
    fallback = truncate(f"{answer.commands[0]} | {summary}" if answer.commands else summary, MAX_FALLBACK)
    budget.add(header(m.title))
    budget.add(
        context(
            f"`{escape(m.id)}`",
            escape(m.engine),
            f"severity {escape(m.severity)}",
            f"confidence {m.confidence:.0%} ({word})",
        )
    )
    fix = fix_section(answer.recovery, answer.commands)
    if fix is not None:
        budget.add(fix)
    if answer.cause:
        budget.add(section(escape(first_sentence(answer.cause))))
    if m.line:
        budget.add(context("Matched: " + code_inline(redact(m.line), 400)))
    if repeat is not None:
        budget.add(context(repeat_line(repeat)))
    if answer.note:
        budget.add(section(":warning: " + escape(answer.note)))
    for note in extra:
        budget.add(context(note))
    if answer.family:
        budget.add(
            context(f"Area from the frames: `{escape(answer.family.id)}` {escape(answer.family.title)}")
        )
    if answer.protocol and not answer.commands:
        budget.add(section("*Confirm*\n" + "\n".join(f"• {escape(i)}" for i in answer.protocol.confirm[:4])))
    if answer.alternative is not None:
        alt = answer.alternative
        budget.add(
            context(f"Close alternative: `{escape(alt.id)}` {escape(alt.title)} ({alt.confidence:.0%})")
        )
    if answer.others:
        budget.add(context("Also in this paste: " + ", ".join(f"`{escape(o.id)}`" for o in answer.others)))
    return Message(text=fallback, blocks=budget.finish(tail), cut=budget.cut)


def repeat_line(repeat: Repeat) -> str:
    parts = [
        f":repeat: Seen {repeat.count} time{'s' if repeat.count != 1 else ''} since {_when(repeat.since)}"
    ]
    if repeat.last_resolved_by:
        # the resolver's id as inert text: a repeat must not ping the person who fixed it last time
        resolved = f"last resolved by {escape(repeat.last_resolved_by)}"
        if repeat.last_resolved_at:
            resolved += f" on {_when(repeat.last_resolved_at)}"
        if repeat.last_resolution:
            resolved += f" (how: {escape(repeat.last_resolution[:200])})"
        parts.append(resolved)
    else:
        parts.append("not resolved before")
    if repeat.incident_id is not None:
        parts.append(f"incident #{repeat.incident_id}")
    return ", ".join(parts) + "."


def repeat_message(answer: Answer, repeat: Repeat) -> Message:
    """The short reply for a repeat of an open incident: not the whole answer again, but still the
    fix with this paste's own numbers (a repeat with a new context length needs its new command)."""
    m = answer.match
    title = m.title if m else "this failure"
    line = repeat_line(repeat)
    blocks = [section(f"*{escape(title)}* (`{escape(m.id) if m else '?'}`)\n{line}")]
    if answer.commands:  # the commands alone: the prose is in the first answer
        blocks.append(section("*Fix*\n" + code_block(answer.commands, MAX_SECTION - 20)))
    blocks.append(context("Use `/triage &lt;error&gt;` for the full answer."))
    if m is not None:
        blocks.append(answer_actions(repeat.incident_id, m.id))
    summary = f"{title}: {line}"
    fallback = f"{answer.commands[0]} | {summary}" if answer.commands else summary
    return Message(text=truncate(fallback, MAX_FALLBACK), blocks=blocks)


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def text_message(title: str, body: str = "", *, fields: Sequence[str] = ()) -> Message:
    """A plain informational reply (help, refusals, subcommand results); title and body are mrkdwn."""
    budget = _Budget()
    budget.add(section(f"*{title}*" + (f"\n{body}" if body else "")))
    for part in fields:
        budget.add(section(part))
    fallback = truncate((title + (" — " + body if body else "")).replace("*", ""), MAX_FALLBACK)
    return Message(text=fallback, blocks=budget.finish(), cut=budget.cut)


def lines_message(title: str, lines: Sequence[str], empty: str) -> Message:
    """A title and a list; lists longer than one section spill into more sections."""
    if not lines:
        return text_message(title, empty)
    chunks: list[str] = []
    current = ""
    for line in lines:
        line = truncate(line, MAX_SECTION - 10, MORE)
        if len(current) + len(line) + 1 > MAX_SECTION - 10:
            chunks.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    chunks.append(current)
    return text_message(title, chunks[0], fields=chunks[1:])


def with_share_button(message: Message, share_key: str) -> Message:
    """An ephemeral reply plus the button that posts it to the channel (beside the answer's own buttons)."""
    post = button("Post to channel", ACTION_POST, {"k": share_key})
    blocks = [dict(b) for b in message.blocks]
    for block in blocks:
        if block.get("block_id") == "triage_answer_actions":
            block["elements"] = [*block["elements"], post]
            return Message(text=message.text, blocks=blocks)
    if len(blocks) >= MAX_BLOCKS:
        blocks = blocks[: MAX_BLOCKS - 1]
    blocks.append({"type": "actions", "block_id": "triage_share", "elements": [post]})
    return Message(text=message.text, blocks=blocks)


def without_share_button(blocks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same blocks minus the share button (used when posting a shared answer to the channel)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "actions":
            elements = [e for e in block.get("elements", []) if e.get("action_id") != ACTION_POST]
            if not elements:
                continue
            block = {**block, "elements": elements}
        out.append(block)
    return out


def validate(blocks: Sequence[dict[str, Any]], *, max_blocks: int = MAX_BLOCKS) -> list[str]:
    """The limit violations in a list of blocks (empty when Slack would accept it); used by the stand-in."""
    return limit_problems(blocks, max_blocks=max_blocks)
