"""Memory construction, step by step (§3.2–3.3): admit → embed → structure → persist → CoreFacts.

Each step is a short method of :class:`IngestPipeline`; the paper's methods live in their own modules
(``interaction.segments`` and ``interaction.trajectories`` for Structured Interaction Memory,
``facts.core`` for CoreFacts) and this module only sequences them, times them and writes their
results. ``MemSIF.ingest`` runs it under the namespace's lock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memsif.backends import Backends
from memsif.errors import MemSIFError, SourceConflict
from memsif.facts.step import CoreFactStep, CoreFactSummary, ProgressFn
from memsif.interaction.forecast import Workload, forecast
from memsif.interaction.relink import Relinker, RelinkResult, latest_decisions, whole_memory
from memsif.interaction.restore import Repair, mean_vector, messages_state, plan_repair, restore
from memsif.interaction.segments import SegmentBuilder
from memsif.interaction.sentences import build_sentences
from memsif.interaction.state import InteractionState
from memsif.interaction.trajectories import TrajectoryBuilder
from memsif.io.dates import implausible_dates
from memsif.io.placement import differences
from memsif.io.speakers import with_one_spelling
from memsif.locks import check_cancelled, job
from memsif.matching import SemanticMapping
from memsif.records import Decision, Message, record_number, spoken_text
from memsif.store import StoredMessage

if TYPE_CHECKING:
    from memsif.interaction.state import SegmentState
    from memsif.store import Store

log = logging.getLogger(__name__)

__all__ = ["CoreFactSummary", "IngestPipeline", "IngestReport", "ProgressFn"]

#: Messages longer than this get a warning at ingest: the default embedder reads 256 word pieces
#: (about EMBEDDER_READS_CHARS characters of English) and prompts clip each message (memsif.prompts).
LONG_MESSAGE_CHARS = 2_000
EMBEDDER_READS_CHARS = 1_000



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
    trajectory_note: str = ""  # the Event Trajectories were linked by the fallback scorer: why (interaction.relink)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Admitted:
    fresh: list[Message]
    skipped: int
    warnings: list[str]


@dataclass
class _Structured:
    decisions: list[Decision] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # segment ids to write
    reassigned: set[str] = field(default_factory=set)  # earlier segments given a trajectory by this ingest
    assigned: int = 0  # segments given a trajectory by this ingest (closed, or left open at its end)


@dataclass(frozen=True)
class Placed:
    """The progress of one part of a call's messages, counted over the whole call: ``done`` before it."""

    progress: ProgressFn | None
    done: int
    total: int

    def __call__(self, done: int, total: int, stage: str) -> None:
        if self.progress:
            self.progress(self.done + done, self.total, stage)


@dataclass(frozen=True)
class StoredState:
    """One namespace's working state read from the store, repaired first where an interrupted ingest left it
    half written (``interaction.restore``)."""

    backends: Backends
    namespace: str

    def load(self) -> InteractionState:
        """The namespace's working state from the store, after repairing what an interrupted ingest
        left (a repair is written and logged)."""
        store, ns = self.backends.store, self.namespace
        state = messages_state(ns, store.dim or self.backends.embedder.dim, store.messages(ns))
        decisions = store.decisions(ns)
        repair = plan_repair(state, store.segments(ns), store.trajectories(ns), decisions)
        if repair.needed:
            decisions = self._write_repair(state, repair, decisions)
        restore(state, repair.segments, repair.trajectories)
        seqs = [d.seq for d in decisions if d.seq is not None]
        state.next_decision_seq = seqs[-1] + 1 if seqs else 0
        return state

    def _write_repair(self, state: InteractionState, repair: Repair, decisions: list[Decision]) -> list[Decision]:
        """Writes ``repair``; returns the decisions kept, numbered without the gaps the stale ones left (a
        trajectory decision of a segment stored whole can follow the first stale one: it is kept)."""
        store, ns = self.backends.store, self.namespace
        # sentences of messages never stored (read only now: a repair is rare, every ingest loads state)
        store.delete("sentence", ns, [sen.id for sen, _ in store.sentences(ns) if sen.message_id not in state.messages])
        store.delete("segment", ns, repair.dropped_segments)
        store.delete("trajectory", ns, repair.gone_trajectories)
        stale = set(repair.stale_decisions)
        store.delete("decision", ns, sorted(stale))
        kept = [d for d in decisions if d.seq not in stale]
        first = min(stale, default=None)
        moved = [d for d in kept if first is not None and d.seq is not None and d.seq > first]
        if first is not None and moved:  # numbered on from the first stale one (an upsert by number)
            old = [d.seq for d in moved]
            end = store.put_decisions(ns, moved, first)
            store.delete("decision", ns, [seq for seq in old if seq is not None and seq >= end])  # left over
        by_id = {s.id: s for s in repair.segments}
        store.put_segments(ns, [(s, mean_vector(state, s.message_ids)) for s in repair.rewritten_segments])
        store.put_trajectories(ns, [
            (t, mean_vector(state, [m for sid in t.segment_ids for m in by_id[sid].message_ids]))
            for t in repair.rewritten_trajectories])
        log.warning("namespace %s: repaired an interrupted ingest (%s)", ns, repair.summary())
        return kept


