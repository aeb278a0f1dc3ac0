"""The CoreFact step of an ingest (§3.3): extraction and consolidation over every message no extraction
has read yet, each batch written as soon as it is done, and then the model's segment titles, in the same
job so both yield to a chat answer (no title delays a fact: the model-free titles stand until then).
``ingest.IngestPipeline`` runs it after the structure."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memsif.backends import Backends
from memsif.facts.changes import change_threshold
from memsif.facts.core import (
    CoreFactBuilder,
    FactState,
    ReadBatch,
    build_core_facts,
    operation_trusted,
    owed_second_passes,
    unread_batches,
)
from memsif.facts.verify import verifier_threshold
from memsif.interaction.state import InteractionState
from memsif.interaction.titles import write_model_titles
from memsif.interaction.trajectories import titles_by_model
from memsif.llm.base import for_job
from memsif.locks import check_cancelled, job
from memsif.records import FactOperation, parse_schema, record_number

if TYPE_CHECKING:
    from memsif.llm import LLM

log = logging.getLogger("memsif.ingest")

#: progress(done, total, stage): called while ingesting.
ProgressFn = Callable[[int, int, str], None]


@dataclass
class CoreFactSummary:
    """What one CoreFact pass did (``IngestReport``'s fact fields)."""

    core_facts: int = 0
    fact_ops: dict[str, int] = field(default_factory=dict)
    fact_llm_calls: int = 0
    fact_errors: int = 0


class CoreFactStep:
    """One namespace's CoreFact pass with ``backends`` (and their settings); ``stage(name)`` times a part of
    it (the pipeline's stage timer)."""

    def __init__(self, backends: Backends, namespace: str,
                 stage: Callable[[str], AbstractContextManager[None]]) -> None:
        self.config, self.backends, self.namespace, self.stage = backends.config, backends, namespace, stage

    def run(self, state: InteractionState, progress: ProgressFn | None) -> CoreFactSummary:
        """CoreFact extraction and consolidation over every message no extraction has read yet (§3.3,
        ``facts.core.build_core_facts``). Each batch is written as soon as it is done, so readers (the
        inspector) see CoreFacts appear: its operations first (each names its batch), then the facts
        they changed, then the segments' read-marks. An extraction interrupted after the log write
        (kill -9) finishes that batch from its logged operations instead of extracting it again, so no
        batch's operations are written twice."""
        store, ns, cfg = self.backends.store, self.namespace, self.config.facts
        with job(ns, "facts"):
            # the back-end's handle for extraction's calls
            llm, profile = for_job(self.backends.llm, "facts"), self.backends.profile
            batches = unread_batches([s.record for s in state.segments], state.messages, cfg.fact_batch_messages)
            oplog = store.fact_ops(ns) if batches or cfg.fact_second_pass else []  # read once for both uses
            batches = self._finish_logged_batches(state, batches, oplog)
            owed = owed_second_passes(oplog, [s.record for s in state.segments], state.messages) \
                if cfg.fact_second_pass else []
            facts = FactState.of([(f, v) for f, v in store.facts(ns, with_vectors=True) if v is not None])
            builder = CoreFactBuilder(llm, self.backends.embedder, parse_schema(cfg.core_schema),
                                      ask_operation=operation_trusted(cfg.fact_operation, llm, profile),
                                      messages=state.messages,
                                      verify_min_p=verifier_threshold(cfg.fact_verification, llm, profile),
                                      second_pass=cfg.fact_second_pass,
                                      change_min_p=change_threshold(cfg.fact_change, llm, profile))
            trajectory_of = {seg.record.id: seg.record.trajectory_id for seg in state.segments}
            summary = CoreFactSummary()
            seq = store.count("fact_op", ns)
            if progress and batches:
                progress(0, len(batches), "core facts")
            for done in build_core_facts(builder, facts, ns, batches, state.segment_of, trajectory_of,
                                         state.vectors, cfg.fact_parallel, owed):
                check_cancelled()  # a batch finished after its memory was replaced is not written
                for op in done.operations:
                    op.batch = done.batch.key
                seq = store.put_fact_ops(ns, done.operations, seq)
                store.put_facts(ns, done.changed)
                self._mark_read(state, done.batch)
                for op in done.operations:
                    summary.fact_ops[op.op.value] = summary.fact_ops.get(op.op.value, 0) + 1
                summary.fact_errors += sum(1 for op in done.operations if op.error)
                if progress:
                    progress(done.index + 1, done.total,
                             "core facts, second pass" if done.second_pass else "core facts")
            self.model_titles(state, progress, llm)
        summary.core_facts, summary.fact_llm_calls = len(facts.current()), builder.llm_calls
        return summary

    def model_titles(self, state: InteractionState, progress: ProgressFn | None, llm: LLM) -> None:
        """``llm``'s titles for the segments the structure step titled without it (``titles.write_model_titles``),
        after every CoreFact batch (no title delays a fact) and in the CoreFact job (so they yield to chat),
        ``fact_parallel`` segments a call; each stored as it is written, timed as the stage "titles"."""
        if titles_by_model(self.config.method.segment_titles, llm, self.backends.profile):
            with self.stage("titles"):
                write_model_titles(state, llm, lambda seg: self.backends.store.put_segments(
                    self.namespace, [(seg.record, seg.profile.mean)]), progress, self.config.facts.fact_parallel)

    def _mark_read(self, state: InteractionState, batch: ReadBatch) -> None:
        """Store the segments' read-marks of a finished batch (its last write)."""
        for sid, upto in batch.read_upto.items():
            state.segment(sid).record.facts_extracted_upto = upto
        self.backends.store.put_segments(self.namespace, [(state.segment(sid).record, state.segment(sid).profile.mean)
                                                        for sid in sorted(batch.read_upto, key=record_number)])

    def _finish_logged_batches(self, state: InteractionState, batches: list[ReadBatch],
                               oplog: Sequence[FactOperation]) -> list[ReadBatch]:
        """The batches still to extract: one whose operations the namespace's ``oplog`` already holds (an
        extraction killed after its log write) gets the facts those operations left and its read-marks,
        and is not extracted again. Logged as a repair."""
        if not batches:
            return batches
        logged: dict[str, list[FactOperation]] = {}
        for op in oplog:
            if op.batch:
                logged.setdefault(op.batch, []).append(op)
        todo = []
        for batch in batches:
            ops = logged.get(batch.key)
            if not ops:
                todo.append(batch)
                continue
            after = {f.id: f for op in ops for f in op.after}
            if after:
                vectors = self.backends.embedder.embed_documents([f.statement for f in after.values()])
                self.backends.store.put_facts(self.namespace, list(zip(after.values(), vectors, strict=True)))
            self._mark_read(state, batch)
            log.warning("namespace %s: finished CoreFact batch %s from its %d logged operations (an interrupted "
                        "extraction)", self.namespace, batch.key, len(ops))
        return todo

