"""Block Kit within Slack's limits, and text that can never mention anyone (golden checks + properties)."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from triage_bot.answer import Answer, Candidate, Match
from triage_bot.kb.schema import Protocol
from triage_bot.slack.blocks import MAX_BLOCKS, MORE, answer_message, lines_message, text_message, validate
from triage_bot.slack.text import code_safe, escape, from_slack, strip_mention, truncate

LIVE = re.compile(r"<[!@#]|<https?:|<mailto:")


def _match(**overrides) -> Match:
    fields = dict(
        id="vllm.kv_cache_no_memory",
        engine="vllm",
        title="No memory for KV cache blocks",
        confidence=0.93,
        line="ValueError: No available memory",
        values={},
        tier="specific",
        how="pattern",
        severity="high",
    )
    return Match(**(fields | overrides))


def test_an_enormous_answer_is_cut_to_fit_with_a_visible_marker() -> None:
    long = "word " * 2000
    answer = Answer(
        match=_match(title="T" * 400, line="L" * 9000),
        passive=True,
        engine="vllm",
        cause=long,
        recovery="\n".join(f"step {n}\n$ vllm serve m --flag-{n} {'x' * 500}" for n in range(80)),
        faq=long,
        protocol=Protocol(
            confirm=[long] * 5, collect=[long] * 5, workarounds=[long] * 5, report={"default": long}
        ),
        docs=["https://docs.vllm.ai/x"] * 40,
        others=[Candidate(f"generic.x{n}", "x", 0.5) for n in range(60)],
    )
    message = answer_message(
        answer, incident_id=7, notes=[long[:2900]] * 40
    )  # notes fill what Details does not hold
    assert validate(message.blocks) == []
    assert len(message.blocks) <= MAX_BLOCKS
    assert message.cut and MORE in json.dumps(message.blocks, ensure_ascii=False)
    assert message.blocks[0]["text"]["text"] == "T" * 137 + "… (truncated)"  # header: 150 characters at most
    assert message.blocks[-1]["type"] == "actions"  # the buttons survive any cut
    for block in message.blocks:
        text = block.get("text", {}).get("text", "")
        if "```" in text:
            assert text.endswith("```")  # a cut never leaves a code block open
    assert len(message.text) <= 3000


def test_an_ordinary_answer_is_not_cut_and_leads_with_the_fix() -> None:
    message = answer_message(
        Answer(
            match=_match(),
            passive=True,
            engine="vllm",
            cause="The cache is full. It fills when many long prompts arrive at once.",
            recovery="Do this:\n$ vllm serve m\n$ nvidia-smi\nthen that",
            commands=["vllm serve m", "nvidia-smi"],
            faq="A long FAQ answer.",
        )
    )
    kinds = [b["type"] for b in message.blocks]
    assert kinds[:4] == ["header", "context", "section", "section"] and kinds[-1] == "actions"
    assert message.blocks[2]["text"]["text"] == "*Fix*\nDo this:\n```vllm serve m\nnvidia-smi```\nthen that"
    assert message.blocks[3]["text"]["text"] == "The cache is full."  # one line of cause
    assert "FAQ" not in json.dumps(message.blocks)  # behind Details
    assert message.text.startswith("vllm serve m | ")
    assert not message.cut


def test_no_match_lists_the_nearest_candidates() -> None:
    answer = Answer(
        match=None,
        passive=False,
        engine=None,
        candidates=[Candidate("vllm.kv_cache_no_memory", "No memory <for> KV", 0.41)],
    )
    message = answer_message(answer)
    assert message.text == "No known signature matched this paste."
    assert "• `vllm.kv_cache_no_memory` No memory &lt;for&gt; KV (41%)" in json.dumps(
        message.blocks, ensure_ascii=False
    )
    assert all(b["type"] != "actions" for b in message.blocks)  # nothing to resolve


def test_long_lists_spill_into_more_sections() -> None:
    message = lines_message("Incidents", [f"`#{n}` " + "x" * 200 for n in range(40)], "None")
    assert validate(message.blocks) == [] and len(message.blocks) == 3 and not message.cut
    longer = lines_message("Incidents", [f"`#{n}` " + "x" * 200 for n in range(100)], "None")
    assert validate(longer.blocks) == [] and longer.cut  # past the total-text budget: cut, with the marker


def test_wire_text_to_plain_and_back() -> None:
    wire = "<!channel> <@U1|bob> <#C1|general> <http://x.io|x> &lt;module&gt; &amp; <!subteam^S1|@oncall> <!date^1|d>"
    assert from_slack(wire) == "@channel @bob #general x <module> & @oncall d"
    assert escape(from_slack(wire)) == "@channel @bob #general x &lt;module&gt; &amp; @oncall d"
    assert strip_mention("<@U0BOT> help <@U0BOT|bot>", "U0BOT") == "help"
    assert code_safe("a ``` b") == "a `\u200b`` b"
    assert truncate("abcdef", 5, "…") == "abcd…"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>!@#&|^:/ abcUC01")) | st.characters(), max_size=200))
def test_no_input_can_produce_a_live_mention(text: str) -> None:
    for shown in (escape(from_slack(text)), escape(text), code_safe(text)):
        assert not LIVE.search(shown)
        assert "<" not in shown and ">" not in shown
    message = answer_message(
        Answer(
            match=_match(line=text, title=text or "t"),
            passive=True,
            engine="vllm",
            cause=text,
            recovery=f"{text}\n$ {text}",
            faq=text,
        ),
        notes=[escape(text)],
    )
    assert not LIVE.search(json.dumps([b for b in message.blocks if b["type"] != "header"]))
    assert validate(message.blocks) == []


def test_text_messages_carry_a_fallback() -> None:
    message = text_message("Title", "body")
    assert message.text == "Title — body" and message.blocks[0]["text"]["text"] == "*Title*\nbody"
