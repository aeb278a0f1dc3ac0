"""Query-driven ActiveFact formation (§3.4): candidate clusters, Eqs. 2–4.

A candidate cluster C_k = (s_k, X_k, Q_k, R_k) holds a normalised subject, its deduplicated
statements, the distinct triggering queries (near-duplicates removed) and the ids of the distinct
historical interaction units its evidence came from. It is promoted when both

    Score_src(C_k) = (1 − 1/|R_k|) · Coh(X_k)        (Eq. 2)
    Score_qry(C_k) = (1 − 1/|Q_k|) · Coh(Q_k)        (Eq. 3)

reach their thresholds θ_s and θ_q (Eq. 4). Coh is the mean pairwise normalised cosine of a set's
embeddings ((cos + 1) / 2, in [0, 1]); a singleton's Coh is 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

#: Two queries whose embeddings have cosine ≥ this are the same demand (near-duplicate removal).
QUERY_DUPLICATE_COSINE = 0.95
#: A statement whose embedding has cosine ≥ this with one already in X_k is the same statement.
STATEMENT_DUPLICATE_COSINE = 0.95


def normalise_subject(subject: str) -> str:
    """Subjects are compared lower-cased with single spaces and no surrounding punctuation."""
    return " ".join(subject.strip().strip(".,;:!?\"'").lower().split())


def coherence(vectors: Sequence[np.ndarray]) -> float:
    """Coh: mean pairwise normalised cosine ((cos+1)/2) of (d,) vectors; 1.0 for 0 or 1 vectors."""
    if len(vectors) < 2:
        return 1.0
    sims = []
    for a, b in combinations(vectors, 2):
        na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
        cos = float(np.dot(a, b) / (na * nb)) if na and nb else 0.0
        sims.append((cos + 1.0) / 2.0)
    return float(np.mean(sims))


def score_src(n_sources: int, statement_vectors: Sequence[np.ndarray]) -> float:
    """Eq. 2: (1 − 1/|R_k|) · Coh(X_k). Zero when the cluster has fewer than one source."""
    if n_sources < 1:
        return 0.0
    return (1.0 - 1.0 / n_sources) * coherence(statement_vectors)


def score_qry(query_vectors: Sequence[np.ndarray]) -> float:
    """Eq. 3: (1 − 1/|Q_k|) · Coh(Q_k). Zero without queries."""
    if not query_vectors:
        return 0.0
    return (1.0 - 1.0 / len(query_vectors)) * coherence(query_vectors)


def promote(src: float, qry: float, theta_src: float, theta_qry: float) -> bool:
    """Eq. 4: promoted only when the cluster is both historically supported and repeatedly demanded."""
    return src >= theta_src and qry >= theta_qry


@dataclass
class CandidateCluster:
    """C_k = (s_k, X_k, Q_k, R_k) with the embeddings Coh needs.

    ``subject`` is the normalised speaker the statements are about and ``topics`` counts the key
    entities of X_k (speaker names left out): s_k reads "speaker: topic" (:attr:`label`). ``statement``
    is the ActiveFact statement once promoted; it stays until another member of X_k is clearly more
    central (:func:`choose_statement`)."""

    subject: str
    statements: list[str] = field(default_factory=list)
    statement_vectors: list[np.ndarray] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    query_vectors: list[np.ndarray] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    statement_sources: list[list[str]] = field(default_factory=list)
    topics: dict[str, int] = field(default_factory=dict)
    statement: str | None = None

    def add(self, statement: str, statement_vector: np.ndarray, sources: Sequence[str], query: str,
            query_vector: np.ndarray, topics: Sequence[str] = ()) -> None:
        """Accumulate one evidence entry (after the answer, §3.4): dedupe statements, drop
        near-duplicate queries, union distinct sources, count the statement's topics."""
        if not any(_cos(statement_vector, v) >= STATEMENT_DUPLICATE_COSINE for v in self.statement_vectors):
            self.statements.append(statement)
            self.statement_vectors.append(statement_vector)
            self.statement_sources.append(list(sources))
            for topic in topics:
                self.topics[topic] = self.topics.get(topic, 0) + 1
        if not any(_cos(query_vector, v) >= QUERY_DUPLICATE_COSINE for v in self.query_vectors):
            self.queries.append(query)
            self.query_vectors.append(query_vector)
        for source in sources:
            if source not in self.sources:
                self.sources.append(source)

    def compatibility(self, statement_vector: np.ndarray) -> float:
        """The lowest cosine of a statement with every statement of X_k (complete link: a statement joins
        only when it fits the cluster as a whole, so unrelated statements never chain through a third)."""
        if not self.statement_vectors:
            return 1.0
        return min(_cos(statement_vector, v) for v in self.statement_vectors)

    @property
    def label(self) -> str:
        """s_k as shown: "melanie: pottery, class" (the two most frequent key entities of X_k)."""
        top = sorted(self.topics, key=lambda t: (-self.topics[t], t))[:2]
        return f"{self.subject}: {', '.join(top)}" if top else self.subject

    @property
    def score_src(self) -> float:
        return score_src(len(self.sources), self.statement_vectors)

    @property
    def score_qry(self) -> float:
        return score_qry(self.query_vectors)

    def promoted(self, theta_src: float, theta_qry: float) -> bool:
        return promote(self.score_src, self.score_qry, theta_src, theta_qry)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(np.dot(a, b) / (na * nb)) if na and nb else 0.0


