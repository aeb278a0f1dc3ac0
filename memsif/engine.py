"""The MemSIF engine: holds the back-ends, locks and reads; each step lives in its module
(construction in ``memsif.ingest``, questions in ``memsif.answer.query``, transfer in ``memsif.transfer``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memsif.config import AnswerSettings, MemSIFConfig
from memsif.editing import Corrections
from memsif.embed import Embedder
from memsif.entities import EntityExtractor
from memsif.errors import ConfigError, MemSIFError
from memsif.ingest import IngestPipeline, IngestReport, ProgressFn
from memsif.interaction.relink import RelinkResult
from memsif.io.names import checked_namespace
from memsif.llm import LLM
from memsif.locks import interactive
from memsif.reads import Reads
from memsif.records import (
    Message,
)
from memsif.search import Search
from memsif.sources import Sources
from memsif.store import Store, open_store
from memsif.transfer import NamespaceExport

if TYPE_CHECKING:
    from memsif.answer.query import Answer

__all__ = ["IngestReport", "MemSIF", "ProgressFn"]

log = logging.getLogger(__name__)


def load_embedder(embedder_model: str, store: Store | None) -> Embedder:
    """The configured embedder, checked against ``store`` when that was opened by its record.

    Raises:
        EmbedderError: it cannot be loaded, or the store holds vectors of another embedder.
    """
    from memsif.embed import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(embedder_model)
    if store is not None and store.dim is not None:
        store.ensure_collections(embedder.name, embedder.dim)
    return embedder


def open_by_record(store: Store, embedder_model: str) -> bool:
    """Open ``store`` for the embedder its record names when that is ``embedder_model`` (reads then
    need no embedder; the engine checks the embedder against the record when it loads); True when the
    store is open."""
    from memsif.embed import embedder_name

    if store.dim is None:
        recorded = store.recorded_embedder()
        if recorded is not None and recorded[0] == embedder_name(embedder_model):
            store.ensure_collections(*recorded)
    return store.dim is not None


class MemSIF(Reads, Corrections, Search, Sources):
    """Long-term memory engine (paper §3). Back-ends are passed in or loaded lazily from config. A
    memory's reads are ``Reads``', a person's corrections ``Corrections``' (``edit_fact``, ``delete_fact``,
    ``restore_fact``), search ``Search``'s.

    Args:
        config: settings; the defaults (``MemSIFConfig()``) when omitted. The entry points build it
            from the environment (``MemSIFConfig.from_env()``); the engine never reads it.
        llm, embedder, entities, store: back-ends to use instead of the configured ones
            (tests pass a fake LLM, a deterministic embedder and an in-memory store).
    """

    def __init__(self, config: MemSIFConfig | None = None, *, llm: LLM | None = None,
                 embedder: Embedder | None = None, entities: EntityExtractor | None = None,
                 store: Store | None = None) -> None:
        self.config = config or MemSIFConfig()
        self._llm, self._embedder, self._entities, self._store = llm, embedder, entities, store
        # One lock per namespace: a build in one namespace never waits for another session's
        # chat or build (back-ends serialise their own calls; see store._Guarded).
        self._ns_locks: dict[tuple[str, str], threading.RLock] = {}
        self._ns_locks_guard = threading.Lock()
        self._load_locks = {name: threading.Lock() for name in ("llm", "embedder", "entities", "store")}

    #: settings that bind a store to its contents; a derived engine must keep them
    _STORE_FIELDS = ("embedder_model", "data_dir", "qdrant_url", "qdrant_api_key", "use_spacy")

    def with_config(self, config: MemSIFConfig) -> MemSIF:
        """An engine over the same store, embedder, entity extractor and namespace locks, with other
        method settings (α, τ_split, τ_merge, Top-K, θ_s, θ_q, ...) and possibly another LLM.
        The inspector gives each browser session its own settings this way. An LLM handed to this
        engine is kept for the same model; others are loaded once per process and model (``load_llm``).

        Raises:
            ConfigError: ``config`` changes a store-binding setting (embedder, data folder, server,
                NER) — those need another process or store.
        """
        changed = [f for f in self._STORE_FIELDS if config.setting(f) != self.config.setting(f)]
        if changed:
            raise ConfigError(f"{', '.join(changed)} cannot change for a running engine (the store is "
                              "bound to them); restart with the new setting instead.")
        handed = self._llm if config.llm_key == self.config.llm_key else None  # e.g. a fake LLM, kept
        other = MemSIF(config, llm=handed, embedder=self.embedder, entities=self.entity_extractor, store=self.store)
        other._ns_locks, other._ns_locks_guard = self._ns_locks, self._ns_locks_guard
        return other

    def _namespace_lock(self, namespace: str, part: str = "memory") -> threading.RLock:
        """``part`` "memory" guards messages, segments, trajectories and CoreFacts (ingest);
        "clusters" guards the ActiveFact clusters (ask), so a chat never waits for a long ingest."""
        with self._ns_locks_guard:
            return self._ns_locks.setdefault((namespace, part), threading.RLock())

    # ----------------------------------------------------------------- back-ends
    @property
    def llm(self) -> LLM:
        """The LLM handed in, else the configured one (``load_llm``: one per process and model)."""
        with self._load_locks["llm"]:
            if self._llm is None:
                from memsif.llm import load_llm

                self._llm = load_llm(self.config)
            return self._llm

    @property
    def embedder(self) -> Embedder:
        with self._load_locks["embedder"]:
            if self._embedder is None:
                self._embedder = load_embedder(self.config.model.embedder_model, self._store)
            return self._embedder

    @property
    def entity_extractor(self) -> EntityExtractor:
        with self._load_locks["entities"]:
            if self._entities is None:
                from memsif.entities import load_entity_extractor

                self._entities = load_entity_extractor(self.config.model.use_spacy)
            return self._entities

    @property
    def store(self) -> Store:
        """The store, opened once (``open_by_record``). Raises EmbedderError: another embedder's store."""
        if self._store is not None and self._store.dim is not None:  # every read and write comes through here
            return self._store
        with self._load_locks["store"]:
            if self._store is None:
                self._store = open_store(self.config)
            if self._embedder is None and open_by_record(self._store, self.config.model.embedder_model):
                return self._store
        embedder = self.embedder  # outside the store lock: loading it may take seconds
        with self._load_locks["store"]:
            if self._store.dim is None:
                self._store.ensure_collections(embedder.name, embedder.dim)
            return self._store

    def load_models(self) -> float:
        """Load every back-end now; returns the seconds it took. (Loading in threads was slower here:
        most of the time is Python imports, which hold the GIL.)"""
        start = time.perf_counter()
        _ = self.llm, self.embedder, self.entity_extractor, self.store
        return time.perf_counter() - start

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    # ----------------------------------------------------------------- ingest
    def ingest(self, messages: Sequence[Message], namespace: str | None = None,
               progress: ProgressFn | None = None, core_facts: bool | None = None) -> IngestReport:
        """Add messages (in chronological order) to ``namespace`` and extend its Structured
        Interaction Memory: Topical Segments, then Event Trajectories for closed segments (§3.2); then,
        with ``core_facts`` (default: the config's), CoreFacts over every message not yet read (§3.3).
        The steps are ``memsif.ingest.IngestPipeline``'s.

        Idempotent by source id: messages already stored in the namespace are skipped; a message
        whose id is stored with another text, speaker or time is refused (``SourceConflict``: another
        transcript with the same ids, or a corrected one — ``ingest_transcript(replace=True)``).
        Every boundary and trajectory decision is stored with its φ terms and judge probability.

        Raises:
            MemSIFError: empty namespace, messages from several namespaces without ``namespace``,
                or only blank messages; nothing is written.
            SourceConflict: stored ids with other content; nothing is written. Blank
                messages among others are skipped with a warning in the report.
            StoreError, EmbedderError, LLMError: a back-end failed (nothing partial is written
                for this call's messages before the store write at the end).
        """
        ns = namespace or (messages[0].namespace if messages else "")
        if not ns:
            raise MemSIFError("ingest needs a namespace: pass namespace=... or set Message.namespace.")
        ns = checked_namespace(ns)
        with self._namespace_lock(ns):
            return IngestPipeline(self.config, self, ns).run(messages, progress,
                                                self.config.facts.core_facts if core_facts is None else core_facts)

    def build_core_facts(self, namespace: str, progress: ProgressFn | None = None) -> IngestReport:
        """CoreFacts (§3.3) over every stored message of ``namespace`` that no extraction has read yet
        (after an ingest without them, or an interrupted one); nothing else changes. Raises
        ``NotFoundError`` for a namespace without memory."""
        self._require(namespace)
        return self.ingest([], namespace, progress, core_facts=True)

    def relink(self, namespace: str) -> RelinkResult:
        """Decide ``namespace``'s Event Trajectories again over the whole memory, as an ingest's structure
        step ends (§3.2; ``interaction.relink``); corrections and all else are kept. Raises
        ``NotFoundError`` for a namespace without memory."""
        self._require(namespace)
        with self._namespace_lock(namespace):
            return IngestPipeline(self.config, self, namespace).relink()

    # ----------------------------------------------------------------- reads (and ``Reads``)
    def missing_sentence_index(self, namespace: str) -> int:
        """How many of ``namespace``'s messages have no sentence in the hybrid index (stores built
        before it existed; the upgrade step "sentence_index" adds them)."""
        from memsif.upgrade import unindexed_messages

        return len(unindexed_messages(self.store, namespace))

    def upgrade(self, namespace: str, steps: Sequence[str] | None = None) -> dict[str, int]:
        """Run the named upgrade steps (``memsif.upgrade.STEPS``; all by default, in their order) on
        ``namespace``; returns each step's count of what it changed (0: already up to date).

        Raises:
            NotFoundError: no memory in ``namespace``.
            ValueError: a step name that does not exist.
        """
        from memsif.upgrade import run_steps

        self._require(namespace)
        with self._namespace_lock(namespace):
            return run_steps(self.store, self.embedder, namespace, steps)

    def ask(self, question: str, *, namespace: str, question_date: str | None = None, generate: bool = True,
            on_text: Callable[[str], None] | None = None, answer: AnswerSettings | None = None,
            accumulate: bool = True) -> Answer:
        """Answer ``question`` from ``namespace``'s memory with its trace (§3.5); then the ActiveFact
        pipeline runs on the query-local evidence (§3.4). ``on_text`` receives the answer's text piece by
        piece as it is written; ``answer`` settings (budget, retrieval, gates) apply to this question only,
        e.g. ``engine.config.answer`` with a larger ``context_tokens``; without ``accumulate`` the evidence is
        not added to the ActiveFact clusters (``accumulate`` adds it later). Returns the answer with its trace.

        Raises:
            NotFoundError: the namespace holds no memory.
            MemSIFError: an empty question.
            StoreError: a store made before the sentence index (``python -m memsif upgrade`` adds it).
            LLMError: answer generation failed.
        """
        from memsif.answer.query import QueryPipeline

        if not question or not question.strip():
            raise MemSIFError("ask needs a non-empty question.")
        self._require(namespace)
        config = self.config if answer is None else self.config.replace(answer=answer)
        pipeline = QueryPipeline(config, self.llm, self.embedder, self.store, self.entity_extractor)
        # candidate clusters are read-modify-written; model calls go before background ingest work
        with self._namespace_lock(namespace, "clusters"), interactive():
            return pipeline.ask(question.strip(), namespace=namespace, question_date=question_date,
                                generate=generate, on_text=on_text, accumulate=accumulate)

    def accumulate(self, answer: Answer, *, namespace: str) -> Answer:
        """Add ``answer``'s evidence to ``namespace``'s ActiveFact clusters (§3.4), as ``ask`` does after
        answering: for an answer read from a snapshot (``ask(..., accumulate=False)``), applied where the
        memory can be written. Returns ``answer`` with what changed on its trace.

        Raises:
            NotFoundError: the namespace holds no memory.
        """
        from memsif.answer.query import QueryPipeline

        self._require(namespace)
        pipeline = QueryPipeline(self.config, self.llm, self.embedder, self.store, self.entity_extractor)
        with self._namespace_lock(namespace, "clusters"):
            pipeline.accumulate(namespace, answer)
        return answer

    def export_namespace(self, namespace: str, decimals: int | None = None,
                         provenance: dict[str, Any] | None = None) -> NamespaceExport:
        """Everything of ``namespace`` as one ``NamespaceExport`` (``memsif.transfer.export_namespace``:
        ``decimals`` rounds vectors, ``provenance`` says how the memory was built).

        Raises:
            NotFoundError: the namespace holds no memory.
        """
        from memsif.transfer import export_namespace

        self._require(namespace)  # no lock: a copy for Evaluate must not wait for a CoreFact extraction
        embedded_with = self.store.recorded_embedder() or (self.embedder.name, self.embedder.dim)
        return export_namespace(self.store, embedded_with, namespace, decimals, provenance)

    def import_namespace(self, data: NamespaceExport | dict[str, Any], namespace: str | None = None) -> str:
        """Write an export (a ``NamespaceExport``, or its decoded JSON) into the store (under ``namespace``
        if given); returns the namespace written.

        Raises:
            MemSIFError: not an export, a damaged one, or the target namespace already holds memory.
            EmbedderError: the export was made with another embedder.
        """
        from memsif.transfer import check_export, import_namespace, parse_export

        data = parse_export(data)
        check_export(data, self.embedder)
        ns = checked_namespace(namespace or data.namespace)
        with self._namespace_lock(ns), self._namespace_lock(ns, "clusters"):
            import_namespace(self.store, self.embedder, data, ns)
        return ns

    def delete_namespace(self, namespace: str) -> None:
        with self._namespace_lock(namespace), self._namespace_lock(namespace, "clusters"):
            self.store.delete_namespace(namespace)

