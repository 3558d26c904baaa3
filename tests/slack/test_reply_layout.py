"""The reply at 3 a.m.: title and confidence, then the fix in the first three blocks, then one line
of cause; why, the protocol and the FAQ are behind Details. Checked on the real knowledge base for
each tier, on pastes of the held-out sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage_bot.core import default_triager
from triage_bot.slack.blocks import ACTION_DETAILS, answer_message

HOLDOUT = Path(__file__).resolve().parents[1] / "holdout" / "test" / "errors.jsonl"
ROWS = [json.loads(line) for line in HOLDOUT.open(encoding="utf-8") if line.strip()]


def _answers(tier: str) -> list:
    triager = default_triager()
    answers = [triager.triage(row["text"]) for row in ROWS[:80]]
    return [a for a in answers if a.match is not None and a.match.tier == tier]


@pytest.mark.parametrize("tier", ["specific", "family"])
def test_the_fix_is_within_the_first_three_blocks(tier: str) -> None:
    answers = [a for a in _answers(tier) if a.recovery.strip()]
    assert len(answers) >= 5
    for answer in answers:
        blocks = answer_message(answer, incident_id=1).blocks
        assert blocks[0]["type"] == "header"
        assert blocks[2]["text"]["text"].startswith("*Fix*"), answer.match.id
        if answer.commands:
            assert "```" in blocks[2]["text"]["text"], answer.match.id
        shown = json.dumps(blocks)
        assert "*FAQ*" not in shown and "*Why*" not in shown and "*Triage protocol*" not in shown
        assert ACTION_DETAILS in shown


def test_the_notification_text_leads_with_the_command() -> None:
    answer = next(a for a in _answers("specific") if a.commands)
    message = answer_message(answer)
    assert message.text.startswith(answer.commands[0][:100]) and answer.match.id in message.text