def cluster_to_payload(cluster_id: str, cluster: CandidateCluster, promoted_id: str | None) -> dict:
    """A JSON-able payload for the store (embeddings as lists)."""
    return {
        "id": cluster_id, "subject": cluster.subject, "label": cluster.label, "topics": cluster.topics,
        "statement": cluster.statement, "statement_sources": cluster.statement_sources,
        "central_statement": central_statement(cluster) if cluster.statements else None,
        "statements": cluster.statements,
        "statement_vectors": [v.astype(float).tolist() for v in cluster.statement_vectors],
        "queries": cluster.queries, "query_vectors": [v.astype(float).tolist() for v in cluster.query_vectors],
        "sources": cluster.sources, "score_src": cluster.score_src, "score_qry": cluster.score_qry,
        "active_fact_id": promoted_id,
    }


def cluster_from_payload(payload: dict) -> CandidateCluster:
    return CandidateCluster(
        subject=payload["subject"], statements=list(payload["statements"]),
        statement_vectors=[np.asarray(v, dtype=np.float32) for v in payload["statement_vectors"]],
        queries=list(payload["queries"]),
        query_vectors=[np.asarray(v, dtype=np.float32) for v in payload["query_vectors"]],
        sources=list(payload["sources"]),
        statement_sources=[list(x) for x in payload.get("statement_sources", [[] for _ in payload["statements"]])],
        topics=dict(payload.get("topics", {})), statement=payload.get("statement"))


#: An evidence statement joins a cluster of its subject when its cosine with *every* statement of the
#: cluster is at least this ("compatible with the accumulated statements", §3.4; complete link).
COMPATIBLE_COSINE = 0.5
#: A promoted statement is replaced only by a member more central by at least this (mean cosine).
STATEMENT_SWITCH_MARGIN = 0.05


def centrality(cluster: CandidateCluster) -> np.ndarray:
    """(|X_k|,) mean cosine of each statement with the others (1.0 for a single statement)."""
    if len(cluster.statements) == 1:
        return np.ones(1)
    vecs = np.stack(cluster.statement_vectors)
    vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    sims = vecs @ vecs.T
    return (sims.sum(axis=1) - 1.0) / (len(vecs) - 1)


def central_statement(cluster: CandidateCluster) -> str:
    """The statement of X_k closest on average to the others."""
    return cluster.statements[int(np.argmax(centrality(cluster)))]


def choose_statement(cluster: CandidateCluster) -> str:
    """The ActiveFact statement, chosen from X_k and stable: the promoted one stays unless another
    member is more central by ``STATEMENT_SWITCH_MARGIN`` (a new question must not flip it)."""
    best = central_statement(cluster)
    if cluster.statement in cluster.statements:
        cent = centrality(cluster)
        current = cent[cluster.statements.index(cluster.statement)]
        if cent[cluster.statements.index(best)] - current < STATEMENT_SWITCH_MARGIN:
            return cluster.statement
    return best
