"""Answer a free-text question from the FAQ, and from the signatures' own FAQ answers.

Ranking is by the question's meaningful words (weighted by how rare they are across the FAQ),
found in an entry's question and tags first and its answer second, plus a fuzzy resemblance of the
whole question. The rules, each measured on real questions (tests/holdout/faq*):

- a word no entry holds counts for little (`UNKNOWN_WEIGHT`): a long report around one concept
  ("random Xid 79 ... on driver 595.71") still finds that concept's entry;
- an entry's own question and tags must hold a telling word of the question (`HEAD_FLOOR`);
- a question that quotes a failure an entry explains (its `signatures:`) lifts that entry
  (`QUOTED_BOOST`);
- an entry about some engines (its `engines:`) does not answer a question that names only others;
- nothing is answered when the question holds no serving vocabulary ("how long should I boil an
  egg") or names a serving engine the FAQ does not cover (lmdeploy, Ollama, TGI).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from rapidfuzz import fuzz, utils

from triage_bot.kb.loader import KnowledgeBase
from triage_bot.kb.regex import compile_pattern

MIN_SCORE = 0.25
QUOTED_BOOST = 0.3  # added to the score of an entry whose failures the question quotes
PHRASE_BOOST = 0.1  # added when the question holds one of the entry's multi-word tags as written
UNKNOWN_WEIGHT = 0.3  # the share of its weight a word no entry holds keeps in the denominator
HEAD_FLOOR = 0.5  # the entry's head must hold words worth half the question's most telling one
_WORD = re.compile(r"[a-z0-9][a-z0-9_.+-]*[a-z0-9]|[0-9]")  # one letter alone is not a word
# flags, snake_case, CamelCase and flag names written without their dashes (gpu-memory-utilization)
_IDENTIFIER = re.compile(r"--?[a-z][\w-]+|\b\w+_\w+\b|\b[A-Z][a-z]+[A-Z]\w*|\b[a-z]+(?:-[a-z0-9]+){2,}\b")
_STOP = frozenset(
    """a an the is are was be do does did i we you my our your it its this that to of in on for and
    or with what which who why how when where should can could would will vs versus than at by from
    about into me us use using get set make there their them they one any some""".split()  # noqa: SIM905
)
# words people type for the same idea the FAQ words differently
_SYNONYMS = {
    "tp": "tensor-parallel",
    "tensor": "tensor-parallel",
    "pp": "pipeline-parallel",
    "pick": "choose",
    "faster": "workload",
    "fastest": "workload",
    "better": "workload",
    "enable": "turn",
    "disable": "turn",
    "oom": "memory",
    "mem": "memory",
    "kv": "kv-cache",
    "utilisation": "utilization",
    "gpu_memory_utilisation": "gpu_memory_utilization",
    "optimise": "optimize",
    "behaviour": "behavior",
}


@dataclass(frozen=True, slots=True)
class FaqHit:
    source: str  # "faq" or "signature"
    id: str
    question: str
    answer: str
    docs: tuple[str, ...]
    score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"docs": list(self.docs)}


def _words(text: str, parts: bool = True) -> list[str]:
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        word = word.strip(".-+")
        if not word or word in _STOP:
            continue
        out.append(word)
        if word in _SYNONYMS:
            out.append(_SYNONYMS[word])
        if parts:
            out.extend(part for part in re.split(r"[-_.]", word) if len(part) > 1 and part != word)
    return out


@dataclass(frozen=True, slots=True)
class _Doc:
    hit: FaqHit
    head: frozenset[str]  # words of the question, tags and id
    body: frozenset[str]  # words of the answer
    engines: frozenset[str] = frozenset()  # the engines it is about; empty: any
    phrases: tuple[str, ...] = ()  # its tags of two words or more, lower-case ("bus error")


def _documents(kb: KnowledgeBase) -> list[_Doc]:
    docs = [
        _Doc(
            FaqHit("faq", e.id, e.question, e.answer.strip(), tuple(e.docs), 0.0),
            frozenset(_words(f"{e.question} {' '.join(e.tags)} {' '.join(e.engines)} {e.id}")),
            frozenset(_words(e.answer)),
            frozenset(e.engines),
            tuple(t.lower() for t in e.tags if " " in t.strip()),
        )
        for e in kb.faq
    ]
    docs += [
        _Doc(
            FaqHit("signature", s.id, f"{s.title} ({s.id})", s.faq.strip(), tuple(s.docs), 0.0),
            frozenset(_words(f"{s.title} {s.id}")),
            frozenset(_words(s.faq)),
            frozenset([s.engine]) if s.engine_specific else frozenset(),
        )
        for s in kb.signatures
    ]
    return docs


def _domain(kb: KnowledgeBase) -> frozenset[str]:
    """The serving vocabulary: the FAQ's tags and ids, the failures' ids, the engines' names and the
    flags and identifiers the failures' messages and the FAQ's questions hold. A question with none
    of them is not about serving ("how long should I boil an egg"), whatever everyday words it
    shares with FAQ prose."""
    text = [s.id.replace(".", " ") for s in kb.signatures]
    text += [" ".join(_IDENTIFIER.findall(" ".join(s.messages))) for s in kb.signatures]
    text += [f"{' '.join(e.tags)} {e.id}" for e in kb.faq]
    text += [f"{e.id} {e.name}" for e in kb.engines.values()]
    # the flags an FAQ question names, and their parts ("gpu memory utilization" asks about one)
    flags = " ".join(flag for e in kb.faq for flag in _IDENTIFIER.findall(e.question))
    return frozenset(_words(" ".join(text), parts=False)) | frozenset(_words(flags))


def _names_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """Any of these names as a word. ASCII edges: in "lmdeploy也会有" the CJK letter that follows
    is a word character to `re`."""
    alternatives = "|".join(
        re.escape(name) for name in sorted({n for n in names if n}, key=len, reverse=True)
    )
    return (
        re.compile(rf"(?i)(?<![A-Za-z0-9_.-])(?:{alternatives})(?![A-Za-z0-9_-])") if alternatives else None
    )


@dataclass(frozen=True, slots=True)
class FaqIndex:
    """What every search reads and no search changes: the documents, how often each word occurs
    across them, and the serving vocabulary. Built once per knowledge base (`KnowledgeBase.faq_index`)."""

    docs: list[_Doc]
    frequency: Counter[str]
    domain: frozenset[str]
    elsewhere: re.Pattern[str] | None  # the serving engines the FAQ does not cover, by name
    # engine id -> its names (id, name, package): which engines a question asks about
    named: dict[str, re.Pattern[str]]
    explains: dict[str, tuple[str, ...]]  # FAQ id -> the patterns of the failures it explains

    def quoted(self, question: str) -> set[str]:
        """The FAQ entries whose failures' messages the question quotes ("... is preempted by
        PreemptionMode.RECOMPUTE ... how to solve this?" quotes vLLM's preemption warning)."""
        return {
            entry
            for entry, patterns in self.explains.items()
            if any(compile_pattern(p).search(question) for p in patterns)
        }

    @classmethod
    def build(cls, kb: KnowledgeBase) -> FaqIndex:
        docs = _documents(kb)
        elsewhere = _names_pattern(kb.other_engines)
        frequency = Counter(word for doc in docs for word in doc.head | doc.body)
        explains = {
            e.id: tuple(p for sig_id in e.signatures if (sig := kb.get(sig_id)) for p, _ in sig.pattern_specs)
            for e in kb.faq
            if e.signatures
        }
        named = {
            info.id: pattern
            for info in kb.engines.values()
            if (pattern := _names_pattern([info.id, info.name, info.package, info.name.replace("-", "")]))
        }
        return cls(docs, frequency, _domain(kb), elsewhere, named, explains)

    def asked_about(self, question: str) -> set[str]:
        """The engines the question names."""
        return {engine for engine, names in self.named.items() if names.search(question)}


