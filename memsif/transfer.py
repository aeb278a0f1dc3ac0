"""A namespace as one JSON document, and back (``python -m memsif export`` / ``import``).

The document holds every record with its vectors and the embedder's name, so an import into a store
of another embedder is refused. Its ``format`` names the version of its layout (``EXPORT_FORMAT``);
an export of a newer format is read only when it says a reader of this one may read it
(``readable_as``), and parts this version does not know are then left out with an ``ExportWarning``.
"""

from __future__ import annotations

import gzip
import json
import re
import warnings
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memsif import lexical
from memsif.config import MemSIFConfig
from memsif.embed import Embedder, embedder_name
from memsif.errors import EmbedderError, ExportWarning, MemSIFError
from memsif.files import write_file
from memsif.interaction.clustering import scorer_for
from memsif.interaction.relink import whole_memory
from memsif.lexical import SparseVector
from memsif.llm.packaged import PACKAGED_MODELS
from memsif.llm.profiles import configured_profile
from memsif.prompts import (
    core_change,
    core_extract,
    core_operation,
    fact_verify,
    segment_judge,
    segment_title,
    trajectory_choice,
    trajectory_judge,
)
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
from memsif.store import Store, StoredMessage
from memsif.upgrade import add_sentence_index

#: The layout this version writes and reads (exports of older layouts read too).
EXPORT_VERSION = 1
EXPORT_FORMAT = f"memsif-namespace/{EXPORT_VERSION}"
_FORMAT = re.compile(r"memsif-namespace/(\d+)")

R = TypeVar("R", bound=BaseModel)

#: The settings that decide what a build stores (segments, trajectories, CoreFacts, the ActiveFacts of
#: questions asked while building); the back-end, threads, folders and query-time settings do not.
CONTENT_SETTINGS = (
    "alpha_segment", "tau_merge", "tau_split", "alpha_trajectory", "construction_top_k", "trajectory_min_phi",
    "trajectory_link", "sem_mapping", "judge_threshold", "judge_calibration", "judge_context_messages",
    "core_facts", "core_schema", "fact_batch_messages", "fact_operation", "fact_verification", "fact_change",
    "theta_src", "theta_qry", "active_compatible_cosine", "use_spacy", "use_trajectories",
)


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExportedMessage(_Part):
    """A message with its (d,) embedding, key entities and Topical Segment."""

    message: Message
    vector: list[float]
    entities: list[str]
    segment_id: str | None


class SparseTerms(_Part):
    """A sentence's lexical (BM25) vector as stored: term indices and their weights."""

    indices: list[int]
    values: list[float]


class ExportedSentence(_Part):
    """A sentence of the hybrid index with its (d,) embedding and lexical vector (None: not stored)."""

    sentence: Sentence
    vector: list[float]
    lexical: SparseTerms | None = None


class ExportedFact(_Part):
    """A CoreFact (current or superseded) with its (d,) statement embedding."""

    fact: CoreFact
    vector: list[float]


class NamespaceExport(_Part):
    """A namespace's whole memory as one document (``format`` ``EXPORT_FORMAT``): made by
    ``export_namespace``, read by ``read_export``/``parse_export``, written back by
    ``import_namespace``. ``provenance`` says how the memory was built (model, date, seconds, the
    questions asked); ``lexical_version`` the lexical encoding of its sentences (another is encoded
    again on import); exports made before the sentence index hold no ``sentences`` (built on import).
    A later layout that only adds parts is written as its own format with ``readable_as`` naming this
    one, so that this version reads it, leaving out (and naming) what it does not know."""

    format: Literal["memsif-namespace/1"]
    namespace: str
    embedder: str
    dim: int
    provenance: dict[str, Any] = Field(default_factory=dict)
    lexical_version: int | None = None
    messages: list[ExportedMessage]
    sentences: list[ExportedSentence] = Field(default_factory=list)
    segments: list[TopicalSegment]
    trajectories: list[EventTrajectory]
    decisions: list[Decision]
    facts: list[ExportedFact]
    fact_ops: list[FactOperation]
    clusters: list[CandidateCluster]
    active_facts: list[ActiveFact]

    def without_query_state(self) -> NamespaceExport:
        """This memory without its candidate clusters and ActiveFacts (the query-driven state)."""
        return self.model_copy(update={"clusters": [], "active_facts": []})


