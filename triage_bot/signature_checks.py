"""Signatures that test themselves: each one's examples must be answered with it, and say what
the example expects; its counter-examples must not be. `kb lint` runs this over the whole
knowledge base and tests/test_signature_examples.py runs it per signature, like the tests that
sit beside each Semgrep or Sigma rule.

An example that another signature takes is an error: the example is misfiled, or one of the two
signatures is too broad. An expected value or recovery piece that is missing means the computed
advice changed.
"""

from __future__ import annotations

from triage_bot.core import Triager
from triage_bot.kb.loader import Problem
from triage_bot.kb.schema import Example, Signature


def _shown(text: str) -> str:
    return repr(text[:70])


def example_problems(triager: Triager, sig: Signature) -> list[str]:
    """What is wrong with one signature's examples and counter-examples (empty: all hold)."""
    problems: list[str] = []
    for example in sig.checked_examples:
        problems += _example_problems(triager, sig, example)
    for text in sig.counter_examples:
        result = triager.match(text)
        if result.primary is not None and result.primary.sig.id == sig.id:
            problems.append(f"counter-example {_shown(text)} is answered with it")
    return problems


def _example_problems(triager: Triager, sig: Signature, example: Example) -> list[str]:
    checks_answer = bool(example.values or example.recovery or example.engine)
    if not checks_answer:
        result = triager.match(example.text)
        got = result.primary.sig.id if result.primary else None
        return [] if got == sig.id else [f"example {_shown(example.text)} matches {got or 'nothing'}"]
    answer = triager.triage(example.text)
    got = answer.match.id if answer.match else None
    if answer.match is None or got != sig.id:
        return [f"example {_shown(example.text)} matches {got or 'nothing'}"]
    problems: list[str] = []
    for key, expected in example.values.items():
        value = answer.match.values.get(key)
        if value is None or str(value) != str(expected):
            problems.append(
                f"example {_shown(example.text)}: value {key} is {value!r}, expected {expected!r}"
            )
    for piece in example.recovery:
        if piece not in answer.recovery:
            problems.append(f"example {_shown(example.text)}: the recovery does not say {piece!r}")
    if example.engine is not None and answer.match.engine != example.engine:
        problems.append(
            f"example {_shown(example.text)}: engine is {answer.match.engine!r}, expected {example.engine!r}"
        )
    return problems


def all_problems(triager: Triager) -> list[Problem]:
    """Every signature's example problems, each at the signature's place in its file."""
    found: list[Problem] = []
    for sig in triager.kb.signatures:
        file, line = triager.kb.source[sig.id]
        found += [Problem(file, line, f"{sig.id}: {message}") for message in example_problems(triager, sig)]
    return found
