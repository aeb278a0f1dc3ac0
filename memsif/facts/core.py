"""Schema-guided CoreFact consolidation (§3.3).

For each batch of not-yet-read messages of the Topical Segments: the LLM extracts schema facts as
constrained JSON; each candidate is compared with existing current facts of the same subject and
type (ranked by statement similarity, facts of the same Event Trajectory first: trajectories are the
cross-time evidence that reconciles facts spanning segments); then one operation is applied and
logged. Before anything is written, a candidate's dates are settled against its sources
(:mod:`memsif.facts.dates`), it must pass the grounding gate (:mod:`memsif.facts.grounding`) and, where the
model is measured to verify (``memsif.llm.profiles``), the model's check that the subject's cited messages
state it (P(yes), with the gate's word overlap); a candidate that fails is logged as REJECT with its
reasons and measures, and every stored fact carries its ``Verification``.
Deterministic shortcuts are logged as ``rule``: nothing comparable → Add; a near-identical statement
asserting the same values (:mod:`memsif.facts.values`) → Merge; the same claim with a changed value
(number, date, time, amount, polarity) and newer evidence → Supersede (for an Event: Add, another
occurrence); a changed amount that the facts' source messages state as the same quantity, whatever
the fact types (``changed_quantity``) → Supersede. A value change is never
merged by rule, and Merge is not offered to the model for it. Otherwise the LLM picks
Add / Update / Merge / Supersede as a scored one-letter choice (no free generation), if it is trusted
with that choice (``operation_trusted``); an untrusted model's candidate is added.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, get_args

import numpy as np

from memsif.delegated import Delegated
from memsif.embed import Embedder
from memsif.errors import LLMError, LLMOutputError
from memsif.facts import claims as claim_rules
from memsif.facts import grounding
from memsif.facts.active import normalise_subject
from memsif.facts.changes import ask_change, change_candidates, key_text
from memsif.facts.corrections import changes_correction, refused_by_correction
from memsif.facts.dates import settle_dates
from memsif.facts.values import Values, mask, values
from memsif.facts.verify import verify
from memsif.llm import LLM, Generation, generate_many
from memsif.llm.profiles import ModelProfile
from memsif.llm.structured import parse_json_reply, salvage_items
from memsif.matching import cosine, cosines
from memsif.prompts import Prompt, core_extract, core_operation
from memsif.records import (
    CoreFact,
    FactOp,
    FactOperation,
    FactType,
    Message,
    OperationScores,
    TopicalSegment,
    record_number,
)
from memsif.timeparse import annotate_relative_dates, day_text

#: Existing facts below this statement cosine are not comparable: the candidate is added by rule.
CANDIDATE_MIN_COSINE = 0.5
#: At or above this statement cosine the candidate is the same fact: merged by rule (values equal).
DUPLICATE_COSINE = 0.97
#: At or above this cosine of the value-masked statements, two statements make the same claim; when
#: their values differ only the value changed (MiniLM: "rent is # euros a month" / "rent went up to #
#: euros a month" 0.92; unrelated claims of one person score below 0.8).
SAME_CLAIM_COSINE = 0.9
#: At or above this cosine of two value-masked source messages that state an amount in a shared unit,
#: they state the same quantity, whatever fact type the model gave each fact (MiniLM: "My rent is #
#: euros a month" / "My rent went up to # euros a month" 0.81, "I work # hours a week" / "Now I only
#: work # hours a week" 0.81; "I earn # euros a month" 0.52, "The gym costs me # euros a month" 0.35,
#: "I sleep # hours a day" 0.59 against the first of each).
SAME_QUANTITY_COSINE = 0.75
#: Fact types that hold occurrences (the schema's "time-anchored occurrences"): the same claim with
#: other values is another occurrence ("ran a race on 20 May" / "on 15 June"), added, never superseded.
OCCURRENCE_TYPES = ("event",)
#: Existing facts shown to the operation chooser.
MAX_KNOWN = 2
EXTRACT_MAX_TOKENS = 320


def operation_trusted(mode: str, llm: LLM | None, profile: ModelProfile) -> bool:
    """Whether ``llm`` (measured as ``profile``) chooses the operation when no rule decides (``fact_operation``:
    "model" always, "rules" never, "auto" only for a model whose profile says it chooses better than always-Add on the
    labelled pairs of ``benchmarks/quality/data/fact-operations.jsonl``: ``ModelProfile.chooses_operation``, none
    yet). Otherwise a candidate that no rule decides is added beside the similar facts (the log says so)."""
    if mode == "auto":
        return llm is not None and profile.chooses_operation
    return mode == "model"


#: Content stems of the extraction prompt's worked example (its people and facts) but its generic words:
#: a statement using one that its cited messages do not hold copied the example, and the grounding gate
#: rejects it (``grounding.check(example_words=...)``), so nothing of the example can be stored.
EXAMPLE_WORDS = grounding.content_stems(" ".join(f"{who} {said}" for who, _, said, _ in core_extract.EXAMPLE_FACTS),
                                        core_extract.EXAMPLE_GENERIC_WORDS)


@dataclass
class FactState:
    """A namespace's CoreFacts with their (d,) statement embeddings (and their keys', as computed)."""

    facts: list[CoreFact] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    #: Fact id → (d,) embedding of its attribute key (``changes.key_text``), filled as the change question needs.
    keys: dict[str, np.ndarray] = field(default_factory=dict)

    def current(self) -> list[CoreFact]:
        return [f for f in self.facts if f.status == "current"]

    def get(self, fact_id: str) -> CoreFact:
        return self.facts[record_number(fact_id) - 1]

    @classmethod
    def of(cls, rows: Sequence[tuple[CoreFact, np.ndarray]]) -> FactState:
        """The state of stored (fact, (d,) statement embedding) rows in id order."""
        return cls([fact for fact, _ in rows], {fact.id: vector for fact, vector in rows})

    def add(self, fact: CoreFact, vector: np.ndarray) -> None:
        """Store a new fact as the next id (``F{n}``) with its (d,) statement embedding."""
        fact.id = f"F{len(self.facts) + 1}"
        self.facts.append(fact)
        self.vectors[fact.id] = vector


@dataclass
class ReadBatch:
    """Messages read by one extraction call, and per segment how far extraction has read once it is done."""

    messages: list[Message]
    read_upto: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Its name in the operation log (``FactOperation.batch``): first and last message ids and size."""
        return f"{self.messages[0].id}…{self.messages[-1].id} ({len(self.messages)})"


