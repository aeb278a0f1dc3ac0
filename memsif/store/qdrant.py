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

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from qdrant_client import models

from memsif.errors import EmbedderError, StoreError
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
from memsif.store.base import RecordKind, SentenceHit, SentenceQuery, StoredMessage
from memsif.store.connection import WhenBusy, connect

if TYPE_CHECKING:
    from memsif.config import MemSIFConfig

_MESSAGES = "memsif_messages"
_SEGMENTS = "memsif_segments"
_TRAJECTORIES = "memsif_trajectories"
_DECISIONS = "memsif_decisions"
_FACTS = "memsif_facts"
_FACT_OPS = "memsif_fact_ops"
_ACTIVE_FACTS = "memsif_active_facts"
_CLUSTERS = "memsif_clusters"
_META = "memsif_meta"
#: Prefix of the per-namespace sentence collections (``sentence_collection``). Collection names are
#: the store's own: engine code reads and writes records through the methods below.
_SENTENCES = "memsif_sentences_"
#: Named vectors of the sentence collection.
DENSE, LEXICAL = "dense", "lexical"
#: Reciprocal-rank-fusion constant (Cormack et al. 2009) for dense + lexical sentence search.
RRF_K = 60
_VECTOR_COLLECTIONS = (_MESSAGES, _SEGMENTS, _TRAJECTORIES, _FACTS, _ACTIVE_FACTS)
_LOG_COLLECTIONS = (_DECISIONS, _FACT_OPS, _CLUSTERS)
_ALL_COLLECTIONS = (*_VECTOR_COLLECTIONS, *_LOG_COLLECTIONS)
#: Each kind of record's collection.
_COLLECTION_OF = {"message": _MESSAGES, "segment": _SEGMENTS, "trajectory": _TRAJECTORIES, "decision": _DECISIONS,
                  "fact": _FACTS, "fact_op": _FACT_OPS, "cluster": _CLUSTERS, "active_fact": _ACTIVE_FACTS}
log = logging.getLogger(__name__)
_ID_SPACE = uuid.UUID("6f1c1c3e-5c0e-4d7a-9a57-2b1d3e0f4a11")


def sentence_collection(namespace: str) -> str:
    """Name of ``namespace``'s sentence collection (stable: a UUID-5 of the namespace)."""
    return _SENTENCES + uuid.uuid5(_ID_SPACE, f"sentences\x1f{namespace}").hex[:20]


def point_id(namespace: str, kind: str, record_id: str) -> str:
    """Stable UUID of a record: the same (namespace, kind, id) always maps to the same point."""
    return str(uuid.uuid5(_ID_SPACE, f"{namespace}\x1f{kind}\x1f{record_id}"))


def _matches(key: str, value: Any) -> models.FieldCondition:
    """Payload field ``key`` equals ``value``, or one of its values when it is a list or tuple."""
    return models.FieldCondition(key=key, match=models.MatchAny(any=list(value)) if isinstance(value, list | tuple)
                                 else models.MatchValue(value=value))


def _ns_filter(namespace: str, **equals: Any) -> models.Filter:
    """Records of ``namespace`` whose payload field equals a value, or one of a list's values."""
    return models.Filter(must=[_matches("namespace", namespace), *(_matches(k, v) for k, v in equals.items())])


def _stored_message(payload: dict[str, Any] | None, vector: Any) -> StoredMessage:
    """A message point's payload (the Message, its entities and segment) and vector as a record."""
    payload = dict(payload or {})
    entities = frozenset(payload.pop("entities", []))
    segment_id = payload.pop("segment_id", None)
    return StoredMessage(Message(**payload), np.asarray(vector, dtype=np.float32), entities, segment_id)


def _sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))


