"""Answer a free-text question from the FAQ, and from the signatures' own FAQ answers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rapidfuzz import fuzz, process, utils

from bot.kb.loader import KnowledgeBase

MIN_SCORE = 55.0
_WORD = re.compile(r"[a-z0-9_.-]{3,}")


@dataclass(frozen=True, slots=True)
class FaqHit:
    source: str  # "faq" or "signature"
    id: str
    question: str
    answer: str
    docs: tuple[str, ...]
    score: float


def _documents(kb: KnowledgeBase) -> list[FaqHit]:
    docs = [FaqHit("faq", e.id, e.question, e.answer.strip(), tuple(e.docs), 0.0) for e in kb.faq]
    docs += [
        FaqHit("signature", s.id, f"{s.title} ({s.id})", s.faq.strip(), tuple(s.docs), 0.0) for s in kb.signatures
    ]
    return docs


def search(kb: KnowledgeBase, question: str, limit: int = 3) -> list[FaqHit]:
    """Best FAQ entries for a question; exact id or keyword hits rank first."""
    question = question.strip()[:500]
    if not question:
        return []
    documents = _documents(kb)
    keys = [
        f"{d.question} {' '.join(kb_tags(kb, d))}" for d in documents
    ]
    scored = process.extract(
        question, keys, scorer=fuzz.WRatio, processor=utils.default_process, limit=limit * 4
    )
    words = set(_WORD.findall(question.lower()))
    results: list[FaqHit] = []
    for _key, score, index in scored:
        doc = documents[index]
        overlap = len(words & set(_WORD.findall((doc.question + " " + doc.answer).lower())))
        final = min(100.0, score + 4.0 * overlap + (30.0 if doc.id == question else 0.0))
        if final >= MIN_SCORE:
            results.append(FaqHit(doc.source, doc.id, doc.question, doc.answer, doc.docs, round(final, 1)))
    results.sort(key=lambda h: h.score, reverse=True)
    return results[:limit]


def kb_tags(kb: KnowledgeBase, doc: FaqHit) -> list[str]:
    if doc.source == "faq":
        for entry in kb.faq:
            if entry.id == doc.id:
                return [*entry.tags, *entry.engines]
    return [doc.id]
