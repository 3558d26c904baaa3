"""A runner-up within ten points of the answer is shown beside it (issue 12: a 40% candidate
against a 44% answer was never shown); a candidate with no real score, the last resort, or a
failure already named as also in the paste is not."""

from __future__ import annotations

from triage_bot.core import default_triager
from triage_bot.matching.rules import Decision, Found, close_alternative
from triage_bot.matching.scored import Scored

KB = default_triager().kb


def scored(sig_id: str, confidence: float) -> Scored:
    sig = KB.get(sig_id)
    assert sig is not None
    return Scored(sig, "evidence", confidence, None)


def test_a_close_runner_up_is_the_alternative_and_a_distant_one_is_not() -> None:
    primary = scored("component.multimodal", 0.44)
    found = Found(
        "vllm",
        families=[primary, scored("component.quantization", 0.40), scored("component.lora", 0.30)],
    )
    alt = close_alternative(found, Decision(primary, [], "family_guess"))
    assert alt is not None and alt.sig.id == "component.quantization"
    assert (
        close_alternative(
            Found("vllm", families=[primary, scored("component.lora", 0.30)]), Decision(primary, [], "x")
        )
        is None
    )


def test_no_alternative_without_a_real_score_the_last_resort_or_a_failure_already_named() -> None:
    primary = scored("component.multimodal", 0.44)
    also = scored("component.quantization", 0.43)
    found = Found(
        "vllm",
        families=[primary, also, scored("component.lora", 0.0), scored("fallback.unexplained_crash", 0.44)],
    )
    assert close_alternative(found, Decision(primary, [also], "family_guess")) is None


def test_the_answer_shows_it() -> None:
    """A segfault inside FlashInfer's decode (tune/h-106): the crash is the answer, the attention
    backend it happened in is the close alternative, and every surface carries it."""
    text = (
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007fcf597eb640 (most recent call first):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/flashinfer/decode.py", line 514 in begin_forward\n'
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/attention/backends/flashinfer.py", line 149 in begin_forward'
    )
    answer = default_triager().triage(text)
    assert answer.match is not None and answer.match.id == "generic.segfault"
    assert answer.alternative is not None and answer.alternative.id == "component.attention_backend"
    assert answer.match.confidence - answer.alternative.confidence <= 0.10 + 1e-9
    assert answer.to_dict()["answer"]["alternative"]["id"] == "component.attention_backend"