def _hybrid_requests(query: SentenceQuery, limit: int,
                     flt: models.Filter | None) -> tuple[models.QueryRequest, list[models.QueryRequest]]:
    """The Query API requests of a hybrid sentence search: the fused one (dense and lexical prefetches,
    reciprocal rank fusion, then the speaker boost as a formula) and one per search path (its own
    scores, for the trace)."""
    candidates = query.candidates
    dense_q = models.Prefetch(query=query.dense.astype(float).tolist(), using=DENSE, filter=flt, limit=candidates)
    requests = [models.QueryRequest(query=dense_q.query, using=DENSE, filter=flt, limit=candidates,
                                    with_payload=False)]
    prefetch = [dense_q]
    if query.lexical:
        lex_q = models.Prefetch(query=_sparse(query.lexical), using=LEXICAL, filter=flt, limit=candidates)
        prefetch.append(lex_q)
        requests.append(models.QueryRequest(query=lex_q.query, using=LEXICAL, filter=flt, limit=candidates,
                                            with_payload=False))
    rrf = models.RrfQuery(rrf=models.Rrf(k=RRF_K))
    if not (query.speakers and query.speaker_boost):
        return models.QueryRequest(prefetch=prefetch, query=rrf, filter=flt, limit=limit, with_payload=True), requests
    said = models.FieldCondition(key="speaker", match=models.MatchAny(any=list(query.speakers)))
    boost = models.FormulaQuery(formula=models.SumExpression(
        sum=["$score", models.MultExpression(mult=[query.speaker_boost, "$score", said])]))
    return models.QueryRequest(prefetch=models.Prefetch(prefetch=prefetch, query=rrf, filter=flt, limit=2 * candidates),
                               query=boost, limit=limit, with_payload=True), requests


def _sentence_filter(query: SentenceQuery) -> models.Filter | None:
    """The payload filter of ``query.within`` (an empty list keeps nothing) and ``query.excluded``
    (an empty list leaves nothing out); None when both are empty."""
    must: list[models.Condition] = [_matches(k, list(v)) for k, v in query.within.items()]
    must_not: list[models.Condition] = [_matches(k, list(v)) for k, v in query.excluded.items() if v]
    return models.Filter(must=must or None, must_not=must_not or None) if must or must_not else None


def _ensure_collections(client: Any, is_server: bool, location: str, embedder_name: str, dim: int) -> None:
    """Create the missing collections on ``client``; check the store was built with the same embedder.

    Raises:
        EmbedderError: the store holds vectors of another embedder or dimension.
    """
    existing = {c.name for c in client.get_collections().collections}
    if _META not in existing:
        client.create_collection(_META, vectors_config={})
    recorded = _recorded_embedder(client)
    if recorded is not None:
        _check_embedder(recorded, embedder_name, dim, location)
    else:
        client.upsert(_META, points=[models.PointStruct(
            id=point_id("", "meta", "embedder"), vector={}, payload={"embedder": embedder_name, "dim": dim})])
    for name in _VECTOR_COLLECTIONS:
        if name not in existing:
            client.create_collection(name, vectors_config=models.VectorParams(size=dim,
                                                                              distance=models.Distance.COSINE))
            if is_server:  # embedded Qdrant ignores payload indexes
                client.create_payload_index(name, "namespace", models.PayloadSchemaType.KEYWORD)
    for name in _LOG_COLLECTIONS:
        if name not in existing:
            client.create_collection(name, vectors_config={})


def _create_sentence_collection(client: Any, is_server: bool, name: str, dim: int | None) -> None:
    """A namespace's sentence collection: a dense vector (cosine) and a sparse lexical one (Qdrant's IDF)."""
    client.create_collection(
        name, vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
        sparse_vectors_config={LEXICAL: models.SparseVectorParams(modifier=models.Modifier.IDF)})
    if is_server:
        for key in ("segment_id", "speaker"):
            client.create_payload_index(name, key, models.PayloadSchemaType.KEYWORD)


def _recorded_embedder(client: Any) -> tuple[str, int] | None:
    """The embedder name and dimension in ``client``'s meta collection; None when it has none."""
    if not client.collection_exists(_META):
        return None
    found = client.retrieve(_META, ids=[point_id("", "meta", "embedder")], with_payload=True)
    if not found:
        return None
    meta = found[0].payload or {}
    return str(meta.get("embedder")), int(meta.get("dim", -1))


def _check_embedder(recorded: tuple[str, int], embedder_name: str, dim: int, location: str) -> None:
    """Raises EmbedderError when the store's ``recorded`` embedder (name, dimension) is another one."""
    if recorded != (embedder_name, dim):
        raise EmbedderError(
            f"This store ({location}) was built with embedder {recorded[0]!r} "
            f"(dim {recorded[1]}), not {embedder_name!r} (dim {dim}). Use the same "
            "MEMSIF_EMBEDDER_MODEL, or re-embed the memory into a new folder: "
            f"python -m memsif reembed --from {Path(location).parent} --data-dir NEW_FOLDER "
            "(with the new MEMSIF_EMBEDDER_MODEL set)."
        )


