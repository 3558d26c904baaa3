"""The knowledge-base schema: what a signature, an engine and an FAQ entry may contain.

Every model forbids unknown keys, so a typo in a YAML file is an error at load time instead of a
field that is silently ignored. No engine is named here: the engines are the knowledge files'
`engine:` headers, and what refers to an engine (a signature's `engine`, its id prefix, a
per-engine recovery) is checked against them when the whole knowledge base is loaded (loader.py).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Severity = Literal["critical", "high", "medium", "low", "info"]
# a signature's `engine` when it belongs to no one engine: printed by every engine, or by none
NEUTRAL_ENGINES: tuple[str, ...] = ("generic", "any")
# id prefixes of specific signatures that are no engine's: besides these, a specific prefix is an engine id
SHARED_PREFIXES: tuple[str, ...] = ("generic", "health")
ENGINE_ID_RE = re.compile(r"^[a-z][a-z0-9_]*$")
FAMILY_PREFIXES: tuple[str, ...] = (
    "component",
    "install",
    "platform",
    "config",
    "crash",
    "client",
    "quality",
    "fallback",
)
ID_RE = re.compile(r"^[a-z0-9_]+\.[a-z0-9_]+$")


class Strict(BaseModel):
    # the schema is built on first validation: a CLI call that reads the knowledge cache validates
    # nothing, and building every model's schema at import cost 85 ms of its start-up
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Clue(Strict):
    """A weighted regex: engine-detection clues and family evidence share this shape."""

    pattern: str
    weight: float = Field(default=1.0, gt=0, le=10)
    note: str = ""
    # family evidence that describes the set-up (a multi-node flag, a Ray cluster), not a failure:
    # it adds its weight, but a family whose clues are all settings is not recognised
    setting: bool = False


class WeakPattern(Strict):
    """A pattern that infers the failure from context (a start-up log line, a user's prose) rather
    than from the failure's own message: it ranks below every exact message and is never answered
    unprompted."""

    pattern: str
    weak: Literal[True] = True
    note: str = ""


class Protocol(Strict):
    """The triage protocol a family signature answers with: how an expert narrows the area down."""

    confirm: list[str] = Field(min_length=1)
    collect: list[str] = Field(min_length=1)
    workarounds: list[str] = Field(min_length=1)
    report: dict[str, str] = Field(min_length=1)

    @field_validator("report")
    @classmethod
    def _report_keys(cls, value: dict[str, str]) -> dict[str, str]:
        return _engine_keys(value, "report")


class Example(Strict):
    """A paste the signature must answer, and what its answer must say: the values read from the
    paste and pieces of the rendered recovery (the computed advice), checked by `kb lint`."""

    text: str = Field(min_length=3)
    values: dict[str, str | int | float] = Field(default_factory=dict)
    recovery: list[str] = Field(default_factory=list)  # each must appear in the rendered recovery
    engine: str | None = None  # the engine the answer must name, when the paste shows one


class Signature(Strict):
    """One failure mode: how to recognise it, and what to tell the person who hit it."""

    id: str
    engine: str = Field(pattern=ENGINE_ID_RE.pattern)  # an engine id, or one of NEUTRAL_ENGINES
    title: str = Field(min_length=3, max_length=140)
    severity: Severity
    wrapper: bool = False
    priority: int = Field(default=0, ge=-100, le=100)
    passive: bool = True
    # answer unprompted only when the paste shows this signature's engine: for messages that other
    # software prints too (Open MPI launch errors, Ray actor deaths)
    needs_engine: bool = False
    patterns: list[str | WeakPattern] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    # pastes it must answer: a string, or an Example with what the answer must say
    examples: list[str | Example] = Field(min_length=2)
    counter_examples: list[str] = Field(default_factory=list)  # pastes it must not answer
    evidence: list[Clue] = Field(default_factory=list)
    cause: str = Field(min_length=20)
    recovery: str | dict[str, str]
    protocol: Protocol | None = None
    faq: str = Field(min_length=20)
    docs: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not ID_RE.match(value):
            raise ValueError(f"id {value!r} must look like 'prefix.snake_name'")
        return value  # whether the prefix is a tier or an engine is known once every file is read

    @field_validator("recovery")
    @classmethod
    def _recovery_keys(cls, value: str | dict[str, str]) -> str | dict[str, str]:
        if isinstance(value, dict):
            _engine_keys(value, "recovery")
            if "default" not in value:
                raise ValueError("a per-engine recovery needs a 'default' template too")
        return value

    @model_validator(mode="after")
    def _tier_rules(self) -> Signature:
        if self.is_family:
            if self.protocol is None:
                raise ValueError("a family signature needs a 'protocol'")
            if not self.patterns and not self.evidence:
                raise ValueError("a family signature needs 'patterns' or 'evidence'")
        else:
            if not self.patterns:
                raise ValueError("a specific signature needs at least one pattern")
            if not self.messages:
                raise ValueError("a specific signature needs at least one canonical message")
        return self

    @property
    def example_texts(self) -> list[str]:
        return [e if isinstance(e, str) else e.text for e in self.examples]

    @property
    def resembling_texts(self) -> list[str]:
        """The plain examples: what the failure looks like, for the fuzzy stage. An example that
        carries expectations is a test of the answer, and tests do not change what matches."""
        return [e for e in self.examples if isinstance(e, str)]

    @property
    def checked_examples(self) -> list[Example]:
        """Every example as an Example (a plain string expects only the signature)."""
        return [Example(text=e) if isinstance(e, str) else e for e in self.examples]

    @property
    def pattern_specs(self) -> list[tuple[str, bool]]:
        """Every pattern with whether it is weak (context only)."""
        return [(p, False) if isinstance(p, str) else (p.pattern, True) for p in self.patterns]

    @property
    def prefix(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def is_family(self) -> bool:
        return self.prefix in FAMILY_PREFIXES

    @property
    def engine_specific(self) -> bool:
        """True when the signature is one engine's (its `engine` is an engine id, not generic/any)."""
        return self.engine not in NEUTRAL_ENGINES

    def engine_keys(self) -> set[str]:
        """The engines this signature's per-engine texts name (recovery and protocol report keys)."""
        keys = set(self.recovery) if isinstance(self.recovery, dict) else set()
        if self.protocol is not None:
            keys |= set(self.protocol.report)
        return keys - {"default"}

    @property
    def tier(self) -> str:
        return "family" if self.is_family else "specific"

    def recovery_template(self, engine: str | None) -> str:
        """The recovery template for the detected engine, falling back to the default one."""
        if isinstance(self.recovery, str):
            return self.recovery
        if engine and engine in self.recovery:
            return self.recovery[engine]
        return self.recovery["default"]


class GuideCaveat(Strict):
    """Something to know before choosing an engine, said when the question names one of `when`
    (hardware keys), or always when `when` is empty."""

    text: str
    when: list[str] = Field(default_factory=list)


class EngineGuide(Strict):
    """What the engine decision guide knows of one engine (triage_bot/engine_guide.py): the hardware
    it runs on, what it is best at and what it also does well (keys of `guide_needs` in faq.yaml,
    each with the sentence that says why), and what to know before choosing it."""

    hardware: list[str] = Field(min_length=1)
    best_at: dict[str, str] = Field(default_factory=dict)
    also: dict[str, str] = Field(default_factory=dict)
    caveats: list[GuideCaveat] = Field(default_factory=list)


class EngineInfo(Strict):
    """An engine's identity, the clues that reveal it in a paste, and its column of the matrix.

    A knowledge file with this header is what makes an engine known: signatures may then name it,
    use its id as their prefix and give it its own recovery text."""

    id: str = Field(pattern=ENGINE_ID_RE.pattern)
    name: str
    package: str = ""  # the Python package it installs as, when not its id (tensorrt_llm)
    launch: list[str] = Field(default_factory=list)  # commands followed by the model: `vllm serve`
    order: int = 100  # its column in the comparison matrix, lowest first
    detect: list[Clue] = Field(min_length=1)
    docs: list[str] = Field(default_factory=list)
    matrix: dict[str, str] = Field(default_factory=dict)
    # the engine's source tree by area: path prefix -> family id, AREA_CORE or AREA_MODEL
    areas: dict[str, str] = Field(default_factory=dict)
    guide: EngineGuide | None = None

    @field_validator("areas")
    @classmethod
    def _area_prefixes(cls, value: dict[str, str]) -> dict[str, str]:
        for prefix in value:
            if not re.fullmatch(r"[\w.-]+(/[\w.-]+)*/?", prefix):
                raise ValueError(f"area prefix {prefix!r} must be a relative path (a directory ends in '/')")
        return value

    @property
    def import_name(self) -> str:
        return self.package or self.id


def _engine_keys(value: dict[str, str], what: str) -> dict[str, str]:
    bad = sorted(k for k in value if k != "default" and not ENGINE_ID_RE.match(k))
    if bad:
        raise ValueError(f"{what} keys must be engine ids or 'default': {bad}")
    return value


AREA_CORE = "core"  # engine plumbing: a frame here says nothing about a feature
AREA_MODEL = "model"  # one model's implementation: a crash there is that model's bug


class KnowledgeFile(Strict):
    """One YAML file of the knowledge base."""

    engine: EngineInfo | None = None
    signatures: list[Signature] = Field(default_factory=list)


class FaqEntry(Strict):
    id: str
    question: str = Field(min_length=8)
    answer: str = Field(min_length=20)
    tags: list[str] = Field(default_factory=list)
    # the failures this entry explains: a question quoting one of their messages gets this entry
    signatures: list[str] = Field(default_factory=list)
    engines: list[str] = Field(default_factory=list)
    docs: list[str] = Field(default_factory=list)


class MatrixDimension(Strict):
    key: str
    title: str


class GuideNeed(Strict):
    """A word a question about choosing an engine may hold: hardware (an engine that does not run
    there is ruled out) or a need (an engine best at it is preferred)."""

    key: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: Literal["hardware", "need"]
    title: str
    pattern: str  # Python re, searched case-insensitively in the question

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"pattern does not compile: {exc}") from None
        return value


class FaqFile(Strict):
    """knowledge/faq.yaml: the FAQ, the dimensions of the engine comparison matrix and the words of
    the engine decision guide."""

    matrix_dimensions: list[MatrixDimension] = Field(default_factory=list)
    guide_needs: list[GuideNeed] = Field(default_factory=list)
    other_engines: list[str] = Field(default_factory=list)  # serving engines the FAQ does not cover
    faq: list[FaqEntry] = Field(min_length=1)


class TaxonomyFile(Strict):
    """knowledge/taxonomy.yaml: every id the knowledge base must answer."""

    ids: list[str] = Field(min_length=1)
