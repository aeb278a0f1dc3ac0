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

import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from memsif.errors import EmbedderError, StoreError
from memsif.lexical import SparseVector
from memsif.records import CoreFact, EventTrajectory, Message, Sentence, TopicalSegment

MESSAGES = "memsif_messages"
SEGMENTS = "memsif_segments"
TRAJECTORIES = "memsif_trajectories"
DECISIONS = "memsif_decisions"
FACTS = "memsif_facts"
FACT_OPS = "memsif_fact_ops"
ACTIVE_FACTS = "memsif_active_facts"
CLUSTERS = "memsif_clusters"
META = "memsif_meta"
#: Prefix of the per-namespace sentence collections (``sentence_collection``).
SENTENCES = "memsif_sentences_"
#: Named vectors of the sentence collection.
DENSE, LEXICAL = "dense", "lexical"
#: Reciprocal-rank-fusion constant (Cormack et al. 2009) for dense + lexical sentence search.
RRF_K = 60
_VECTOR_COLLECTIONS = (MESSAGES, SEGMENTS, TRAJECTORIES, FACTS, ACTIVE_FACTS)
_LOG_COLLECTIONS = (DECISIONS, FACT_OPS, CLUSTERS)
_ALL_COLLECTIONS = (*_VECTOR_COLLECTIONS, *_LOG_COLLECTIONS)
_ID_SPACE = uuid.UUID("6f1c1c3e-5c0e-4d7a-9a57-2b1d3e0f4a11")


def sentence_collection(namespace: str) -> str:
    """Name of ``namespace``'s sentence collection (stable: a UUID-5 of the namespace)."""
    return SENTENCES + uuid.uuid5(_ID_SPACE, f"sentences\x1f{namespace}").hex[:20]


def point_id(namespace: str, kind: str, record_id: str) -> str:
    """Stable UUID of a record: the same (namespace, kind, id) always maps to the same point."""
    return str(uuid.uuid5(_ID_SPACE, f"{namespace}\x1f{kind}\x1f{record_id}"))


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
        return [name for name, v in ((DENSE, self.dense), (LEXICAL, self.lexical)) if v is not None]


@dataclass
class StoredMessage:
    """A message as stored: the record, its (d,) embedding, key entities and segment."""

    message: Message
    vector: np.ndarray
    entities: frozenset[str]
    segment_id: str | None


def _ns_filter(namespace: str, **equals: Any) -> models.Filter:
    """Records of ``namespace`` whose payload field equals a value, or one of a list's values."""
    must = [models.FieldCondition(key="namespace", match=models.MatchValue(value=namespace))]
    must += [models.FieldCondition(key=k, match=models.MatchAny(any=list(v)) if isinstance(v, list | tuple)
                                   else models.MatchValue(value=v)) for k, v in equals.items()]
    return models.Filter(must=must)


def _sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))


class _Serialised:
    """Embedded Qdrant (in-process dicts and SQLite) is not thread-safe; the app serves several
    sessions from worker threads, so every client call on it runs under one lock. Calls are short
    (one upsert batch, one scroll page, one search); a server client needs no such lock."""

    def __init__(self, client: QdrantClient) -> None:
        self._client = client
        self._lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)
        return call