@dataclass
class BatchResult:
    """One batch consolidated: its operations (in log order), the facts they changed with their (d,)
    embeddings, and the segments' read-marks to store with them. ``index`` of ``total`` counts the
    batches of its pass (the second pass's own count when ``second_pass``)."""

    index: int
    total: int
    batch: ReadBatch
    operations: list[FactOperation]
    changed: list[tuple[CoreFact, np.ndarray]]
    second_pass: bool = False


def unread_batches(segments: Sequence[TopicalSegment], messages: Mapping[str, Message],
                   batch_messages: int) -> list[ReadBatch]:
    """The messages no extraction has read yet (each segment from its ``facts_extracted_upto``), in
    segment order, cut into batches of at most ``batch_messages`` (consecutive segments share a batch
    to save calls) that never cross a session boundary: a batch returns at most a few facts, and a
    later session's facts (a new value, a new date) must not lose their places to an earlier one's."""
    batches = [ReadBatch([])]
    for seg in segments:
        for pos in range(seg.facts_extracted_upto, len(seg.message_ids)):
            message = messages[seg.message_ids[pos]]
            current = batches[-1].messages
            if len(current) >= batch_messages or (current and current[-1].session_id != message.session_id):
                batches.append(ReadBatch([]))
            batches[-1].messages.append(message)
            batches[-1].read_upto[seg.id] = pos + 1
    return [b for b in batches if b.messages]


@dataclass
class Candidate:
    """A fact extracted from messages, before consolidation."""

    fact: CoreFact
    vector: np.ndarray
    provenance_note: str = ""
    cited: list[Message] = field(default_factory=list)
    cited_vectors: np.ndarray | None = None
    speakers: list[str] = field(default_factory=list)


def known_for(state: FactState, cand: Candidate) -> list[tuple[CoreFact, float]]:
    """Current facts with the same subject and type, by statement cosine (same trajectory first)."""
    subject = normalise_subject(cand.fact.subject)
    scored = [(f, cos, bool(set(f.trajectory_ids) & set(cand.fact.trajectory_ids))) for f in state.current()
              if f.type == cand.fact.type and normalise_subject(f.subject) == subject
              and (cos := cosine(state.vectors[f.id], cand.vector)) >= CANDIDATE_MIN_COSINE]
    scored.sort(key=lambda s: (not s[2], -s[1]))
    return [(f, cos) for f, cos, _ in scored[:MAX_KNOWN]]


@dataclass
class Refusals:
    """What the first pass over a batch refused: (statement, reason) pairs; the statements it kept; and the
    ``writers`` the second pass asks about (people whose messages a refused candidate cited and about whom
    no fact was kept from the batch)."""

    refused: list[tuple[str, str]]
    kept: list[str]
    writers: list[str]


def build_core_facts(builder: CoreFactBuilder, state: FactState, namespace: str, batches: Sequence[ReadBatch],
                     segment_of: Mapping[str, str], trajectory_of: Mapping[str, str | None],
                     vectors: Mapping[str, np.ndarray], parallel: int,
                     owed: Sequence[tuple[ReadBatch, Refusals]] = ()) -> Iterator[BatchResult]:
    """CoreFact construction over ``batches`` (§3.3): the first batch alone, so its facts are written (and
    seen) after one extraction rather than a whole group's, then each group of ``parallel`` batches extracted
    together (one padded generation where the back-end allows; on llama.cpp the group keeps the extraction
    prompt's fixed part read once), then every batch is consolidated into ``state`` one at a time in order.
    Yields each batch's result as soon as it is consolidated, so the caller can store it (an interrupted run
    resumes after the last stored batch). With the builder's
    ``second_pass`` on, once every batch is done, the batches where a refused candidate cited a writer who
    kept no fact (``refusal_notes``) are extracted again, ``parallel`` at a time, asking for that writer's
    facts, and yielded once more (``BatchResult.second_pass``), after the ``owed`` ones of an interrupted
    run (``owed_second_passes``): the first pass's memory is complete as soon as without it. ``vectors``
    maps a message id to its (d,) embedding."""
    pending: list[tuple[ReadBatch, Refusals]] = list(owed)
    starts = [0, *range(1, len(batches), parallel)] if parallel > 1 else list(range(len(batches)))
    groups = list(zip(starts, [*starts[1:], len(batches)], strict=True)) if batches else []
    for start, end in groups:
        group = batches[start:end]
        extracted = _extract(builder, namespace, group, segment_of, trajectory_of, vectors)
        for k, (batch, (candidates, failures)) in enumerate(zip(group, extracted, strict=True), start):
            ops = [*failures, *(builder.consolidate(state, cand) for cand in candidates)]
            if builder.second_pass:
                for op in ops:
                    op.extraction_pass = 1  # the pass is named only where a second one runs
                if (notes := refusal_notes(ops, batch.messages)).writers:
                    pending.append((batch, notes))
            yield _batch_result(state, k, len(batches), batch, ops)
    for start in range(0, len(pending), parallel):
        chunk = pending[start:start + parallel]
        again = _extract(builder, namespace, [batch for batch, _ in chunk], segment_of, trajectory_of, vectors,
                         [notes for _, notes in chunk])
        for j, ((batch, _), (candidates, failures)) in enumerate(zip(chunk, again, strict=True), start):
            ops = [*failures, *(builder.consolidate(state, cand) for cand in candidates)]
            for op in ops:
                op.extraction_pass = 2
            yield _batch_result(state, j, len(pending), batch, ops, second_pass=True)