def parse_export(data: Any) -> NamespaceExport:
    """``data`` (a decoded JSON document, or already an export) as a ``NamespaceExport``.

    An export of a newer format is read when it says a reader of this format may read it (its
    ``readable_as`` names this format or an older one, as a newer MemSIF that only added parts writes).
    Fields this version does not know, at any depth, are left out with an ``ExportWarning`` that
    names them.

    Raises:
        MemSIFError: not a MemSIF namespace export; one made by a newer MemSIF that this one cannot
            read (says to upgrade); or one with missing or malformed parts (named; says to export again).
    """
    if isinstance(data, NamespaceExport):
        return data
    if not isinstance(data, dict) or (version := _version(data.get("format"))) is None or version < 1:
        raise MemSIFError(f"Not a MemSIF namespace export (expected format {EXPORT_FORMAT!r}).")
    newer = version > EXPORT_VERSION
    if newer or "readable_as" in data:
        readable = _version(data.get("readable_as"))
        if newer and (readable is None or readable > EXPORT_VERSION):
            raise MemSIFError(f"This export was made by a newer MemSIF (format {version}; this one reads up to "
                              f"{EXPORT_VERSION}); upgrade MemSIF to read it.")
        data = {k: v for k, v in data.items() if k != "readable_as"} | {"format": EXPORT_FORMAT}
    try:
        return NamespaceExport.model_validate(data)
    except ValidationError as exc:
        unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
        if not unknown:
            raise _damaged(exc) from exc
    data = json.loads(json.dumps(data))  # a copy without the unknown fields; the caller's document stays as it was
    left_out = Counter(_path(loc) for loc in unknown if _drop(data, loc))
    try:
        parsed = NamespaceExport.model_validate(data)
    except ValidationError as exc:
        raise _damaged(exc) from exc
    named = ", ".join(f"{name} ({n}×)" if n > 1 else name for name, n in left_out.items())
    made = f" It was made by a newer MemSIF (format {version})." if newer else ""
    warnings.warn(f"This export holds fields this version of MemSIF does not know; they were left out: {named}.{made} "
                  "Upgrade MemSIF to keep them.", ExportWarning, stacklevel=2)
    return parsed


def _damaged(exc: ValidationError) -> MemSIFError:
    where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
    return MemSIFError(f"The MemSIF export is damaged ({exc.error_count()} problem(s): {where}); export the "
                       "namespace again.")


def _version(format_name: Any) -> int | None:
    """The version number of a ``memsif-namespace/N`` format name; None for anything else."""
    match = _FORMAT.fullmatch(format_name) if isinstance(format_name, str) else None
    return int(match.group(1)) if match else None


