"""The store's reads: records by namespace, searches by vector (§3.3–3.5) and the hybrid sentence search."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
from qdrant_client import models

from memsif.lexical import SparseVector
from memsif.records import (
    DECISION,
    ActiveFact,
    CandidateCluster,
    CoreFact,
    Decision,
    EventTrajectory,
    FactOperation,
    Message,
    Sentence,
    TopicalSegment,
    record_number,
)
from memsif.store.base import SentenceHit, SentenceQuery, StoredMessage
from memsif.store.points import (
    ACTIVE_FACTS,
    CLUSTERS,
    DECISIONS,
    DENSE,
    FACT_OPS,
    FACTS,
    LEXICAL,
    MESSAGES,
    SEGMENTS,
    TRAJECTORIES,
    Collections,
    hybrid_requests,
    matches,
    named_vector,
    ns_filter,
    scroll,
    sentence_filter,
    stored_message,
)


class StoreReads:
    """Reads of one namespace's records, nearest-vector searches that never return what a person deleted,
    and the hybrid (dense + lexical) sentence search."""

    def __init__(self, base: Collections) -> None:
        self.base = base

    def facts(self, namespace: str, with_vectors: bool = False) -> list[tuple[CoreFact, np.ndarray | None]]:
        """Every CoreFact of the namespace (current and superseded) in id order."""
        rows = []
        for rec in scroll(self.base.client, FACTS, ns_filter(namespace), with_vectors=with_vectors):
            vector = np.asarray(rec.vector, dtype=np.float32) if with_vectors else None
            rows.append((CoreFact(**(rec.payload or {})), vector))
        return sorted(rows, key=lambda r: record_number(r[0].id))

    def search_facts(self, /, namespace: str, vector: np.ndarray, limit: int, history: bool = False,
                     **equals: Any) -> list[tuple[CoreFact, float]]:
        """Current CoreFacts of ``namespace`` (with ``history`` the superseded ones too) nearest to ``vector``
        ((d,)) by cosine, best first; only those whose payload matches ``equals`` when given (e.g.
        ``subject=["Melanie"]``)."""
        status = ["current", "superseded"] if history else "current"
        return [(CoreFact(**payload), score) for payload, score
                in self._search(FACTS, namespace, vector, limit, status=status, **equals)]

    def search_active_facts(self, namespace: str, vector: np.ndarray, limit: int) -> list[tuple[ActiveFact, float]]:
        """Promoted ActiveFacts of ``namespace`` nearest to ``vector`` ((d,)) by cosine, best first."""
        return [(ActiveFact(**payload), score)
                for payload, score in self._search(ACTIVE_FACTS, namespace, vector, limit)]

    def search_messages(self, namespace: str, vector: np.ndarray, limit: int) -> list[tuple[Message, float]]:
        """Messages of ``namespace`` nearest to ``vector`` ((d,)) by cosine, best first."""
        return [(stored_message(payload, []).message, score)
                for payload, score in self._search(MESSAGES, namespace, vector, limit)]

    def _search(self, collection: str, namespace: str, vector: np.ndarray, limit: int,
                **equals: Any) -> list[tuple[dict[str, Any], float]]:
        found = models.Filter(must=ns_filter(namespace, **equals).must, must_not=[matches("status", "deleted")])
        result = self.base.client.query_points(collection, query=vector.astype(float).tolist(), query_filter=found,
                                           limit=limit, with_payload=True)  # never what a person deleted
        return [(dict(p.payload or {}), float(p.score)) for p in result.points]

    def hybrid_search(self, namespace: str, query: SentenceQuery, limit: int,
                      path_scores: bool = True) -> list[SentenceHit]:
        """Sentences of ``namespace`` (those ``query.within`` and not ``query.excluded``) ranked by
        reciprocal rank fusion (k = ``RRF_K``) of a dense search (cosine to ``query.dense``) and a
        lexical one (BM25: ``query.lexical`` against the sentences' sparse vectors with Qdrant's IDF),
        each taking its ``query.candidates`` best, with the speaker boost (``SentenceQuery``). Fusion
        and boost run in Qdrant (Query API prefetch + RRF, then a formula query). Best first, at most
        ``limit``. With ``path_scores`` False the two searches' own scores are not fetched (one request
        less each; the hits' ``dense``/``lexical`` stay None)."""
        collection = self.base.sentences(namespace)
        if collection is None:
            return []
        fused_request, requests = hybrid_requests(query, limit, sentence_filter(query))
        fused, *paths = self.base.client.query_batch_points(
            collection, requests=[fused_request, *(requests if path_scores else [])])
        by_path = [{p.id: float(p.score) for p in result.points} for result in paths]
        dense_scores = by_path[0] if by_path else {}
        lexical_scores = by_path[1] if len(by_path) > 1 else {}
        return [SentenceHit(Sentence(**p.payload), float(p.score), dense_scores.get(p.id), lexical_scores.get(p.id))
                for p in fused.points]

    def speakers(self, namespace: str) -> list[str]:
        """The namespace's speakers, most frequent first (a facet over the sentence index)."""
        collection = self.base.sentences(namespace)
        if collection is None:
            return []
        return [str(h.value) for h in self.base.client.facet(collection, key="speaker", limit=1000).hits]

    def sentences(self, namespace: str, with_vectors: bool = False) -> list[tuple[Sentence, np.ndarray | None]]:
        """The namespace's sentences in chronological order, with their dense vectors if asked."""
        rows = []
        collection = self.base.sentences(namespace)
        if collection is None:
            return []
        for rec in scroll(self.base.client, collection, None, with_vectors=[DENSE] if with_vectors else False):
            vector = np.asarray(named_vector(rec, DENSE), dtype=np.float32) if with_vectors else None
            rows.append((Sentence(**(rec.payload or {})), vector))
        return sorted(rows, key=lambda r: (r[0].message_index, r[0].position))

    def sentence_lexical(self, namespace: str) -> dict[str, SparseVector]:
        """Sentence id → its stored sparse lexical vector (empty for a sentence without terms)."""
        collection = self.base.sentences(namespace)
        if collection is None:
            return {}
        out = {}
        for rec in scroll(self.base.client, collection, None, with_vectors=[LEXICAL]):
            sparse = named_vector(rec, LEXICAL)
            out[str((rec.payload or {})["id"])] = SparseVector(tuple(sparse.indices), tuple(sparse.values)) \
                if isinstance(sparse, models.SparseVector) else SparseVector((), ())
        return out

    def fact_ops(self, namespace: str) -> list[FactOperation]:
        """The CoreFact operation log in order."""
        rows = [FactOperation(**p) for p in self._payloads(FACT_OPS, namespace)]
        return sorted(rows, key=lambda op: -1 if op.seq is None else op.seq)

    def clusters(self, namespace: str) -> list[CandidateCluster]:
        """Candidate clusters C_k in id order."""
        rows = [CandidateCluster(**p) for p in self._payloads(CLUSTERS, namespace)]
        return sorted(rows, key=lambda c: record_number(c.id))

    def active_facts(self, namespace: str) -> list[ActiveFact]:
        """Promoted ActiveFacts in id order."""
        rows = [ActiveFact(**p) for p in self._payloads(ACTIVE_FACTS, namespace)]
        return sorted(rows, key=lambda a: record_number(a.id))

    def _payloads(self, collection: str, namespace: str) -> Iterator[dict[str, Any]]:
        """The payloads of ``namespace``'s records in ``collection``."""
        return ((rec.payload or {}) for rec in scroll(self.base.client, collection, ns_filter(namespace)))

    def messages(self, namespace: str, with_vectors: bool = True) -> list[StoredMessage]:
        """The namespace's messages in chronological order (by ``index``)."""
        out = [stored_message(rec.payload, rec.vector if with_vectors else [])
               for rec in scroll(self.base.client, MESSAGES, ns_filter(namespace), with_vectors=with_vectors)]
        out.sort(key=lambda r: r.message.index)
        return out

    def segments(self, namespace: str) -> list[TopicalSegment]:
        segs = [TopicalSegment(**p) for p in self._payloads(SEGMENTS, namespace)]
        return sorted(segs, key=lambda s: s.index)

    def trajectories(self, namespace: str) -> list[EventTrajectory]:
        trajs = [EventTrajectory(**p) for p in self._payloads(TRAJECTORIES, namespace)]
        return sorted(trajs, key=lambda t: t.index)

    def decisions(self, namespace: str, kind: Literal["segment", "trajectory"] | None = None) -> list[Decision]:
        """Structured Interaction Memory decisions in the order they were made (one kind, or all)."""
        flt = ns_filter(namespace, kind=kind) if kind else ns_filter(namespace)
        rows = [DECISION.validate_python(rec.payload or {}) for rec in scroll(self.base.client, DECISIONS, flt)]
        return sorted(rows, key=lambda d: -1 if d.seq is None else d.seq)
