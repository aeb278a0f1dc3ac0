"""A person's corrections of a memory through the engine (``MemSIF.edit_fact``, ``delete_fact``,
``restore_fact``): the operations of ``memsif.facts.corrections`` loaded, applied and stored under the
namespace's memory lock, so a correction never interleaves with a CoreFact extraction that would write
its own version of the facts back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from memsif.backends import Backends
from memsif.engine.namespaces import NamespaceLocks
from memsif.engine.reads import Reads
from memsif.errors import MemSIFError, StoreError
from memsif.facts import corrections
from memsif.facts.core import FactState
from memsif.records import FactOperation, parse_schema

LOCK_WAIT_S = 5.0


class Corrections:
    """The person's corrections of MemSIF's Dual-Track Fact Memory (part of ``MemSIF``). Every
    correction is one operation of the CoreFact log with ``decided_by="person"``, the time and the
    previous value (``memsif.facts.corrections`` says how each is kept). ``MemSIF.corrections``."""

    def __init__(self, backends: Backends, reads: Reads, locks: NamespaceLocks) -> None:
        self.backends, self.reads, self.locks = backends, reads, locks

    def edit_fact(self, namespace: str, fact_id: str, *, statement: str | None = None, subject: str | None = None,
                  type: str | None = None, when: datetime | None = None) -> FactOperation:
        """EDIT CoreFact ``fact_id`` (e.g. "F12") of ``namespace``: a new version with the given fields
        (``type`` one of the configured schema's; ``when`` its event time) supersedes it; the new
        version is verified by the person's word and never changed by a later extraction. The statement and
        subject are held to what an extracted fact's are: visible text, at most 160 characters and 4 words,
        a subject naming a speaker in the speaker's spelling (``facts.corrections.person_statement``,
        ``person_subject``). Returns the operation (``fact_ids`` = [old, new]).

        Raises:
            NotFoundError: no such namespace or fact.
            CorrectionError: the fact is not current, nothing changes, or a value is empty (or only invisible
                characters), longer than an extracted fact's or unknown.
            StoreError: the memory is open read-only.
            MemSIFError: a build of this namespace holds it (try again when it ends).
        """
        backends = self.backends
        said = corrections.person_statement(statement) if statement is not None else None  # refused before work
        vector = backends.embedder.embed_documents([said])[0] if said else None
        schema = parse_schema(backends.config.facts.core_schema)
        speakers = backends.store.speakers(namespace) if subject is not None else []
        return self._apply(namespace, lambda state, now: corrections.edit(
            state, fact_id, vector, now, schema, statement=said, subject=subject, type=type, when=when,
            speakers=speakers))

    def delete_fact(self, namespace: str, fact_id: str) -> FactOperation:
        """DELETE CoreFact ("F…") or ActiveFact ("A…") ``fact_id``: it leaves every answer context and the
        fact lists, and stays in the history (``facts(history=True)``, ``active_facts(deleted=True)``).

        Raises:
            NotFoundError, CorrectionError, StoreError, MemSIFError: as ``edit_fact``.
        """
        if fact_id.strip().upper().startswith("A"):
            return self._set_active(namespace, fact_id, deleted=True)
        return self._apply(namespace, lambda state, now: corrections.delete(state, fact_id, now))

    def restore_fact(self, namespace: str, fact_id: str) -> FactOperation:
        """RESTORE a deleted CoreFact or ActiveFact: it is current again.

        Raises:
            NotFoundError, CorrectionError, StoreError, MemSIFError: as ``edit_fact``.
        """
        if fact_id.strip().upper().startswith("A"):
            return self._set_active(namespace, fact_id, deleted=False)
        return self._apply(namespace, lambda state, now: corrections.restore(state, fact_id, now))

    def carry_corrections(self, namespace: str, corrections_made: list[FactOperation]) -> list[str]:
        """Apply again, in order, the person's corrections of ``namespace``'s log before it was rebuilt
        (``ingest_transcript(replace=True)``): an EDIT or DELETE to the rebuilt current fact that says what
        the corrected one said (statement cosine ≥ ``CORRECTED_COSINE``), a RESTORE to the fact its DELETE
        was carried to. Returns one sentence per correction that found no such fact (the report's
        warnings); ActiveFacts start again with the rebuild, so theirs are not carried."""
        backends = self.backends
        carried: dict[str, str] = {}  # a corrected fact's id before → its id in the rebuilt memory
        lost: list[str] = []
        for op in corrections_made:
            if op.op.value == "RESTORE" and op.fact_ids[0] in carried:
                self.restore_fact(namespace, carried[op.fact_ids[0]])
            if op.op.value not in ("EDIT", "DELETE") or not op.before:
                continue
            old = op.before[0]
            vector = backends.embedder.embed_documents([old.statement])[0]
            hits = [f for f, cos in backends.store.search_facts(namespace, vector, 1)
                    if cos >= corrections.CORRECTED_COSINE]
            if not hits:
                lost.append(f"a person's {op.op.value} of {old.id} ({old.statement!r}) was not carried over: "
                            "the rebuilt memory holds no fact that says it")
                continue
            try:
                if op.op.value == "EDIT":
                    new = op.after[-1]
                    done = self.edit_fact(namespace, hits[0].id, statement=new.statement, subject=new.subject,
                                          type=new.type, when=new.event_time)
                    carried[new.id] = done.fact_ids[-1]
                else:
                    carried[old.id] = self.delete_fact(namespace, hits[0].id).fact_ids[0]
            except corrections.CorrectionError as exc:  # the rebuilt fact says it already
                lost.append(f"a person's {op.op.value} of {old.id} was not carried over: {exc}")
        return lost

    # ----------------------------------------------------------------- helpers
    def _apply(self, namespace: str, change: Callable[[FactState, datetime], FactOperation]) -> FactOperation:
        """Load ``namespace``'s CoreFacts, ``change(state, now)`` them, store the facts it changed and
        append its operation to the log."""
        backends = self.backends
        with self._writable(namespace):
            stored = backends.store.facts(namespace, with_vectors=True)
            state = FactState.of([(f, v) for f, v in stored if v is not None])
            op = change(state, datetime.now(UTC).replace(tzinfo=None))
            changed = [f for f in state.facts if f.id in op.fact_ids]
            backends.store.put_facts(namespace, [(f, state.vectors[f.id]) for f in changed])
            backends.store.put_fact_ops(namespace, [op], backends.store.count("fact_op", namespace))
            return op

    def _set_active(self, namespace: str, fact_id: str, deleted: bool) -> FactOperation:
        backends = self.backends
        with self._writable(namespace, "clusters"):
            changed, op = corrections.set_active_status(backends.store.active_facts(namespace), fact_id, deleted,
                                                        datetime.now(UTC).replace(tzinfo=None))
            vector = backends.embedder.embed_documents([changed.statement])[0]
            backends.store.put_active_facts(namespace, [(changed, vector)])
            with self.locks(namespace):
                backends.store.put_fact_ops(namespace, [op], backends.store.count("fact_op", namespace))
            return op

    @contextmanager
    def _writable(self, namespace: str, part: str = "memory") -> Iterator[None]:
        """Holds the namespace's ``part`` lock for the block, once the namespace exists and the store can
        be written.

        Raises:
            NotFoundError: no such namespace.
            StoreError: the store is read-only.
            MemSIFError: the lock stayed busy for ``LOCK_WAIT_S``.
        """
        backends = self.backends
        self.reads.require(namespace)
        if backends.store.read_only:
            raise StoreError(f"the memory at {backends.store.location} is open read-only (a read-only folder, or a "
                             "snapshot while another process such as the app holds it): a correction cannot be "
                             "stored. Make it where the memory is open for writing (in the app's page, or after "
                             "closing the app).")
        lock = self.locks(namespace, part)
        if not lock.acquire(timeout=LOCK_WAIT_S):
            raise MemSIFError(f"namespace {namespace!r} is being built (a build or a CoreFact extraction holds it); "
                              "make the correction when it ends: nothing was changed.")
        try:
            yield
        finally:
            lock.release()
