"""Which earlier CoreFact a new one changes (§3.3, Update / Supersede), asked as focused yes/no questions.

The small model picks among option letters at chance (``benchmarks/quality/fact_operations.py``) but
answers a focused yes/no question about two short statements well. So a change is found in two steps:

1. **Candidates** (model-free): the current facts of the same subject, of any type (a change often crosses
   them: "has two dogs", an Identity, → "adopted a third dog", an Event), said on an earlier day,
   whose attribute key (what of the person's life a fact is about, "dogs", "home", "job", written by the
   extractor) or statement is close to the new one's by embedding; facts of the same Event Trajectory are
   put first (the trajectories are the cross-session evidence of one thread). A person's correction is
   never a candidate: extraction does not change what a person wrote.
2. **The question** (``memsif.prompts.core_change``): for each candidate, the mean P(yes) of two wordings:
   is the earlier statement out of date now that the later one was said, and should the later one replace
   it because it says how the same thing stands now. The best at or above the model's measured threshold
   (``ModelProfile.change_min_p``, fitted on the labelled state changes of two dev conversations and tested
   on the third: ``benchmarks/quality/state_changes.py``) is changed: superseded (kept as history, valid until
   the new fact's day), or merged when the new one says the same again (``RESTATED_COSINE``). Below it,
   nothing changes. (Update, new detail folded into a fact, stays with the rules and ``fact_operation``: no
   wording was measured to tell it from a second fact of the same thing.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memsif.errors import LLMError
from memsif.facts.active import normalise_subject
from memsif.facts.values import values
from memsif.llm import LLM
from memsif.llm.profiles import ModelProfile, step_threshold
from memsif.matching import cosine
from memsif.prompts import core_change
from memsif.records import CoreFact, FactOp

#: An earlier fact whose attribute key is at least this close to the new one's (MiniLM cosine of the keys
#: alone: "dogs" / "pets" 0.82, "pets" / "cats" 0.77, "running" / "marathon" 0.66, "drums" / "music" 0.60;
#: "home" / "job" 0.49, "dogs" / "job" 0.43, "adoption" / "art" 0.23) is a candidate for a change.
KEY_MIN_COSINE = 0.6
#: …or whose statement is at least this close (``core.CANDIDATE_MIN_COSINE``'s floor for the same claim).
STATEMENT_MIN_COSINE = 0.5
#: A candidate the question picks whose statement is at least this close to the new one's, with the same values,
#: is the same fact said again: merged, not superseded (``core.SAME_CLAIM_COSINE``).
RESTATED_COSINE = 0.9
#: Candidates asked about, best first: each costs one short scored forward pass.
MAX_ASKED = 3
#: The threshold of a model not measured, under ``fact_change="model"``.
UNMEASURED_CHANGE_MIN_P = 0.5


def change_threshold(mode: str, llm: LLM | None, profile: ModelProfile) -> float | None:
    """The P(yes) at or above which the answer of ``llm`` (measured as ``profile``) makes a change under ``fact_change``
    ``mode`` ("auto": a model whose profile ``changes_facts``, at its ``change_min_p``; "model": any, at its
    ``change_min_p`` or, unmeasured, ``UNMEASURED_CHANGE_MIN_P``; "off": none), or None when the question is not
    asked."""
    if llm is None or (mode == "auto" and not profile.changes_facts):
        return None
    return step_threshold(mode, llm.name or "", profile.change_min_p, UNMEASURED_CHANGE_MIN_P)


def key_text(fact: CoreFact) -> str:
    """What a fact's attribute key is embedded as: the key alone (the subject is compared as a string), or the
    statement when it has no key (a fact stored before facts had keys)."""
    return fact.attribute.strip() or fact.statement


@dataclass
class ChangeCandidate:
    """An earlier current fact a new one may change, and the cosines it was found by."""

    fact: CoreFact
    key_cosine: float
    statement_cosine: float
    same_trajectory: bool


def change_candidates(new: CoreFact, new_vector: np.ndarray, new_key: np.ndarray, current: Sequence[CoreFact],
                      vector_of: Callable[[str], np.ndarray], key_of: Callable[[CoreFact], np.ndarray],
                      ) -> list[ChangeCandidate]:
    """The facts of ``current`` that ``new`` may change, best first (same trajectory, then the larger of the
    two cosines), at most ``MAX_ASKED``. ``new_vector`` / ``new_key``: (d,) embeddings of its statement and
    ``key_text``; ``vector_of(id)`` / ``key_of(fact)`` give those of an earlier fact."""
    subject = normalise_subject(new.subject)
    found = []
    for fact in current:
        if (normalise_subject(fact.subject) != subject or fact.corrected or not _earlier_day(fact, new)
                or set(fact.source_message_ids) >= set(new.source_message_ids)):
            continue
        key_cos, statement_cos = cosine(key_of(fact), new_key), cosine(vector_of(fact.id), new_vector)
        if key_cos >= KEY_MIN_COSINE or statement_cos >= STATEMENT_MIN_COSINE:
            same = bool(set(fact.trajectory_ids) & set(new.trajectory_ids))
            found.append(ChangeCandidate(fact, key_cos, statement_cos, same))
    found.sort(key=lambda c: (not c.same_trajectory, -max(c.key_cosine, c.statement_cosine)))
    return found[:MAX_ASKED]


def _earlier_day(fact: CoreFact, new: CoreFact) -> bool:
    """Whether ``fact`` was said on an earlier day than ``new`` (both dated): facts of one day are details of
    one another (the rent replay's "signed the lease" and "the rent is 1,200 euros" of one message pair)."""
    return bool(fact.event_time and new.event_time and fact.event_time.date() < new.event_time.date())


@dataclass
class ChangeVerdict:
    """The questions asked about one new fact: P(yes) per candidate id, the threshold, and the candidate
    changed (None: none reached it), with the operation and why; ``error`` when the model failed."""

    p_yes: dict[str, float]
    min_p: float
    changed: CoreFact | None = None
    op: FactOp = FactOp.ADD
    reason: str = ""
    prompt_version: str = core_change.version()
    error: str | None = None


def ask_change(llm: LLM, min_p: float, new: CoreFact, candidates: Sequence[ChangeCandidate]) -> ChangeVerdict:
    """The mean P(yes) of the ``core_change.CHANGE`` wordings for each candidate (one batch of short prompts,
    a candidate's wordings in a row); the best at or above
    ``min_p`` is changed: SUPERSEDE, or MERGE when ``new`` says the same again (``RESTATED_COSINE``, the same
    values). A model error is
    recorded (``error``) and nothing changes; never raised."""
    wordings = core_change.CHANGE
    prompts = [core_change.build(new.subject, c.fact.statement, c.fact.event_time, new.statement, new.event_time,
                                 question, input_ids=(c.fact.id,)) for c in candidates for question in wordings]
    try:
        answers = llm.yes_probability(prompts)
    except LLMError as exc:
        return ChangeVerdict({}, min_p, reason="the change question failed; added",
                             error=f"{type(exc).__name__}: {exc}")
    if len(answers) != len(prompts):
        return ChangeVerdict({}, min_p, reason="the change question failed; added",
                             error=f"{len(answers)} P(yes) for {len(prompts)} prompts")
    probs = [float(np.mean(answers[k:k + len(wordings)])) for k in range(0, len(answers), len(wordings))]
    p_yes = {c.fact.id: round(p, 4) for c, p in zip(candidates, probs, strict=True)}
    k = int(np.argmax(probs))
    best, p = candidates[k], probs[k]
    asked = ", ".join(f"{fid} {q:.2f}" for fid, q in p_yes.items())
    if p < min_p:
        return ChangeVerdict(p_yes, min_p, reason=f"no earlier fact changed: mean P(yes) {asked} < {min_p:.2f}")
    op, how = FactOp.SUPERSEDE, "the earlier fact is kept as history"
    if best.statement_cosine >= RESTATED_COSINE and not values(new.statement).differences(values(best.fact.statement)):
        op = FactOp.MERGE
        how = f"said again (statement cos {best.statement_cosine:.2f} ≥ {RESTATED_COSINE}, same values)"
    key = f"key {best.fact.attribute!r} → {new.attribute!r}, key cos {best.key_cosine:.2f}" \
        if best.fact.attribute or new.attribute else f"statement cos {best.statement_cosine:.2f}"
    reason = (f"how {best.fact.id} stands now: mean P(yes) {p:.2f} ≥ {min_p:.2f} ({key}; asked {asked}); {how}")
    return ChangeVerdict(p_yes, min_p, best.fact, op, reason)
