"""A namespace as one JSON document, and back (``python -m memsif export`` / ``import``).

The document holds every record with its vectors and the embedder's name, so an import into a store
of another embedder is refused.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from memsif import lexical
from memsif.embed import Embedder
from memsif.errors import EmbedderError, MemSIFError
from memsif.lexical import SparseVector
from memsif.records import (
    DECISION,
    ActiveFact,
    CandidateCluster,
    CoreFact,
    EventTrajectory,
    FactOperation,
    Message,
    Sentence,
    TopicalSegment,
)
from memsif.store import Store, StoredMessage
from memsif.upgrade import add_sentence_index

EXPORT_FORMAT = "memsif-namespace/1"


def export_namespace(store: Store, embedder: Embedder, namespace: str, decimals: int | None = None,
                     provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything of ``namespace`` as one JSON-able dict (vectors included). ``decimals`` rounds the
    vector components (4 keeps cosine similarities within ~1e-4 and makes a file a third of the size;
    ``None`` keeps float32 exactly); ``provenance`` (how the memory was built: model, date, seconds) is
    kept under that key and shown by whoever imports it."""

    def _vector(v: np.ndarray) -> list[float]:
        values = v.astype(float)
        return (np.round(values, decimals) if decimals is not None else values).tolist()

    actives = {a.id: a for a in store.active_facts(namespace)}
    clusters = store.clusters(namespace)
    sparse = store.sentence_lexical(namespace)
    return {
        "format": EXPORT_FORMAT, "namespace": namespace, "embedder": embedder.name, "dim": embedder.dim,
        "provenance": dict(provenance or {}), "lexical_version": lexical.VERSION,
        "messages": [{"message": r.message.model_dump(mode="json"), "vector": _vector(r.vector),
                      "entities": sorted(r.entities), "segment_id": r.segment_id} for r in store.messages(namespace)],
        "sentences": [{"sentence": sen.model_dump(mode="json"), "vector": _vector(v),
                       "lexical": {"indices": list(sparse[sen.id].indices), "values": list(sparse[sen.id].values)}
                       if sen.id in sparse else None}
                      for sen, v in store.sentences(namespace, with_vectors=True)],
        "segments": [s.model_dump(mode="json") for s in store.segments(namespace)],
        "trajectories": [t.model_dump(mode="json") for t in store.trajectories(namespace)],
        "decisions": [d.model_dump(mode="json") for d in store.decisions(namespace)],
        "facts": [{"fact": f.model_dump(mode="json"), "vector": _vector(v)}
                  for f, v in store.facts(namespace, with_vectors=True)],
        "fact_ops": [op.model_dump(mode="json") for op in store.fact_ops(namespace)],
        "clusters": [c.model_dump(mode="json") for c in clusters],
        "active_facts": [a.model_dump(mode="json") for a in actives.values()],
    }


def import_namespace(store: Store, embedder: Embedder, data: dict[str, Any], namespace: str) -> None:
    """Write an ``export_namespace`` dict into ``namespace`` (which must hold no memory).

    Raises:
        MemSIFError: not an export, or the namespace already holds memory.
        EmbedderError: the export was made with another embedder.
    """
    check_export(data, embedder)
    ns = namespace
    if store.count("message", ns):
        raise MemSIFError(f"Namespace {ns!r} already holds memory; delete it or import under another name.")

    def re_ns(payload: dict[str, Any]) -> dict[str, Any]:
        return {**payload, "namespace": ns}

    vectors = {m["message"]["id"]: np.asarray(m["vector"], dtype=np.float32) for m in data["messages"]}
    segs = [TopicalSegment(**re_ns(s)) for s in data["segments"]]
    store.put_segments(ns, [(s, np.mean([vectors[i] for i in s.message_ids], axis=0)) for s in segs])
    by_seg = {s.id: s for s in segs}
    store.put_trajectories(ns, [(t, np.mean([vectors[i] for sid in t.segment_ids for i in by_seg[sid].message_ids],
                                            axis=0))
                                for t in (EventTrajectory(**re_ns(t)) for t in data["trajectories"])])
    store.put_decisions(ns, [DECISION.validate_python(re_ns(d)) for d in data["decisions"]], 0)
    store.put_facts(ns, [(CoreFact(**re_ns(f["fact"])), np.asarray(f["vector"], dtype=np.float32))
                         for f in data["facts"]])
    store.put_fact_ops(ns, [FactOperation(**re_ns(op)) for op in data["fact_ops"]], 0)
    store.put_clusters(ns, [CandidateCluster(**re_ns(c)) for c in data["clusters"]])
    actives = [ActiveFact(**re_ns(a)) for a in data["active_facts"]]
    store.put_active_facts(ns, [(a, embedder.embed_query(a.statement)) for a in actives])
    messages = [Message(**re_ns(m["message"])) for m in data["messages"]]
    if data.get("sentences"):  # exports made before the sentence index hold none: built here
        sentences = [Sentence(**re_ns(x["sentence"])) for x in data["sentences"]]
        stored = [x.get("lexical") for x in data["sentences"]]
        if data.get("lexical_version") == lexical.VERSION and all(s is not None for s in stored):
            sparse = [SparseVector(tuple(s["indices"]), tuple(s["values"])) for s in stored]  # as encoded then
        else:  # another lexical encoding (or none stored): encoded again by this version
            sparse = lexical.encode_documents([x.text for x in sentences], [x.speaker for x in sentences])
        store.put_sentences(ns, [(x, np.asarray(row["vector"], dtype=np.float32), sp)
                                 for x, row, sp in zip(sentences, data["sentences"], sparse, strict=True)])
    store.put_messages(ns, [StoredMessage(msg, vectors[msg.id], frozenset(m["entities"]), m["segment_id"])
                            for msg, m in zip(messages, data["messages"], strict=True)])
    if not data.get("sentences"):
        add_sentence_index(store, embedder, ns)


def check_export(data: Any, embedder: Embedder) -> None:
    """Raises MemSIFError (not an export) or EmbedderError (made with another embedder)."""
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise MemSIFError(f"Not a MemSIF namespace export (expected format {EXPORT_FORMAT!r}).")
    if data["embedder"] != embedder.name or int(data["dim"]) != embedder.dim:
        raise EmbedderError(f"The export was embedded with {data['embedder']!r}; this engine uses "
                            f"{embedder.name!r}. Set MEMSIF_EMBEDDER_MODEL to match, or re-ingest.")


def write_export(data: dict[str, Any], path: str | Path) -> Path:
    """Write an export to ``path`` as JSON, gzip-compressed when the name ends in ``.gz``."""
    path = Path(path)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def read_export(path: str | Path) -> dict[str, Any]:
    """An export written by :func:`write_export` (plain or gzip JSON, told apart by content).

    Raises:
        MemSIFError: the file is missing, unreadable or not JSON (``check_export`` tells an export
            from other JSON).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise MemSIFError(f"Cannot read the export {path}: {exc.strerror or exc}.") from exc
    except (EOFError, gzip.BadGzipFile, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MemSIFError(f"{path} is not a MemSIF export (not JSON or gzip-compressed JSON: {exc}).") from exc
