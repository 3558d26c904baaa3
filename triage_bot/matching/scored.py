"""What the matcher found: one pattern occurrence (`Hit`) and one scored signature (`Scored`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from triage_bot.kb.schema import Signature
from triage_bot.text.normalize import Line

How = Literal["pattern", "context", "wrapper", "evidence", "fuzzy"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One signature pattern found in the paste."""

    sig_index: int
    line: Line
    start: int
    length: int
    values: dict[str, str]
    weak: bool = False


@dataclass(slots=True)
class Scored:
    """A signature with everything the paste said in its favour."""

    sig: Signature
    how: How
    confidence: float
    line: Line | None
    values: dict[str, object] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    span: tuple[int, int] | None = None  # where the pattern matched within `line.text`
