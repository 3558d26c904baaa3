"""Recovery templates render in a sandbox; missing values become visible placeholders."""

from __future__ import annotations

import pytest
from jinja2.exceptions import SecurityError

from triage_bot.templating import render


def test_arithmetic_with_values() -> None:
    out = render(
        "--max-model-len {{ (v.n * v.a / v.b) | round_down(256) }}", {"n": 32768, "a": 4.0, "b": 8.0}, None
    )
    assert out == "--max-model-len 16384"


def test_missing_value_is_a_placeholder_even_through_arithmetic() -> None:
    out = render("--max-model-len {{ (v.n * v.a / v.b) | round_down(256) }} for {{ v.model }}", {}, None)
    assert out == "--max-model-len <n> for <model>"


def test_conditionals_see_missing_values_as_false() -> None:
    assert render("{% if v.x %}have {{ v.x }}{% else %}none{% endif %}", {}, None) == "none"
    assert render("{% if v.x %}have {{ v.x }}{% else %}none{% endif %}", {"x": 3}, None) == "have 3"


def test_user_text_in_values_is_never_evaluated() -> None:
    out = render("model {{ v.model }}", {"model": "{{ 7*7 }}"}, None)
    assert out == "model {{ 7*7 }}"


def test_sandbox_blocks_attribute_escapes() -> None:
    with pytest.raises(SecurityError):
        render("{{ v.__class__.__mro__[1].__subclasses__() }}", {}, None)


def test_filters() -> None:
    assert render(
        "{{ 0.873 | fixed(2) }} {{ 13 | round_up(8) }} {{ 1.7 | clamp(0, 0.95) }} {{ '7.9' | to_int }}",
        {},
        None,
    ) == ("0.87 16 0.95 7")
