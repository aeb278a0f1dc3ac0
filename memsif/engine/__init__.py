"""The MemSIF engine: the parts it holds over one bundle of back-ends (``memsif.backends.Backends``) —
``reads``, ``corrections``, ``searcher``, ``sources``, ``admin`` — and its steps, each in its module (construction in
``memsif.ingest``, questions in ``memsif.answer.query``, transfer in ``memsif.transfer``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memsif.backends import Backends
from memsif.config import AnswerSettings, MemSIFConfig
from memsif.delegated import Delegated
from memsif.embed import Embedder
from memsif.engine.editing import Corrections
from memsif.engine.namespaces import NamespaceAdmin, NamespaceLocks
from memsif.engine.reads import Reads
from memsif.engine.search import Search
from memsif.engine.sources import Sources
from memsif.entities import EntityExtractor
from memsif.errors import MemSIFError
from memsif.ingest import IngestPipeline, IngestReport, ProgressFn
from memsif.interaction.forecast import Workload
from memsif.interaction.relink import RelinkResult
from memsif.io.names import checked_namespace
from memsif.llm import LLM
from memsif.llm.profiles import ModelProfile
from memsif.locks import interactive
from memsif.locks import running as job_running
from memsif.records import Message
from memsif.store import Store

if TYPE_CHECKING:
    from memsif.answer.query import Answer, QueryPipeline

__all__ = ["IngestReport", "MemSIF", "ProgressFn"]

log = logging.getLogger(__name__)


class MemSIF:
    """Long-term memory engine (paper §3) over one bundle of back-ends (``backends``), passed in or loaded
    lazily from config. It holds its parts and answers for them: a memory's reads are ``reads``' (``facts``,
    ``segments``, ...), a person's corrections ``corrections``' (``edit_fact``, ``delete_fact``,
    ``restore_fact``), search ``searcher``'s, loaded transcripts ``sources``', a namespace as a whole
    (export, import, deletion, upgrades) ``admin``'s.

    Args:
        config: settings; the defaults (``MemSIFConfig()``) when omitted. The entry points build it
            from the environment (``MemSIFConfig.from_env()``); the engine never reads it.
        llm, embedder, entities, store: back-ends to use instead of the configured ones
            (tests pass a fake LLM, a deterministic embedder and an in-memory store).
        profile: what the LLM was measured to do, instead of the profile its name resolves
            (``Backends.profile``).
    """

    def __init__(self, config: MemSIFConfig | None = None, *, llm: LLM | None = None,
                 embedder: Embedder | None = None, entities: EntityExtractor | None = None,
                 store: Store | None = None, profile: ModelProfile | None = None) -> None:
        self._assemble(Backends(config or MemSIFConfig(), llm=llm, embedder=embedder, entities=entities, store=store,
                                profile=profile), NamespaceLocks())

    def _assemble(self, backends: Backends, locks: NamespaceLocks) -> None:
        self.backends, self.locks = backends, locks
        self.reads = Reads(backends)
        self.corrections = Corrections(backends, self.reads, locks)
        self.searcher = Search(backends, self.reads)
        self.sources = Sources(backends, self.reads, locks, self.corrections)
        self.admin = NamespaceAdmin(backends, self.reads, locks)
        self._questions: QueryPipeline | None = None  # one per engine: its caches outlive a question

    @property
    def config(self) -> MemSIFConfig:
        return self.backends.config

    def with_config(self, config: MemSIFConfig) -> MemSIF:
        """An engine over the same store, embedder, entity extractor and namespace locks, with other
        method settings (α, τ_split, τ_merge, Top-K, θ_s, θ_q, ...) and possibly another LLM.
        The inspector gives each browser session its own settings this way. An LLM handed to this
        engine is kept for the same model; others are loaded once per process and model (``load_llm``).

        Raises:
            ConfigError: ``config`` changes a store-binding setting (embedder, data folder, server,
                NER) — those need another process or store.
        """
        other = MemSIF.__new__(MemSIF)
        other._assemble(self.backends.with_config(config), self.locks)
        return other

    def lock(self, namespace: str, part: str = "memory") -> threading.RLock:
        """The reentrant lock of ``namespace``'s ``part`` that the engine's own writes take ("memory": messages,
        segments, trajectories, CoreFacts; "clusters": the ActiveFact clusters). A program holds it to make
        several calls one step, or to tell whether a build holds the namespace (``acquire(blocking=False)``)."""
        return self.locks(namespace, part)

    def trajectory_threshold(self) -> float:
        """The score a Topical Segment's best Event Trajectory must reach to be joined under this engine's settings
        and model (``interaction.link.decision_threshold``: the link model's threshold, or the choice margin)."""
        from memsif.interaction.link import decision_threshold

        return decision_threshold(self.config.method, self.llm, self.backends.profile)

    def workload(self, namespace: str) -> Workload | None:
        """The model work ahead of the memory build of ``namespace`` running in this process now (its judge
        prompts' characters, ``interaction.forecast``), for a page's waits; None when none runs."""
        running = job_running(namespace, "structure")
        return running.workload if running is not None and isinstance(running.workload, Workload) else None

    # ----------------------------------------------------------------- back-ends
    @property
    def llm(self) -> LLM:
        """The LLM handed in, else the configured one (``load_llm``: one per process and model)."""
        return self.backends.llm

    @property
    def embedder(self) -> Embedder:
        return self.backends.embedder

    @property
    def entity_extractor(self) -> EntityExtractor:
        return self.backends.entity_extractor

    @property
    def store(self) -> Store:
        """The store, opened once. Raises EmbedderError: another embedder's store."""
        return self.backends.store

    def load_models(self) -> float:
        """Load every back-end now; returns the seconds it took."""
        return self.backends.load_models()

    def close(self) -> None:
        self.backends.close()

    # ----------------------------------------------------------------- the parts' methods
    namespaces = Delegated("reads", Reads.namespaces)
    has_memory = Delegated("reads", Reads.has_memory)
    messages = Delegated("reads", Reads.messages)
    segments = Delegated("reads", Reads.segments)
    trajectories = Delegated("reads", Reads.trajectories)
    decisions = Delegated("reads", Reads.decisions)
    active_facts = Delegated("reads", Reads.active_facts)
    clusters = Delegated("reads", Reads.clusters)
    facts = Delegated("reads", Reads.facts)
    fact_log = Delegated("reads", Reads.fact_log)
    edit_fact = Delegated("corrections", Corrections.edit_fact)
    delete_fact = Delegated("corrections", Corrections.delete_fact)
    restore_fact = Delegated("corrections", Corrections.restore_fact)
    carry_corrections = Delegated("corrections", Corrections.carry_corrections)
    search = Delegated("searcher", Search.search)
    ingest_transcript = Delegated("sources", Sources.ingest_transcript)
    export_namespace = Delegated("admin", NamespaceAdmin.export_namespace)
    import_namespace = Delegated("admin", NamespaceAdmin.import_namespace)
    delete_namespace = Delegated("admin", NamespaceAdmin.delete_namespace)
    upgrade = Delegated("admin", NamespaceAdmin.upgrade)
    missing_sentence_index = Delegated("admin", NamespaceAdmin.missing_sentence_index)

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
        with self.locks(ns):
            return IngestPipeline(self.backends, ns).run(messages, progress,
                                                self.config.facts.core_facts if core_facts is None else core_facts)

    def build_core_facts(self, namespace: str, progress: ProgressFn | None = None) -> IngestReport:
        """CoreFacts (§3.3) over every stored message of ``namespace`` that no extraction has read yet
        (after an ingest without them, or an interrupted one); nothing else changes. Raises
        ``NotFoundError`` for a namespace without memory."""
        self.reads.require(namespace)
        return self.ingest([], namespace, progress, core_facts=True)

    def relink(self, namespace: str) -> RelinkResult:
        """Decide ``namespace``'s Event Trajectories again over the whole memory, as an ingest's structure
        step ends (§3.2; ``interaction.relink``); corrections and all else are kept. Raises
        ``NotFoundError`` for a namespace without memory."""
        self.reads.require(namespace)
        with self.locks(namespace):
            return IngestPipeline(self.backends, namespace).relink()

    # ----------------------------------------------------------------- upkeep and questions
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
        self.reads.require(namespace)
        pipeline = self._pipeline() if answer is None else \
            QueryPipeline(self.backends.with_config(self.config.replace(answer=answer)))
        # candidate clusters are read-modify-written; model calls go before background ingest work
        with self.locks(namespace, "clusters"), interactive():
            return pipeline.ask(question.strip(), namespace=namespace, question_date=question_date,
                                generate=generate, on_text=on_text, accumulate=accumulate)

    def accumulate(self, answer: Answer, *, namespace: str) -> Answer:
        """Add ``answer``'s evidence to ``namespace``'s ActiveFact clusters (§3.4), as ``ask`` does after
        answering: for an answer read from a snapshot (``ask(..., accumulate=False)``), applied where the
        memory can be written. Returns ``answer`` with what changed on its trace.

        Raises:
            NotFoundError: the namespace holds no memory.
        """
        self.reads.require(namespace)
        with self.locks(namespace, "clusters"):
            self._pipeline().accumulate(namespace, answer)
        return answer

    def _pipeline(self) -> QueryPipeline:
        """The engine's ``QueryPipeline``, made on the first question (it loads the models)."""
        from memsif.answer.query import QueryPipeline

        if self._questions is None:
            self._questions = QueryPipeline(self.backends)
        return self._questions
