"""Load the YAML knowledge base, validate it, and report every problem with its file and line.

Loading is all-or-nothing for the bot (a broken knowledge base must not half-work in production),
but `collect_problems` returns every error at once so that `triage-bot kb lint` can list them all.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import TemplateSyntaxError
from pydantic import ValidationError

from triage_bot.kb.atoms import Needs, needs
from triage_bot.kb.regex import RegexError, compile_pattern
from triage_bot.kb.schema import (
    AREA_CORE,
    AREA_MODEL,
    FAMILY_PREFIXES,
    NEUTRAL_ENGINES,
    SHARED_PREFIXES,
    EngineInfo,
    FaqEntry,
    FaqFile,
    GuideNeed,
    KnowledgeFile,
    MatrixDimension,
    Signature,
    TaxonomyFile,
)
from triage_bot.templating import check_template

if TYPE_CHECKING:
    from triage_bot.faq import FaqIndex

# package data, so a wheel install finds it as a checkout does (knowledge/ at the top is a link here)
DEFAULT_DIR = Path(str(files("triage_bot") / "knowledge"))
SPECIAL_FILES = {"faq.yaml", "taxonomy.yaml"}
KNOWLEDGE_PATH = "TRIAGE_KNOWLEDGE_PATH"


def extra_dirs() -> tuple[Path, ...]:
    """More knowledge directories (TRIAGE_KNOWLEDGE_PATH, separated like PATH), loaded after the
    bundled one: a site's own engines and signatures, kept out of the package so upgrades keep
    them. Read here, not through the settings, because the knowledge base loads before them."""
    value = os.environ.get(KNOWLEDGE_PATH, "")
    return tuple(Path(part) for part in value.split(os.pathsep) if part.strip())


@dataclass(frozen=True)
class Problem:
    """One error or warning found in the knowledge base."""

    file: str
    line: int
    message: str
    level: str = "error"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.level}: {self.message}"


class KnowledgeBaseError(Exception):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def _line_for(data: Any, loc: tuple[Any, ...]) -> int:
    """Walk a pydantic error location through the raw YAML and return the closest line."""
    line = getattr(data, "start_line", 1)
    node = data
    for part in loc:
        if isinstance(node, dict):
            line = getattr(node, "key_lines", {}).get(part, line)
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            break
        line = getattr(node, "start_line", line)
    return line


@dataclass
class LoadedFile:
    path: Path
    raw: Any
    model: KnowledgeFile | FaqFile | TaxonomyFile | None
    problems: list[Problem] = field(default_factory=list)

    def line_of_signature(self, index: int) -> int:
        try:
            return int(self.raw["signatures"][index].start_line)
        except (KeyError, IndexError, TypeError, AttributeError):
            return 1


def _load_file(
    path: Path, model_cls: type[KnowledgeFile | FaqFile | TaxonomyFile], name: str = ""
) -> LoadedFile:
    import yaml  # only when the cache misses: 15 ms of every start otherwise

    from triage_bot.kb.yaml_lines import LineDict, LineLoader

    name = name or path.name
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=LineLoader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        return LoadedFile(path, None, None, [Problem(name, line, f"YAML: {exc.problem or exc}")])
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return LoadedFile(path, None, None, [Problem(name, 1, f"cannot read: {exc}")])
    if raw is None:
        raw = LineDict()
    try:
        model = model_cls.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            where = ".".join(str(p) for p in loc)
            problems.append(Problem(name, _line_for(raw, loc), f"{where}: {err['msg']}"))
        return LoadedFile(path, raw, None, problems)
    return LoadedFile(path, raw, model, [])


def _check_signature(sig: Signature, file: str, line: int) -> list[Problem]:
    problems: list[Problem] = []
    for pattern in [*(p for p, _ in sig.pattern_specs), *(c.pattern for c in sig.evidence)]:
        try:
            compile_pattern(pattern)
        except RegexError as exc:
            problems.append(
                Problem(file, line, f"{sig.id}: pattern {pattern!r} does not compile in RE2: {exc}")
            )
    templates = sig.recovery.values() if isinstance(sig.recovery, dict) else [sig.recovery]
    for template in templates:
        try:
            check_template(template)
        except TemplateSyntaxError as exc:
            problems.append(
                Problem(file, line + (exc.lineno or 0), f"{sig.id}: recovery template: {exc.message}")
            )
    return problems


def _engine_problems(
    signatures: list[Signature], engines: dict[str, EngineInfo], source: dict[str, tuple[str, int]]
) -> list[Problem]:
    """What names an engine must name one that a knowledge file's `engine:` header defines."""
    known = set(engines)
    listed = ", ".join(sorted(known)) or "none"
    problems: list[Problem] = []
    for sig in signatures:
        file, line = source[sig.id]
        if sig.engine_specific and sig.engine not in known:
            problems.append(
                Problem(
                    file,
                    line,
                    f"{sig.id}: engine {sig.engine!r} is not defined by any knowledge file "
                    f"(engines: {listed}; or one of {', '.join(NEUTRAL_ENGINES)})",
                )
            )
        if not sig.is_family and sig.prefix not in known and sig.prefix not in SHARED_PREFIXES:
            problems.append(
                Problem(
                    file,
                    line,
                    f"{sig.id}: id prefix {sig.prefix!r} is not a known tier "
                    f"(an engine: {listed}; {', '.join(SHARED_PREFIXES)}; or a family)",
                )
            )
        if sig.prefix in known and sig.engine != sig.prefix:
            problems.append(
                Problem(
                    file,
                    line,
                    f"{sig.id}: engine must be {sig.prefix!r} for an id starting with {sig.prefix}.",
                )
            )
        unknown = sig.engine_keys() - known
        if unknown:
            problems.append(
                Problem(
                    file,
                    line,
                    f"{sig.id}: per-engine texts name engines no knowledge file defines: {sorted(unknown)}",
                )
            )
    return problems