class IngestPipeline:
    """One namespace's ingest with ``backends`` (and their settings) (loaded when a step first needs them);
    ``dates_checked``: a loader has warned about the messages' implausible dates already."""

    def __init__(self, backends: Backends, namespace: str, dates_checked: bool = False) -> None:
        self.backends = backends
        self.config = backends.config
        self.namespace = namespace
        self.dates_checked = dates_checked
        self.stages: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Adds the wall seconds of the block to ``stages[name]``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - start

    def run(self, messages: Sequence[Message], progress: ProgressFn | None, core_facts: bool) -> IngestReport:
        """Every step in order (the caller holds the namespace's lock); see ``MemSIF.ingest``."""
        start = time.perf_counter()
        trajectory_note = ""
        with job(self.namespace, "structure") as running:
            with self.stage("load_state"):
                state = StoredState(self.backends, self.namespace).load()
            admitted = self.admit(state, messages)
            with self.stage("embed_and_entities"):
                vectors, entity_sets = self.embed(admitted.fresh)
            # how cosine becomes s_sem for this embedder (``matching.COSINE_RANGES``)
            mapping = SemanticMapping.for_embedder(self.backends.embedder.name, self.config.method.sem_mapping)
            llm, profile = self.backends.llm, self.backends.profile
            seg_builder = SegmentBuilder(self.config, mapping, llm, profile)
            traj_builder = TrajectoryBuilder(self.config, mapping, llm, profile=profile)
            structured = _Structured()
            every = self.config.store.persist_every
            fresh = admitted.fresh
            with self.stage("structure"):  # the judge work ahead (φ of a dry run), for the waits a page states
                work = forecast(self.config, mapping, state, fresh, vectors, entity_sets)
            running.workload = work  # the model work ahead, for a page's waits (``MemSIF.workload``)
            try:
                for first in range(0, max(len(fresh), 1), every):  # one pass with nothing new: closes what was left
                    chunk = slice(first, first + every)
                    with self.stage("structure"):
                        part = self.structure(state, fresh[chunk], vectors[chunk], entity_sets[chunk], seg_builder,
                                              traj_builder, Placed(progress, first, len(fresh)),
                                              last=first + every >= len(fresh), work=work)
                    check_cancelled()  # a build stopped meanwhile writes nothing of this part
                    self.persist(state, fresh[chunk], part)
                    structured.decisions += part.decisions
                    structured.assigned += part.assigned
            finally:
                running.workload = None  # published only while messages are placed
            if whole_memory(self.config.method) and structured.assigned:  # a segment closed: link them again
                with self.stage("relink"):  # Event Trajectories over the whole memory (interaction.relink)
                    trajectory_note = self.relink(state).note or ""  # another embedder than the scorer's: said
            summary = CoreFactSummary()
            if core_facts:
                with self.stage("core_facts"):
                    summary = CoreFactStep(self.backends, self.namespace, self.stage).run(state, progress)
        return IngestReport(
            namespace=self.namespace, messages=len(admitted.fresh), skipped=admitted.skipped,
            total_messages=len(state.messages), segments=len(state.segments), trajectories=len(state.trajectories),
            judge_calls_segment=seg_builder.judge_calls, judge_calls_trajectory=traj_builder.judge_calls,
            judge_errors=sum(1 for d in structured.decisions if d.error), seconds=time.perf_counter() - start,
            seconds_by_stage=self.stages, warnings=admitted.warnings, trajectory_note=trajectory_note,
            **asdict(summary))

    def relink(self, state: InteractionState | None = None) -> RelinkResult:
        """The whole-memory Event Trajectories (``interaction.relink``) of ``state`` (default: the namespace
        as stored, repaired first), applied to it and written; a segment whose trajectory and fellow
        members are unchanged since its latest decision gets no new one."""
        state = state or StoredState(self.backends, self.namespace).load()
        store, embedder = self.backends.store, self.backends.embedder
        mapping = SemanticMapping.for_embedder(embedder.name, self.config.method.sem_mapping)
        relinker = Relinker(embedder.name, mapping, self.config.method.alpha_trajectory, embedder.embed_documents)
        previous = latest_decisions(store.decisions(self.namespace, "trajectory"))
        facts = fact_vectors(store, self.namespace) if "fact_cosine" in relinker.scorer.features else {}
        result = relinker.relink(state, previous, facts)
        write_relink(store, state, result)
        return result

    # ------------------------------------------------------------------ steps
    def admit(self, state: InteractionState, messages: Sequence[Message]) -> _Admitted:
        """The messages this call adds: blank ones skipped with a warning, stored ids skipped, the rest
        numbered after the stored ones; speakers spelled as the memory spells them (one spelling per
        person, ``io.speakers``) and implausible dates warned about (``io.dates``), with warnings.

        Raises:
            MemSIFError: only blank messages; nothing is written.
            SourceConflict: stored ids with another text, speaker or time; nothing is written.
        """
        ns = self.namespace
        with_text = [m for m in messages if m.text.strip()]
        if messages and not with_text:
            raise MemSIFError(f"The {len(messages)} message(s) given hold only whitespace: nothing to ingest "
                              f"into {ns!r}, and nothing was written.")
        blank = [m.id for m in messages if not m.text.strip()]
        with_text, named = with_one_spelling(with_text, list(state.messages.values()))
        conflicts = [d for m in with_text if m.id in state.messages for d in differences(state.messages[m.id], m)]
        if conflicts:
            raise SourceConflict(ns, conflicts)
        fresh: list[Message] = []
        seen = set(state.messages)
        for m in with_text:
            if m.id not in seen:
                seen.add(m.id)
                fresh.append(m.model_copy(update={"namespace": ns, "index": len(state.messages) + len(fresh)}))
        warnings = [f"message {b} holds only whitespace: skipped" for b in blank] + named
        warnings += [] if self.dates_checked else implausible_dates(fresh)
        warnings += [f"message {m.id} has {len(m.text):,} characters: it is stored whole, but the embedder "
                     f"reads only its beginning (~{EMBEDDER_READS_CHARS:,} characters) and prompts show at "
                     "most a few hundred characters of it" for m in fresh if len(m.text) > LONG_MESSAGE_CHARS]
        for warning in warnings:
            log.warning("namespace %s: %s", ns, warning)
        return _Admitted(fresh, len(with_text) - len(fresh), warnings)

    def embed(self, fresh: Sequence[Message]) -> tuple[np.ndarray, list[frozenset[str]]]:
        """(n, d) message embeddings and key-entity sets (NER runs while torch embeds)."""
        texts = [m.text for m in fresh]
        with ThreadPoolExecutor(max_workers=1) as pool:  # key entities from what was said, not a photo's caption
            entities_future = pool.submit(self.backends.entity_extractor.extract, [spoken_text(t) for t in texts])
            vectors = self.backends.embedder.embed_documents(texts)
            return vectors, entities_future.result()

    def structure(self, state: InteractionState, fresh: Sequence[Message], vectors: np.ndarray,
                  entity_sets: Sequence[frozenset[str]], segments: SegmentBuilder, trajectories: TrajectoryBuilder,
                  progress: ProgressFn | None, last: bool = True, work: Workload | None = None) -> _Structured:
        """Topical Segments (double-threshold rule) for each of ``fresh`` (a part of the call's new messages),
        and an Event Trajectory for each segment as it closes (and, on the ``last`` part, for the one left
        open), every decision recorded (§3.2). ``work``: told the judge prompts sent, before each progress."""
        out = _Structured()
        use_trajectories = self.config.method.use_trajectories
        new = {m.id for m in fresh}

        def assign(seg: SegmentState) -> None:
            trajectories.title(state, seg)
            decision = trajectories.assign(state, seg)
            out.assigned += 1
            if decision is not None:  # None: its own trajectory until the relink after the structure step
                out.decisions.append(decision)
            out.touched.add(seg.record.id)
            if seg.record.message_ids[0] not in new:  # its stored sentences name no trajectory yet
                out.reassigned.add(seg.record.id)

        def close(seg: SegmentState) -> None:
            """A closed segment (or the one this call leaves open): its title and its trajectory; one an
            earlier ingest left open already has a trajectory, and is titled again if it grew."""
            if use_trajectories and seg.record.trajectory_id is None:
                assign(seg)
            elif seg.record.title is None or seg.record.title.message_count != len(seg.record.message_ids):
                trajectories.title(state, seg)
                out.touched.add(seg.record.id)

        if use_trajectories:  # closed segments whose assignment an interrupted ingest lost
            for seg in state.segments[:-1]:
                if seg.record.trajectory_id is None:
                    assign(seg)
        for k, (msg, vec, ents) in enumerate(zip(fresh, vectors, entity_sets, strict=True)):
            check_cancelled()  # a cancelled build keeps only the parts it wrote before
            before = state.current_segment
            state.add_message(msg, vec, ents)
            decision = segments.place(state, msg)
            out.decisions.append(decision)
            out.touched.add(decision.segment_id)
            if before is not None and not decision.continued:  # ``before`` closed
                close(before)
            if work is not None:
                work.sent, work.calls = segments.judge_chars, segments.judge_calls
            if progress:
                progress(k + 1, len(fresh), "segments")
        if last and state.current_segment is not None:  # left open: titled and assigned as it stands
            close(state.current_segment)
        return out

    def persist(self, state: InteractionState, fresh: list[Message], structured: _Structured) -> None:
        """The sentence index of the new messages (one part of the call's), then every record the
        structure step touched. Messages go last, so a part killed before them is redone by the next
        ingest; a segment still open is written as it stands, without a title or trajectory yet."""
        store, ns = self.backends.store, self.namespace
        with self.stage("sentences"):
            indexed = fresh
            if len(state.messages) > len(fresh) and store.count("sentence", ns) == 0:
                indexed = list(state.messages.values())  # a store made before the sentence index: add it too
            trajectory_of = {seg.record.id: seg.record.trajectory_id for seg in state.segments}
            sentences = build_sentences(indexed, state.vectors, state.segment_of, self.backends.embedder, trajectory_of)
        with self.stage("store"):
            touched_traj = {tid for sid in structured.touched if (tid := state.segment(sid).record.trajectory_id)}
            store.put_segments(ns, [(state.segment(sid).record, state.segment(sid).profile.mean)
                                    for sid in sorted(structured.touched, key=record_number)])
            store.put_trajectories(ns, [(state.trajectory(tid).record, state.trajectory(tid).profile.mean)
                                        for tid in sorted(touched_traj, key=record_number)])
            state.next_decision_seq = store.put_decisions(ns, structured.decisions, state.next_decision_seq)
            store.put_sentences(ns, sentences)
            # a segment with stored sentences that this ingest gave its trajectory (after an interruption)
            store.set_sentence_trajectories(ns, {sid: trajectory_of[sid] for sid in structured.reassigned})
            store.put_messages(ns, [StoredMessage(m, state.vectors[m.id], state.entities[m.id],
                                                  state.segment_of.get(m.id)) for m in fresh])


