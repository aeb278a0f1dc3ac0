"""MemoryStore over qdrant-client: ``path=`` (embedded, default), ``:memory:`` (tests), ``url=`` (server).

Collections (all records carry ``namespace``; every read filters on it):
  memsif_messages      vector = message embedding; payload = Message + entities + segment_id
  memsif_sentences_<k> one collection per namespace (k = a hash of its name): vectors "dense"
                       (sentence embedding) and "lexical" (sparse BM25 weights, IDF applied by
                       Qdrant over this namespace alone); payload = Sentence (hybrid retrieval,
                       query-local evidence). Per namespace because embedded Qdrant filters payloads
                       in Python point by point: a namespace filter over every session's sentences
                       made one question take seconds.
  memsif_segments      vector = mean-pooled embedding; payload = TopicalSegment
  memsif_trajectories  vector = mean-pooled embedding; payload = EventTrajectory
  memsif_decisions     no vector; payload = SegmentDecision / TrajectoryDecision + seq
  memsif_facts         vector = statement embedding; payload = CoreFact
  memsif_fact_ops      no vector; payload = FactOperation + seq (append-only log)
  memsif_active_facts  vector = statement embedding; payload = ActiveFact
  memsif_clusters      no vector; payload = candidate cluster C_k (statements, queries, sources, embeddings)
  memsif_meta          no vector; the embedder name and dimension the store was built with
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from qdrant_client import models

from memsif.delegated import Delegated
from memsif.store.base import RecordKind
from memsif.store.connection import WhenBusy, connect
from memsif.store.points import (
    ALL_COLLECTIONS,
    COLLECTION_OF,
    MESSAGES,
    RRF_K,
    Collections,
    ensure_collections,
    ns_filter,
    point_id,
    recorded_embedder,
    sentence_collection,
)
from memsif.store.reads import StoreReads
from memsif.store.writes import StoreWrites

if TYPE_CHECKING:
    from memsif.config import MemSIFConfig

__all__ = ["RRF_K", "MemoryStore", "point_id", "sentence_collection"]


class MemoryStore:
    """All engine state, persisted in Qdrant: it holds its ``writes`` (``StoreWrites``) and ``reads``
    (``StoreReads``) over one ``Collections`` (``base``: the client, where it points, the vector size).

    Raises (from the constructor):
        StoreError: the embedded folder is locked by another process, damaged (``check_folder``) or
            cannot be opened. A folder that cannot be written opens read-only (``read_only``).
    Every later call raises StoreError for a failure of the store itself (``connection.Guarded``).
    """

    def __init__(self, *, path: str | Path | None = None, url: str | None = None,
                 api_key: str | None = None, in_memory: bool = False, when_busy: WhenBusy = "refuse") -> None:
        connection = connect(path=path, url=url, api_key=api_key, in_memory=in_memory, when_busy=when_busy)
        self.base = Collections(connection.client, connection.location, connection.is_server)
        self.reads, self.writes = StoreReads(self.base), StoreWrites(self.base)
        self.location, self.read_only, self._snapshot = connection.location, connection.read_only, connection.snapshot
        #: How a read-only store was opened, in words ("" when it was opened as it is).
        self.opened_from = connection.opened_from

    @property
    def dim(self) -> int | None:
        """The vector size, once the collections are ensured (``ensure_collections``)."""
        return self.base.dim

    @dim.setter
    def dim(self, dim: int | None) -> None:
        self.base.dim = dim

    @classmethod
    def for_config(cls, config: MemSIFConfig, when_busy: WhenBusy = "refuse") -> MemoryStore:
        """The store ``config`` names: a Qdrant server (``qdrant_url``) or the embedded folder
        ``<data_dir>/qdrant`` (read from a snapshot while another process holds it, with
        ``when_busy="snapshot"``)."""
        if config.store.qdrant_url:
            return cls(url=config.store.qdrant_url, api_key=config.store.qdrant_api_key)
        return cls(path=config.store.resolved_data_dir / "qdrant", when_busy=when_busy)

    # ------------------------------------------------------------------ its parts' reads and writes
    messages = Delegated("reads", StoreReads.messages)
    sentences = Delegated("reads", StoreReads.sentences)
    sentence_lexical = Delegated("reads", StoreReads.sentence_lexical)
    segments = Delegated("reads", StoreReads.segments)
    trajectories = Delegated("reads", StoreReads.trajectories)
    decisions = Delegated("reads", StoreReads.decisions)
    facts = Delegated("reads", StoreReads.facts)
    fact_ops = Delegated("reads", StoreReads.fact_ops)
    clusters = Delegated("reads", StoreReads.clusters)
    active_facts = Delegated("reads", StoreReads.active_facts)
    speakers = Delegated("reads", StoreReads.speakers)
    search_facts = Delegated("reads", StoreReads.search_facts)
    search_active_facts = Delegated("reads", StoreReads.search_active_facts)
    search_messages = Delegated("reads", StoreReads.search_messages)
    hybrid_search = Delegated("reads", StoreReads.hybrid_search)
    put_messages = Delegated("writes", StoreWrites.put_messages)
    put_sentences = Delegated("writes", StoreWrites.put_sentences)
    set_sentence_trajectories = Delegated("writes", StoreWrites.set_sentence_trajectories)
    put_segments = Delegated("writes", StoreWrites.put_segments)
    put_trajectories = Delegated("writes", StoreWrites.put_trajectories)
    put_decisions = Delegated("writes", StoreWrites.put_decisions)
    put_fact_ops = Delegated("writes", StoreWrites.put_fact_ops)
    put_clusters = Delegated("writes", StoreWrites.put_clusters)
    put_active_facts = Delegated("writes", StoreWrites.put_active_facts)
    put_facts = Delegated("writes", StoreWrites.put_facts)

    # ------------------------------------------------------------------ setup
    def ensure_collections(self, embedder_name: str, dim: int) -> None:
        """Create missing collections; check the store was built with the same embedder.

        Raises:
            EmbedderError: the store holds vectors of another embedder or dimension.
        """
        ensure_collections(self.base.client, self.base.is_server, self.location, embedder_name, dim)
        self.dim = dim

    def recorded_embedder(self) -> tuple[str, int] | None:  # the embedder it was built with; None: new
        return recorded_embedder(self.base.client)

    def close(self) -> None:
        self.base.client.close()
        if self._snapshot is not None:
            self._snapshot.cleanup()


    def count(self, kind: RecordKind, namespace: str) -> int:
        """How many records of ``kind`` ``namespace`` holds."""
        if kind == "sentence":
            name = self.base.sentences(namespace)
            return int(self.base.client.count(name, exact=True).count) if name else 0
        return int(self.base.client.count(COLLECTION_OF[kind], count_filter=ns_filter(namespace), exact=True).count)

    def namespaces(self) -> list[str]:
        """Every namespace that has at least one message."""
        names: set[str] = set()
        existing = {c.name for c in self.base.client.get_collections().collections}
        if MESSAGES not in existing:
            return []
        offset = None
        while True:
            records, offset = self.base.client.scroll(MESSAGES, limit=1024, offset=offset,
                                                  with_payload=["namespace"], with_vectors=False)
            names.update(str((r.payload or {}).get("namespace")) for r in records)
            if offset is None:
                return sorted(names)

    def delete(self, kind: RecordKind, namespace: str, ids: Iterable[str | int]) -> None:
        """Delete records of ``kind`` by id (a decision's id is its ``seq``)."""
        points = [point_id(namespace, kind, str(i)) for i in ids]
        collection = self.base.sentences(namespace) if kind == "sentence" else COLLECTION_OF[kind]
        if points and collection:
            self.base.client.delete(collection, points_selector=models.PointIdsList(points=points), wait=True)

    def delete_namespace(self, namespace: str) -> None:
        """Remove every record of ``namespace`` from every collection."""
        existing = {c.name for c in self.base.client.get_collections().collections}
        if sentence_collection(namespace) in existing:
            self.base.client.delete_collection(sentence_collection(namespace))
        for name in ALL_COLLECTIONS:
            if name in existing:
                self.base.client.delete(name, points_selector=models.FilterSelector(filter=ns_filter(namespace)),
                                    wait=True)
