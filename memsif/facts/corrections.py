"""A person's corrections of the Dual-Track Fact Memory: EDIT, DELETE and RESTORE, operations of the
CoreFact log like the extraction's (§3.3), decided by the person (``decided_by="person"``).

- EDIT: a new version of the fact (its statement, subject, type or event time changed) supersedes it,
  as Supersede does: the old version stays in the history with ``superseded_by`` and ``valid_until``;
  the new one is ``corrected`` and verified by the person's word.
- DELETE: the fact's status becomes "deleted": it leaves every answer context and ``memory_facts``,
  and stays in the history. RESTORE takes the deletion back.
- A correction stands: extraction never changes a ``corrected`` fact (``changes_correction``), and a
  later candidate that says what a person deleted or edited away (cosine ≥ ``CORRECTED_COSINE``) is
  a REJECT naming the correction (``refused_by_correction``).

ActiveFacts (§3.4) are deleted and restored the same way (their ``status``); a deleted one's cluster
is not promoted again. Those operations are in the CoreFact log too, with the ActiveFact's id.

The functions change a ``FactState`` (or ActiveFact) in place and return the operation; the engine
(``MemSIF.edit_fact`` …) loads and stores them under the namespace's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol

import numpy as np

from memsif.errors import MemSIFError, NotFoundError
from memsif.facts.grounding import MAX_SUBJECT_WORDS
from memsif.io.speakers import normal_name, visible_text
from memsif.matching import cosine
from memsif.prompts.core_extract import STATEMENT_MAX_CHARS
from memsif.records import ActiveFact, CoreFact, FactOp, FactOperation, FactType, Verification

#: A candidate at least this similar (statement cosine) to a fact a person deleted, or to the version a
#: person's edit replaced, says the same thing again: it is refused. The duplicate cosine of
#: consolidation (``memsif.facts.core.DUPLICATE_COSINE``) would let a reworded copy through.
CORRECTED_COSINE = 0.85
#: How a corrected fact's verification reads.
BY_PERSON = "stated by a person's correction (EDIT): the person's word is its source"


class FactState(Protocol):
    """A namespace's CoreFacts in id order with their (d,) statement embeddings
    (``memsif.facts.core.FactState``)."""

    facts: list[CoreFact]
    vectors: dict[str, np.ndarray]

    def current(self) -> list[CoreFact]: ...


class CorrectionError(MemSIFError):
    """A correction that cannot be made as asked (unknown id, a fact in the wrong state, an empty or
    unknown value); the message says what to pass instead. Nothing was changed."""


def find_fact(state: FactState, fact_id: str) -> CoreFact:
    """The fact ``fact_id`` (e.g. "F12") of ``state``.

    Raises:
        NotFoundError: no such fact; the message lists a few ids that exist.
    """
    wanted = fact_id.strip().upper()
    if (found := next((fact for fact in state.facts if fact.id == wanted), None)) is not None:
        return found
    known = ", ".join(f.id for f in state.current()[:8]) or "none"
    raise NotFoundError(f"No CoreFact {fact_id!r} in this memory (current facts: {known}"
                        f"{' …' if len(state.current()) > 8 else ''}).")


def person_statement(statement: str) -> str:
    """A person's statement as a CoreFact holds one: NFC, without invisible characters, its whitespace
    collapsed (``io.speakers.visible_text``), at most ``core_extract.STATEMENT_MAX_CHARS`` characters, as an
    extracted one.

    Raises:
        CorrectionError: nothing visible is left, or it is longer than a CoreFact holds.
    """
    said = visible_text(statement)
    if not said:
        raise CorrectionError("the new statement is empty (no visible text: only blanks or invisible characters): "
                              "write what it should say.")
    if len(said) > STATEMENT_MAX_CHARS:
        raise CorrectionError(f"the new statement is {len(said):,} characters; a CoreFact holds one fact of at "
                              f"most {STATEMENT_MAX_CHARS}: shorten it (edit other facts, or delete this one, for "
                              "the rest).")
    return said


def person_subject(subject: str, speakers: Sequence[str] = ()) -> str:
    """A person's subject as a CoreFact holds one: visible text of at most ``grounding.MAX_SUBJECT_WORDS``
    words; one that names a speaker of the memory (whatever its case, spaces or invisible characters) takes
    the speaker's spelling, so it stays that person.

    Raises:
        CorrectionError: nothing visible is left, or it is longer than a subject.
    """
    said = visible_text(subject)
    if not said:
        raise CorrectionError("the new subject is empty (no visible text: only blanks or invisible characters): "
                              "name the person or thing the fact is about.")
    if len(said.split()) > MAX_SUBJECT_WORDS:
        raise CorrectionError(f"the new subject {said[:60]!r} has {len(said.split())} words; a subject names one "
                              f"person or thing in at most {MAX_SUBJECT_WORDS}: put the rest in the statement.")
    return next((sp for sp in speakers if normal_name(sp).casefold() == said.casefold()), said)


def edit(state: FactState, fact_id: str, vector: np.ndarray | None, now: datetime, schema: Sequence[FactType], *,
         statement: str | None = None, subject: str | None = None, type: str | None = None,
         when: datetime | None = None, speakers: Sequence[str] = ()) -> FactOperation:
    """EDIT: a new version of current fact ``fact_id`` with the given fields changed supersedes it;
    ``vector`` is the (d,) embedding of the new statement (None: the old one's, when the statement is
    unchanged). ``type`` must be one of ``schema``'s (case-insensitive); the statement and the subject are
    held to what an extracted fact's are (``person_statement``, ``person_subject``: a subject that names
    one of ``speakers`` takes its spelling).

    Raises:
        NotFoundError: unknown id.
        CorrectionError: the fact is not current, nothing would change, or a value is empty, too long or
            unknown.
    """
    old = find_fact(state, fact_id)
    if old.status != "current":
        hint = "restore it first" if old.status == "deleted" else f"edit {old.superseded_by}"
        raise CorrectionError(f"{old.id} is {old.status}: only a current fact can be edited ({hint}).")
    kind = None
    if type is not None:
        kind = next((t.name for t in schema if t.name.lower() == type.strip().lower()), None)
        if kind is None:
            raise CorrectionError(f"unknown type {type!r}: use one of {', '.join(t.name for t in schema)}.")
    proposed = {"statement": person_statement(statement) if statement is not None else None,
                "subject": person_subject(subject, speakers) if subject is not None else None, "type": kind,
                "event_time": when}
    changes = {k: v for k, v in proposed.items() if v is not None and getattr(old, k) != v}
    if not changes:
        raise CorrectionError(f"nothing to change: {old.id} already says that. Pass a new statement, subject, "
                              "type or date.")
    before = old.model_copy(deep=True)
    new = old.model_copy(deep=True, update={
        **changes, "id": f"F{len(state.facts) + 1}", "corrected": True, "valid_from": now,
        "verification": Verification(verified=True, rule=BY_PERSON)})
    state.facts.append(new)
    state.vectors[new.id] = vector if vector is not None else state.vectors[old.id]
    old.status, old.superseded_by, old.valid_until = "superseded", new.id, now
    said = "; ".join(f"{k}: {getattr(before, k)!r} → {v!r}" for k, v in changes.items())
    return _logged(old.namespace, FactOp.EDIT, [old.id, new.id], now, f"a person corrected {old.id}: {said}",
                   before=[before], after=[old, new])


def delete(state: FactState, fact_id: str, now: datetime) -> FactOperation:
    """DELETE: current fact ``fact_id`` leaves answers (status "deleted"), kept in the history.

    Raises:
        NotFoundError: unknown id.
        CorrectionError: the fact is not current.
    """
    fact = find_fact(state, fact_id)
    if fact.status != "current":
        raise CorrectionError(f"{fact.id} is {fact.status}, not current: nothing to delete"
                              f"{f' (its current version is {fact.superseded_by})' if fact.superseded_by else ''}.")
    return _set_status(fact, "deleted", now)


def restore(state: FactState, fact_id: str, now: datetime) -> FactOperation:
    """RESTORE: deleted fact ``fact_id`` is current again.

    Raises:
        NotFoundError: unknown id.
        CorrectionError: the fact is not deleted.
    """
    fact = find_fact(state, fact_id)
    if fact.status != "deleted":
        raise CorrectionError(f"{fact.id} is {fact.status}, not deleted: only a deleted fact can be restored.")
    return _set_status(fact, "current", now)


def _set_status(fact: CoreFact, status: Literal["current", "deleted"], now: datetime) -> FactOperation:
    """``fact`` deleted (``valid_until`` now) or restored, and the person's operation that says so."""
    before = fact.model_copy(deep=True)
    fact.status, fact.valid_until = status, (now if status == "deleted" else None)
    op, verb = (FactOp.DELETE, "deleted") if status == "deleted" else (FactOp.RESTORE, "restored")
    return _logged(fact.namespace, op, [fact.id], now, f"a person {verb} {fact.id} ({fact.statement!r})",
                   before=[before], after=[fact])


