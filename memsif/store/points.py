"""What the store's reads and writes share: the collections (listed in ``memsif.store.qdrant``), point
ids, filters, payload conversions, the hybrid search's requests, and the Qdrant client they go through."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import models

from memsif.errors import EmbedderError, StoreError
from memsif.lexical import SparseVector
from memsif.records import Message
from memsif.store.base import SentenceQuery, StoredMessage

MESSAGES = "memsif_messages"
SEGMENTS = "memsif_segments"
TRAJECTORIES = "memsif_trajectories"
DECISIONS = "memsif_decisions"
FACTS = "memsif_facts"
FACT_OPS = "memsif_fact_ops"
ACTIVE_FACTS = "memsif_active_facts"
CLUSTERS = "memsif_clusters"
META = "memsif_meta"
#: Prefix of the per-namespace sentence collections (``sentence_collection``). Collection names are
#: the store's own: engine code reads and writes records through the store's methods.
SENTENCES = "memsif_sentences_"
#: Named vectors of the sentence collection.
DENSE, LEXICAL = "dense", "lexical"
#: Reciprocal-rank-fusion constant (Cormack et al. 2009) for dense + lexical sentence search.
RRF_K = 60
VECTOR_COLLECTIONS = (MESSAGES, SEGMENTS, TRAJECTORIES, FACTS, ACTIVE_FACTS)
LOG_COLLECTIONS = (DECISIONS, FACT_OPS, CLUSTERS)
ALL_COLLECTIONS = (*VECTOR_COLLECTIONS, *LOG_COLLECTIONS)
#: Each kind of record's collection.
COLLECTION_OF = {"message": MESSAGES, "segment": SEGMENTS, "trajectory": TRAJECTORIES, "decision": DECISIONS,
                  "fact": FACTS, "fact_op": FACT_OPS, "cluster": CLUSTERS, "active_fact": ACTIVE_FACTS}
log = logging.getLogger("memsif.store.qdrant")
ID_SPACE = uuid.UUID("6f1c1c3e-5c0e-4d7a-9a57-2b1d3e0f4a11")



def sentence_collection(namespace: str) -> str:
    """Name of ``namespace``'s sentence collection (stable: a UUID-5 of the namespace)."""
    return SENTENCES + uuid.uuid5(ID_SPACE, f"sentences\x1f{namespace}").hex[:20]


def point_id(namespace: str, kind: str, record_id: str) -> str:
    """Stable UUID of a record: the same (namespace, kind, id) always maps to the same point."""
    return str(uuid.uuid5(ID_SPACE, f"{namespace}\x1f{kind}\x1f{record_id}"))


def matches(key: str, value: Any) -> models.FieldCondition:
    """Payload field ``key`` equals ``value``, or one of its values when it is a list or tuple."""
    return models.FieldCondition(key=key, match=models.MatchAny(any=list(value)) if isinstance(value, list | tuple)
                                 else models.MatchValue(value=value))


def ns_filter(namespace: str, **equals: Any) -> models.Filter:
    """Records of ``namespace`` whose payload field equals a value, or one of a list's values."""
    return models.Filter(must=[matches("namespace", namespace), *(matches(k, v) for k, v in equals.items())])


def stored_message(payload: dict[str, Any] | None, vector: Any) -> StoredMessage:
    """A message point's payload (the Message, its entities and segment) and vector as a record."""
    payload = dict(payload or {})
    entities = frozenset(payload.pop("entities", []))
    segment_id = payload.pop("segment_id", None)
    return StoredMessage(Message(**payload), np.asarray(vector, dtype=np.float32), entities, segment_id)


def sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))


