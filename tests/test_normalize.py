"""Normalisation removes the layers around an engine message and keeps the message intact."""

from __future__ import annotations

import pytest

from triage_bot.text.candidates import looks_cut
from triage_bot.text.normalize import MAX_CHARS, normalize


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (
            "(VllmWorker rank=1 pid=2978) ERROR 03-14 18:00:21 [multiproc_worker_utils.py:242] KeyError: 'x'",
            "KeyError: 'x'",
        ),
        (
            "(EngineCore_DP0 pid=12) ERROR 10-14 12:32:47 core.py:233] RuntimeError: boom",
            "RuntimeError: boom",
        ),
        ("[2025-01-02 10:00:00 TP3] Scheduler hit an exception:", "Scheduler hit an exception:"),
        (
            "16433 [2026-07-23 15:23:26 DP2 TP2 EP2] Scheduler hit an exception:",
            "Scheduler hit an exception:",
        ),
        (
            "[rank6]:[E207 10:00:00.123 ProcessGroupNCCL.cpp:1234] [Rank 6] Watchdog caught",
            "[Rank 6] Watchdog caught",
        ),
        ("I0524 03:33:13.130393 2517 server.cc:677] model ready", "model ready"),
        ("1       0x7f6ba0718329 tensorrt_llm::common::check() + 121", "tensorrt_llm::common::check() + 121"),
        (
            "\x1b[36m(RayWorkerWrapper pid=4823, ip=10.0.0.1)\x1b[0m *** SIGSEGV received",
            "*** SIGSEGV received",
        ),
        ("^[[36m(RayWorkerWrapper pid=4823, ip=10.0.0.1)^[[0m *** SIGSEGV received", "*** SIGSEGV received"),
        (
            "INFO 2025-03-30T23:51:21.2998Z [1;36m(VllmWorkerProcess pid=630)[0;0m ERROR 03-30 23:51:21 a.py:243] KeyError: 'k'",
            "KeyError: 'k'",
        ),
        ("vllm-1  | ERROR 03-30 23:51:21 a.py:243] ValueError: bad", "ValueError: bad"),
        ("&gt; [2025-03-19 08:28:27 TP6] x &lt;y&gt; &amp; z", "x <y> & z"),
        (
            "[11/21/2024-10:26:10] [TRT-LLM] [I] Initializing Executor.",
            "[TRT-LLM] [I] Initializing Executor.",
        ),
    ],
)
def test_prefixes_are_removed(raw: str, clean: str) -> None:
    assert normalize(raw).lines[0].text == clean


def test_code_fences_and_levels() -> None:
    norm = normalize("```python\n(APIServer pid=1) ERROR 12-24 17:16:37 [x.py:1] Failed to extract\n```")
    assert [line.text for line in norm.lines] == ["Failed to extract"]
    assert norm.lines[0].level == "ERROR"
    assert norm.lines[0].process == "APIServer"
    assert norm.lines[0].raw.startswith("(APIServer pid=1)")


def test_offsets_map_back_to_lines() -> None:
    norm = normalize("first line\nsecond line\nthird")
    assert norm.line_at(norm.text.index("second")).number == 1
    assert norm.line_at(len(norm.text) - 1).text == "third"


def test_huge_input_keeps_head_and_tail() -> None:
    text = "head error\n" + ("x" * 100 + "\n") * 20_000 + "RuntimeError: the tail"
    norm = normalize(text)
    assert norm.truncated
    assert len(norm.text) <= MAX_CHARS + 10
    assert norm.lines[0].text == "head error"
    assert norm.lines[-1].text == "RuntimeError: the tail"


def test_binary_and_invalid_utf8_never_raise() -> None:
    norm = normalize(b"\xff\xfe\x00garbage\x00\nRuntimeError: ok\x81")
    assert norm.lines[-1].text.startswith("RuntimeError: ok")


def test_cut_traceback_is_recognised() -> None:
    cut = normalize('Traceback (most recent call last):\n  File "/x/vllm/worker.py", line 3, in f\n    g()')
    whole = normalize(
        'Traceback (most recent call last):\n  File "/x.py", line 3, in f\n    g()\nValueError: bad'
    )
    assert looks_cut(cut)
    assert not looks_cut(whole)


def test_the_middle_of_a_huge_paste_keeps_the_same_lines_as_a_line_by_line_filter() -> None:
    """The one-pass cut keeps exactly what checking every line's first MAX_LINE characters keeps."""
    import re

    from tests.support.pastes import big_pastes
    from triage_bot.text import normalize as n

    words = re.compile(n._MIDDLE_WORDS)

    def line_by_line(text: str) -> str:
        tail_chars = n.MAX_CHARS - n.HEAD_CHARS
        head, middle, tail = text[: n.HEAD_CHARS], text[n.HEAD_CHARS : -tail_chars], text[-tail_chars:]
        kept: list[str] = []
        for line in middle.split("\n"):
            if len(kept) >= n.MIDDLE_LINES:
                break
            if words.search(line[: n.MAX_LINE]):
                kept.append(line[: n.MAX_LINE])
        return "\n".join([head, *kept, tail])

    edge = ("b" * (n.MAX_LINE - 2) + "error\n") * 50 + ("c" * (n.MAX_LINE - 6) + "Error\n") * 3
    pastes = [
        *big_pastes(2, 1 << 20, seed=5),
        "x" * 300_000,
        "q" * 50_000 + edge + "q" * 200_000,
        ("TIMED OUT " + "z" * 90 + "\n") * 3_000,
    ]
    for text in pastes:
        assert n._cut_middle(text) == line_by_line(text)