def set_active_status(facts: Sequence[ActiveFact], fact_id: str, deleted: bool,
                      now: datetime) -> tuple[ActiveFact, FactOperation]:
    """DELETE (``deleted``) or RESTORE of ActiveFact ``fact_id`` among ``facts``: the changed copy and
    the operation.

    Raises:
        NotFoundError: unknown id.
        CorrectionError: already in that state.
    """
    wanted = fact_id.strip().upper()
    found = next((a for a in facts if a.id == wanted), None)
    if found is None:
        known = ", ".join(a.id for a in facts if a.status == "current") or "none"
        raise NotFoundError(f"No ActiveFact {fact_id!r} in this memory (current: {known}).")
    status = "deleted" if deleted else "current"
    if found.status == status:
        raise CorrectionError(f"{found.id} is {status} already.")
    changed = found.model_copy(update={"status": status, "updated_at": now})
    op, verb = (FactOp.DELETE, "deleted") if deleted else (FactOp.RESTORE, "restored")
    return changed, _logged(found.namespace, op, [found.id], now,
                            f"a person {verb} ActiveFact {found.id} ({found.statement!r})")


def refused_by_correction(state: FactState, candidate: CoreFact, vector: np.ndarray) -> str | None:
    """Why a person's correction refuses extraction candidate ``candidate`` (its (d,) statement
    ``vector``), or None: it says what a person deleted, or what a person's edit replaced, with
    cosine ≥ ``CORRECTED_COSINE``."""
    corrected = {f.id: f for f in state.facts if f.corrected}
    best: tuple[float, str] | None = None
    for fact in state.facts:
        replaced_by = corrected.get(fact.superseded_by or "")
        if fact.status != "deleted" and replaced_by is None:
            continue
        cos = cosine(state.vectors[fact.id], vector)
        if cos < CORRECTED_COSINE or (best is not None and cos <= best[0]):
            continue
        said = (f"a person deleted {fact.id} ({fact.statement!r})" if replaced_by is None else
                f"a person corrected {fact.id} ({fact.statement!r}) to {replaced_by.id} ({replaced_by.statement!r})")
        best = (cos, f"{said}; this candidate says the same (cos {cos:.2f} ≥ {CORRECTED_COSINE})")
    return best[1] if best else None


def changes_correction(target: CoreFact | None, op: FactOp) -> str | None:
    """Why operation ``op`` of extraction may not touch ``target``, or None: Update and Supersede would
    change what a person wrote (Merge only adds sources)."""
    if target is None or not target.corrected or op not in (FactOp.UPDATE, FactOp.SUPERSEDE):
        return None
    return (f"{op.value} of {target.id} refused: a person wrote it ({target.statement!r}), and extraction never "
            "changes a person's correction")


def _logged(namespace: str, op: FactOp, fact_ids: list[str], now: datetime, reason: str,
            before: Sequence[CoreFact] = (), after: Sequence[CoreFact] = ()) -> FactOperation:
    return FactOperation(namespace=namespace, op=op, fact_ids=fact_ids, decided_by="person",
                         before=[f.model_copy(deep=True) for f in before],
                         after=[f.model_copy(deep=True) for f in after], reason=reason, recorded_at=now)