def owed_second_passes(log: Sequence[FactOperation], segments: Sequence[TopicalSegment],
                       messages: Mapping[str, Message]) -> list[tuple[ReadBatch, Refusals]]:
    """The second passes an interrupted extraction still owes, in log order: logged batches (``log``, the
    namespace's operations) that a builder with the second pass read, whose refusals ask for one
    (``refusal_notes``) and that have no second-pass operation. Each batch is rebuilt from its key over
    ``segments`` (in order) and ``messages`` by id; its read-marks are stored already, so it carries none."""
    by_batch: dict[str, list[FactOperation]] = {}
    for op in log:
        if op.batch:
            by_batch.setdefault(op.batch, []).append(op)
    order = [mid for seg in segments for mid in seg.message_ids]
    position = {mid: i for i, mid in enumerate(order)}
    owed = []
    for key, ops in by_batch.items():
        named = re.fullmatch(r"(.+)…(.+) \((\d+)\)", key)
        if named is None or any(op.extraction_pass != 1 for op in ops) or named[1] not in position:
            continue
        ids = order[position[named[1]]:position[named[1]] + int(named[3])]
        if ids[-1] == named[2] and (notes := refusal_notes(ops, [messages[i] for i in ids])).writers:
            owed.append((ReadBatch([messages[i] for i in ids]), notes))
    return owed


def _extract(builder: CoreFactBuilder, namespace: str, group: Sequence[ReadBatch],
             segment_of: Mapping[str, str], trajectory_of: Mapping[str, str | None],
             vectors: Mapping[str, np.ndarray], again: Sequence[Refusals] | None = None,
             ) -> list[tuple[list[Candidate], list[FactOperation]]]:
    return builder.extract_many(namespace, [b.messages for b in group], dict(segment_of), dict(trajectory_of),
                                [np.stack([vectors[m.id] for m in b.messages]) for b in group], again=again)


def _words(statement: str) -> str:
    return " ".join(statement.casefold().split())


def _batch_result(state: FactState, k: int, total: int, batch: ReadBatch, ops: list[FactOperation],
                  second_pass: bool = False) -> BatchResult:
    changed = {fid for op in ops for fid in op.fact_ids}
    return BatchResult(k, total, batch, ops, [(f, state.vectors[f.id]) for f in state.facts if f.id in changed],
                       second_pass)


def refusal_notes(ops: Sequence[FactOperation], messages: Sequence[Message]) -> Refusals:
    """What the first pass over one batch (``messages``) refused and kept, from its operations ``ops``:
    each refused statement with the first rule that refused it (a claim rule's, the gate's, or the
    verification's, without the log's prefixes), and the writers the second pass asks about."""
    writer = {m.id: m.speaker for m in messages}
    refused, kept, cited, covered = [], [], [], set()
    for op in ops:
        if op.op != FactOp.REJECT:
            kept += [f.statement for f in op.after if f.id in op.fact_ids][:1]
            covered |= {writer.get(i) for f in op.after for i in f.source_message_ids}
            continue
        if op.candidate is None:
            continue
        cited += [writer[i] for i in op.candidate.source_message_ids if i in writer]
        failed = [c.reason for c in op.claims if not c.passed]
        reason = failed[0] if failed else re.sub(r"^(refused by the claim rules|not grounded in (\S+, )*\S+): ", "",
                                                 op.reason.split("; ")[0])
        refused.append((op.candidate.statement, reason))
    return Refusals(refused, kept, [w for w in dict.fromkeys(cited) if w not in covered])


def select_operations(log: Sequence[FactOperation], op: str | None = None,
                      subject: str | None = None) -> list[FactOperation]:
    """The operations of ``log`` of one kind (``op``, any case) and/or touching facts of one subject
    (case-insensitive; a REJECT counts its candidate's subject)."""
    rows = [r for r in log if not op or r.op == op.upper()]
    if subject:
        wanted = subject.lower()
        rows = [r for r in rows if any(f.subject.lower() == wanted
                                       for f in [*r.before, *r.after, *([r.candidate] if r.candidate else [])])]
    return rows


class ExtractedFact(Protocol):
    """One fact of the extraction's reply (``core_extract.response_schema``)."""

    subject: str
    type: str
    statement: str
    sources: list[int]
    about: str


