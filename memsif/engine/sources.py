"""Transcripts into the engine (``MemSIF.ingest_transcript``): a loaded history placed after what the
memory holds (``io.placement``), and a corrected source's history rebuilt with the person's corrections
applied again."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from memsif.backends import Backends
from memsif.engine.editing import Corrections
from memsif.engine.namespaces import NamespaceLocks
from memsif.engine.reads import Reads
from memsif.errors import SourceConflict
from memsif.ingest import IngestPipeline, IngestReport, ProgressFn
from memsif.io.names import checked_namespace
from memsif.io.placement import Placement, place
from memsif.io.transcripts import Transcript
from memsif.records import FactOp, FactOperation, Message

log = logging.getLogger("memsif.engine")


class Sources:
    """Loaded transcripts into a namespace's memory (``MemSIF.sources``)."""

    def __init__(self, backends: Backends, reads: Reads, locks: NamespaceLocks, corrections: Corrections) -> None:
        self.backends, self.reads, self.locks, self.corrections = backends, reads, locks, corrections

    def ingest_transcript(self, transcript: Transcript, namespace: str | None = None,
                          progress: ProgressFn | None = None, core_facts: bool | None = None,
                          replace: bool = False) -> IngestReport:
        """Add one loaded transcript to ``namespace`` (default: its sample id): appended after what
        the memory holds, with the placement rules of ``memsif.io.placement`` — stored messages are
        skipped, a session that restarts the loader's numbering (a second plain-text or MCP session)
        is numbered after the stored ones.

        With ``replace``, messages the memory holds in another version (same id, another text, speaker
        or time) take the transcript's version and the namespace's memory is rebuilt from the
        corrected history: segments, trajectories and (when it had them, or with ``core_facts``)
        CoreFacts are derived again; ActiveFacts and the query log start again. The report's
        warnings and a NOOP entry of the CoreFact operation log say what changed.

        Raises:
            SourceConflict: without ``replace``, the transcript disagrees with stored messages; its
                ``differences`` list each; nothing is written.
            MemSIFError, StoreError, EmbedderError, LLMError: as ``ingest``.
        """
        ns = checked_namespace(namespace or transcript.sample_id)
        with self.locks(ns), self.locks(ns, "clusters"):
            stored = self.reads.messages(ns) if self.reads.has_memory(ns) else []
            placement = place(transcript.messages, stored, transcript.source_ids)
            if placement.differences and not replace:
                raise SourceConflict(ns, placement.differences)
            if not placement.differences:
                report = self._ingest_loaded(placement.messages, ns, progress, core_facts)
                report.warnings[:0] = placement.notes
                return report
            return self._rebuild_corrected(ns, stored, placement, progress, core_facts)

    def _ingest_loaded(self, messages: Sequence[Message], ns: str, progress: ProgressFn | None,
                       core_facts: bool | None) -> IngestReport:
        """``engine.ingest`` of a loaded transcript's messages, whose load warned about their dates already.
        The caller holds the namespace's lock."""
        return IngestPipeline(self.backends, ns, dates_checked=True).run(
            messages, progress, self.backends.config.facts.core_facts if core_facts is None else core_facts)

    def _rebuild_corrected(self, ns: str, stored: list[Message], placement: Placement,
                           progress: ProgressFn | None, core_facts: bool | None) -> IngestReport:
        """``ingest_transcript(replace=True)`` of a transcript whose messages differ from ``stored``: the
        history with the transcript's versions is ingested again from scratch (CoreFacts too when the
        memory had them, the person's corrections applied again: ``carry_corrections``), and a NOOP entry of
        the CoreFact operation log says what changed. The caller holds the namespace's locks."""
        store = self.backends.store
        given = {m.id: m for m in placement.messages}
        known = {m.id for m in stored}
        history = [given.get(m.id, m) for m in stored] + [m for m in placement.messages if m.id not in known]
        had_facts = store.count("fact_op", ns) > 0
        by_person = [op for op in store.fact_ops(ns) if op.decided_by == "person"] if had_facts else []
        store.delete_namespace(ns)
        report = self._ingest_loaded(history, ns, progress, core_facts or (core_facts is None and had_facts))
        if by_person and self.reads.has_memory(ns):
            report.warnings += self.corrections.carry_corrections(ns, by_person)
        changed = sorted({d.message_id for d in placement.differences})
        report.warnings[:0] = [*placement.notes, (
            f"replaced {len(changed)} stored message(s) with this source's version "
            f"({'; '.join(d.describe() for d in placement.differences[:3])}"
            f"{' …' if len(placement.differences) > 3 else ''}); the memory was rebuilt from the corrected "
            "history (ActiveFacts and the query log start again)")]
        said = report.warnings[len(placement.notes)]
        log.warning("namespace %s: %s", ns, said)
        now = datetime.now(UTC).replace(tzinfo=None)
        store.put_fact_ops(ns, [FactOperation(namespace=ns, op=FactOp.NOOP, fact_ids=[], decided_by="rule",
                                                     recorded_at=now, reason=f"source replaced: {said}")],
                                  store.count("fact_op", ns))
        return report