def _path(loc: tuple[str | int, ...]) -> str:
    """A field's place as the warning names it: ``messages[].message.mood``."""
    return "".join("[]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def _drop(doc: Any, loc: tuple[str | int, ...]) -> bool:
    """Delete the field at pydantic's error location ``loc`` (a discriminated union's tag in the path,
    which is no key of the document, is stepped over); whether it was found."""
    node = doc
    for part in loc[:-1]:
        if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(node, dict) and part in node:
            node = node[part]
    if isinstance(node, dict) and loc[-1] in node:
        del node[loc[-1]]
        return True
    return False


def export_namespace(store: Store, embedded_with: tuple[str, int], namespace: str, decimals: int | None = None,
                     provenance: dict[str, Any] | None = None) -> NamespaceExport:
    """Everything of ``namespace`` as one ``NamespaceExport`` (vectors included), its vectors made by
    ``embedded_with`` (the embedder's name and dimension, as the store records them). ``decimals`` rounds
    the vector components (4 keeps cosine similarities within ~1e-4 and makes a file a third of the
    size; ``None`` keeps float32 exactly); ``provenance`` (how the memory was built: model, date,
    seconds) is kept under that key and shown by whoever imports it."""

    def _vector(v: np.ndarray) -> list[float]:
        values = v.astype(float)
        return list((np.round(values, decimals) if decimals is not None else values).tolist())

    sparse = store.sentence_lexical(namespace)
    return NamespaceExport(
        format=EXPORT_FORMAT, namespace=namespace, embedder=embedded_with[0], dim=embedded_with[1],
        provenance=dict(provenance or {}), lexical_version=lexical.VERSION,
        messages=[ExportedMessage(message=r.message, vector=_vector(r.vector), entities=sorted(r.entities),
                                  segment_id=r.segment_id) for r in store.messages(namespace)],
        sentences=[ExportedSentence(sentence=sen, vector=_vector(v), lexical=SparseTerms(
            indices=list(sparse[sen.id].indices), values=list(sparse[sen.id].values)) if sen.id in sparse else None)
                   for sen, v in store.sentences(namespace, with_vectors=True) if v is not None],
        segments=store.segments(namespace), trajectories=store.trajectories(namespace),
        decisions=store.decisions(namespace),
        facts=[ExportedFact(fact=f, vector=_vector(v)) for f, v in store.facts(namespace, with_vectors=True)
               if v is not None],
        fact_ops=store.fact_ops(namespace), clusters=store.clusters(namespace),
        active_facts=store.active_facts(namespace))


def import_namespace(store: Store, embedder: Embedder, data: NamespaceExport, namespace: str) -> None:
    """Write ``data`` into ``namespace`` (which must hold no memory); every record takes that namespace.

    Raises:
        MemSIFError: the namespace already holds memory.
        EmbedderError: the export was made with another embedder.
    """
    check_export(data, embedder)
    ns = namespace
    if store.count("message", ns):
        raise MemSIFError(f"Namespace {ns!r} already holds memory; delete it or import under another name.")

    def moved(records: list[R]) -> list[R]:
        return [r.model_copy(update={"namespace": ns}) for r in records]

    vectors = {m.message.id: np.asarray(m.vector, dtype=np.float32) for m in data.messages}
    segs = moved(data.segments)
    store.put_segments(ns, [(s, np.mean([vectors[i] for i in s.message_ids], axis=0)) for s in segs])
    by_seg = {s.id: s for s in segs}
    store.put_trajectories(ns, [(t, np.mean([vectors[i] for sid in t.segment_ids for i in by_seg[sid].message_ids],
                                            axis=0)) for t in moved(data.trajectories)])
    store.put_decisions(ns, moved(data.decisions), 0)
    store.put_facts(ns, [(f.fact.model_copy(update={"namespace": ns}), np.asarray(f.vector, dtype=np.float32))
                         for f in data.facts])
    store.put_fact_ops(ns, moved(data.fact_ops), 0)
    store.put_clusters(ns, moved(data.clusters))
    store.put_active_facts(ns, [(a, embedder.embed_query(a.statement)) for a in moved(data.active_facts)])
    messages = moved([m.message for m in data.messages])
    if data.sentences:  # exports made before the sentence index hold none: built here
        sentences = moved([x.sentence for x in data.sentences])
        stored = [x.lexical for x in data.sentences]
        if data.lexical_version == lexical.VERSION and all(s is not None for s in stored):
            sparse = [SparseVector(tuple(s.indices), tuple(s.values)) for s in stored if s]  # as encoded then
        else:  # another lexical encoding (or none stored): encoded again by this version
            sparse = lexical.encode_documents([x.text for x in sentences], [x.speaker for x in sentences])
        store.put_sentences(ns, [(x, np.asarray(row.vector, dtype=np.float32), sp)
                                 for x, row, sp in zip(sentences, data.sentences, sparse, strict=True)])
    store.put_messages(ns, [StoredMessage(msg, vectors[msg.id], frozenset(m.entities), m.segment_id)
                            for msg, m in zip(messages, data.messages, strict=True)])
    if not data.sentences:
        add_sentence_index(store, embedder, ns)


def check_export(data: NamespaceExport, embedder: Embedder) -> None:
    """Raises EmbedderError: ``data`` was embedded with another embedder than ``embedder``."""
    if data.embedder != embedder.name or data.dim != embedder.dim:
        raise EmbedderError(f"The export was embedded with {data.embedder!r}; this engine uses "
                            f"{embedder.name!r}. Set MEMSIF_EMBEDDER_MODEL to match, or re-ingest.")


def write_export(data: NamespaceExport, path: str | Path) -> Path:
    """Write an export to ``path`` as JSON, gzip-compressed when the name ends in ``.gz``. The file is
    written whole under a temporary name and then moved into place: an export that fails leaves the
    file that was at ``path`` as it was (``memsif.files.write_file``).

    Raises:
        FileWriteError: the file could not be written (a full disk, a file-size limit, no such folder).
    """
    path = Path(path)
    text = data.model_dump_json().encode("utf-8")
    return write_file(path, gzip.compress(text, compresslevel=9) if path.suffix == ".gz" else text, "the export")


def is_export(path: str | Path) -> bool:
    """Whether the file at ``path`` looks like a MemSIF export rather than a transcript: gzip-compressed
    (transcript loaders read no gzip), or JSON whose first bytes name a ``memsif-namespace/`` format.
    An unreadable file is not one (its loader says why)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return head[:2] == b"\x1f\x8b" or (b'"format"' in head and b"memsif-namespace/" in head)


def read_export(path: str | Path) -> NamespaceExport:
    """An export written by :func:`write_export` (plain or gzip JSON, told apart by content).

    Raises:
        MemSIFError: the file is missing or unreadable, cut short or corrupt, not JSON, or not an export
            this version can read (``parse_export``); each message says what to do.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MemSIFError(f"Cannot read the export {path}: {exc.strerror or exc}.") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            cut = "cut short" if isinstance(exc, EOFError) else "corrupt"
            raise MemSIFError(f"{path} is a damaged export: its gzip-compressed data is {cut} ({exc}). Copy the "
                              "file again, or export the namespace again.") from exc
    try:
        text = raw.decode("utf-8")
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        if isinstance(exc, json.JSONDecodeError) and text.strip() and (
                exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")):
            raise MemSIFError(f"{path} is a damaged export: its JSON ends early ({exc}), as a file cut short while "
                              "it was written or copied does. Copy the file again, or export the namespace "
                              "again.") from exc
        raise MemSIFError(f"{path} is not a MemSIF export (not JSON or gzip-compressed JSON: {exc}). An export is "
                          "the .json or .json.gz file `python -m memsif export` writes.") from exc
    return parse_export(data)


#: The versions of the prompts whose replies decide what a build stores.
CONTENT_PROMPTS = (segment_judge.VERSION, trajectory_judge.VERSION, trajectory_choice.VERSION, segment_title.VERSION,
                   core_extract.VERSION, core_extract.AGAIN_VERSION, core_operation.VERSION, fact_verify.VERSION,
                   core_change.version())


def content_fingerprint(config: MemSIFConfig) -> dict[str, Any]:
    """What decides a memory's content under ``config``: the LLM's weights (the packaged GGUF's SHA-256,
    else the model's name), the embedder, ``CONTENT_SETTINGS``, the versions of the prompts that decide it
    (``CONTENT_PROMPTS``), the model's measured thresholds (``ModelProfile``) and, for the whole-memory Event
    Trajectories, the pair scorer's version. A build records it in its export's
    provenance (``"content"``); an export with the same fingerprint shows what this configuration would
    build, whatever the back-end or display name."""
    model = PACKAGED_MODELS.get(config.model.llm_model)
    profile = configured_profile(config.model.llm_profile, model.name if model else config.model.llm_model)
    out = {"llm": f"sha256:{model.sha256}" if model and model.sha256 else config.model.llm_model,
           "embedder": config.model.embedder_model,
           "settings": {name: config.setting(name) for name in CONTENT_SETTINGS},
           "prompts": list(CONTENT_PROMPTS),
           "profile": {"decision_points": dict(profile.decision_points), "verify_min_p": profile.verify_min_p,
                       "change_min_p": profile.change_min_p}}
    if whole_memory(config.method):  # the fitted pair scorer decides the Event Trajectories
        out["trajectory_scorer"] = scorer_for(embedder_name(config.model.embedder_model))[0].version
    return out


def same_content(provenance: dict[str, Any], config: MemSIFConfig) -> bool:
    """Whether an export's provenance records the content fingerprint of ``config`` (an export without
    one, or made with another model, embedder or content setting, does not)."""
    return provenance.get("content") == content_fingerprint(config)
