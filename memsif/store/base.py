"""The store contract: every read and write the engine makes, typed (records in, records out).

``MemoryStore`` (Qdrant: ``:memory:``, ``path=`` or ``url=``) is the one implementation; the contract
tests (``tests/store/test_store_contract.py``) run the same calls on each of its three connections and
compare the results. Vectors are (d,) float32 arrays; scores are cosines (search) or fused
reciprocal-rank scores (``hybrid_search``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from memsif.lexical import SparseVector
from memsif.records import (
    ActiveFact,
    CandidateCluster,
    CoreFact,
    Decision,
    EventTrajectory,
    FactOperation,
    Message,
    Sentence,
    TopicalSegment,
)

#: The kinds of record a store holds.
RecordKind = Literal["message", "sentence", "segment", "trajectory", "decision", "fact", "fact_op", "cluster",
                     "active_fact"]


@dataclass
class SentenceHit:
    """A sentence found by hybrid search: the fused score (reciprocal rank fusion of the two
    searches, done by Qdrant) and, where the sentence was among that search's candidates, its cosine
    (``dense``) and BM25 (``lexical``) scores."""

    sentence: Sentence
    fused: float
    dense: float | None = None
    lexical: float | None = None

    @property
    def found_by(self) -> list[str]:
        return [name for name, v in (("dense", self.dense), ("lexical", self.lexical)) if v is not None]


@dataclass(frozen=True)
class SentenceQuery:
    """One hybrid sentence search (``Store.hybrid_search``): the question's (d,) L2-normalised
    ``dense`` vector and its BM25 ``lexical`` terms; each search takes its ``candidates`` best before
    reciprocal rank fusion. Sentences said by one of ``speakers`` get their fused score × (1 +
    ``speaker_boost``). ``within`` keeps only sentences whose payload field holds one of the listed
    values (e.g. ``{"segment_id": ["S1", "S4"]}``); ``excluded`` leaves out those that do."""

    dense: np.ndarray
    lexical: SparseVector
    candidates: int = 100
    speakers: Sequence[str] = ()
    speaker_boost: float = 0.0
    within: Mapping[str, Sequence[str]] = field(default_factory=dict)
    excluded: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass
class StoredMessage:
    """A message as stored: the record, its (d,) embedding, key entities and segment."""

    message: Message
    vector: np.ndarray
    entities: frozenset[str]
    segment_id: str | None


@runtime_checkable
class Store(Protocol):
    """All engine state of every namespace. Every read filters on its ``namespace``; writes upsert by
    record id (the same id twice is one record). Raises ``StoreError`` for a failure of the store."""

    location: str
    read_only: bool
    #: How a read-only store was opened, in words ("" when it was opened as it is).
    opened_from: str
    dim: int | None

    def ensure_collections(self, embedder_name: str, dim: int) -> None: ...
    def recorded_embedder(self) -> tuple[str, int] | None: ...
    def close(self) -> None: ...
    # writes
    def put_messages(self, namespace: str, rows: Iterable[StoredMessage]) -> None: ...
    def put_sentences(self, namespace: str, rows: Iterable[tuple[Sentence, np.ndarray, SparseVector]]) -> None: ...
    def set_sentence_trajectories(self, namespace: str, trajectory_of: dict[str, str | None]) -> None: ...
    def put_segments(self, namespace: str, rows: Iterable[tuple[TopicalSegment, np.ndarray]]) -> None: ...
    def put_trajectories(self, namespace: str, rows: Iterable[tuple[EventTrajectory, np.ndarray]]) -> None: ...
    def put_decisions(self, namespace: str, decisions: Iterable[Decision], start_seq: int) -> int: ...
    def put_fact_ops(self, namespace: str, operations: Iterable[FactOperation], start_seq: int) -> int: ...
    def put_clusters(self, namespace: str, clusters: Iterable[CandidateCluster]) -> None: ...
    def put_active_facts(self, namespace: str, rows: Iterable[tuple[ActiveFact, np.ndarray]]) -> None: ...
    def put_facts(self, namespace: str, rows: Iterable[tuple[CoreFact, np.ndarray]]) -> None: ...
    def delete(self, kind: RecordKind, namespace: str, ids: Iterable[str | int]) -> None: ...
    def delete_namespace(self, namespace: str) -> None: ...
    # reads, in record order
    def messages(self, namespace: str, with_vectors: bool = True) -> list[StoredMessage]: ...
    def sentences(self, namespace: str, with_vectors: bool = False) -> list[tuple[Sentence, np.ndarray | None]]: ...
    def sentence_lexical(self, namespace: str) -> dict[str, SparseVector]: ...
    def segments(self, namespace: str) -> list[TopicalSegment]: ...
    def trajectories(self, namespace: str) -> list[EventTrajectory]: ...
    def decisions(self, namespace: str, kind: Literal["segment", "trajectory"] | None = None) -> list[Decision]: ...
    def facts(self, namespace: str, with_vectors: bool = False) -> list[tuple[CoreFact, np.ndarray | None]]: ...
    def fact_ops(self, namespace: str) -> list[FactOperation]: ...
    def clusters(self, namespace: str) -> list[CandidateCluster]: ...
    def active_facts(self, namespace: str) -> list[ActiveFact]: ...
    def speakers(self, namespace: str) -> list[str]: ...
    def count(self, kind: RecordKind, namespace: str) -> int: ...
    def namespaces(self) -> list[str]: ...
    # searches, best first
    def search_facts(self, namespace: str, vector: np.ndarray, limit: int, history: bool = False,
                     **equals: Any) -> list[tuple[CoreFact, float]]: ...
    def search_active_facts(self, namespace: str, vector: np.ndarray,
                            limit: int) -> list[tuple[ActiveFact, float]]: ...
    def search_messages(self, namespace: str, vector: np.ndarray, limit: int) -> list[tuple[Message, float]]: ...
    def hybrid_search(self, namespace: str, query: SentenceQuery, limit: int,
                      path_scores: bool = True) -> list[SentenceHit]: ...
