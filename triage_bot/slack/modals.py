"""Modals (views.open): the "Wrong match" picker and the "Resolve" note.

Slack caps a static select at 100 options per group and 100 groups, option text at 75 characters,
a view title at 24 and `private_metadata` at 3,000; the builder stays inside all four.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from triage_bot.slack.blocks import plain, section
from triage_bot.slack.text import escape

if TYPE_CHECKING:
    from triage_bot.kb.loader import KnowledgeBase

WRONG_MATCH_VIEW = "triage_wrong_match_modal"
RESOLVE_VIEW = "triage_resolve_modal"
BLOCK_NOTE = "resolution_note"
ACTION_NOTE = "note"
MAX_NOTE = 500  # the history keeps notes short (sanitize.note caps them too)
BLOCK_PICK = "correct_signature"
ACTION_PICK = "pick"
NONE_OF_THESE = "none"
MAX_OPTIONS = 100
MAX_METADATA = 3000


def _option(text: str, value: str) -> dict[str, Any]:
    return {"text": plain(text, 75), "value": value[:150]}


def wrong_match_modal(kb: KnowledgeBase, signature_id: str | None, private_metadata: str) -> dict[str, Any]:
    """Pick the signature the paste really was (grouped by engine), or "none of these"."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for sig in kb.signatures:
        if sig.id != signature_id and len(groups[sig.engine]) < MAX_OPTIONS:
            groups[sig.engine].append(_option(f"{sig.title} ({sig.id})", sig.id))
    option_groups = [
        {"label": plain("Other", 75), "options": [_option("None of these / not in the list", NONE_OF_THESE)]}
    ]
    option_groups += [
        {"label": plain(engine, 75), "options": options} for engine, options in sorted(groups.items())
    ][: MAX_OPTIONS - 1]
    said = f"The bot said `{escape(signature_id)}`." if signature_id else "The bot found no known signature."
    return {
        "type": "modal",
        "callback_id": WRONG_MATCH_VIEW,
        "private_metadata": private_metadata[:MAX_METADATA],
        "title": plain("Wrong match", 24),
        "submit": plain("Send", 24),
        "close": plain("Cancel", 24),
        "blocks": [
            section(f"{said} Which failure was it? Your answer goes to the knowledge base's authors."),
            {
                "type": "input",
                "block_id": BLOCK_PICK,
                "label": plain("The right signature", 2000),
                "element": {
                    "type": "static_select",
                    "action_id": ACTION_PICK,
                    "placeholder": plain("Choose a signature", 150),
                    "option_groups": option_groups,
                },
            },
        ],
    }


def resolve_modal(incident: int, private_metadata: str) -> dict[str, Any]:
    """Ask how the incident was fixed before closing it: the next recurrence shows that note, which
    is what the person paged at 3 a.m. needs most. The note is optional; Resolve without one works."""
    return {
        "type": "modal",
        "callback_id": RESOLVE_VIEW,
        "private_metadata": private_metadata[:MAX_METADATA],
        "title": plain(f"Resolve #{incident}", 24),
        "submit": plain("Resolve", 24),
        "close": plain("Cancel", 24),
        "blocks": [
            section(
                f"Incident #{incident} will be closed. The next time it happens, the answer says how it was fixed."
            ),
            {
                "type": "input",
                "block_id": BLOCK_NOTE,
                "optional": True,
                "label": plain("How was it fixed?", 2000),
                "element": {
                    "type": "plain_text_input",
                    "action_id": ACTION_NOTE,
                    "multiline": True,
                    "max_length": MAX_NOTE,
                    "placeholder": plain("e.g. lowered --gpu-memory-utilization to 0.85 and restarted", 150),
                },
            },
        ],
    }