_ASKING = re.compile(
    r"(?i)^\W*(?:how|what|what's|why|which|when|where|who|should|shall|can|could|is|are|does|do|did|will"
    r"|would|any|anyone|has|have|explain|tell me|help me (?:choose|pick|understand))\b"
)
_CHOOSING = re.compile(
    r"(?i)\b(?:which (?:engine|server|backend|framework|one)|(?:choose|pick|recommend|prefer)\w*"
    r"|should (?:i|we) (?:use|go with|run|deploy|pick|choose)|best (?:engine|choice|option)"
    r"|vs\.?|versus|or (?:vllm|sglang|tensorrt-llm|trt-llm|trtllm))\b"
)
QUESTION_MAX_CHARS = 600
QUESTION_MAX_LINES = 4


def is_question(text: str) -> bool:
    """A short message written as a question ("what is --max-num-seqs?"), not a pasted log: an
    addressed question is answered from the FAQ instead of being triaged as a paste."""
    text = text.strip()
    if not text or len(text) > QUESTION_MAX_CHARS or text.count("\n") >= QUESTION_MAX_LINES:
        return False
    return text.endswith("?") or bool(_ASKING.match(text))


def asks_to_choose(text: str) -> bool:
    """A question about which engine to use: the decision guide answers it, not the FAQ."""
    return bool(_CHOOSING.search(text))


def search(kb: KnowledgeBase, question: str, limit: int = 3) -> list[FaqHit]:
    """Best FAQ entries for a question, best first; empty when nothing is really about it."""
    question = question.strip()[:500]
    words = set(_words(question))
    index = kb.faq_index
    if not words or not words & index.domain:
        return []
    if index.elsewhere and index.elsewhere.search(question):
        return []  # about an engine the FAQ does not cover: its answers would be about another one
    docs, frequency = index.docs, index.frequency
    quoted = index.quoted(question)
    lowered = " ".join(question.lower().split())
    asked = index.asked_about(question)
    idf = {w: math.log(1 + len(docs) / (1 + frequency[w])) for w in words}
    # a word no entry holds says nothing about which entry answers, so it dilutes only a little
    top = max(idf.values())
    total = sum(v if frequency[w] else UNKNOWN_WEIGHT * v for w, v in idf.items()) or 1.0
    scored: list[tuple[float, FaqHit]] = []
    for doc in docs:
        if asked and doc.engines and not doc.engines & asked:
            continue  # an entry about TensorRT-LLM does not answer a question about vLLM
        in_head = sum(idf[w] for w in words & doc.head)
        in_body = sum(idf[w] for w in (words & doc.body) - doc.head)
        if in_head < HEAD_FLOOR * top and doc.hit.id not in quoted:
            continue  # the entry's own question and tags must hold a telling word of the question
        overlap = (in_head + 0.35 * in_body) / total
        resemblance = fuzz.token_set_ratio(question, doc.hit.question, processor=utils.default_process) / 100
        score = 0.75 * overlap + 0.25 * resemblance
        if any(phrase in lowered for phrase in doc.phrases):
            score += PHRASE_BOOST  # "bus error" written as such says more than "bus" and "error" apart
        if doc.hit.source == "signature":
            score *= 0.75  # the FAQ proper answers questions; signatures answer failures
        elif doc.hit.id in quoted:
            score += QUOTED_BOOST  # the question quotes a failure this entry explains
        if score >= MIN_SCORE:
            scored.append((score, doc.hit))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    return [
        FaqHit(hit.source, hit.id, hit.question, hit.answer, hit.docs, round(score, 3))
        for score, hit in scored[:limit]
    ]