def fact_vectors(store: Store, namespace: str) -> dict[str, np.ndarray]:
    """Segment id → (k, d) embeddings of the current CoreFacts first written from it."""
    rows: dict[str, list[np.ndarray]] = {}
    for fact, vector in store.facts(namespace, with_vectors=True):
        if fact.valid_until is None and vector is not None:
            for sid in fact.segment_ids[:1]:
                rows.setdefault(sid, []).append(vector)
    return {sid: np.stack(v) for sid, v in rows.items()}


def write_relink(store: Store, state: InteractionState, result: RelinkResult) -> None:
    """Writes what a relink changed: the trajectories (new and re-pooled), the segments that moved, their
    sentences' trajectory ids, the CoreFacts written from them (their ``trajectory_ids``), then the
    retired trajectories' deletion and the decisions. A process killed in between leaves segments and
    trajectories that the next load repairs (``interaction.restore``) and the next relink redoes."""
    ns = state.namespace
    if not result.moved and not result.rewritten and not result.retired and not result.decisions:
        return
    moved = sorted(result.moved, key=record_number)
    store.put_trajectories(ns, [(t.record, t.profile.mean) for t in state.trajectories
                                if t.record.id in result.rewritten])
    store.put_segments(ns, [(state.segment(sid).record, state.segment(sid).profile.mean) for sid in moved])
    store.set_sentence_trajectories(ns, {sid: state.segment(sid).record.trajectory_id for sid in moved})
    if moved:
        trajectory_of = {s.record.id: s.record.trajectory_id for s in state.segments}
        changed = []
        for fact, vector in store.facts(ns, with_vectors=True):
            now = list(dict.fromkeys(t for sid in fact.segment_ids if (t := trajectory_of.get(sid))))
            if vector is not None and fact.segment_ids and now != fact.trajectory_ids:
                changed.append((fact.model_copy(update={"trajectory_ids": now}), vector))
        store.put_facts(ns, changed)
    store.delete("trajectory", ns, result.retired)
    state.next_decision_seq = store.put_decisions(ns, result.decisions, state.next_decision_seq)
