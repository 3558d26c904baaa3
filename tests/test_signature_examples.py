"""Each signature of the bundled knowledge base tests itself: its examples are answered with it and
say what they expect (values, pieces of the computed recovery); its counter-examples are not.
One test per signature, so a failure names the signature; the data lives beside the signature
in knowledge/*.yaml (triage_bot/signature_checks.py)."""

from __future__ import annotations

import pytest

from triage_bot.core import default_triager
from triage_bot.signature_checks import example_problems

KB = default_triager().kb


def test_the_examples_check_answers_not_only_ids() -> None:
    checked = [e for sig in KB.signatures for e in sig.checked_examples if e.values or e.recovery]
    assert len(checked) >= 3  # some examples carry what their answer must say


@pytest.mark.parametrize("sig", KB.signatures, ids=lambda sig: sig.id)
def test_signature_examples(sig) -> None:  # type: ignore[no-untyped-def]
    assert example_problems(default_triager(), sig) == []