def hybrid_requests(query: SentenceQuery, limit: int,
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
        lex_q = models.Prefetch(query=sparse(query.lexical), using=LEXICAL, filter=flt, limit=candidates)
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


def sentence_filter(query: SentenceQuery) -> models.Filter | None:
    """The payload filter of ``query.within`` (an empty list keeps nothing) and ``query.excluded``
    (an empty list leaves nothing out); None when both are empty."""
    must: list[models.Condition] = [matches(k, list(v)) for k, v in query.within.items()]
    must_not: list[models.Condition] = [matches(k, list(v)) for k, v in query.excluded.items() if v]
    return models.Filter(must=must or None, must_not=must_not or None) if must or must_not else None


def ensure_collections(client: Any, is_server: bool, location: str, embedder_name: str, dim: int) -> None:
    """Create the missing collections on ``client``; check the store was built with the same embedder.

    Raises:
        EmbedderError: the store holds vectors of another embedder or dimension.
    """
    existing = {c.name for c in client.get_collections().collections}
    if META not in existing:
        client.create_collection(META, vectors_config={})
    recorded = recorded_embedder(client)
    if recorded is not None:
        check_embedder(recorded, embedder_name, dim, location)
    else:
        client.upsert(META, points=[models.PointStruct(
            id=point_id("", "meta", "embedder"), vector={}, payload={"embedder": embedder_name, "dim": dim})])
    for name in VECTOR_COLLECTIONS:
        if name not in existing:
            client.create_collection(name, vectors_config=models.VectorParams(size=dim,
                                                                              distance=models.Distance.COSINE))
            if is_server:  # embedded Qdrant ignores payload indexes
                client.create_payload_index(name, "namespace", models.PayloadSchemaType.KEYWORD)
    for name in LOG_COLLECTIONS:
        if name not in existing:
            client.create_collection(name, vectors_config={})


def recorded_embedder(client: Any) -> tuple[str, int] | None:
    """The embedder name and dimension in ``client``'s meta collection; None when it has none."""
    found = (client.retrieve(META, ids=[point_id("", "meta", "embedder")], with_payload=True)
             if client.collection_exists(META) else [])
    if not found:
        return None
    meta = found[0].payload or {}
    return str(meta.get("embedder")), int(meta.get("dim", -1))


def check_embedder(recorded: tuple[str, int], embedder_name: str, dim: int, location: str) -> None:
    """Raises EmbedderError when the store's ``recorded`` embedder (name, dimension) is another one."""
    if recorded != (embedder_name, dim):
        raise EmbedderError(
            f"This store ({location}) was built with embedder {recorded[0]!r} "
            f"(dim {recorded[1]}), not {embedder_name!r} (dim {dim}). Use the same "
            "MEMSIF_EMBEDDER_MODEL, or re-embed the memory into a new folder: "
            f"python -m memsif reembed --from {Path(location).parent} --data-dir NEW_FOLDER "
            "(with the new MEMSIF_EMBEDDER_MODEL set)."
        )


def upsert(client: Any, location: str, collection: str, points: list[models.PointStruct]) -> None:
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


def made(collection: str | None, namespace: str, location: str) -> str:
    """A sentence collection that ``create=True`` made (never None)."""
    if collection is None:
        raise StoreError(f"The sentence collection of {namespace!r} could not be made in {location}.")
    return collection


def named_vector(rec: models.Record, name: str) -> Any:
    """The vector called ``name`` of a point read with named vectors (None when it has none)."""
    vectors = rec.vector
    return vectors.get(name) if isinstance(vectors, dict) else None


def scroll(client: Any, collection: str, flt: models.Filter | None,
            with_vectors: bool | list[str] = False) -> Iterator[models.Record]:
    """Every record of ``collection`` that ``flt`` keeps, with payload, 512 at a time."""
    offset = None
    while True:
        records, offset = client.scroll(collection, scroll_filter=flt, limit=512, offset=offset,
                                        with_payload=True, with_vectors=with_vectors)
        yield from records
        if offset is None:
            return


class Collections:
    """The Qdrant client a store's reads and writes go through, where it points, and the vector size
    (set by ``ensure_collections``)."""

    def __init__(self, client: Any, location: str, is_server: bool) -> None:
        self.client, self.location, self.is_server = client, location, is_server
        self.dim: int | None = None

    def sentences(self, namespace: str, create: bool = False) -> str | None:
        """The namespace's sentence collection; None when it has none (and ``create`` is False). One made
        here has a dense vector (cosine) and a sparse lexical one (Qdrant's IDF)."""
        name = sentence_collection(namespace)
        if self.client.collection_exists(name):
            return name
        if not create:
            return None
        self.client.create_collection(
            name, vectors_config={DENSE: models.VectorParams(size=self.dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={LEXICAL: models.SparseVectorParams(modifier=models.Modifier.IDF)})
        if self.is_server:
            for key in ("segment_id", "speaker"):
                self.client.create_payload_index(name, key, models.PayloadSchemaType.KEYWORD)
        return name