def _provenance(item: ExtractedFact, vector: np.ndarray, messages: Sequence[Message], message_vectors: np.ndarray,
                speakers: Sequence[str], note: str) -> tuple[list[int], str]:
    """The 1-based numbers of the batch's messages a candidate comes from, and the note of what was
    changed: numbers outside the batch dropped, the sources repaired model-free
    (``grounding.repair_sources``), or, with none left, the message its (d,) ``vector`` is closest to."""
    valid = sorted({i for i in item.sources if 1 <= i <= len(messages)})
    if len(valid) != len(item.sources):
        note = f"dropped source numbers outside 1..{len(messages)}: {sorted(set(item.sources) - set(valid))}; "
    if valid:
        cited = valid
        valid, added = grounding.repair_sources(item.statement, messages, valid, item.subject, speakers)
        if added:
            note += (f"sources repaired (model-free): cited {', '.join(messages[i - 1].id for i in cited)}, "
                     f"now {', '.join(messages[i - 1].id for i in valid)}, the batch's messages that say it; ")
    if not valid:  # provenance by similarity: the one message the statement is closest to
        valid = [int(np.argmax(cosines(message_vectors, vector))) + 1]
        note += f"provenance by similarity to {messages[valid[0] - 1].id}"
    return valid, note


def _whole_sentences(items: list[Any]) -> tuple[list[Any], list[str]]:
    """Each extracted fact whose statement was cut off at the schema's length limit
    (``core_extract.STATEMENT_MAX_CHARS``) kept as its complete sentences (``grounding.whole_sentences``), with
    the note of the cut; the gate then checks what is left like any statement (one with no complete
    sentence stays cut off, and is refused)."""
    kept, notes = [], []
    for item in items:
        statement, note = grounding.whole_sentences(item.statement, core_extract.STATEMENT_MAX_CHARS)
        kept.append(item.model_copy(update={"statement": statement}) if note else item)
        notes.append(f"{note}; " if note else "")
    return kept, notes


def _candidate(namespace: str, item: ExtractedFact, vector: np.ndarray, messages: Sequence[Message],
               message_vectors: np.ndarray, salvage_note: str, segment_of: Mapping[str, str],
               trajectory_of: Mapping[str, str | None]) -> Candidate:
    """One extracted fact as a candidate: its valid sources, dates settled, segments and trajectories."""
    speakers = list(dict.fromkeys(m.speaker for m in messages))
    valid, note = _provenance(item, vector, messages, message_vectors, speakers, salvage_note)
    sources = [messages[i - 1] for i in valid]
    when = max((m.time for m in sources if m.time), default=None)
    statement, date_note = settle_dates(item.statement, sources)
    if date_note:
        note = f"{note}; {date_note}" if note else date_note
    segs = list(dict.fromkeys(segment_of[m.id] for m in sources))
    trajs = list(dict.fromkeys(t for s in segs if (t := trajectory_of.get(s))))
    fact = CoreFact(id="", namespace=namespace, subject=item.subject.strip(), type=item.type, statement=statement,
                    attribute=" ".join(item.about.split()).casefold(), event_time=when,
                    source_message_ids=[m.id for m in sources], segment_ids=segs,
                    trajectory_ids=trajs, valid_from=when)
    return Candidate(fact, vector, note, sources, message_vectors[[i - 1 for i in valid]], speakers)


def changed_quantity(state: FactState, cand: Candidate, messages: Mapping[str, Message],
                     message_values: dict[str, Values], embedder: Embedder) -> tuple[CoreFact, str, float] | None:
    """A current fact of the same subject, of any type, whose stated amount ``cand`` changes: a
    source message of each states an amount in a shared unit, the numbers differ, each statement
    carries its message's number, the value-masked messages make the same claim (cosine ≥
    ``SAME_QUANTITY_COSINE``) and ``cand`` is newer. The model's fact types are not compared ("rent
    1,200" as an Identity, "rent went up to 1,500" as an Event); two occurrences (both Events) are
    left to the occurrence rule. ``messages``: every message by id; ``message_values``: a cache of their
    values, filled here. Returns (old fact, reason, the messages' cosine) or None."""
    when = cand.fact.event_time
    new_said = values(cand.fact.statement)
    new = [(m, v) for m in cand.cited if (v := values(m.text)).units and v.numbers & new_said.numbers]
    if not new or when is None:
        return None
    subject = normalise_subject(cand.fact.subject)
    occurrence = cand.fact.type.lower() in OCCURRENCE_TYPES
    for fact in state.current():
        if (normalise_subject(fact.subject) != subject or fact.event_time is None or fact.event_time >= when
                or (occurrence and fact.type.lower() in OCCURRENCE_TYPES)):
            continue
        old_said = values(fact.statement)
        for mid in fact.source_message_ids:
            if (old_message := messages.get(mid)) is None:
                continue
            if (old_values := message_values.get(mid)) is None:
                old_values = message_values[mid] = values(old_message.text)
            if not old_values.units or not old_values.numbers & old_said.numbers:
                continue
            for message, new_values in new:
                units = old_values.units & new_values.units
                if not units or old_values.numbers == new_values.numbers:
                    continue
                a, b = embedder.embed_documents([mask(old_message.text), mask(message.text)])
                cos = cosine(a, b)
                if cos >= SAME_QUANTITY_COSINE:
                    reason = (f"the amount in {', '.join(sorted(units))} changed ({old_values.describe()} → "
                              f"{new_values.describe()}): {old_message.id} and {message.id} state the same "
                              f"quantity (value-masked cos {cos:.2f} ≥ {SAME_QUANTITY_COSINE}), newer evidence")
                    return fact, reason, cos
    return None