def _upsert(client: Any, location: str, collection: str, points: list[models.PointStruct]) -> None:
    """Upsert ``points`` in batches of 256, waiting for each.

    Raises:
        StoreError: the write failed (says where).
    """
    for start in range(0, len(points), 256):
        try:
            client.upsert(collection, points=points[start:start + 256], wait=True)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Writing to {collection} at {location} failed: {exc}") from exc


def _made(collection: str | None, namespace: str, location: str) -> str:
    """A sentence collection that ``create=True`` made (never None)."""
    if collection is None:
        raise StoreError(f"The sentence collection of {namespace!r} could not be made in {location}.")
    return collection


def _named_vector(rec: models.Record, name: str) -> Any:
    """The vector called ``name`` of a point read with named vectors (None when it has none)."""
    vectors = rec.vector
    return vectors.get(name) if isinstance(vectors, dict) else None


def _scroll(client: Any, collection: str, flt: models.Filter | None,
            with_vectors: bool | list[str] = False) -> Iterator[models.Record]:
    """Every record of ``collection`` that ``flt`` keeps, with payload, 512 at a time."""
    offset = None
    while True:
        records, offset = client.scroll(collection, scroll_filter=flt, limit=512, offset=offset,
                                        with_payload=True, with_vectors=with_vectors)
        yield from records
        if offset is None:
            return


