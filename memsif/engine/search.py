"""Finding things in a memory without the model (``MemSIF.search``): CoreFacts and ActiveFacts by
meaning (cosine of their statements to the words searched), messages by the hybrid sentence search the
answers use (dense + BM25, fused by reciprocal rank in Qdrant), each message once, with its date,
speaker, Topical Segment and Event Trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from memsif import lexical
from memsif.backends import Backends
from memsif.engine.reads import Reads
from memsif.errors import MemSIFError
from memsif.store.base import SentenceQuery

SEARCH_CANDIDATES = 100


@dataclass(frozen=True)
class Found:
    """One thing a search found: a CoreFact ("core"), ActiveFact ("active") or message ("message");
    ``score`` is the fact's cosine, or the message's best sentence's fused rank score (reciprocal rank
    fusion, not comparable with a cosine); ``found_by`` says which searches found it ("dense",
    "lexical"); ``sentence`` is the message's best-matching sentence."""

    kind: Literal["core", "active", "message"]
    id: str
    text: str
    speaker: str
    time: datetime | None
    score: float
    found_by: list[str] = field(default_factory=list)
    segment_id: str | None = None
    trajectory_id: str | None = None
    sentence: str = ""


class Search:
    """Search of a memory by words and by meaning (``MemSIF.searcher``)."""

    def __init__(self, backends: Backends, reads: Reads) -> None:
        self.backends, self.reads = backends, reads

    def search(self, namespace: str, text: str, limit: int = 20) -> list[Found]:
        """The facts (best ``limit`` by cosine, current only, at least ``relevance_floor``) and messages
        (best ``limit`` by the hybrid sentence search) of ``namespace`` for ``text``: facts first, then
        messages, each best first.

        Raises:
            MemSIFError: ``text`` is empty.
            NotFoundError: no such namespace.
        """
        backends = self.backends
        words = " ".join((text or "").split())
        if not words:
            raise MemSIFError("search needs words: type what to find (a name, a word, or what it was about).")
        self.reads.require(namespace)
        vector = backends.embedder.embed_query(words)
        floor = backends.config.answer.relevance_floor  # below it a fact is not about the words (the answers' floor)
        found = [Found("core", f.id, f.statement, f.subject, f.event_time, round(score, 4), ["dense"])
                 for f, score in backends.store.search_facts(namespace, vector, limit) if score >= floor]
        found += [Found("active", a.id, a.statement, a.subject.split(":")[0], a.event_time, round(score, 4),
                        ["dense"]) for a, score in backends.store.search_active_facts(namespace, vector, limit)
                  if score >= floor]
        found.sort(key=lambda f: -f.score)
        query = SentenceQuery(vector, lexical.encode_query(words), candidates=SEARCH_CANDIDATES)
        messages: dict[str, Found] = {}
        for hit in backends.store.hybrid_search(namespace, query, SEARCH_CANDIDATES):
            s = hit.sentence
            if s.message_id not in messages and len(messages) < limit:
                messages[s.message_id] = Found("message", s.message_id, "", s.speaker, s.time, round(hit.fused, 4),
                                               hit.found_by, s.segment_id, s.trajectory_id, s.text)
        texts = {m.id: m.text for m in self.reads.messages(namespace) if m.id in messages} if messages else {}
        return found + [Found(**{**m.__dict__, "text": texts.get(m.id, m.sentence)}) for m in messages.values()]