@dataclass
class FactLog:
    """What CoreFact extraction and consolidation share: the model and the embedder they call, the clock
    of the operation log, the model calls made, and how an operation is written into the log (``log``)."""

    llm: LLM
    embedder: Embedder
    now: Callable[[], datetime] = lambda: datetime.now(UTC).replace(tzinfo=None)
    llm_calls: int = 0

    def log(self, namespace: str, op: FactOp, fact_ids: list[str], *, reason: str, decided_by: Literal["rule", "llm"],
             before: Sequence[CoreFact] = (), after: Sequence[CoreFact] = (), scores: OperationScores | None = None,
             event_time: datetime | None = None, prompt: Prompt | None = None,
             error: str | None = None) -> FactOperation:
        return FactOperation(
            namespace=namespace, op=op, fact_ids=fact_ids, before=[f.model_copy(deep=True) for f in before],
            after=[f.model_copy(deep=True) for f in after], reason=reason, decided_by=decided_by,
            scores=scores.model_copy(deep=True) if scores is not None else OperationScores(),
            event_time=event_time, recorded_at=self.now(), prompt_version=prompt.version if prompt else None,
            model=self.llm.name if prompt and self.llm is not None else None, error=error)


class FactExtractor:
    """CoreFact extraction (§3.3): a batch of messages → the model's candidates, or a NOOP saying why
    there are none."""

    def __init__(self, shared: FactLog, schema: Sequence[FactType]) -> None:
        self.shared, self.schema = shared, tuple(schema)
        self.response_model = core_extract.response_schema(self.schema)

    def extract(self, namespace: str, messages: Sequence[Message], segment_of: dict[str, str],
                trajectory_of: dict[str, str | None], message_vectors: np.ndarray | None = None
                ) -> tuple[list[Candidate], list[FactOperation]]:
        """Candidates from one batch of messages, or a NOOP operation recording why there are none.
        ``message_vectors`` are the messages' (n, d) embeddings when the caller has them (the
        Structured Interaction Memory state does); otherwise they are embedded here."""
        return self.extract_many(namespace, [messages], segment_of, trajectory_of, [message_vectors])[0]

    def extract_many(self, namespace: str, batches: Sequence[Sequence[Message]], segment_of: dict[str, str],
                     trajectory_of: dict[str, str | None],
                     message_vectors: Sequence[np.ndarray | None] | None = None,
                     again: Sequence[Refusals] | None = None) -> list[tuple[list[Candidate], list[FactOperation]]]:
        """``extract`` for several batches, their prompts generated together (one padded batch where
        the back-end allows: ``memsif.llm.generate_many``); one (candidates, operations) per batch, in
        order. Extraction reads no fact state, so batches can be extracted ahead of consolidation.
        ``again``: the second pass, one ``Refusals`` per batch, whose writers its prompt asks about and whose
        kept statements it lists (``core_extract.build_again``); a candidate that repeats a refused statement
        is a REJECT by rule, one that repeats a kept statement a NOOP."""
        lines = [[(day_text(m.time), m.speaker, annotate_relative_dates(m.text, m.time)[0]) for m in batch]
                 for batch in batches]
        prompts = ([core_extract.build(b, self.schema) for b in lines] if again is None else
                   [core_extract.build_again(b, self.schema, r.writers, r.kept)
                    for b, r in zip(lines, again, strict=True)])
        self.shared.llm_calls += len(prompts)
        reply_model = self.response_model if again is None else core_extract.response_schema(
            self.schema, core_extract.AGAIN_MAX_FACTS)
        replies = generate_many(self.shared.llm, prompts, max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0,
                                json_schema=core_extract.grammar(reply_model))
        vectors = list(message_vectors) if message_vectors is not None else [None] * len(batches)
        read = [self._read(namespace, batch, prompt, reply, segment_of, trajectory_of, vecs)
                for batch, prompt, reply, vecs in zip(batches, prompts, replies, vectors, strict=True)]
        return read if again is None else [self._repeats(namespace, *r, refusals, prompt)
                                           for r, refusals, prompt in zip(read, again, prompts, strict=True)]

    def _repeats(self, namespace: str, candidates: list[Candidate], failures: list[FactOperation],
                 refusals: Refusals, prompt: Prompt) -> tuple[list[Candidate], list[FactOperation]]:
        """The second pass's candidates without those that repeat a first-pass statement: a refused one is a
        REJECT by rule, a kept one a NOOP."""
        said = {_words(statement): (FactOp.REJECT, f"repeats a statement the first pass refused: {why}")
                for statement, why in refusals.refused}
        said.update((_words(statement), (FactOp.NOOP, "repeats a statement the first pass kept"))
                    for statement in refusals.kept)
        for cand in [c for c in candidates if _words(c.fact.statement) in said]:
            candidates.remove(cand)
            op, reason = said[_words(cand.fact.statement)]
            failures.append(self.shared.log(namespace, op, [], decided_by="rule", prompt=prompt, reason=reason,
                                      event_time=cand.fact.event_time))
            failures[-1].candidate = cand.fact.model_copy()
        return candidates, failures

    def _read(self, namespace: str, messages: Sequence[Message], prompt: Prompt, reply: Generation | Exception,
              segment_of: dict[str, str], trajectory_of: dict[str, str | None],
              message_vectors: np.ndarray | None) -> tuple[list[Candidate], list[FactOperation]]:
        """Candidates from one batch's reply (see ``extract``)."""
        ids = [m.id for m in messages]
        salvage_note = ""
        try:
            if isinstance(reply, Exception):
                raise reply
            try:
                items = parse_json_reply(reply.text, self.response_model).facts
            except LLMOutputError as exc:
                item_model = get_args(self.response_model.model_fields["facts"].annotation)[0]
                items = salvage_items(reply.text, item_model)
                if not items:
                    raise
                salvage_note = f"recovered {len(items)} complete fact(s) from a cut-off reply ({exc}); "
        except LLMError as exc:
            return [], [self.shared.log(namespace, FactOp.NOOP, [], reason=f"extraction failed for {ids[0]}..{ids[-1]}",
                                  decided_by="llm", prompt=prompt, error=f"{type(exc).__name__}: {exc}")]
        if not items:
            return [], [self.shared.log(namespace, FactOp.NOOP, [], reason=f"no schema facts in {ids[0]}..{ids[-1]}",
                                  decided_by="llm", prompt=prompt)]
        # A small model can write JSON debris into a string ("Ben (17 March 2024)},{"): such a fact is
        # dropped with a recorded error, never stored.
        debris = [it for it in items if grounding.DEBRIS.search(it.subject) or not re.search(r"\w", it.subject)]
        failures = [self.shared.log(namespace, FactOp.NOOP, [], reason=f"dropped a fact with a malformed subject from "
                              f"{ids[0]}..{ids[-1]}", decided_by="llm", prompt=prompt,
                              error=f"malformed subject {it.subject!r} (statement {it.statement!r})")
                    for it in debris]
        items = [it for it in items if it not in debris]
        if not items:
            return [], failures
        items, notes = _whole_sentences(items)
        vectors = self.shared.embedder.embed_documents([f.statement for f in items])
        if message_vectors is None:
            message_vectors = self.shared.embedder.embed_documents([m.text for m in messages])
        return [_candidate(namespace, item, vector, messages, message_vectors, salvage_note + note, segment_of,
                           trajectory_of)
                for item, vector, note in zip(items, vectors, notes, strict=True)], failures