@dataclass
class KnowledgeBase:
    """The validated knowledge base: signatures in file order, engines, FAQ and the taxonomy."""

    signatures: list[Signature]
    engines: dict[str, EngineInfo]
    faq: list[FaqEntry]
    matrix_dimensions: list[MatrixDimension]
    taxonomy: list[str]
    source: dict[str, tuple[str, int]]  # signature id -> (file, line)
    directory: Path
    guide_needs: list[GuideNeed] = field(default_factory=list)
    other_engines: list[str] = field(default_factory=list)  # named in a question, the FAQ stays quiet

    def __post_init__(self) -> None:
        self.by_id: dict[str, Signature] = {s.id: s for s in self.signatures}
        self.needs: dict[str, Needs] = {}  # what each pattern needs to match, read once and cached

    def needs_of(self, pattern: str) -> Needs:
        found = self.needs.get(pattern)
        if found is None:
            found = self.needs[pattern] = needs(pattern)
        return found

    def signature_patterns(self) -> list[str]:
        """Every signature pattern and family clue, in file order (engine clues are in `engines`)."""
        return [
            p
            for sig in self.signatures
            for p in (*(p for p, _ in sig.pattern_specs), *(clue.pattern for clue in sig.evidence))
        ]

    def read_needs(self) -> None:
        """Read what every pattern needs (200 ms), so that the cached knowledge base holds it."""
        engine_clues = [clue.pattern for info in self.engines.values() for clue in info.detect]
        for pattern in (*engine_clues, *self.signature_patterns()):
            self.needs_of(pattern)

    def get(self, sig_id: str) -> Signature | None:
        return self.by_id.get(sig_id)

    @functools.cached_property
    def faq_index(self) -> FaqIndex:
        """The FAQ search's documents and vocabulary (triage_bot/faq.py), built on the first search."""
        from triage_bot.faq import FaqIndex

        return FaqIndex.build(self)

    @property
    def doc_roots(self) -> dict[str, tuple[str, ...]]:
        """Each engine's documentation sites, from its header's `docs` (https://docs.vllm.ai/,
        https://nvidia.github.io/TensorRT-LLM/): what a link must start with to be that engine's."""
        roots: dict[str, tuple[str, ...]] = {}
        for engine_id, info in self.engines.items():
            found = []
            for url in info.docs:
                scheme, _, rest = url.partition("://")
                host, _, path = rest.partition("/")
                shared_host = host.endswith(("github.io", "github.com"))  # one site per project there
                first = path.split("/", 1)[0] if shared_host and path else ""
                found.append(f"{scheme}://{host}/{first + '/' if first else ''}")
            roots[engine_id] = tuple(dict.fromkeys(found))
        return roots

    @property
    def engine_packages(self) -> dict[str, str]:
        """Each engine's id -> the Python package it installs as."""
        return {engine_id: info.import_name for engine_id, info in self.engines.items()}


