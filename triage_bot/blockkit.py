"""Slack's Block Kit limits, and one check of a message against them.

Block Kit is the data format of every rich message the bot builds (answers, alerts, the digest),
so its limits live here, apart from the Slack client: the digest builder, the Slack adapter and
the Slack stand-in all ask the same question of a list of blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_FIELDS = 10
MAX_FIELD = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_BLOCK_ID = 255
MAX_TOTAL_TEXT = 12_000  # beyond about this Slack answers msg_blocks_too_long


def escape(text: str) -> str:
    """Plain text -> mrkdwn that renders as the same characters and can mention no one: the three
    control characters (`&`, `<`, `>`) and nothing else, which is Slack's own rule."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _text(block: dict[str, Any]) -> str:
    text = block.get("text")
    return text.get("text", "") if isinstance(text, dict) else ""


def limit_problems(blocks: Sequence[dict[str, Any]], *, max_blocks: int = MAX_BLOCKS) -> list[str]:
    """Every limit the blocks break; empty when Slack would accept them."""
    problems: list[str] = []
    if len(blocks) > max_blocks:
        problems.append(f"{len(blocks)} blocks > {max_blocks}")
    total = 0
    for n, block in enumerate(blocks):
        kind = block.get("type")
        text = _text(block)
        total += len(text)
        if kind == "section" and len(text) > MAX_SECTION:
            problems.append(f"/blocks/{n}/text: {len(text)} > {MAX_SECTION}")
        if kind == "header" and len(text) > MAX_HEADER:
            problems.append(f"/blocks/{n}/text: {len(text)} > {MAX_HEADER}")
        fields = block.get("fields") or []
        if len(fields) > MAX_FIELDS:
            problems.append(f"/blocks/{n}/fields: {len(fields)} > {MAX_FIELDS}")
        for field in fields:
            total += len(field.get("text", ""))
            if len(field.get("text", "")) > MAX_FIELD:
                problems.append(f"/blocks/{n}/fields: a field over {MAX_FIELD}")
        elements = block.get("elements") or []
        if kind == "context" and len(elements) > MAX_CONTEXT_ELEMENTS:
            problems.append(f"/blocks/{n}/elements: more than {MAX_CONTEXT_ELEMENTS}")
        for element in elements:
            etext = element.get("text")
            if isinstance(etext, str):
                total += len(etext)
            if element.get("type") == "button":
                if len(element.get("text", {}).get("text", "")) > MAX_BUTTON_TEXT:
                    problems.append(f"/blocks/{n}: button text > {MAX_BUTTON_TEXT}")
                if len(element.get("value", "")) > MAX_BUTTON_VALUE:
                    problems.append(f"/blocks/{n}: button value > {MAX_BUTTON_VALUE}")
        if len(block.get("block_id", "")) > MAX_BLOCK_ID:
            problems.append(f"/blocks/{n}/block_id: over {MAX_BLOCK_ID}")
    if total > MAX_TOTAL_TEXT:
        problems.append(f"block text {total} > {MAX_TOTAL_TEXT} (msg_blocks_too_long)")
    return problems