class FactConsolidator:
    """CoreFact consolidation (§3.3): a candidate through the grounding gate, the claim rules, a
    person's corrections and the verification, then Add / Update / Merge / Supersede by rule or by the
    model's choice, each logged."""

    def __init__(self, shared: FactLog, ask_operation: bool, messages: Mapping[str, Message],
                 verify_min_p: float | None, change_min_p: float | None) -> None:
        self.shared, self.ask_operation, self.messages = shared, ask_operation, messages
        self.verify_min_p, self.change_min_p = verify_min_p, change_min_p
        self._message_values: dict[str, Values] = {}  # the quantity rule reads old messages again and again

    def ground(self, cand: Candidate) -> grounding.Grounding:
        """The grounding gate's verdict on a candidate (no model involved)."""
        return grounding.check(cand.fact.subject, cand.fact.statement, cand.cited, cand.speakers, cand.vector,
                               cand.cited_vectors, max_statement_chars=core_extract.STATEMENT_MAX_CHARS,
                               example_words=EXAMPLE_WORDS)

    def consolidate(self, state: FactState, cand: Candidate) -> FactOperation:
        """Gate ``cand``, check its claims (``claims.check_claims``, ``claims.empty_remark``), verify it
        (``verify``), then apply one of Add / Update / Merge / Supersede; return the logged operation
        (REJECT when the gate, the claim rules or the model's verification turned the candidate away).
        Rules decide where they can (a changed quantity, nothing similar, a near-duplicate, another
        occurrence, a newer value of the same claim); the LLM chooses among the similar facts only when it
        is trusted with the choice.
        """
        verdict = self.ground(cand) if cand.cited else None
        if verdict is not None and not verdict.passed:
            return self._reject(cand, f"not grounded in {', '.join(m.id for m in cand.cited)}: {verdict.reason}",
                                OperationScores(grounding=verdict.scores))
        terms = OperationScores(grounding=verdict.scores if verdict else {})
        if verdict is not None:
            cand.fact.subject = verdict.subject
        claims = claim_rules.check_claims(cand.fact.subject, cand.fact.statement, cand.cited, cand.speakers)
        refused = [f"claim {c.claim!r}: {c.reason}" for c in claims if not c.passed]
        if empty := claim_rules.empty_remark(cand.fact.subject, cand.fact.statement, cand.speakers):
            refused.append(empty)
        if refused and cand.cited:
            op = self._reject(cand, f"refused by the claim rules: {'; '.join(refused)}", terms)
            op.claims = claims
            return op
        op = self._verify_and_apply(state, cand, terms)
        op.claims = claims
        return op

    def _verify_and_apply(self, state: FactState, cand: Candidate, terms: OperationScores) -> FactOperation:
        """The model's verification of a candidate the rules and the person's corrections let through,
        then the operation."""
        if refused := refused_by_correction(state, cand.fact, cand.vector):
            return self._reject(cand, refused, terms)
        self.shared.llm_calls += int(self.verify_min_p is not None and bool(cand.cited))
        overlap = float(terms.grounding.get("overlap", 0.0))
        check = cand.fact.verification = verify(self.shared.llm, self.verify_min_p, cand.fact.subject,
                                                cand.fact.statement, cand.cited, overlap)
        terms.verification = {k: v for k, v in check.model_dump(include={"p_yes", "min_p", "word_overlap",
                                                                         "min_word_overlap"}).items() if v is not None}
        if check.p_yes is not None and not check.verified:
            op = self._reject(cand, f"not verified against {', '.join(m.id for m in cand.cited)}: {check.rule}",
                              terms, "llm")
            op.model, op.prompt_version = check.model, check.prompt_version
            return op
        if changed := changed_quantity(state, cand, self.messages, self._message_values, self.shared.embedder):
            old, reason, cos = changed
            terms.quantity_cosine[old.id] = round(cos, 4)
            return self._apply(state, cand, FactOp.SUPERSEDE, old, "rule", reason, terms)
        known = known_for(state, cand)
        terms.similar = {f.id: round(cos, 4) for f, cos in known}
        value_note = ""
        if known:
            by_rule, value_note = self._by_rule(state, cand, known, terms)
            if by_rule is not None:
                return by_rule
        if self.change_min_p is not None and (asked := self._ask_change(state, cand, terms)) is not None:
            return asked
        if not known:
            return self._apply(state, cand, FactOp.ADD, None, "rule", "no current fact with this subject and type "
                               "is similar enough" + (", and none it may change" if self.change_min_p else ""), terms)
        if not self.ask_operation:
            best, best_cos = max(known, key=lambda item: item[1])
            reason = (f"operation choice not asked ({self.shared.llm.name or 'the model'} is not "
                      f"trusted with it: fact_operation, its model profile); added beside {best.id} "
                      f"(cos {best_cos:.2f})")
            return self._apply(state, cand, FactOp.ADD, None, "rule", f"{reason}; {value_note}" if value_note
                               else reason, terms)
        return self._ask_operation(state, cand, known, terms, value_note)

    def _by_rule(self, state: FactState, cand: Candidate, known: list[tuple[CoreFact, float]],
                 terms: OperationScores) -> tuple[FactOperation | None, str]:
        """The operation the rules decide against the most similar known fact, if they decide one, and
        the note of the values that changed (for the reason of a later choice)."""
        best, best_cos = max(known, key=lambda item: item[1])
        new_values, old_values = values(cand.fact.statement), values(best.statement)
        changed = new_values.differences(old_values)
        if best_cos >= DUPLICATE_COSINE and not changed:
            return self._apply(state, cand, FactOp.MERGE, best, "rule", f"near-identical to {best.id}", terms), ""
        if not changed:
            return None, ""
        claim_cos = cosine(*self.shared.embedder.embed_documents([mask(cand.fact.statement), mask(best.statement)]))
        terms.claim_cosine[best.id] = round(claim_cos, 4)
        value_note = (f"{' and '.join(changed)} changed ({old_values.describe()} → {new_values.describe()})")
        newer = (cand.fact.event_time is not None and best.event_time is not None
                 and cand.fact.event_time > best.event_time)
        if claim_cos >= SAME_CLAIM_COSINE and cand.fact.type.lower() in OCCURRENCE_TYPES:
            return self._apply(state, cand, FactOp.ADD, None, "rule",
                               f"another occurrence than {best.id} ({value_note})", terms), value_note
        if claim_cos >= SAME_CLAIM_COSINE and newer:
            return self._apply(state, cand, FactOp.SUPERSEDE, best, "rule",
                               f"same claim as {best.id}, {value_note}, newer evidence", terms), value_note
        return None, f"{value_note} vs {best.id}"

    def _ask_change(self, state: FactState, cand: Candidate, terms: OperationScores) -> FactOperation | None:
        """The change question (``memsif.facts.changes``) over the earlier facts ``cand`` may change: the
        SUPERSEDE or UPDATE it decides, an ADD when it decides none, or None when there is no candidate."""
        found = change_candidates(cand.fact, cand.vector, self._key_vector(state, cand.fact), state.current(),
                                  state.vectors.__getitem__, lambda f: self._key_vector(state, f))
        terms.key_cosine = {c.fact.id: round(c.key_cosine, 4) for c in found}
        if not found or self.change_min_p is None:
            return None
        self.shared.llm_calls += 1
        verdict = ask_change(self.shared.llm, self.change_min_p, cand.fact, found)
        terms.change, terms.change_min_p = verdict.p_yes, verdict.min_p
        target = verdict.changed
        record = self._apply(state, cand, verdict.op if target else FactOp.ADD, target, "llm", verdict.reason, terms)
        record.prompt_version, record.model, record.error = verdict.prompt_version, self.shared.llm.name, verdict.error
        return record

    def _key_vector(self, state: FactState, fact: CoreFact) -> np.ndarray:
        """The (d,) embedding of a fact's attribute key (``changes.key_text``), cached per stored fact."""
        if fact.id and fact.id in state.keys:
            return state.keys[fact.id]
        vector: np.ndarray = self.shared.embedder.embed_documents([key_text(fact)])[0]
        if fact.id:
            state.keys[fact.id] = vector
        return vector

    def _ask_operation(self, state: FactState, cand: Candidate, known: list[tuple[CoreFact, float]],
                       terms: OperationScores, value_note: str) -> FactOperation:
        """The LLM picks Add / Update / Merge / Supersede among ``known`` (one scored forward pass over the
        option letters); Merge is not offered with a fact whose values differ."""
        new_values = values(cand.fact.statement)
        no_merge = [k for k, (f, _) in enumerate(known) if values(f.statement).differences(new_values)]
        prompt, options = core_operation.build(cand.fact, [f for f, _ in known], no_merge)
        try:
            self.shared.llm_calls += 1
            probs = self.shared.llm.choice_probabilities(prompt, [o[0] for o in options])
        except LLMError as exc:
            failed = self._apply(state, cand, FactOp.ADD, None, "rule", "operation choice failed; added", terms)
            failed.error, failed.prompt_version = f"{type(exc).__name__}: {exc}", prompt.version
            return failed
        if len(probs) != len(options):
            raise LLMError(f"{len(probs)} scores for {len(options)} options")
        k = int(np.argmax(probs))
        letter, op, index = options[k]
        terms.options = {o[0]: round(p, 4) for o, p in zip(options, probs, strict=True)}
        target = known[index][0] if index is not None else None
        reason = f"LLM chose {letter} ({op.value}{' ' + target.id if target else ''}) with p={probs[k]:.2f}"
        if value_note:
            reason += f"; {value_note}, so Merge with it was not offered"
        record = self._apply(state, cand, op, target, "llm", reason, terms)
        record.prompt_version = prompt.version
        record.model = self.shared.llm.name if self.shared.llm is not None else None
        return record

    def _reject(self, cand: Candidate, reason: str, scores: OperationScores,
                decided_by: Literal["rule", "llm"] = "rule") -> FactOperation:
        """A REJECT of ``cand`` (kept in the entry) for ``reason`` and its provenance note."""
        op = self.shared.log(cand.fact.namespace, FactOp.REJECT, [], reason="; ".join(filter(None, [
            reason, cand.provenance_note])), decided_by=decided_by, scores=scores, event_time=cand.fact.event_time)
        op.candidate = cand.fact.model_copy()
        return op

    def _apply(self, state: FactState, cand: Candidate, op: FactOp, target: CoreFact | None,
               decided_by: Literal["rule", "llm"], reason: str, scores: OperationScores) -> FactOperation:
        ns = cand.fact.namespace
        if refused := changes_correction(target, op):
            return self._reject(cand, f"{refused} ({reason})", scores, decided_by)
        if cand.provenance_note:
            reason = f"{reason}; {cand.provenance_note}"
        new = cand.fact
        if op == FactOp.ADD or target is None:
            state.add(new, cand.vector)
            return self.shared.log(ns, FactOp.ADD, [new.id], after=[new], reason=reason, decided_by=decided_by,
                                   scores=scores, event_time=new.event_time)
        before = copy.deepcopy(target)
        if op in (FactOp.UPDATE, FactOp.MERGE):
            if op == FactOp.UPDATE:
                target.statement = new.statement
                target.attribute = new.attribute or target.attribute
                target.verification = new.verification
                state.vectors[target.id] = cand.vector
                state.keys.pop(target.id, None)
            elif new.verified and not target.verified:  # the same fact, now verified against these sources
                target.verification = new.verification
            for attr in ("source_message_ids", "segment_ids", "trajectory_ids"):
                merged = list(dict.fromkeys([*getattr(target, attr), *getattr(new, attr)]))
                setattr(target, attr, merged)
            if new.event_time and (target.event_time is None or new.event_time > target.event_time):
                target.event_time = new.event_time
            return self.shared.log(ns, op, [target.id], before=[before], after=[target], reason=reason,
                             decided_by=decided_by, scores=scores, event_time=new.event_time)
        # SUPERSEDE: close the old fact, keep it as history, link it to its successor
        state.add(new, cand.vector)
        target.status, target.valid_until, target.superseded_by = "superseded", new.event_time, new.id
        return self.shared.log(ns, FactOp.SUPERSEDE, [target.id, new.id], before=[before], after=[target, new],
                         reason=reason, decided_by=decided_by, scores=scores, event_time=new.event_time)


