"""Which addressed messages are questions for the FAQ (or the decision guide) and which are pastes."""

from __future__ import annotations

import pytest

from triage_bot import faq


@pytest.mark.parametrize(
    "text",
    [
        "what is --max-num-seqs",
        "How do I pick between vllm and sglang",
        "the server is slow today, any idea?",
        "Should we turn on prefix caching for RAG traffic?",
    ],
)
def test_questions(text: str) -> None:
    assert faq.is_question(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ValueError: No available memory for the cache blocks.",
        "INFO 05-01 10:00:00 api_server.py:1 vLLM API server version 0.8.5",
        "what is this\n" + 'File "/x.py", line 1, in f\n' * 5,  # a log under a question is a paste
        "why? " + "x" * 700,
    ],
)
def test_not_questions(text: str) -> None:
    assert not faq.is_question(text)


@pytest.mark.parametrize(
    ("text", "choosing"),
    [
        ("which engine should we use on MI300X?", True),
        ("vllm vs sglang for agents?", True),
        ("should I use vLLM or SGLang?", True),
        ("what does --enforce-eager do?", False),
        ("how do I choose tensor-parallel and pipeline-parallel sizes?", True),
    ],
)
def test_asks_to_choose(text: str, choosing: bool) -> None:
    assert faq.asks_to_choose(text) is choosing
