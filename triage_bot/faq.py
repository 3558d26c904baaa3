"""Answer a free-text question from the FAQ, and from the signatures' own FAQ answers.

Ranking is by the question's meaningful words (weighted by how rare they are across the FAQ),
found in an entry's question and tags first and its answer second, plus a fuzzy resemblance of the
whole question. An entry that shares no meaningful word with the question is never returned, so
"what is the capital of France" gets "no FAQ entry matches" instead of a random answer.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from rapidfuzz import fuzz, utils

from triage_bot.kb.loader import KnowledgeBase

MIN_SCORE = 0.25
_WORD = re.compile(r"[a-z0-9][a-z0-9_.+-]*[a-z0-9]|[0-9]")  # one letter alone is not a word
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


def _words(text: str) -> list[str]:
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        word = word.strip(".-+")
        if not word or word in _STOP:
            continue
        out.append(word)
        if word in _SYNONYMS:
            out.append(_SYNONYMS[word])
        out.extend(part for part in re.split(r"[-_.]", word) if len(part) > 1 and part != word)
    return out


@dataclass(frozen=True, slots=True)
class _Doc:
    hit: FaqHit
    head: frozenset[str]  # words of the question, tags and id
    body: frozenset[str]  # words of the answer


def _documents(kb: KnowledgeBase) -> list[_Doc]:
    docs = [
        _Doc(
            FaqHit("faq", e.id, e.question, e.answer.strip(), tuple(e.docs), 0.0),
            frozenset(_words(f"{e.question} {' '.join(e.tags)} {' '.join(e.engines)} {e.id}")),
            frozenset(_words(e.answer)),
        )
        for e in kb.faq
    ]
    docs += [
        _Doc(
            FaqHit("signature", s.id, f"{s.title} ({s.id})", s.faq.strip(), tuple(s.docs), 0.0),
            frozenset(_words(f"{s.title} {s.id}")),
            frozenset(_words(s.faq)),
        )
        for s in kb.signatures
    ]
    return docs


def _domain(kb: KnowledgeBase) -> frozenset[str]:
    """The serving vocabulary: words of the failures the knowledge base knows (ids, titles, canonical
    messages), the FAQ's tags and the engines' names. A question with none of them is not about
    serving ("translate 'good morning' into Italian"), whatever FAQ prose it happens to share."""
    text = [f"{s.id} {s.title} {' '.join(s.messages)}" for s in kb.signatures]
    text += [" ".join(e.tags) for e in kb.faq]
    text += [f"{e.id} {e.name}" for e in kb.engines.values()]
    return frozenset(_words(" ".join(text)))


@dataclass(frozen=True, slots=True)
class FaqIndex:
    """What every search reads and no search changes: the documents, how often each word occurs
    across them, and the serving vocabulary. Built once per knowledge base (`KnowledgeBase.faq_index`)."""

    docs: list[_Doc]
    frequency: Counter[str]
    domain: frozenset[str]

    @classmethod
    def build(cls, kb: KnowledgeBase) -> FaqIndex:
        docs = _documents(kb)
        return cls(docs, Counter(word for doc in docs for word in doc.head | doc.body), _domain(kb))


def search(kb: KnowledgeBase, question: str, limit: int = 3) -> list[FaqHit]:
    """Best FAQ entries for a question, best first; empty when nothing is really about it."""
    question = question.strip()[:500]
    words = set(_words(question))
    index = kb.faq_index
    if not words or not words & index.domain:
        return []
    docs, frequency = index.docs, index.frequency
    idf = {w: math.log(1 + len(docs) / (1 + frequency[w])) for w in words}
    total = sum(idf.values()) or 1.0
    scored: list[tuple[float, FaqHit]] = []
    for doc in docs:
        in_head = sum(idf[w] for w in words & doc.head)
        in_body = sum(idf[w] for w in (words & doc.body) - doc.head)
        if in_head == 0 and in_body == 0:
            continue
        overlap = (in_head + 0.35 * in_body) / total
        resemblance = fuzz.token_set_ratio(question, doc.hit.question, processor=utils.default_process) / 100
        score = 0.75 * overlap + 0.25 * resemblance
        if doc.hit.source == "signature":
            score *= 0.75  # the FAQ proper answers questions; signatures answer failures
        if score >= MIN_SCORE:
            scored.append((score, doc.hit))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    return [
        FaqHit(hit.source, hit.id, hit.question, hit.answer, hit.docs, round(score, 3))
        for score, hit in scored[:limit]
    ]
