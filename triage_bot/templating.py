"""Sandboxed Jinja2 for recovery templates.

Only templates from the knowledge base are ever compiled; text from users and engines reaches a
template as data in `v` and is never parsed as a template itself. A value the paste did not carry
renders as a visible placeholder such as `<max_model_len>`, and arithmetic on a missing value
stays a placeholder, so every template still renders a usable command.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Placeholder(Undefined):
    """An undefined value that renders as `<name>` and absorbs arithmetic."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"<{self._undefined_name or 'value'}>"

    def _absorb(self, *_args: Any, **_kwargs: Any) -> Placeholder:
        return self

    # Undefined types these as never returning (they raise); here they return the placeholder.
    __add__ = __radd__ = __sub__ = __rsub__ = _absorb  # type: ignore[assignment]
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _absorb  # type: ignore[assignment]
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = _absorb  # type: ignore[assignment]
    __neg__ = __pos__ = __abs__ = _absorb  # type: ignore[assignment]
    __getattr__ = _absorb

    def __round__(self, *_args: Any) -> Placeholder:
        return self


def _missing(value: Any) -> bool:
    return isinstance(value, Undefined) or value is None


def _num(value: Any) -> float:
    return float(str(value).replace(",", ""))


def round_down(value: Any, step: float = 1) -> Any:
    """Round down to a multiple of `step` (an int when step is whole)."""
    if _missing(value):
        return value
    result = math.floor(_num(value) / step) * step
    return int(result) if float(step).is_integer() else round(result, 6)


def round_up(value: Any, step: float = 1) -> Any:
    """Round up to a multiple of `step` (an int when step is whole)."""
    if _missing(value):
        return value
    result = math.ceil(_num(value) / step) * step
    return int(result) if float(step).is_integer() else round(result, 6)


def clamp(value: Any, low: float, high: float) -> Any:
    if _missing(value):
        return value
    return max(low, min(high, _num(value)))


def fixed(value: Any, digits: int = 2) -> Any:
    """Format a number with a fixed count of decimals, dropping float noise."""
    if _missing(value):
        return value
    return f"{_num(value):.{digits}f}"


def to_int(value: Any) -> Any:
    if _missing(value):
        return value
    return int(_num(value))


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        undefined=Placeholder,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters.update(round_down=round_down, round_up=round_up, clamp=clamp, fixed=fixed, to_int=to_int)
    env.globals.update(min=min, max=max)
    return env


@lru_cache(maxsize=4096)
def compile_template(source: str) -> Template:
    return environment().from_string(source)


def check_template(source: str) -> None:
    """Raise jinja2.TemplateSyntaxError when a knowledge-base template does not parse."""
    environment().parse(source)


def render(source: str, values: dict[str, Any], engine: str | None) -> str:
    """Render a knowledge-base template with the values taken from a paste."""
    text = compile_template(source).render(v=values, engine=engine or "")
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return "\n".join(lines)


__all__ = ["Placeholder", "StrictUndefined", "check_template", "compile_template", "render"]
