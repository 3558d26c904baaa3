"""40,000-character pastes: a failure message of one engine inside pages of log text.

Built from real pieces (seeded, so every run builds the same pastes): each specific-tier case of
the tuning sets that the bot names right on its own is placed at a random point among real
engine logs and discussions (the holdout sets' negatives that show no failure of their own) until
the paste is about 40,000 characters long. "Adversarial" fills it with another engine's text, so the paste names that
engine many times; "own engine" fills it with the same engine's text plus a few lines of another.
The message itself is the strongest evidence of the engine that runs (rules: a failure message
only one engine prints decides the engine; without one, the engine whose frames raised; in a long
paste, only the clues around the failure count).
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import pytest

from triage_bot.core import default_triager

HOLDOUT = Path(__file__).resolve().parents[1] / "holdout"
TUNING = ("tune", "tune2", "tune3", "traffic_tune")
ENGINES = ("vllm", "sglang", "trtllm")
# over the three fillings, 2026-12-02 after the tenth gathering: 0.931 (0.914, 0.957, 0.922) and
# 0.836 (0.853, 0.828, 0.828); 0.920 (0.897, 0.940, 0.922) and 0.851 (0.853, 0.853, 0.845) once a
# multimodal model's name became a setting and IMA and refused media were known; 0.920 and 0.871
# (0.871 each) on 2026-12-03 once the engine whose frames raised decided the engine; 0.963 (0.957,
# 0.966, 0.966) and 0.922 (0.922 each) once only the clues around the failure counted in a long paste;
# 0.977 (0.983, 0.966, 0.983) and 0.918 (0.932, 0.906, 0.915) once the eleventh gathering's
# negatives joined the filler
OWN_FLOOR = 0.94
ADVERSARIAL_FLOOR = 0.90


def _rows(name: str, kind: str) -> list[dict]:
    path = HOLDOUT / name / f"{kind}.jsonl"
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


@functools.cache
def _filler() -> dict[str, list[str]]:
    """Per engine, the negatives long enough to fill with and showing no failure of their own: a
    negative that quotes one (a pull request about a crash) would make the paste hold two failures,
    and either answer would be right. Worked out once for every filling."""
    triager = default_triager()
    negatives = [row for name in (*TUNING, "test", "traffic_test") for row in _rows(name, "negatives")]
    return {
        e: [
            n["text"]
            for n in negatives
            if n.get("engine") == e and len(n["text"]) > 300 and triager.match(n["text"]).primary is None
        ]
        for e in ENGINES
    }


@functools.cache
def _cases() -> list[tuple[str, str, str]]:
    """(text, label, engine) of every other specific case with evidence that the bot names right on
    its own (every other: a 40k paste is seen for the first time, ~60 ms each)."""
    triager = default_triager()
    out = []
    for case in [row for name in TUNING for row in _rows(name, "errors")][::2]:
        engine = case["label"].split(".", 1)[0]
        if engine not in ENGINES or not case.get("evidence", True):
            continue
        alone = triager.match(case["text"]).primary
        if alone is not None and alone.sig.id == case["label"]:
            out.append((case["text"], case["label"], engine))
    return out


def _accuracy(own_engine: bool, seed: int) -> tuple[float, int]:
    triager = default_triager()
    noise = _filler()
    rng = random.Random(seed)
    right = total = 0
    for text, label, engine in _cases():
        others = [filler for e, texts in noise.items() if e != engine for filler in texts]
        pool = noise[engine] + others[:3] if own_engine else others
        parts: list[str] = []
        while sum(map(len, parts)) < 38_000:
            parts.append(rng.choice(pool))
        parts.insert(rng.randrange(len(parts)), text)
        primary = triager.match("\n".join(parts)).primary
        total += 1
        right += primary is not None and primary.sig.id == label
    return right / total, total


SEEDS = (7, 8, 9)  # three fillings of every paste: one filling moved the share by 3 points as the filler grew


# measured 0.974 (own engine) and 0.845 (another engine's filler) on 116 pastes (seed 7 alone),
# 2026-12-02, once the filler was limited to negatives that show no failure of their own; 0.940
# and 0.828 with the same knowledge once the ninth gathering's negatives joined the filler, and
# 0.914 and 0.836 after the tenth's: one filling is too few (the floors above are over three).
# The misses left: a case named right alone only from a resemblance (no pattern, so no failure line
# to read around) loses to an area the filler names; and vLLM's and SGLang's shared "architectures
# are not supported" wording, with no engine named within 3,000 characters, goes to the engine the
# filler names most.
@pytest.mark.parametrize(("own_engine", "floor"), [(True, OWN_FLOOR), (False, ADVERSARIAL_FLOOR)])
def test_a_failure_message_is_found_in_a_40k_paste(own_engine: bool, floor: float) -> None:
    runs = [_accuracy(own_engine, seed) for seed in SEEDS]
    assert all(total >= 90 for _, total in runs)
    accuracy = sum(share for share, _ in runs) / len(runs)
    assert accuracy >= floor, f"{accuracy:.3f} over {len(runs)} fillings of {runs[0][1]} pastes"


# -- the failure's surroundings decide in a long paste (matcher: NEAR_FAILURE) --------------------

_SGLANG_TALK = (
    "We serve Qwen2-VL and LLaVA vision-language models; multimodal inputs with images work in "
    "our set-up with python -m sglang.launch_server.\n"
) * 150
_ACCESS_LOG = 'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n' * 60


def test_a_message_two_engines_print_takes_the_engine_named_around_it() -> None:
    """vLLM and SGLang print the same "architectures are not supported" message: in pages of SGLang
    talk, the `vllm serve` line above the message says which engine failed."""
    message = (
        "$ vllm serve my-org/foo-7b\nValueError: Model architectures ['FooForCausalLM'] are not "
        "supported for now. Supported architectures: ['LlamaForCausalLM']\n"
    )
    result = default_triager().match(_SGLANG_TALK + _ACCESS_LOG + message + _ACCESS_LOG + _SGLANG_TALK)
    assert (result.engine, result.primary and result.primary.sig.id) == (
        "vllm",
        "vllm.unsupported_architecture",
    )


def test_an_area_named_pages_away_does_not_explain_a_wrapper() -> None:
    """Multimodal talk right above `EngineDeadError` is the area it names; the same talk 30,000
    characters away is not, and the wrapper asks for the lines above it."""
    wrapper = (
        "ERROR 01-02 03:04:05 [core.py:1] EngineCore encountered an issue. See stack trace (above) "
        "for the root cause.\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
        "issue. See stack trace (above) for the root cause.\n"
    )
    talk = (
        "We serve Qwen2-VL and LLaVA vision-language models with vllm serve; multimodal inputs mostly work.\n"
    )
    triager = default_triager()
    near = triager.match(talk * 3 + wrapper)
    far = triager.match(talk * 300 + _ACCESS_LOG + wrapper)
    assert near.primary is not None and near.primary.sig.id == "component.multimodal"
    assert far.primary is not None and far.primary.sig.id == "vllm.engine_core_dead"