def knowledge_files(directory: Path, extra: Sequence[Path]) -> list[tuple[Path, str]]:
    """Every engine and signature file with the name problems call it by: the main directory's
    files by name, then each extra directory's by path."""
    files = [(path, path.name) for path in sorted(directory.glob("*.yaml")) if path.name not in SPECIAL_FILES]
    for more in extra:
        files += [(path, str(path)) for path in sorted(more.glob("*.yaml"))]
    return files


def collect_problems(
    directory: Path | None = None, extra: Sequence[Path] | None = None
) -> tuple[KnowledgeBase | None, list[Problem]]:
    """Load and validate every file; return the knowledge base (None on errors) and all problems.

    `extra` directories add engines and signatures; by default they are TRIAGE_KNOWLEDGE_PATH's
    when the bundled knowledge base is loaded, and none when another directory is given."""
    if extra is None:
        extra = extra_dirs() if directory is None else ()
    directory = Path(directory or DEFAULT_DIR)
    problems: list[Problem] = []
    for where in (directory, *extra):
        if not where.is_dir():
            problems.append(Problem(str(where), 0, "knowledge directory not found"))
    if problems:
        return None, problems

    signatures: list[Signature] = []
    source: dict[str, tuple[str, int]] = {}
    engines: dict[str, EngineInfo] = {}
    for path, name in knowledge_files(directory, extra):
        if path.name in SPECIAL_FILES:
            problems.append(Problem(name, 1, "the FAQ and the taxonomy live in the main knowledge directory"))
            continue
        loaded = _load_file(path, KnowledgeFile, name)
        problems.extend(loaded.problems)
        if loaded.model is None:
            continue
        assert isinstance(loaded.model, KnowledgeFile)
        if loaded.model.engine is not None:
            info = loaded.model.engine
            if info.id in engines:
                problems.append(Problem(name, 1, f"engine {info.id!r} is defined twice"))
            if info.id in (*NEUTRAL_ENGINES, *SHARED_PREFIXES, *FAMILY_PREFIXES):
                problems.append(Problem(name, 1, f"engine id {info.id!r} is taken by a tier"))
            engines[info.id] = info
            for clue in info.detect:
                try:
                    compile_pattern(clue.pattern)
                except RegexError as exc:
                    problems.append(Problem(name, 1, f"engine clue {clue.pattern!r}: {exc}"))
        for index, sig in enumerate(loaded.model.signatures):
            line = loaded.line_of_signature(index)
            if sig.id in source:
                first_file, first_line = source[sig.id]
                problems.append(
                    Problem(name, line, f"duplicate id {sig.id!r} (first at {first_file}:{first_line})")
                )
                continue
            source[sig.id] = (name, line)
            problems.extend(_check_signature(sig, name, line))
            signatures.append(sig)

    faq: list[FaqEntry] = []
    dimensions: list[MatrixDimension] = []
    guide_needs: list[GuideNeed] = []
    other_engines: list[str] = []
    faq_path = directory / "faq.yaml"
    if faq_path.exists():
        loaded = _load_file(faq_path, FaqFile)
        problems.extend(loaded.problems)
        if isinstance(loaded.model, FaqFile):
            faq = list(loaded.model.faq)
            dimensions = list(loaded.model.matrix_dimensions)
            guide_needs = list(loaded.model.guide_needs)
            other_engines = list(loaded.model.other_engines)
            seen: set[str] = set()
            for entry in faq:
                if entry.id in seen:
                    problems.append(Problem("faq.yaml", 1, f"duplicate FAQ id {entry.id!r}"))
                seen.add(entry.id)
                for sig_id in entry.signatures:
                    if sig_id not in source:
                        problems.append(
                            Problem(
                                "faq.yaml", 1, f"FAQ {entry.id!r} names {sig_id!r}, which is no signature"
                            )
                        )

    taxonomy: list[str] = []
    tax_path = directory / "taxonomy.yaml"
    if tax_path.exists():
        loaded = _load_file(tax_path, TaxonomyFile)
        problems.extend(loaded.problems)
        if isinstance(loaded.model, TaxonomyFile):
            taxonomy = list(loaded.model.ids)
            for index, sig_id in enumerate(taxonomy):
                if sig_id not in source:
                    line = _taxonomy_line(tax_path, sig_id, index)
                    problems.append(
                        Problem("taxonomy.yaml", line, f"taxonomy id {sig_id!r} has no signature")
                    )
    else:
        problems.append(Problem("taxonomy.yaml", 0, "taxonomy.yaml is missing"))

    problems.extend(_engine_problems(signatures, engines, source))
    families = {s.id for s in signatures if s.is_family}
    for info in engines.values():
        for prefix, family in info.areas.items():
            if family not in families and family not in (AREA_CORE, AREA_MODEL):
                file = next((f for f, _ in source.values() if f.startswith(info.id)), f"{info.id}.yaml")
                problems.append(
                    Problem(
                        file,
                        1,
                        f"area {prefix!r}: {family!r} is not a family id, {AREA_CORE!r} or {AREA_MODEL!r}",
                    )
                )

    problems.extend(_guide_problems(engines, guide_needs))
    if any(p.level == "error" for p in problems):
        return None, problems
    kb = KnowledgeBase(
        signatures, engines, faq, dimensions, taxonomy, source, directory, guide_needs, other_engines
    )
    return kb, problems