class MemoryStore:
    """All engine state, persisted in Qdrant.

    Raises (from the constructor):
        StoreError: the embedded folder is locked by another process or cannot be opened.
    """

    def __init__(self, *, path: str | Path | None = None, url: str | None = None,
                 api_key: str | None = None, in_memory: bool = False) -> None:
        if sum(bool(x) for x in (path, url, in_memory)) != 1:
            raise StoreError("Give exactly one of path= (embedded folder), url= (server) or in_memory=True.")
        self.location = str(path or url or ":memory:")
        self._is_server = bool(url)
        try:
            if in_memory:
                self._client = _Serialised(QdrantClient(location=":memory:", force_disable_check_same_thread=True))
            elif url:
                self._client = QdrantClient(url=url, api_key=api_key or None)
            else:
                Path(path).mkdir(parents=True, exist_ok=True)
                self._client = _Serialised(QdrantClient(path=str(path), force_disable_check_same_thread=True))
        except (RuntimeError, BlockingIOError) as exc:
            if "already accessed" in str(exc) or isinstance(exc, BlockingIOError):
                raise StoreError(
                    f"The memory folder {path} is in use by another MemSIF process (embedded Qdrant "
                    "allows one). Stop that process, use another --data-dir, or run a Qdrant server "
                    "and set MEMSIF_QDRANT_URL."
                ) from exc
            raise StoreError(f"Could not open the memory store at {self.location}: {exc}") from exc
        self.dim: int | None = None

    # ------------------------------------------------------------------ setup
    def ensure_collections(self, embedder_name: str, dim: int) -> None:
        """Create missing collections; check the store was built with the same embedder.

        Raises:
            EmbedderError: the store holds vectors of another embedder or dimension.
        """
        existing = {c.name for c in self._client.get_collections().collections}
        if META not in existing:
            self._client.create_collection(META, vectors_config={})
        found = self._client.retrieve(META, ids=[point_id("", "meta", "embedder")], with_payload=True)
        if found:
            meta = found[0].payload or {}
            if meta.get("embedder") != embedder_name or int(meta.get("dim", -1)) != dim:
                raise EmbedderError(
                    f"This store ({self.location}) was built with embedder {meta.get('embedder')!r} "
                    f"(dim {meta.get('dim')}), not {embedder_name!r} (dim {dim}). Use the same "
                    "MEMSIF_EMBEDDER_MODEL, or re-embed the memory into a new folder: "
                    f"python -m memsif reembed --from {Path(self.location).parent} --data-dir NEW_FOLDER "
                    "(with the new MEMSIF_EMBEDDER_MODEL set)."
                )
        else:
            self._client.upsert(META, points=[models.PointStruct(
                id=point_id("", "meta", "embedder"), vector={}, payload={"embedder": embedder_name, "dim": dim})])
        for name in _VECTOR_COLLECTIONS:
            if name not in existing:
                self._client.create_collection(
                    name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE))
                if self._is_server:  # embedded Qdrant ignores payload indexes
                    self._client.create_payload_index(name, "namespace", models.PayloadSchemaType.KEYWORD)
        for name in _LOG_COLLECTIONS:
            if name not in existing:
                self._client.create_collection(name, vectors_config={})
        self.dim = dim

    def close(self) -> None:
        self._client.close()

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
        self._upsert(MESSAGES, points)

    def _sentences(self, namespace: str, create: bool = False) -> str | None:
        """The namespace's sentence collection; None when it has none (and ``create`` is False)."""
        name = sentence_collection(namespace)
        if self._client.collection_exists(name):
            return name
        if not create:
            return None
        self._client.create_collection(
            name, vectors_config={DENSE: models.VectorParams(size=self.dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={LEXICAL: models.SparseVectorParams(modifier=models.Modifier.IDF)})
        if self._is_server:
            for key in ("segment_id", "speaker"):
                self._client.create_payload_index(name, key, models.PayloadSchemaType.KEYWORD)
        return name

    def put_sentences(self, namespace: str, rows: Iterable[tuple[Sentence, np.ndarray, SparseVector]]) -> None:
        """Upsert sentences with their (d,) dense vector and sparse lexical vector."""
        rows = list(rows)
        if not rows:
            return
        self._upsert(self._sentences(namespace, create=True), [
            models.PointStruct(id=point_id(namespace, "sentence", s.id), payload=s.model_dump(mode="json"),
                               vector={DENSE: v.astype(float).tolist(),
                                       **({LEXICAL: _sparse(sp)} if sp else {})})
            for s, v, sp in rows
        ])

    def put_segments(self, namespace: str, rows: Iterable[tuple[TopicalSegment, np.ndarray]]) -> None:
        self._upsert(SEGMENTS, [
            models.PointStruct(id=point_id(namespace, "segment", s.id), vector=v.astype(float).tolist(),
                               payload=s.model_dump(mode="json"))
            for s, v in rows
        ])

    def put_trajectories(self, namespace: str, rows: Iterable[tuple[EventTrajectory, np.ndarray]]) -> None:
        self._upsert(TRAJECTORIES, [
            models.PointStruct(id=point_id(namespace, "trajectory", t.id), vector=v.astype(float).tolist(),
                               payload=t.model_dump(mode="json"))
            for t, v in rows
        ])

    def put_decisions(self, namespace: str, decisions: Iterable[dict[str, Any]], start_seq: int,
                      collection: str = DECISIONS) -> int:
        """Append log payloads numbered from ``start_seq``; returns the next free number."""
        points = []
        seq = start_seq
        kind = "decision" if collection == DECISIONS else "fact_op"
        for payload in decisions:
            points.append(models.PointStruct(id=point_id(namespace, kind, str(seq)), vector={},
                                             payload={**payload, "namespace": namespace, "seq": seq}))
            seq += 1
        self._upsert(collection, points)
        return seq

    def put_facts(self, namespace: str, rows: Iterable[tuple[CoreFact, np.ndarray]]) -> None:
        self._upsert(FACTS, [
            models.PointStruct(id=point_id(namespace, "fact", f.id), vector=v.astype(float).tolist(),
                               payload=f.model_dump(mode="json"))
            for f, v in rows
        ])

    def facts(self, namespace: str, with_vectors: bool = False) -> list[tuple[CoreFact, np.ndarray | None]]:
        """Every CoreFact of the namespace (current and superseded) in id order."""
        rows = []
        for rec in self._scroll(FACTS, _ns_filter(namespace), with_vectors=with_vectors):
            vector = np.asarray(rec.vector, dtype=np.float32) if with_vectors else None
            rows.append((CoreFact(**rec.payload), vector))
        return sorted(rows, key=lambda r: int(r[0].id[1:]))

    def search(self, collection: str, namespace: str, vector: np.ndarray, limit: int,
               **equals: Any) -> list[tuple[dict[str, Any], float]]:
        """Nearest records of ``namespace`` by cosine: (payload, score) best first."""
        result = self._client.query_points(collection, query=vector.astype(float).tolist(),
                                           query_filter=_ns_filter(namespace, **equals), limit=limit,
                                           with_payload=True)
        return [(dict(p.payload or {}), float(p.score)) for p in result.points]

    def hybrid_search(self, namespace: str, dense: np.ndarray, lexical: SparseVector, limit: int,
                      candidates: int = 100, speakers: Sequence[str] = (), speaker_boost: float = 0.0,
                      path_scores: bool = True, **equals: Any) -> list[SentenceHit]:
        """Sentences of ``namespace`` (optionally only those whose payload matches ``equals``, e.g.
        ``segment_id=[...]``) ranked by reciprocal rank fusion (k = ``RRF_K``) of a dense search
        (cosine to ``dense``, (d,) L2-normalised) and a lexical one (BM25: ``lexical`` against the
        sentences' sparse vectors with Qdrant's IDF), each taking its ``candidates`` best; sentences
        said by one of ``speakers`` get their fused score × (1 + ``speaker_boost``). Fusion and boost
        run in Qdrant (Query API prefetch + RRF, then a formula query). Best first, at most ``limit``.
        With ``path_scores`` False the two searches' own scores are not fetched (one request less
        each; the hits' ``dense``/``lexical`` stay None)."""
        collection = self._sentences(namespace)
        if collection is None:
            return []
        flt = models.Filter(must=_ns_filter(namespace, **equals).must[1:]) if equals else None
        dense_q = models.Prefetch(query=dense.astype(float).tolist(), using=DENSE, filter=flt, limit=candidates)
        requests = [models.QueryRequest(query=dense_q.query, using=DENSE, filter=flt, limit=candidates,
                                        with_payload=False)]
        prefetch = [dense_q]
        if lexical:
            lex_q = models.Prefetch(query=_sparse(lexical), using=LEXICAL, filter=flt, limit=candidates)
            prefetch.append(lex_q)
            requests.append(models.QueryRequest(query=lex_q.query, using=LEXICAL, filter=flt, limit=candidates,
                                                with_payload=False))
        rrf = models.RrfQuery(rrf=models.Rrf(k=RRF_K))
        if speakers and speaker_boost:
            said = models.FieldCondition(key="speaker", match=models.MatchAny(any=list(speakers)))
            boost = models.FormulaQuery(formula=models.SumExpression(
                sum=["$score", models.MultExpression(mult=[speaker_boost, "$score", said])]))
            fused_request = models.QueryRequest(
                prefetch=models.Prefetch(prefetch=prefetch, query=rrf, filter=flt, limit=2 * candidates),
                query=boost, limit=limit, with_payload=True)
        else:
            fused_request = models.QueryRequest(prefetch=prefetch, query=rrf, filter=flt, limit=limit,
                                                with_payload=True)
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
        for rec in self._scroll(collection, None, with_vectors=[DENSE] if with_vectors else False):
            vector = np.asarray(rec.vector[DENSE], dtype=np.float32) if with_vectors else None
            rows.append((Sentence(**rec.payload), vector))
        return sorted(rows, key=lambda r: (r[0].message_index, r[0].position))

    def put_records(self, collection: str, namespace: str, kind: str,
                    rows: Iterable[tuple[str, dict[str, Any], np.ndarray | None]]) -> None:
        """Upsert (record id, payload, optional vector) rows of a kind (clusters, active facts)."""
        self._upsert(collection, [
            models.PointStruct(id=point_id(namespace, kind, rid), payload={**payload, "namespace": namespace},
                               vector=v.astype(float).tolist() if v is not None else {})
            for rid, payload, v in rows
        ])

    def records(self, collection: str, namespace: str) -> list[dict[str, Any]]:
        return [dict(rec.payload or {}) for rec in self._scroll(collection, _ns_filter(namespace))]

    def fact_ops(self, namespace: str) -> list[dict[str, Any]]:
        """The CoreFact operation log in order."""
        rows = [dict(rec.payload or {}) for rec in self._scroll(FACT_OPS, _ns_filter(namespace))]
        return sorted(rows, key=lambda d: d["seq"])

    def _upsert(self, collection: str, points: list[models.PointStruct]) -> None:
        for start in range(0, len(points), 256):
            try:
                self._client.upsert(collection, points=points[start:start + 256], wait=True)
            except Exception as exc:
                raise StoreError(f"Writing to {collection} at {self.location} failed: {exc}") from exc

    # ------------------------------------------------------------------ reads
    def _scroll(self, collection: str, flt: models.Filter | None,
                with_vectors: bool | list[str] = False) -> Iterator[models.Record]:
        offset = None
        while True:
            records, offset = self._client.scroll(collection, scroll_filter=flt, limit=512, offset=offset,
                                                  with_payload=True, with_vectors=with_vectors)
            yield from records
            if offset is None:
                return

    def messages(self, namespace: str, with_vectors: bool = True) -> list[StoredMessage]:
        """The namespace's messages in chronological order (by ``index``)."""
        out = []
        for rec in self._scroll(MESSAGES, _ns_filter(namespace), with_vectors=with_vectors):
            payload = dict(rec.payload or {})
            entities = frozenset(payload.pop("entities", []))
            segment_id = payload.pop("segment_id", None)
            vector = np.asarray(rec.vector, dtype=np.float32) if with_vectors else np.zeros(0, np.float32)
            out.append(StoredMessage(Message(**payload), vector, entities, segment_id))
        out.sort(key=lambda r: r.message.index)
        return out

    def get_messages(self, namespace: str, ids: Iterable[str]) -> list[StoredMessage]:
        """Messages by source id (missing ids are skipped), in chronological order."""
        points = self._client.retrieve(MESSAGES, ids=[point_id(namespace, "message", i) for i in ids],
                                       with_payload=True, with_vectors=True)
        out = []
        for rec in points:
            payload = dict(rec.payload or {})
            entities = frozenset(payload.pop("entities", []))
            segment_id = payload.pop("segment_id", None)
            out.append(StoredMessage(Message(**payload), np.asarray(rec.vector, dtype=np.float32), entities,
                                     segment_id))
        return sorted(out, key=lambda r: r.message.index)

    def segments(self, namespace: str) -> list[TopicalSegment]:
        segs = [TopicalSegment(**rec.payload) for rec in self._scroll(SEGMENTS, _ns_filter(namespace))]
        return sorted(segs, key=lambda s: s.index)

    def trajectories(self, namespace: str) -> list[EventTrajectory]:
        trajs = [EventTrajectory(**rec.payload) for rec in self._scroll(TRAJECTORIES, _ns_filter(namespace))]
        return sorted(trajs, key=lambda t: t.index)

    def decisions(self, namespace: str, kind: str | None = None) -> list[dict[str, Any]]:
        """Decision payloads in the order they were made."""
        flt = _ns_filter(namespace, kind=kind) if kind else _ns_filter(namespace)
        rows = [dict(rec.payload or {}) for rec in self._scroll(DECISIONS, flt)]
        return sorted(rows, key=lambda d: d["seq"])

    def count(self, collection: str, namespace: str) -> int:
        """Records of ``namespace`` in ``collection`` (``SENTENCES``: its sentence collection)."""
        if collection == SENTENCES:
            name = self._sentences(namespace)
            return self._client.count(name, exact=True).count if name else 0
        return self._client.count(collection, count_filter=_ns_filter(namespace), exact=True).count

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

    def delete_records(self, collection: str, namespace: str, kind: str, ids: Iterable[str]) -> None:
        """Delete the given records (``kind`` as in ``point_id``: "segment", "trajectory", "decision" with
        the decision's seq as its id, ...)."""
        points = [point_id(namespace, kind, str(i)) for i in ids]
        if collection == SENTENCES:
            collection = self._sentences(namespace)
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
