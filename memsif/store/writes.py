"""The store's writes: records upserted into their collections, logs appended in order."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from qdrant_client import models

from memsif.lexical import SparseVector
from memsif.records import (
    ActiveFact,
    CandidateCluster,
    CoreFact,
    Decision,
    EventTrajectory,
    FactOperation,
    Sentence,
    TopicalSegment,
)
from memsif.store.base import RecordKind, StoredMessage
from memsif.store.points import (
    COLLECTION_OF,
    DENSE,
    LEXICAL,
    MESSAGES,
    Collections,
    made,
    point_id,
    sparse,
    upsert,
)


class StoreWrites:
    """Upserts of every record kind (§3.2–3.4) and the append-only logs (decisions, CoreFact operations)."""

    def __init__(self, base: Collections) -> None:
        self.base = base

    def put_messages(self, namespace: str, rows: Iterable[StoredMessage]) -> None:
        points = [
            models.PointStruct(
                id=point_id(namespace, "message", r.message.id),
                vector=r.vector.astype(float).tolist(),
                payload={**r.message.model_dump(mode="json"), "entities": sorted(r.entities),
                         "segment_id": r.segment_id},
            )
            for r in rows
        ]
        upsert(self.base.client, self.base.location, MESSAGES, points)


    def put_sentences(self, namespace: str, rows: Iterable[tuple[Sentence, np.ndarray, SparseVector]]) -> None:
        """Upsert sentences with their (d,) dense vector and sparse lexical vector."""
        rows = list(rows)
        if not rows:
            return
        base = self.base
        upsert(base.client, base.location, made(base.sentences(namespace, create=True), namespace, base.location), [
            models.PointStruct(id=point_id(namespace, "sentence", s.id), payload=s.model_dump(mode="json"),
                               vector={DENSE: v.astype(float).tolist(),
                                       **({LEXICAL: sparse(sp)} if sp else {})})
            for s, v, sp in rows
        ])

    def set_sentence_trajectories(self, namespace: str, trajectory_of: dict[str, str | None]) -> None:
        """Set the ``trajectory_id`` of every sentence of each segment in ``trajectory_of`` (segment id →
        trajectory id): a segment's sentences are written before its trajectory may change (an ingest
        that continues it, the repair of an interrupted one, a store made before sentences held it)."""
        collection = self.base.sentences(namespace)
        if collection is None:
            return
        for segment_id, trajectory_id in trajectory_of.items():
            self.base.client.set_payload(collection, payload={"trajectory_id": trajectory_id}, wait=True,
                                     points=models.Filter(must=[models.FieldCondition(
                                         key="segment_id", match=models.MatchValue(value=segment_id))]))

    def put_segments(self, namespace: str, rows: Iterable[tuple[TopicalSegment, np.ndarray]]) -> None:
        """Upsert Topical Segments with their (d,) mean-pooled embeddings."""
        self._put_points("segment", namespace, rows)

    def put_trajectories(self, namespace: str, rows: Iterable[tuple[EventTrajectory, np.ndarray]]) -> None:
        """Upsert Event Trajectories with their (d,) mean-pooled embeddings."""
        self._put_points("trajectory", namespace, rows)

    def put_decisions(self, namespace: str, decisions: Iterable[Decision], start_seq: int) -> int:
        """Append Structured Interaction Memory decisions numbered from ``start_seq`` (each record's
        ``seq`` is set); returns the next free number."""
        return self._append("decision", namespace, decisions, start_seq)

    def put_fact_ops(self, namespace: str, operations: Iterable[FactOperation], start_seq: int) -> int:
        """Append CoreFact operations to the log numbered from ``start_seq``; returns the next free number."""
        return self._append("fact_op", namespace, operations, start_seq)

    def _append(self, kind: RecordKind, namespace: str, rows: Iterable[Any], start_seq: int) -> int:
        rows = list(rows)
        for seq, row in enumerate(rows, start_seq):
            row.seq = seq
        self._put_points(kind, namespace, ((row, None) for row in rows), key=lambda row: str(row.seq))
        return start_seq + len(rows)

    def put_clusters(self, namespace: str, clusters: Iterable[CandidateCluster]) -> None:
        """Upsert candidate clusters C_k (§3.4) with their embeddings (in the payload)."""
        self._put_points("cluster", namespace, ((c, None) for c in clusters))

    def put_active_facts(self, namespace: str, rows: Iterable[tuple[ActiveFact, np.ndarray]]) -> None:
        """Upsert promoted ActiveFacts with their (d,) statement embeddings."""
        self._put_points("active_fact", namespace, rows)

    def put_facts(self, namespace: str, rows: Iterable[tuple[CoreFact, np.ndarray]]) -> None:
        """Upsert CoreFacts (current and superseded) with their (d,) statement embeddings."""
        self._put_points("fact", namespace, rows)

    def _put_points(self, kind: RecordKind, namespace: str, rows: Iterable[tuple[Any, np.ndarray | None]],
                    key: Callable[[Any], str] = lambda record: record.id) -> None:
        """Upsert records of ``kind`` into its collection, each with its (d,) vector (None: a collection
        without vectors); the payload is the record's JSON and its ``namespace``."""
        upsert(self.base.client, self.base.location, COLLECTION_OF[kind], [
            models.PointStruct(id=point_id(namespace, kind, key(record)),
                               vector={} if vector is None else vector.astype(float).tolist(),
                               payload={**record.model_dump(mode="json"), "namespace": namespace})
            for record, vector in rows
        ])