def _guide_problems(engines: dict[str, EngineInfo], needs: list[GuideNeed]) -> list[Problem]:
    """Each engine's guide names only hardware and needs that faq.yaml's guide_needs define."""
    kinds = {n.key: n.kind for n in needs}
    problems = []
    for info in engines.values():
        if info.guide is None:
            continue
        named = [
            (k, "hardware") for k in (*info.guide.hardware, *(w for c in info.guide.caveats for w in c.when))
        ]
        named += [(k, "need") for k in (*info.guide.best_at, *info.guide.also)]
        for key, kind in named:
            if kinds.get(key) != kind:
                problems.append(
                    Problem(
                        f"{info.id}.yaml", 1, f"engine guide: {key!r} is not a {kind} in faq.yaml guide_needs"
                    )
                )
    return problems


def _taxonomy_line(path: Path, sig_id: str, index: int) -> int:
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if re.search(rf"(?<![\w.]){re.escape(sig_id)}(?![\w.])", text):
            return number
    return index + 1


def load(directory: Path | None = None, *, use_cache: bool = True) -> KnowledgeBase:
    """Load the knowledge base or raise KnowledgeBaseError listing every problem.

    A knowledge base validated by an earlier process is read from the cache (triage_bot/kb/cache.py);
    a broken one is never cached, so its problems are raised every time.
    """
    extra = extra_dirs() if directory is None else ()
    directory = Path(directory or DEFAULT_DIR)

    def validated() -> KnowledgeBase:
        kb, problems = collect_problems(directory, extra)
        if kb is None:
            raise KnowledgeBaseError([p for p in problems if p.level == "error"])
        kb.read_needs()
        return kb

    if not use_cache or not all(d.is_dir() for d in (directory, *extra)):
        return validated()
    from triage_bot.kb.cache import cached

    return cached((directory, *extra), validated)