class MemoryStore:
    """All engine state, persisted in Qdrant.

    Raises (from the constructor):
        StoreError: the embedded folder is locked by another process, damaged (``check_folder``) or
            cannot be opened. A folder that cannot be written opens read-only (``read_only``).
    Every later call raises StoreError for a failure of the store itself (``_Guarded``).
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
        _ensure_collections(self._client, self._is_server, self.location, embedder_name, dim)
        self.dim = dim

    def recorded_embedder(self) -> tuple[str, int] | None:  # the embedder it was built with; None: new
        return _recorded_embedder(self._client)

    def close(self) -> None:
        self._client.close()
        if self._snapshot is not None:
            self._snapshot.cleanup()

    # ------------------------------------------------------------------ writes
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
        _upsert(self._client, self.location, _MESSAGES, points)

    def _sentences(self, namespace: str, create: bool = False) -> str | None:
        """The namespace's sentence collection; None when it has none (and ``create`` is False)."""
        name = sentence_collection(namespace)
        if self._client.collection_exists(name):
            return name
        if not create:
            return None
        _create_sentence_collection(self._client, self._is_server, name, self.dim)
        return name

    def put_sentences(self, namespace: str, rows: Iterable[tuple[Sentence, np.ndarray, SparseVector]]) -> None:
        """Upsert sentences with their (d,) dense vector and sparse lexical vector."""
        rows = list(rows)
        if not rows:
            return
        _upsert(self._client, self.location, _made(self._sentences(namespace, create=True), namespace, self.location), [
            models.PointStruct(id=point_id(namespace, "sentence", s.id), payload=s.model_dump(mode="json"),
                               vector={DENSE: v.astype(float).tolist(),
                                       **({LEXICAL: _sparse(sp)} if sp else {})})
            for s, v, sp in rows
        ])

    def set_sentence_trajectories(self, namespace: str, trajectory_of: dict[str, str | None]) -> None:
        """Set the ``trajectory_id`` of every sentence of each segment in ``trajectory_of`` (segment id →
        trajectory id): a segment's sentences are written before its trajectory may change (an ingest
        that continues it, the repair of an interrupted one, a store made before sentences held it)."""
        collection = self._sentences(namespace)
        if collection is None:
            return
        for segment_id, trajectory_id in trajectory_of.items():
            self._client.set_payload(collection, payload={"trajectory_id": trajectory_id}, wait=True,
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
        _upsert(self._client, self.location, _COLLECTION_OF[kind], [
            models.PointStruct(id=point_id(namespace, kind, key(record)),
                               vector={} if vector is None else vector.astype(float).tolist(),
                               payload={**record.model_dump(mode="json"), "namespace": namespace})
            for record, vector in rows
        ])

    def facts(self, namespace: str, with_vectors: bool = False) -> list[tuple[CoreFact, np.ndarray | None]]:
        """Every CoreFact of the namespace (current and superseded) in id order."""
        rows = []
        for rec in _scroll(self._client, _FACTS, _ns_filter(namespace), with_vectors=with_vectors):
            vector = np.asarray(rec.vector, dtype=np.float32) if with_vectors else None
            rows.append((CoreFact(**(rec.payload or {})), vector))
        return sorted(rows, key=lambda r: record_number(r[0].id))

    def search_facts(self, namespace: str, vector: np.ndarray, limit: int,
                     **equals: Any) -> list[tuple[CoreFact, float]]:
        """Current CoreFacts of ``namespace`` nearest to ``vector`` ((d,)) by cosine, best first; only
        those whose payload matches ``equals`` when given (e.g. ``subject=["Melanie"]``)."""
        return [(CoreFact(**payload), score) for payload, score
                in self._search(_FACTS, namespace, vector, limit, status="current", **equals)]

    def search_active_facts(self, namespace: str, vector: np.ndarray, limit: int) -> list[tuple[ActiveFact, float]]:
        """Promoted ActiveFacts of ``namespace`` nearest to ``vector`` ((d,)) by cosine, best first."""
        return [(ActiveFact(**payload), score)
                for payload, score in self._search(_ACTIVE_FACTS, namespace, vector, limit)]

    def search_messages(self, namespace: str, vector: np.ndarray, limit: int) -> list[tuple[Message, float]]:
        """Messages of ``namespace`` nearest to ``vector`` ((d,)) by cosine, best first."""
        return [(_stored_message(payload, []).message, score)
                for payload, score in self._search(_MESSAGES, namespace, vector, limit)]

    def _search(self, collection: str, namespace: str, vector: np.ndarray, limit: int,
                **equals: Any) -> list[tuple[dict[str, Any], float]]:
        found = models.Filter(must=_ns_filter(namespace, **equals).must, must_not=[_matches("status", "deleted")])
        result = self._client.query_points(collection, query=vector.astype(float).tolist(), query_filter=found,
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
        collection = self._sentences(namespace)
        if collection is None:
            return []
        fused_request, requests = _hybrid_requests(query, limit, _sentence_filter(query))
        fused, *paths = self._client.query_batch_points(
            collection, requests=[fused_request, *(requests if path_scores else [])])
        by_path = [{p.id: float(p.score) for p in result.points} for result in paths]
        dense_scores = by_path[0] if by_path else {}
        lexical_scores = by_path[1] if len(by_path) > 1 else {}
        return [SentenceHit(Sentence(**p.payload), float(p.score), dense_scores.get(p.id), lexical_scores.get(p.id))
                for p in fused.points]

    def speakers(self, namespace: str) -> list[str]:
        """The namespace's speakers, most frequent first (a facet over the sentence index)."""
        collection = self._sentences(namespace)
        if collection is None:
            return []
        return [str(h.value) for h in self._client.facet(collection, key="speaker", limit=1000).hits]

    def sentences(self, namespace: str, with_vectors: bool = False) -> list[tuple[Sentence, np.ndarray | None]]:
        """The namespace's sentences in chronological order, with their dense vectors if asked."""
        rows = []
        collection = self._sentences(namespace)
        if collection is None:
            return []
        for rec in _scroll(self._client, collection, None, with_vectors=[DENSE] if with_vectors else False):
            vector = np.asarray(_named_vector(rec, DENSE), dtype=np.float32) if with_vectors else None
            rows.append((Sentence(**(rec.payload or {})), vector))
        return sorted(rows, key=lambda r: (r[0].message_index, r[0].position))

    def sentence_lexical(self, namespace: str) -> dict[str, SparseVector]:
        """Sentence id → its stored sparse lexical vector (empty for a sentence without terms)."""
        collection = self._sentences(namespace)
        if collection is None:
            return {}
        out = {}
        for rec in _scroll(self._client, collection, None, with_vectors=[LEXICAL]):
            sparse = _named_vector(rec, LEXICAL)
            out[str((rec.payload or {})["id"])] = SparseVector(tuple(sparse.indices), tuple(sparse.values)) \
                if isinstance(sparse, models.SparseVector) else SparseVector((), ())
        return out

    def fact_ops(self, namespace: str) -> list[FactOperation]:
        """The CoreFact operation log in order."""
        rows = [FactOperation(**p) for p in self._payloads(_FACT_OPS, namespace)]
        return sorted(rows, key=lambda op: -1 if op.seq is None else op.seq)

    def clusters(self, namespace: str) -> list[CandidateCluster]:
        """Candidate clusters C_k in id order."""
        rows = [CandidateCluster(**p) for p in self._payloads(_CLUSTERS, namespace)]
        return sorted(rows, key=lambda c: record_number(c.id))

    def active_facts(self, namespace: str) -> list[ActiveFact]:
        """Promoted ActiveFacts in id order."""
        rows = [ActiveFact(**p) for p in self._payloads(_ACTIVE_FACTS, namespace)]
        return sorted(rows, key=lambda a: record_number(a.id))

    # ------------------------------------------------------------------ reads
    def _payloads(self, collection: str, namespace: str) -> Iterator[dict[str, Any]]:
        """The payloads of ``namespace``'s records in ``collection``."""
        return ((rec.payload or {}) for rec in _scroll(self._client, collection, _ns_filter(namespace)))

    def messages(self, namespace: str, with_vectors: bool = True) -> list[StoredMessage]:
        """The namespace's messages in chronological order (by ``index``)."""
        out = [_stored_message(rec.payload, rec.vector if with_vectors else [])
               for rec in _scroll(self._client, _MESSAGES, _ns_filter(namespace), with_vectors=with_vectors)]
        out.sort(key=lambda r: r.message.index)
        return out

    def segments(self, namespace: str) -> list[TopicalSegment]:
        segs = [TopicalSegment(**p) for p in self._payloads(_SEGMENTS, namespace)]
        return sorted(segs, key=lambda s: s.index)

    def trajectories(self, namespace: str) -> list[EventTrajectory]:
        trajs = [EventTrajectory(**p) for p in self._payloads(_TRAJECTORIES, namespace)]
        return sorted(trajs, key=lambda t: t.index)

    def decisions(self, namespace: str, kind: Literal["segment", "trajectory"] | None = None) -> list[Decision]:
        """Structured Interaction Memory decisions in the order they were made (one kind, or all)."""
        flt = _ns_filter(namespace, kind=kind) if kind else _ns_filter(namespace)
        rows = [DECISION.validate_python(rec.payload or {}) for rec in _scroll(self._client, _DECISIONS, flt)]
        return sorted(rows, key=lambda d: -1 if d.seq is None else d.seq)

    def count(self, kind: RecordKind, namespace: str) -> int:
        """How many records of ``kind`` ``namespace`` holds."""
        if kind == "sentence":
            name = self._sentences(namespace)
            return int(self._client.count(name, exact=True).count) if name else 0
        return int(self._client.count(_COLLECTION_OF[kind], count_filter=_ns_filter(namespace), exact=True).count)

    def namespaces(self) -> list[str]:
        """Every namespace that has at least one message."""
        names: set[str] = set()
        existing = {c.name for c in self._client.get_collections().collections}
        if _MESSAGES not in existing:
            return []
        offset = None
        while True:
            records, offset = self._client.scroll(_MESSAGES, limit=1024, offset=offset,
                                                  with_payload=["namespace"], with_vectors=False)
            names.update(str((r.payload or {}).get("namespace")) for r in records)
            if offset is None:
                return sorted(names)

    def delete(self, kind: RecordKind, namespace: str, ids: Iterable[str | int]) -> None:
        """Delete records of ``kind`` by id (a decision's id is its ``seq``)."""
        points = [point_id(namespace, kind, str(i)) for i in ids]
        collection = self._sentences(namespace) if kind == "sentence" else _COLLECTION_OF[kind]
        if points and collection:
            self._client.delete(collection, points_selector=models.PointIdsList(points=points), wait=True)

    def delete_namespace(self, namespace: str) -> None:
        """Remove every record of ``namespace`` from every collection."""
        existing = {c.name for c in self._client.get_collections().collections}
        if sentence_collection(namespace) in existing:
            self._client.delete_collection(sentence_collection(namespace))
        for name in _ALL_COLLECTIONS:
            if name in existing:
                self._client.delete(name, points_selector=models.FilterSelector(filter=_ns_filter(namespace)),
                                    wait=True)
