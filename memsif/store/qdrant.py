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

from memsif.store.base import RecordKind
from memsif.store.connection import WhenBusy, connect
from memsif.store.points import (
    ALL_COLLECTIONS,
    COLLECTION_OF,
    MESSAGES,
    RRF_K,
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


class MemoryStore(StoreWrites, StoreReads):
    """All engine state, persisted in Qdrant: its writes are ``StoreWrites``', its reads ``StoreReads'``.

    Raises (from the constructor):
        StoreError: the embedded folder is locked by another process, damaged (``check_folder``) or
            cannot be opened. A folder that cannot be written opens read-only (``read_only``).
    Every later call raises StoreError for a failure of the store itself (``connection.Guarded``).
    """

    def __init__(self, *, path: str | Path | None = None, url: str | None = None,
                 api_key: str | None = None, in_memory: bool = False, when_busy: WhenBusy = "refuse") -> None:
        connection = connect(path=path, url=url, api_key=api_key, in_memory=in_memory, when_busy=when_busy)
        self._client, self.location, self._snapshot = connection.client, connection.location, connection.snapshot
        self._is_server, self.read_only = connection.is_server, connection.read_only
        #: How a read-only store was opened, in words ("" when it was opened as it is).
        self.opened_from = connection.opened_from
        self.dim: int | None = None

    @classmethod
    def for_config(cls, config: MemSIFConfig, when_busy: WhenBusy = "refuse") -> MemoryStore:
        """The store ``config`` names: a Qdrant server (``qdrant_url``) or the embedded folder
        ``<data_dir>/qdrant`` (read from a snapshot while another process holds it, with
        ``when_busy="snapshot"``)."""
        if config.store.qdrant_url:
            return cls(url=config.store.qdrant_url, api_key=config.store.qdrant_api_key)
        return cls(path=config.store.resolved_data_dir / "qdrant", when_busy=when_busy)

    # ------------------------------------------------------------------ setup
    def ensure_collections(self, embedder_name: str, dim: int) -> None:
        """Create missing collections; check the store was built with the same embedder.

        Raises:
            EmbedderError: the store holds vectors of another embedder or dimension.
        """
        ensure_collections(self._client, self._is_server, self.location, embedder_name, dim)
        self.dim = dim

    def recorded_embedder(self) -> tuple[str, int] | None:  # the embedder it was built with; None: new
        return recorded_embedder(self._client)

    def close(self) -> None:
        self._client.close()
        if self._snapshot is not None:
            self._snapshot.cleanup()


    def count(self, kind: RecordKind, namespace: str) -> int:
        """How many records of ``kind`` ``namespace`` holds."""
        if kind == "sentence":
            name = self._sentences(namespace)
            return int(self._client.count(name, exact=True).count) if name else 0
        return int(self._client.count(COLLECTION_OF[kind], count_filter=ns_filter(namespace), exact=True).count)

    def namespaces(self) -> list[str]:
        """Every namespace that has at least one message."""
        names: set[str] = set()
        existing = {c.name for c in self._client.get_collections().collections}
        if MESSAGES not in existing:
            return []
        offset = None
        while True:
            records, offset = self._client.scroll(MESSAGES, limit=1024, offset=offset,
                                                  with_payload=["namespace"], with_vectors=False)
            names.update(str((r.payload or {}).get("namespace")) for r in records)
            if offset is None:
                return sorted(names)

    def delete(self, kind: RecordKind, namespace: str, ids: Iterable[str | int]) -> None:
        """Delete records of ``kind`` by id (a decision's id is its ``seq``)."""
        points = [point_id(namespace, kind, str(i)) for i in ids]
        collection = self._sentences(namespace) if kind == "sentence" else COLLECTION_OF[kind]
        if points and collection:
            self._client.delete(collection, points_selector=models.PointIdsList(points=points), wait=True)

    def delete_namespace(self, namespace: str) -> None:
        """Remove every record of ``namespace`` from every collection."""
        existing = {c.name for c in self._client.get_collections().collections}
        if sentence_collection(namespace) in existing:
            self._client.delete_collection(sentence_collection(namespace))
        for name in ALL_COLLECTIONS:
            if name in existing:
                self._client.delete(name, points_selector=models.FilterSelector(filter=ns_filter(namespace)),
                                    wait=True)