class CoreFactBuilder:
    """Extracts and consolidates CoreFacts: it holds an ``extractor`` (``FactExtractor``) and a ``consolidator``
    (``FactConsolidator``) over one ``FactLog``; every operation (and failure) goes to the log."""

    def __init__(self, llm: LLM, embedder: Embedder, schema: Sequence[FactType],
                 now: Callable[[], datetime] = lambda: datetime.now(UTC).replace(tzinfo=None),
                 ask_operation: bool = True, messages: Mapping[str, Message] | None = None,
                 verify_min_p: float | None = None, second_pass: bool = False,
                 change_min_p: float | None = None) -> None:
        """``ask_operation``: whether the LLM chooses the operation when no rule decides (``operation_trusted``;
        else Add by rule). ``messages``: the namespace's messages by id (the changed-quantity rule reads their
        values). ``verify_min_p``: the P(yes) the verification needs (``verifier_threshold``; None: not asked).
        ``second_pass``: read again a batch whose refusals leave a cited writer factless (``build_core_facts``).
        ``change_min_p``: the P(yes) the change question needs to supersede or update an earlier fact
        (``changes.change_threshold``; None: not asked)."""
        self.shared = FactLog(llm, embedder, now)
        self.extractor = FactExtractor(self.shared, schema)
        self.consolidator = FactConsolidator(self.shared, ask_operation, messages or {}, verify_min_p, change_min_p)
        self.second_pass = second_pass

    extract = Delegated("extractor", FactExtractor.extract)
    extract_many = Delegated("extractor", FactExtractor.extract_many)
    ground = Delegated("consolidator", FactConsolidator.ground)
    consolidate = Delegated("consolidator", FactConsolidator.consolidate)

    @property
    def llm_calls(self) -> int:
        """The model calls extraction and consolidation made."""
        return self.shared.llm_calls
