"""The MemSIF engine: coordinates loaders, builders and the store; each step lives in its module."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memsif.config import MemSIFConfig
from memsif.embed import Embedder
from memsif.entities import EntityExtractor
from memsif.errors import MemSIFError, NotFoundError
from memsif.interaction.segments import SegmentBuilder
from memsif.interaction.sentences import build_sentences
from memsif.interaction.state import InteractionState, SegmentState, TrajectoryState
from memsif.interaction.trajectories import TrajectoryBuilder
from memsif.llm import LLM
from memsif.locks import interactive, job
from memsif.matching import SemanticMapping, UnitProfile
from memsif.records import EventTrajectory, Message, TopicalSegment
from memsif.store import MemoryStore, StoredMessage
from memsif.store.qdrant import SENTENCES

log = logging.getLogger(__name__)

#: Messages longer than this get a warning at ingest: the default embedder reads 256 word pieces
#: (about EMBEDDER_READS_CHARS characters of English) and prompts clip each message (memsif.prompts).
LONG_MESSAGE_CHARS = 2_000
EMBEDDER_READS_CHARS = 1_000

#: progress(done, total, stage): called while ingesting.
ProgressFn = Callable[[int, int, str], None]


@dataclass
class IngestReport:
    """What one ``ingest`` call did. Times are wall seconds."""

    namespace: str
    messages: int                 # messages added by this call
    skipped: int                  # messages already stored (same source id), left unchanged
    total_messages: int
    segments: int
    trajectories: int
    judge_calls_segment: int
    judge_calls_trajectory: int
    judge_errors: int
    seconds: float
    seconds_by_stage: dict[str, float] = field(default_factory=dict)
    core_facts: int = 0                                          # current CoreFacts after this call
    fact_ops: dict[str, int] = field(default_factory=dict)       # operations of this call, by kind
    fact_llm_calls: int = 0
    fact_errors: int = 0
    warnings: list[str] = field(default_factory=list)            # e.g. messages too long for the models

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rebuilt_segment(seg: TopicalSegment, members: list[str], state: InteractionState) -> TopicalSegment:
    """``seg`` cut back to ``members`` (stored messages, already in ``state``), its derived fields recomputed."""
    msgs = [state.messages[m] for m in members]
    times = [m.time for m in msgs if m.time is not None]
    return seg.model_copy(update={
        "message_ids": members,
        "entities": sorted(set().union(*(state.entities[m] for m in members))),
        "session_ids": list(dict.fromkeys(m.session_id for m in msgs if m.session_id)),
        "start_time": times[0] if times else None, "end_time": times[-1] if times else None,
        "facts_extracted_upto": min(seg.facts_extracted_upto, len(members)),
    })


def _mean_vector(state: InteractionState, ids: list[str]) -> np.ndarray:
    return np.mean([state.vectors[m] for m in ids], axis=0)


def _llm_key(cfg: MemSIFConfig) -> tuple:
    return (cfg.llm_backend, cfg.llm_model, cfg.llm_gguf_file, cfg.llm_base_url, cfg.llm_device, cfg.llm_dtype)


class MemSIF:
    """Long-term memory engine (paper §3). Back-ends are passed in or loaded lazily from config.

    Args:
        config: settings; ``MemSIFConfig.from_env()`` when omitted.
        llm, embedder, entities, store: back-ends to use instead of the configured ones
            (tests pass a fake LLM, a deterministic embedder and an in-memory store).
    """

    def __init__(self, config: MemSIFConfig | None = None, *, llm: LLM | None = None,
                 embedder: Embedder | None = None, entities: EntityExtractor | None = None,
                 store: MemoryStore | None = None) -> None:
        self.config = config or MemSIFConfig.from_env()
        self._llm = llm
        self._embedder = embedder
        self._entities = entities
        self._store = store
        # One lock per namespace: a build in one namespace never waits for another session's
        # chat or build (back-ends serialise their own calls; see store._Serialised).
        self._ns_locks: dict[tuple[str, str], threading.RLock] = {}
        self._ns_locks_guard = threading.Lock()
        self._llms: dict[tuple, LLM] = {} if llm is None else {_llm_key(self.config): llm}
        self._load_locks = {name: threading.Lock() for name in ("llm", "embedder", "entities", "store")}

    #: settings that bind a store to its contents; a derived engine must keep them
    _STORE_FIELDS = ("embedder_model", "data_dir", "qdrant_url", "qdrant_api_key", "use_spacy")

    def with_config(self, config: MemSIFConfig) -> MemSIF:
        """An engine over the same store, embedder, entity extractor and namespace locks, with other
        method settings (α, τ_split, τ_merge, Top-K, θ_s, θ_q, ...) and possibly another LLM.
        The inspector gives each browser session its own settings this way. LLMs are loaded once per
        (back-end, model) and shared by every engine derived from this one.

        Raises:
            ConfigError: ``config`` changes a store-binding setting (embedder, data folder, server,
                NER) — those need another process or store.
        """
        from memsif.errors import ConfigError

        changed = [f for f in self._STORE_FIELDS if getattr(config, f) != getattr(self.config, f)]
        if changed:
            raise ConfigError(f"{', '.join(changed)} cannot change for a running engine (the store is "
                              "bound to them); restart with the new setting instead.")
        other = MemSIF(config, embedder=self.embedder, entities=self.entity_extractor, store=self.store)
        other._ns_locks, other._ns_locks_guard = self._ns_locks, self._ns_locks_guard
        other._llms, other._load_locks["llm"] = self._llms, self._load_locks["llm"]
        return other

    def _namespace_lock(self, namespace: str, part: str = "memory") -> threading.RLock:
        """``part`` "memory" guards messages, segments, trajectories and CoreFacts (ingest);
        "clusters" guards the ActiveFact clusters (ask), so a chat never waits for a long ingest."""
        with self._ns_locks_guard:
            return self._ns_locks.setdefault((namespace, part), threading.RLock())

    # ----------------------------------------------------------------- back-ends
    @property
    def llm(self) -> LLM:
        with self._load_locks["llm"]:
            if self._llm is None:
                key = _llm_key(self.config)
                if key not in self._llms:
                    from memsif.llm import load_llm

                    self._llms[key] = load_llm(self.config)
                self._llm = self._llms[key]
            return self._llm

    @property
    def embedder(self) -> Embedder:
        with self._load_locks["embedder"]:
            if self._embedder is None:
                from memsif.embed import SentenceTransformerEmbedder

                self._embedder = SentenceTransformerEmbedder(self.config.embedder_model)
            return self._embedder

    @property
    def entity_extractor(self) -> EntityExtractor:
        with self._load_locks["entities"]:
            if self._entities is None:
                from memsif.entities import load_entity_extractor

                self._entities = load_entity_extractor(self.config.use_spacy)
            return self._entities

    @property
    def store(self) -> MemoryStore:
        store = self._store
        if store is not None and store.dim is not None:  # every read and write comes through here
            return store
        embedder = self.embedder  # outside the store lock: loading it may take seconds
        with self._load_locks["store"]:
            if self._store is None:
                cfg = self.config
                if cfg.qdrant_url:
                    self._store = MemoryStore(url=cfg.qdrant_url, api_key=cfg.qdrant_api_key)
                else:
                    self._store = MemoryStore(path=cfg.resolved_data_dir / "qdrant")
            if self._store.dim is None:
                self._store.ensure_collections(embedder.name, embedder.dim)
            return self._store

    @property
    def semantic_mapping(self) -> SemanticMapping:
        """How cosine becomes s_sem for the configured embedder (see ``matching.COSINE_RANGES``)."""
        return SemanticMapping.for_embedder(self.embedder.name, self.config.sem_mapping)

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
        Interaction Memory: Topical Segments, then Event Trajectories for closed segments (§3.2).

        Idempotent by source id: messages already stored in the namespace are skipped; a message
        whose id is stored with a different text is refused (another transcript with the same ids).
        Every boundary and trajectory decision is stored with its φ terms and judge probability.

        Raises:
            MemSIFError: empty namespace, messages from several namespaces without ``namespace``,
                only blank messages, or stored ids with different text; nothing is written. Blank
                messages among others are skipped with a warning in the report.
            StoreError, EmbedderError, LLMError: a back-end failed (nothing partial is written
                for this call's messages before the store write at the end).
        """
        start = time.perf_counter()
        ns = namespace or (messages[0].namespace if messages else "")
        if not ns:
            raise MemSIFError("ingest needs a namespace: pass namespace=... or set Message.namespace.")
        stages: dict[str, float] = {}
        with self._namespace_lock(ns), job(ns, "structure"):
            t = time.perf_counter()
            state = self._load_state(ns)
            stages["load_state"] = time.perf_counter() - t

            with_text = [m for m in messages if m.text.strip()]
            if messages and not with_text:
                raise MemSIFError(f"The {len(messages)} message(s) given hold only whitespace: nothing to ingest "
                                  f"into {ns!r}, and nothing was written.")
            blank = [m.id for m in messages if not m.text.strip()] if len(with_text) < len(messages) else []
            messages = with_text
            conflicts = [m.id for m in messages if m.id in state.messages and state.messages[m.id].text != m.text]
            if conflicts:
                raise MemSIFError(
                    f"Namespace {ns!r} already holds messages {', '.join(conflicts[:5])}"
                    f"{' …' if len(conflicts) > 5 else ''} with different text: this looks like another "
                    "transcript. Ingest it into another namespace, or delete this one first; nothing was written.")
            fresh: list[Message] = []
            seen = set(state.messages)
            for m in messages:
                if m.id in seen:
                    continue
                seen.add(m.id)
                fresh.append(m.model_copy(update={"namespace": ns, "index": len(state.messages) + len(fresh)}))
            skipped = len(messages) - len(fresh)
            warnings = [f"message {b} holds only whitespace: skipped" for b in blank]
            warnings += [f"message {m.id} has {len(m.text):,} characters: it is stored whole, but the embedder "
                        f"reads only its beginning (~{EMBEDDER_READS_CHARS:,} characters) and prompts show at "
                        "most a few hundred characters of it" for m in fresh if len(m.text) > LONG_MESSAGE_CHARS]
            for warning in warnings:
                log.warning("namespace %s: %s", ns, warning)

            t = time.perf_counter()
            texts = [m.text for m in fresh]
            with ThreadPoolExecutor(max_workers=1) as pool:  # NER runs while torch embeds
                entities_future = pool.submit(self.entity_extractor.extract, texts)
                vectors = self.embedder.embed_documents(texts)
                entity_sets = entities_future.result()
            stages["embed_and_entities"] = time.perf_counter() - t

            seg_builder = SegmentBuilder(self.config, self.semantic_mapping, self.llm)
            traj_builder = TrajectoryBuilder(self.config, self.semantic_mapping, self.llm)
            decisions: list[dict[str, Any]] = []
            touched_segments: set[str] = set()
            t = time.perf_counter()
            if self.config.use_trajectories:  # closed segments whose assignment an interrupted ingest lost
                for seg in state.segments[:-1]:
                    if seg.record.trajectory_id is None:
                        decisions.append(traj_builder.assign(state, seg).model_dump(mode="json"))
                        touched_segments.add(seg.record.id)
            for k, (msg, vec, ents) in enumerate(zip(fresh, vectors, entity_sets, strict=True)):
                before = state.current_segment
                state.add_message(msg, vec, ents)
                decision = seg_builder.place(state, msg)
                decisions.append(decision.model_dump(mode="json"))
                touched_segments.add(decision.segment_id)
                if (self.config.use_trajectories and before is not None and not decision.continued
                        and before.record.trajectory_id is None):
                    decisions.append(traj_builder.assign(state, before).model_dump(mode="json"))
                    touched_segments.add(before.record.id)
                if progress:
                    progress(k + 1, len(fresh), "segments")
            current = state.current_segment
            if self.config.use_trajectories and current is not None and current.record.trajectory_id is None:
                decisions.append(traj_builder.assign(state, current).model_dump(mode="json"))
                touched_segments.add(current.record.id)
            stages["structure"] = time.perf_counter() - t

            t = time.perf_counter()
            indexed = fresh
            if len(state.messages) > len(fresh) and self.store.count(SENTENCES, ns) == 0:
                indexed = list(state.messages.values())  # a store made before the sentence index: add it too
            sentences = build_sentences(indexed, state.vectors, state.segment_of, self.embedder)
            stages["sentences"] = time.perf_counter() - t

            t = time.perf_counter()
            self._persist(state, fresh, touched_segments, decisions, sentences)
            stages["store"] = time.perf_counter() - t

            fact_summary: dict[str, Any] = {}
            if self.config.core_facts if core_facts is None else core_facts:
                t = time.perf_counter()
                with job(ns, "facts"):
                    fact_summary = self._build_core_facts(state, progress)
                stages["core_facts"] = time.perf_counter() - t

        errors = sum(1 for d in decisions if d.get("error"))
        return IngestReport(**fact_summary,
            namespace=ns, messages=len(fresh), skipped=skipped, total_messages=len(state.messages),
            segments=len(state.segments), trajectories=len(state.trajectories),
            judge_calls_segment=seg_builder.judge_calls, judge_calls_trajectory=traj_builder.judge_calls,
            judge_errors=errors, seconds=time.perf_counter() - start, seconds_by_stage=stages, warnings=warnings,
        )

    def _build_core_facts(self, state: InteractionState, progress: ProgressFn | None) -> dict[str, Any]:
        """CoreFact extraction and consolidation over every message no extraction has read yet (§3.3).

        Each batch's facts, operations and segment read-marks are written as soon as the batch is
        done, so readers (the inspector) see CoreFacts appear, and an interrupted extraction resumes
        after the last finished batch."""
        from memsif.facts.core import BATCH_MESSAGES, CoreFactBuilder, FactState
        from memsif.facts.schema import parse_schema

        ns = state.namespace
        store = self.store
        fstate = FactState()
        for fact, vector in store.facts(ns, with_vectors=True):
            fstate.facts.append(fact)
            fstate.vectors[fact.id] = vector
        builder = CoreFactBuilder(self.llm, self.embedder, parse_schema(self.config.core_schema))
        # each batch: its messages and, per segment, how far extraction has read once it is done
        batches: list[tuple[list[Message], dict[str, int]]] = [([], {})]
        for seg in state.segments:
            rec = seg.record
            for pos in range(rec.facts_extracted_upto, len(rec.message_ids)):
                if len(batches[-1][0]) >= BATCH_MESSAGES:
                    batches.append(([], {}))
                batches[-1][0].append(state.messages[rec.message_ids[pos]])
                batches[-1][1][rec.id] = pos + 1
        batches = [b for b in batches if b[0]]
        trajectory_of = {seg.record.id: seg.record.trajectory_id for seg in state.segments}
        counts: dict[str, int] = {}
        errors = 0
        seq = store.count("memsif_fact_ops", ns)
        if progress and batches:
            progress(0, len(batches), "core facts")
        group = self.config.fact_parallel
        extracted: list[tuple[list, list]] = []
        for k, (_, read_upto) in enumerate(batches):
            if k % group == 0:  # extract the next group of batches together; consolidate one by one
                extracted = builder.extract_many(ns, [b for b, _ in batches[k:k + group]], state.segment_of,
                                                 trajectory_of, [np.stack([state.vectors[m.id] for m in b])
                                                                 for b, _ in batches[k:k + group]])
            candidates, ops = extracted[k % group]
            ops = list(ops)
            ops.extend(builder.consolidate(fstate, cand) for cand in candidates)
            changed = {fid for op in ops for fid in op.fact_ids}
            store.put_facts(ns, [(f, fstate.vectors[f.id]) for f in fstate.facts if f.id in changed])
            store.put_decisions(ns, [op.model_dump(mode="json") for op in ops], seq, collection="memsif_fact_ops")
            seq += len(ops)
            for sid, upto in read_upto.items():
                state.segment(sid).record.facts_extracted_upto = upto
            store.put_segments(ns, [(state.segment(sid).record, state.segment(sid).profile.mean)
                                    for sid in sorted(read_upto, key=lambda s: int(s[1:]))])
            for op in ops:
                counts[op.op.value] = counts.get(op.op.value, 0) + 1
            errors += sum(1 for op in ops if op.error)
            if progress:
                progress(k + 1, len(batches), "core facts")
        return {"core_facts": len(fstate.current()), "fact_ops": counts, "fact_llm_calls": builder.llm_calls,
                "fact_errors": errors}

    def _load_state(self, namespace: str) -> InteractionState:
        """Rebuild the namespace's working state from the store (profiles re-pooled from messages),
        after repairing what an interrupted ingest may have left (see ``_repair``)."""
        store = self.store
        state = InteractionState(namespace, store.dim or self.embedder.dim)
        for row in store.messages(namespace):
            state.add_message(row.message, row.vector, row.entities)
            if row.segment_id:
                state.segment_of[row.message.id] = row.segment_id
        segments, trajectories = self._repair(state)
        for seg in segments:
            profile = UnitProfile(state.dim)
            for mid in seg.message_ids:
                profile.add(state.vectors[mid], state.entities[mid])
            state.segments.append(SegmentState(seg, profile))
        for traj in trajectories:
            profile = UnitProfile(state.dim)
            for sid in traj.segment_ids:
                profile.absorb(state.segment(sid).profile)
            state.trajectories.append(TrajectoryState(traj, profile))
        decisions = store.decisions(namespace)
        state.next_decision_seq = decisions[-1]["seq"] + 1 if decisions else 0
        return state

    def _repair(self, state: InteractionState) -> tuple[list[TopicalSegment], list[EventTrajectory]]:
        """Segments and trajectories consistent with the stored messages (already loaded into ``state``).

        An ingest writes segments, trajectories and decisions before its messages, so a process
        killed in between (``kill -9``, power loss) leaves records that name messages which were
        never stored. Those are the newest records; they are trimmed or deleted here, with their
        decisions, and the next ingest of the same transcript redoes them (ingest is idempotent by
        source id). A repair is logged.

        Raises:
            StoreError: the damage is not at the end of the namespace (not left by an interrupted
                ingest); delete the namespace and ingest again.
        """
        from memsif.errors import StoreError
        from memsif.store.qdrant import DECISIONS, SEGMENTS, TRAJECTORIES

        namespace, stored = state.namespace, set(state.messages)
        store = self.store
        segments = store.segments(namespace)
        kept: list[TopicalSegment] = []
        dropped: set[str] = set()
        trimmed: list[TopicalSegment] = []
        for seg in segments:
            members = [m for m in seg.message_ids if m in stored]
            if not members:
                dropped.add(seg.id)
                continue
            if len(members) < len(seg.message_ids):
                seg = _rebuilt_segment(seg, members, state)
                trimmed.append(seg)
            kept.append(seg)
        if dropped and [s.id for s in segments[len(kept):]] != sorted(dropped, key=lambda i: int(i[1:])):
            raise StoreError(f"Namespace {namespace!r} has segments without stored messages in its middle; "
                             "delete the namespace and ingest the transcript again.")
        trajectories, gone, shrunk = [], set(), []
        for traj in store.trajectories(namespace):
            members = [sid for sid in traj.segment_ids if sid not in dropped]
            if not members:
                gone.add(traj.id)
                continue
            if len(members) < len(traj.segment_ids):
                traj = traj.model_copy(update={"segment_ids": members})
                shrunk.append(traj)
            trajectories.append(traj)
        # A segment names the trajectory that lists it, or none (its assignment is redone).
        listed = {sid: t.id for t in trajectories for sid in t.segment_ids}
        unassigned: set[str] = set()
        for seg in kept:
            if seg.trajectory_id != listed.get(seg.id):
                seg.trajectory_id = listed.get(seg.id)
                if seg.trajectory_id is None:
                    unassigned.add(seg.id)
                trimmed.append(seg)
        if not (dropped or trimmed or gone or shrunk):
            return kept, trajectories
        stale = [d["seq"] for d in store.decisions(namespace)
                 if (d.get("kind") == "segment" and d.get("message_id") not in stored)
                 or (d.get("kind") == "trajectory" and (d.get("segment_id") in dropped | unassigned
                                                        or d.get("trajectory_id") in gone))]
        store.delete_records(SENTENCES, namespace, "sentence",
                             [sen.id for sen, _ in store.sentences(namespace) if sen.message_id not in stored])
        store.delete_records(SEGMENTS, namespace, "segment", dropped)
        store.delete_records(TRAJECTORIES, namespace, "trajectory", gone)
        store.delete_records(DECISIONS, namespace, "decision", stale)
        by_id = {s.id: s for s in kept}
        store.put_segments(namespace, [(s, _mean_vector(state, s.message_ids)) for s in
                                       {s.id: s for s in trimmed}.values()])
        store.put_trajectories(namespace, [(t, _mean_vector(state, [m for sid in t.segment_ids
                                                                    for m in by_id[sid].message_ids]))
                                           for t in shrunk])
        log.warning("namespace %s: repaired an interrupted ingest (%d segments and %d trajectories removed, "
                    "%d segments and %d trajectories trimmed, %d decisions removed)", namespace, len(dropped),
                    len(gone), len(trimmed), len(shrunk), len(stale))
        return kept, trajectories

    def _persist(self, state: InteractionState, fresh: list[Message], touched: set[str],
                 decisions: list[dict[str, Any]], sentences: list) -> None:
        store = self.store
        ns = state.namespace
        touched_traj = {state.segment(sid).record.trajectory_id for sid in touched} - {None}
        # Order matters for a crash: messages last, so a restart re-ingests anything not complete.
        store.put_segments(ns, [(state.segment(sid).record, state.segment(sid).profile.mean)
                                for sid in sorted(touched, key=lambda s: int(s[1:]))])
        store.put_trajectories(ns, [(state.trajectory(tid).record, state.trajectory(tid).profile.mean)
                                    for tid in sorted(touched_traj, key=lambda s: int(s[1:]))])
        state.next_decision_seq = store.put_decisions(ns, decisions, state.next_decision_seq)
        store.put_sentences(ns, sentences)
        store.put_messages(ns, [StoredMessage(m, state.vectors[m.id], state.entities[m.id],
                                              state.segment_of.get(m.id)) for m in fresh])

    # ----------------------------------------------------------------- reads
    def namespaces(self) -> list[str]:
        return self.store.namespaces()

    def has_memory(self, namespace: str) -> bool:
        """Whether ``namespace`` holds any message."""
        return self.store.count("memsif_messages", namespace) > 0

    def _require_sentence_index(self, namespace: str) -> None:
        from memsif.errors import StoreError

        if self.store.count(SENTENCES, namespace) == 0:
            data = "" if self.config.qdrant_url else f" --data-dir {self.config.resolved_data_dir}"
            raise StoreError(f"Namespace {namespace!r} was stored before the hybrid sentence index existed, so "
                             f"it cannot be searched yet. Add the index (nothing stored changes): "
                             f"python -m memsif upgrade{data}")

    def _require(self, namespace: str) -> None:
        if self.store.count("memsif_messages", namespace) == 0:
            known = ", ".join(self.store.namespaces()[:10]) or "none"
            raise NotFoundError(f"No memory in namespace {namespace!r} (known: {known}). Ingest a transcript first.")

    def missing_sentence_index(self, namespace: str) -> int:
        """How many of ``namespace``'s messages have no sentence in the hybrid index (stores built
        before it existed; ``index_sentences`` adds them)."""
        indexed = {sen.message_id for sen, _ in self.store.sentences(namespace)} \
            if self.store.count(SENTENCES, namespace) else set()
        return sum(1 for row in self.store.messages(namespace, with_vectors=False) if row.message.id not in indexed)

    def index_sentences(self, namespace: str) -> int:
        """Add the hybrid sentence index (dense + sparse lexical vectors) for every stored message of
        ``namespace`` that lacks it; returns how many sentences were written. Nothing else changes.

        Raises:
            NotFoundError: the namespace holds no memory.
        """
        self._require(namespace)
        with self._namespace_lock(namespace):
            store = self.store
            indexed = {sen.message_id for sen, _ in store.sentences(namespace)}
            rows = [r for r in store.messages(namespace) if r.message.id not in indexed]
            sentences = build_sentences([r.message for r in rows], {r.message.id: r.vector for r in rows},
                                        {r.message.id: r.segment_id for r in rows if r.segment_id}, self.embedder)
            store.put_sentences(namespace, sentences)
        return len(sentences)

    def messages(self, namespace: str) -> list[Message]:
        self._require(namespace)
        return [row.message for row in self.store.messages(namespace, with_vectors=False)]

    def segments(self, namespace: str) -> list[TopicalSegment]:
        self._require(namespace)
        return self.store.segments(namespace)

    def trajectories(self, namespace: str) -> list[EventTrajectory]:
        self._require(namespace)
        return self.store.trajectories(namespace)

    def decisions(self, namespace: str, kind: str | None = None) -> list[dict[str, Any]]:
        """Recorded decisions in order; ``kind`` is "segment" or "trajectory" (or None for all)."""
        self._require(namespace)
        return self.store.decisions(namespace, kind)

    def ask(self, question: str, namespace: str, question_date: str | None = None, generate: bool = True):
        """Answer ``question`` from ``namespace``'s memory with its trace (§3.5); then the ActiveFact
        pipeline runs on the query-local evidence (§3.4). Returns ``memsif.query.Answer``.

        Raises:
            NotFoundError: the namespace holds no memory.
            MemSIFError: an empty question.
            LLMError: answer generation failed.
        """
        from memsif.query import QueryPipeline

        if not question or not question.strip():
            raise MemSIFError("ask needs a non-empty question.")
        self._require(namespace)
        self._require_sentence_index(namespace)
        pipeline = QueryPipeline(self.config, self.llm, self.embedder, self.store, self.entity_extractor)
        # candidate clusters are read-modify-written; model calls go before background ingest work
        with self._namespace_lock(namespace, "clusters"), interactive():
            return pipeline.ask(namespace, question.strip(), question_date, generate)

    def active_facts(self, namespace: str) -> list[dict[str, Any]]:
        """Promoted ActiveFacts of ``namespace``."""
        self._require(namespace)
        rows = self.store.records("memsif_active_facts", namespace)
        return sorted(rows, key=lambda r: int(r["id"][1:]))

    def clusters(self, namespace: str) -> list[dict[str, Any]]:
        """Candidate clusters C_k with their Score_src and Score_qry (embeddings left out)."""
        self._require(namespace)
        rows = [{k: v for k, v in r.items() if not k.endswith("_vectors")}
                for r in self.store.records("memsif_clusters", namespace)]
        return sorted(rows, key=lambda r: int(r["id"][1:]))

    def facts(self, namespace: str, history: bool = False) -> list:
        """CoreFacts of ``namespace``: current ones, or with ``history`` the superseded ones too."""
        self._require(namespace)
        facts = [f for f, _ in self.store.facts(namespace)]
        return facts if history else [f for f in facts if f.status == "current"]

    def fact_log(self, namespace: str, op: str | None = None, subject: str | None = None) -> list[dict[str, Any]]:
        """The CoreFact operation log, optionally filtered by operation and by subject (case-insensitive)."""
        self._require(namespace)
        rows = self.store.fact_ops(namespace)
        if op:
            rows = [r for r in rows if r["op"] == op.upper()]
        if subject:
            wanted = subject.lower()
            rows = [r for r in rows if any((f.get("subject") or "").lower() == wanted
                                           for f in [*r["before"], *r["after"], r.get("candidate") or {}])]
        return rows

    EXPORT_FORMAT = "memsif-namespace/1"

    def export_namespace(self, namespace: str) -> dict[str, Any]:
        """Everything of ``namespace`` as one JSON-able dict (vectors included, with the embedder's
        name so an import into a store of another embedder is refused)."""
        from memsif.store.qdrant import ACTIVE_FACTS, CLUSTERS

        self._require(namespace)
        store = self.store
        return {
            "format": self.EXPORT_FORMAT, "namespace": namespace, "embedder": self.embedder.name,
            "dim": self.embedder.dim,
            "messages": [{"message": r.message.model_dump(mode="json"), "vector": r.vector.astype(float).tolist(),
                          "entities": sorted(r.entities), "segment_id": r.segment_id}
                         for r in store.messages(namespace)],
            "sentences": [{"sentence": sen.model_dump(mode="json"), "vector": v.astype(float).tolist()}
                          for sen, v in store.sentences(namespace, with_vectors=True)],
            "segments": [s.model_dump(mode="json") for s in store.segments(namespace)],
            "trajectories": [t.model_dump(mode="json") for t in store.trajectories(namespace)],
            "decisions": store.decisions(namespace),
            "facts": [{"fact": f.model_dump(mode="json"), "vector": v.astype(float).tolist()}
                      for f, v in store.facts(namespace, with_vectors=True)],
            "fact_ops": store.fact_ops(namespace),
            "clusters": store.records(CLUSTERS, namespace),
            "active_facts": store.records(ACTIVE_FACTS, namespace),
        }

    def import_namespace(self, data: dict[str, Any], namespace: str | None = None) -> str:
        """Write an ``export_namespace`` dict into the store (under ``namespace`` if given).

        Raises:
            MemSIFError: not an export, or the target namespace already holds memory.
            EmbedderError: the export was made with another embedder.
        """
        from memsif import lexical
        from memsif.errors import EmbedderError
        from memsif.records import CoreFact, Sentence
        from memsif.store.qdrant import ACTIVE_FACTS, CLUSTERS, FACT_OPS

        if not isinstance(data, dict) or data.get("format") != self.EXPORT_FORMAT:
            raise MemSIFError(f"Not a MemSIF namespace export (expected format {self.EXPORT_FORMAT!r}).")
        if data["embedder"] != self.embedder.name or int(data["dim"]) != self.embedder.dim:
            raise EmbedderError(f"The export was embedded with {data['embedder']!r}; this engine uses "
                                f"{self.embedder.name!r}. Set MEMSIF_EMBEDDER_MODEL to match, or re-ingest.")
        ns = namespace or data["namespace"]
        store = self.store
        with self._namespace_lock(ns), self._namespace_lock(ns, "clusters"):
            if store.count("memsif_messages", ns):
                raise MemSIFError(f"Namespace {ns!r} already holds memory; delete it or import under another name.")

            def re_ns(payload: dict[str, Any]) -> dict[str, Any]:
                return {**payload, "namespace": ns}

            segs = [TopicalSegment(**re_ns(s)) for s in data["segments"]]
            vectors = {m["message"]["id"]: np.asarray(m["vector"], dtype=np.float32) for m in data["messages"]}
            store.put_segments(ns, [(s, np.mean([vectors[i] for i in s.message_ids], axis=0)) for s in segs])
            trajs = [EventTrajectory(**re_ns(t)) for t in data["trajectories"]]
            by_seg = {s.id: s for s in segs}
            store.put_trajectories(ns, [(t, np.mean([vectors[i] for sid in t.segment_ids
                                                     for i in by_seg[sid].message_ids], axis=0)) for t in trajs])
            store.put_decisions(ns, [re_ns(d) for d in data["decisions"]], 0)
            store.put_facts(ns, [(CoreFact(**re_ns(f["fact"])), np.asarray(f["vector"], dtype=np.float32))
                                 for f in data["facts"]])
            store.put_decisions(ns, [re_ns(d) for d in data["fact_ops"]], 0, collection=FACT_OPS)
            store.put_records(CLUSTERS, ns, "cluster", [(c["id"], re_ns(c), None) for c in data["clusters"]])
            store.put_records(ACTIVE_FACTS, ns, "active_fact",
                              [(a["id"], re_ns(a), self.embedder.embed_query(a["statement"]))
                               for a in data["active_facts"]])
            messages = [Message(**re_ns(m["message"])) for m in data["messages"]]
            if data.get("sentences"):  # exports made before the sentence index hold none: built here
                sentences = [Sentence(**re_ns(x["sentence"])) for x in data["sentences"]]
                sparse = lexical.encode_documents([x.text for x in sentences], [x.speaker for x in sentences])
                store.put_sentences(ns, [(x, np.asarray(row["vector"], dtype=np.float32), sp)
                                         for x, row, sp in zip(sentences, data["sentences"], sparse, strict=True)])
            else:
                store.put_sentences(ns, build_sentences(messages, vectors, {m["message"]["id"]: m["segment_id"]
                                                                            for m in data["messages"]
                                                                            if m["segment_id"]}, self.embedder))
            store.put_messages(ns, [StoredMessage(Message(**re_ns(m["message"])), vectors[m["message"]["id"]],
                                                  frozenset(m["entities"]), m["segment_id"])
                                    for m in data["messages"]])
        return ns

    def delete_namespace(self, namespace: str) -> None:
        with self._namespace_lock(namespace), self._namespace_lock(namespace, "clusters"):
            self.store.delete_namespace(namespace)
