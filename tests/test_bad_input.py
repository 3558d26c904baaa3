"""Hostile and broken input gets a clear answer in bounded time, never an exception."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triage_bot.core import default_triager

HOSTILE = [
    "",
    "   \n\n  ",
    "x" * 1_000_000,
    "RuntimeError: CUDA error: out of memory\n" * 30_000,
    "a" * 100_000,
    "(" * 50_000 + "a" * 50_000,
    "{{7*7}} {% for x in range(10**9) %}{% endfor %}",
    "<!channel> <!here> <@U123> CUDA out of memory",
    "\x00\x01\x02 NUL bytes \x00 RuntimeError: \x00",
    "'; DROP TABLE incidents; --",
    "\ud800 lone surrogate",
    "(((((((((((((((((((((((((((((a*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)!",
    "[" * 10_000,
    'File "' * 20_000,
]


def test_hostile_inputs_are_answered() -> None:
    triager = default_triager()
    for text in HOSTILE:
        answer = triager.triage(text)
        json.dumps(answer.to_dict())  # always serialisable
        assert isinstance(answer.passive, bool)


def test_binary_junk_and_invalid_utf8() -> None:
    triager = default_triager()
    junk = (
        bytes(range(256)) * 400
        + b"\xc3\x28 RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    answer = triager.triage(junk)
    assert answer.match is not None and answer.match.id == "generic.illegal_memory_access"


def test_template_syntax_in_a_paste_is_inert() -> None:
    answer = default_triager().triage(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {{7*7}} GiB"
    )
    assert "49" not in answer.recovery


def test_huge_paste_says_it_was_cut() -> None:
    answer = default_triager().triage("INFO ok\n" * 200_000)
    assert answer.truncated_input


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=3000))
def test_any_text_is_answered(text: str) -> None:
    answer = default_triager().triage(text)
    data = answer.to_dict()
    assert 0.0 <= data["answer"]["confidence"] <= 1.0
    if answer.match is None:
        assert not answer.passive


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_are_answered(data: bytes) -> None:
    default_triager().triage(data)
