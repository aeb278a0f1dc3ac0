"""Records: pure typed data with no I/O (paper §3.2 notation in the docstrings).

Ids are short and readable within a namespace: a message keeps its source id (LoCoMo ``D3:7``),
Topical Segments are ``S1, S2, …`` and Event Trajectories ``E1, E2, …`` in creation order.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
    field_validator,
    model_validator,
)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


def record_number(record_id: str) -> int:
    """The number of a short record id ("S12" → 12, "F3" → 3, "C7" → 7): ids sort by it."""
    return int(record_id[1:])


#: Embeddings held by a record: (d,) float32 arrays in Python, lists of floats in the store's JSON.
Vectors = Annotated[list[Any], BeforeValidator(lambda vs: [np.asarray(v, dtype=np.float32) for v in vs]),
                    PlainSerializer(lambda vs: [np.asarray(v).astype(float).tolist() for v in vs],
                                    return_type=list[list[float]])]


#: How a LoCoMo image turn's caption is written into its message text: "… [shares a photo: <caption>]".
PHOTO_CAPTION = "[shares a photo: "


def spoken_text(text: str) -> str:
    """A message's text without the photo caption it carries (``PHOTO_CAPTION``): what the speaker
    said. Key entities come from it; a machine-written caption ("a photo of a dog on a couch") names no
    topic the speakers chose."""
    at = text.find(PHOTO_CAPTION)
    return text if at < 0 else text[:at].rstrip()


class Message(_Record):
    """One message u_t of the interaction history H (§3.2).

    ``time`` is the event time: the session's date, never the moment of ingestion. One rule for
    every entry path: a zone-aware time is converted to UTC and stored naive; a naive time is kept as
    written (the source's own clock). A source that mixes both is read without error.
    """

    id: str = Field(description="Source id, unique within the namespace, e.g. 'D3:7'.")
    namespace: str
    speaker: str
    text: str
    time: datetime | None = None
    session_id: str = ""
    index: int = Field(0, description="0-based position in the namespace's chronological order.")

    @field_validator("time", mode="after")
    @classmethod
    def _naive_utc(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is not None:
            return value.astimezone(UTC).replace(tzinfo=None)
        return value


class Sentence(_Record):
    """A whole sentence (or a few short ones joined) of a message: the unit of hybrid retrieval and of
    query-local evidence (§3.4). Its provenance is its message."""

    id: str = Field(description="'<message id>#<position>', e.g. 'D3:7#1'.")
    namespace: str
    message_id: str
    position: int = Field(description="0-based position of the sentence in its message.")
    text: str
    speaker: str
    time: datetime | None = None
    message_index: int = Field(description="The message's position in the namespace's chronological order.")
    segment_id: str | None = None
    trajectory_id: str | None = Field(None, description="Its segment's Event Trajectory (the trajectory path "
                                                        "searches by it).")


class SegmentTitle(_Record):
    """What a Topical Segment is about, in up to three "Name: matter" lines (``interaction.titles``):
    written by the LLM and checked line by line, or model-free (the speaker and key terms, or a quote)."""

    lines: list[str] = Field(default_factory=list, description="'Name: matter' lines, at most three.")
    source: Literal["model", "key terms", "quote"] = Field(description=(
        "'model': the LLM's checked lines; model-free (no LLM, or no line of it passed): 'key terms', or "
        "'quote' for a segment of one or two messages (its sentence that says most)."))
    model: str | None = None
    prompt_version: str | None = None
    input_ids: list[str] = Field(default_factory=list, description="Messages whose sentences the prompt showed.")
    refused: list[str] = Field(default_factory=list, description="Lines the model wrote that failed the check, "
                                                                 "each with why.")
    error: str | None = None
    message_count: int = Field(0, description="Messages of the segment when it was titled.")
    seconds: float = 0.0

    @property
    def text(self) -> str:
        """The lines joined by "; " (one line of text for tables and plots)."""
        return "; ".join(self.lines)


class TopicalSegment(_Record):
    """S_i: a temporally contiguous, topic-coherent run of messages (§3.2)."""

    id: str
    namespace: str
    index: int
    message_ids: list[str]
    entities: list[str] = Field(default_factory=list, description="Union of member key-entity sets K_S.")
    session_ids: list[str] = Field(default_factory=list)
    start_time: datetime | None = None
    end_time: datetime | None = None
    trajectory_id: str | None = None
    facts_extracted_upto: int = Field(0, description="How many leading messages CoreFact extraction has read.")
    title: SegmentTitle | None = Field(None, description="What it is about (None: not titled yet, or an older store).")


class EventTrajectory(_Record):
    """E_j: non-contiguous Topical Segments of one evolving event or task (§3.2)."""

    id: str
    namespace: str
    index: int
    segment_ids: list[str]
    entities: list[str] = Field(default_factory=list, description="Union of member key-entity sets K_E.")
    start_time: datetime | None = None
    end_time: datetime | None = None


class BoundaryRule(StrEnum):
    """Which part of the double-threshold rule (§3.2) decided a message's segment."""

    FIRST = "first"          # the first message of a namespace opens S_1
    SESSION = "session_rule"  # another session than the predecessor's (or a long gap): new segment by rule
    MERGE = "merge_rule"     # φ ≥ τ_merge: appended without the judge
    SPLIT = "split_rule"     # φ ≤ τ_split: new segment without the judge
    JUDGE = "judge"          # τ_split < φ < τ_merge: the LLM judge decided
    JUDGE_ERROR = "judge_error"  # the judge failed; fell back to φ against the midpoint (recorded)
    NO_SEGMENTS = "no_segments"  # ablation "w/o TS": every message is its own unit


class PhiScore(_Record):
    """The terms of φ(A,B) = α·s_sem + (1−α)·J (Eq. 1)."""

    phi: float
    s_sem: float
    jaccard: float
    cosine: float


class SegmentDecision(_Record):
    """How message u_t was placed: appended to the current segment or opening a new one."""

    kind: Literal["segment"] = "segment"
    seq: int | None = Field(None, description="Position in the namespace's decision log (set when stored).")
    namespace: str
    message_id: str
    message_index: int
    compared_segment_id: str | None = Field(None, description="S_i that u_t was scored against.")
    segment_id: str = Field(description="The segment u_t ended up in.")
    score: PhiScore | None = None
    tau_split: float
    tau_merge: float
    rule: BoundaryRule
    read_with: str | None = Field(None, description="The predecessor a short reply was read with for φ.")
    gap_hours: float | None = Field(None, description="Hours since the predecessor (None: either undated).")
    judge_prob: float | None = Field(None, description="P(continues the topic), calibrated (judge.py).")
    judge_prob_raw: float | None = Field(None, description="The model's uncalibrated P(yes).")
    judge_prior: float | None = Field(None, description="P(yes) on the content-free prompt.")
    continued: bool
    prompt_version: str | None = None
    model: str | None = None
    error: str | None = None
    seconds: float = 0.0


class TrajectoryCandidate(_Record):
    """One of the top-K candidates E_j scored for a closing segment S_i: the trajectory of one of
    S_i's Top-K earlier segments by φ (``segment_id``), with the measures of that pair and the
    calibrated P(same thread) they give (``memsif.interaction.link``)."""

    trajectory_id: str
    score: PhiScore = Field(description="φ(S_i, segment_id) with its terms (Eq. 1); older logs: φ(S_i, E_j).")
    segment_id: str | None = Field(None, description="The earlier segment of E_j compared (None: older logs).")
    rare: float | None = Field(None, description="IDF-weighted overlap of the two segments' content words, [0, 1].")
    gap_days: float | None = Field(None, description="Days from that segment's last message to S_i's first.")
    judge_prob: float | None = None
    judge_prob_raw: float | None = None
    judge_prior: float | None = None
    link_prob: float | None = Field(None, description="P(same thread) of the link model; for the choice, P(this "
                                                      "option) − P(none of these) (None: older logs).")
    persons: list[str] = Field(default_factory=list, description="Choice: the persons the gate found in common.")
    terms: list[str] = Field(default_factory=list, description="Choice: the rare or title words in common.")
    choice_probs: list[float] = Field(default_factory=list, description="Choice: this option's probability in "
                                                                        "each of the two orders asked.")
    choice_prob: float | None = Field(None, description="Choice: the two orders' mean.")
    measures: dict[str, float] = Field(default_factory=dict, description="Whole-memory construction: the pair's "
                                       "model-free measures (``interaction.pairs``) the pair scorer read.")
    compatible: bool


class TrajectoryDecision(_Record):
    """How segment S_i was assigned: joined the best compatible trajectory or opened a new one."""

    kind: Literal["trajectory"] = "trajectory"
    seq: int | None = Field(None, description="Position in the namespace's decision log (set when stored).")
    namespace: str
    segment_id: str
    candidates: list[TrajectoryCandidate] = Field(default_factory=list)
    trajectory_id: str
    created: bool
    rule: str = Field("", description="The rule as applied, in words: the link model, its threshold, the best "
                                      "candidate's probability (empty in older logs).")
    link_model: str | None = Field(None, description="Name of the link model that decided (None: older logs).")
    none_prob: float | None = Field(None, description="Choice: P(none of these), the two orders' mean.")
    margin: float | None = Field(None, description="Choice: the best option's probability minus P(none of these).")
    gated_out: int | None = Field(None, description="Choice: earlier trajectories the gate left out.")
    threshold: float | None = Field(None, description="Whole-memory construction: the average P(same thread) a "
                                                      "group of segments must reach (None: older logs).")
    prompt_version: str | None = None
    model: str | None = None
    error: str | None = None
    seconds: float = 0.0


#: A recorded Structured Interaction Memory decision: a boundary (§3.2 double-threshold rule) or a
#: trajectory assignment, told apart by ``kind``.
Decision = Annotated[SegmentDecision | TrajectoryDecision, Field(discriminator="kind")]
DECISION = TypeAdapter(Decision)


class FactOp(StrEnum):
    """CoreFact operations (§3.3); every one is appended to the operation log."""

    ADD = "ADD"              # a new fact
    UPDATE = "UPDATE"        # compatible new evidence integrated into an existing fact
    MERGE = "MERGE"          # a duplicate or near-duplicate folded into an existing fact
    SUPERSEDE = "SUPERSEDE"  # an outdated fact closed (kept as history) and replaced
    NOOP = "NOOP"            # nothing written (recorded when extraction failed or found nothing)
    REJECT = "REJECT"        # a candidate that failed the grounding gate: nothing written
    EDIT = "EDIT"            # a person's correction: a new version supersedes the fact (history kept)
    DELETE = "DELETE"        # a person's deletion: the fact leaves every answer, kept in the history
    RESTORE = "RESTORE"      # a person takes a deletion back


class ClaimCheck(_Record):
    """One claim of a CoreFact candidate checked on the cited sentence that states it (§3.3;
    ``memsif.facts.claims``): no model involved."""

    claim: str = Field(description="The claim's words (a predicate of the statement's subject).")
    sentence: str = Field("", description="The cited sentence that states it; empty when a rule needed none.")
    message_id: str = ""
    doer: str = Field("", description="Who that sentence says did it: writer, listener, generic, someone else: X.")
    passed: bool
    rule: str = Field(description="The rule that decided (who did it, said as done, liking said).")
    reason: str


class Verification(_Record):
    """How a CoreFact was checked against its sources before it was stored (§3.3; docs/method.md:
    a verification the model is measured to do well). ``verified`` when the model's P(yes) that the
    subject's own cited messages state the statement is at least ``min_p`` (measured per model) and
    at least ``min_word_overlap`` of its content words are in its supporting sentences."""

    verified: bool
    rule: str = Field(description="The rule as applied, in words: the measures and the thresholds.")
    p_yes: float | None = Field(None, description="The model's P(yes) (fact_verify prompt); None when not asked.")
    min_p: float | None = None
    word_overlap: float = Field(0.0, description="Share of the statement's content words in its supporting "
                                "sentences (the grounding gate's overlap).")
    min_word_overlap: float = 0.0
    model: str | None = None
    prompt_version: str | None = None


class CoreFact(_Record):
    """f_core = ⟨subject, type, stmt, meta⟩ (§3.3); meta = event time, provenance, validity, verification."""

    id: str
    namespace: str
    subject: str
    type: str
    statement: str
    attribute: str = Field("", description="What of the subject's life it is about, a short key written by the "
                                           "extractor ('dogs', 'home', 'job'); compared by embedding to find the "
                                           "earlier fact a new one changes. Empty: stored before facts had keys.")
    event_time: datetime | None = Field(None, description="Session date of the newest supporting message.")
    source_message_ids: list[str] = Field(default_factory=list,
                                          description="Messages the fact was actually extracted from.")
    segment_ids: list[str] = Field(default_factory=list)
    trajectory_ids: list[str] = Field(default_factory=list)
    valid_from: datetime | None = None
    valid_until: datetime | None = Field(None, description="Set when superseded: when it stopped being valid.")
    superseded_by: str | None = None
    status: Literal["current", "superseded", "deleted"] = Field("current", description=(
        "'deleted': a person deleted it (``FactOp.DELETE``); it leaves answers and stays in the history."))
    corrected: bool = Field(False, description="Written by a person's correction (EDIT): extraction never "
                                               "changes it; a candidate that would is a REJECT naming the correction.")
    verification: Verification | None = Field(None, description="The check against its sources; None for a "
                                              "fact stored before facts were verified (counted as not verified).")

    @property
    def verified(self) -> bool:
        return self.verification is not None and self.verification.verified


#: How the scores of operation logs written before ``OperationScores`` named their terms: a prefix
#: (``"grounding:overlap"``), an option letter (``"D"``) or a bare fact id (``"F12"``, a similarity).
_FLAT_SCORE_PREFIXES = {"grounding": "grounding", "cos": "similar", "claim_cos": "claim_cosine",
                        "quantity_cos": "quantity_cosine"}


class OperationScores(_Record):
    """The terms a CoreFact operation was decided on (§3.3), each rounded to 4 decimals."""

    similar: dict[str, float] = Field(default_factory=dict, description="Known fact id → cosine of the "
                                      "candidate's statement to it (the facts it was compared with).")
    options: dict[str, float] = Field(default_factory=dict, description="Option letter → the LLM's probability "
                                      "of it, when the LLM chose among Add / Update / Merge / Supersede.")
    grounding: dict[str, float] = Field(default_factory=dict, description="The grounding gate's measures "
                                        "(overlap, content_words, cosine, unsupported_values, unsupported_names).")
    claim_cosine: dict[str, float] = Field(default_factory=dict, description="Fact id → cosine of the value-masked "
                                           "statements (the same claim with another value?).")
    quantity_cosine: dict[str, float] = Field(default_factory=dict, description="Fact id → cosine of the "
                                              "value-masked source messages (the same quantity changed?).")
    verification: dict[str, float] = Field(default_factory=dict, description="The verification's measures "
                                           "(p_yes, min_p, word_overlap, min_word_overlap).")
    key_cosine: dict[str, float] = Field(default_factory=dict, description="Earlier fact id → cosine of its "
                                         "attribute key to the candidate's (a candidate for a change).")
    change: dict[str, float] = Field(default_factory=dict, description="Earlier fact id → the LLM's P(yes) that "
                                     "the candidate tells how that fact's thing stands now (``core_change``).")
    change_min_p: float | None = Field(None, description="The P(yes) a change needed (the model's measured "
                                       "threshold), where the change question was asked.")

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, value: Any) -> Any:
        """Read the flat ``{"grounding:overlap": …, "D": …, "F12": …}`` of older logs."""
        if not isinstance(value, dict) or set(value) <= set(cls.model_fields):
            return value
        terms: dict[str, dict[str, float]] = {}
        for key, score in value.items():
            prefix, _, name = key.rpartition(":")
            field = _FLAT_SCORE_PREFIXES.get(prefix) if prefix else ("options" if len(key) == 1 else "similar")
            terms.setdefault(field or "similar", {})[name] = score
        return terms


class FactOperation(_Record):
    """One entry of the append-only CoreFact operation log."""

    kind: Literal["fact_op"] = "fact_op"
    seq: int | None = Field(None, description="Position in the namespace's operation log (set when stored).")
    namespace: str
    op: FactOp
    fact_ids: list[str]
    before: list[CoreFact] = Field(default_factory=list, description="The facts as they were.")
    after: list[CoreFact] = Field(default_factory=list, description="The facts as the operation left them.")
    reason: str
    decided_by: Literal["rule", "llm", "person"] = Field(validation_alias=AliasChoices("decided_by", "rule"),
                                                        description=(
        "'rule' when decided without the LLM, 'llm' when the LLM chose (older logs: 'rule'), 'person' for a "
        "person's correction (EDIT, DELETE, RESTORE)."))
    scores: OperationScores = Field(default_factory=OperationScores, description="What it was decided on.")
    event_time: datetime | None = None
    recorded_at: datetime
    prompt_version: str | None = None
    model: str | None = None
    error: str | None = None
    claims: list[ClaimCheck] = Field(default_factory=list, description="The candidate's claims as the claim rules "
                                     "checked them (``memsif.facts.claims``).")
    candidate: CoreFact | None = Field(None, description="REJECT only: the candidate fact the grounding gate "
                                                         "turned away (it has no id).")
    batch: str | None = Field(None, description="The extraction batch that wrote it ('D1:1…D1:6'): a resumed "
                                                "extraction finishes a logged batch instead of repeating it.")
    extraction_pass: int | None = Field(None, description="Where a second extraction pass ran: 1 from the first "
                                        "pass, 2 from the second (a batch whose refused candidates cited a writer "
                                        "who kept no fact); None: written without a second pass.")

    @field_validator("candidate", mode="before")
    @classmethod
    def _candidate(cls, value: Any) -> Any:
        if not value:  # logs written before candidates were records stored {} for "none"
            return None
        return {"id": "", **value} if isinstance(value, dict) else value


class CandidateCluster(_Record):
    """C_k = (s_k, X_k, Q_k, R_k) of the ActiveFact track (§3.4) with the embeddings Coh needs.

    ``subject`` is the normalised speaker the statements are about and ``topics`` counts the key
    entities of X_k (speaker names left out); ``label`` (s_k as shown, "melanie: pottery") and the
    scores of Eqs. 2–3 are kept up to date by :mod:`memsif.facts.active`, which owns every change.
    ``statement`` is the ActiveFact statement once promoted, ``active_fact_id`` that ActiveFact."""

    id: str
    namespace: str = ""
    subject: str
    statements: list[str] = Field(default_factory=list, description="X_k, deduplicated.")
    statement_vectors: Vectors = Field(default_factory=list, description="(d,) embedding of each of X_k.")
    statement_sources: list[list[str]] = Field(default_factory=list, description="Source turns of each of X_k.")
    statement_times: list[datetime | None] = Field(default_factory=list,
                                                   description="Date of each of X_k's source turn (None: undated).")
    queries: list[str] = Field(default_factory=list, description="Q_k, near-duplicates removed.")
    query_vectors: Vectors = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list, description="R_k: distinct source turns.")
    topics: dict[str, int] = Field(default_factory=dict)
    statement: str | None = None
    active_fact_id: str | None = None
    label: str = ""
    central_statement: str | None = None
    score_src: float = Field(0.0, description="Eq. 2.")
    score_qry: float = Field(0.0, description="Eq. 3.")

    @model_validator(mode="after")
    def _one_source_list_per_statement(self) -> CandidateCluster:
        # clusters stored before statements kept their own sources, or their dates
        self.statement_sources.extend([] for _ in range(len(self.statements) - len(self.statement_sources)))
        self.statement_times.extend(None for _ in range(len(self.statements) - len(self.statement_times)))
        return self


class ActiveFact(_Record):
    """A promoted ActiveFact ⟨subject, stmt, meta⟩ (§3.4, Eq. 4)."""

    id: str
    namespace: str
    subject: str = Field(description="s_k as shown: the speaker and the cluster's topic, e.g. 'melanie: pottery'.")
    statement: str = Field(description="Chosen from X_k; stable across questions (facts.active.choose_statement).")
    source_message_ids: list[str] = Field(default_factory=list, description="The turns the statement comes from.")
    supporting_message_ids: list[str] = Field(default_factory=list,
                                              description="R_k: every turn the cluster's statements come from.")
    queries: list[str] = Field(default_factory=list, description="Triggering queries Q_k.")
    cluster_id: str
    score_src: float
    score_qry: float
    event_time: datetime | None = Field(None, description="Date of the statement's source turn.")
    promoted_at: datetime
    updated_at: datetime
    status: Literal["current", "deleted"] = Field("current", description=(
        "'deleted': a person deleted it; it leaves answers and its cluster is not promoted again."))


class RetrievedFact(_Record):
    """A CoreFact or promoted ActiveFact found for a question (§3.5), with its cosine to the question."""

    kind: Literal["core", "active"]
    id: str
    subject: str
    type: str = Field(description="The schema type of a CoreFact; 'Active' for an ActiveFact.")
    statement: str
    event_time: datetime | None = None
    source_message_ids: list[str] = Field(default_factory=list)
    valid_until: datetime | None = Field(None, description="A superseded CoreFact (found for a question about "
                                         "the past): the day a later fact replaced it.")
    superseded_by: str | None = Field(None, description="A superseded CoreFact: the fact that replaced it.")
    score: float
    found_by: Literal["similarity", "subject"] = Field(
        "similarity", description="'similarity': among the facts nearest the question; 'subject': a fact of a "
                                  "speaker the question names, found by the aggregation path (§3.3–3.4).")


class Evidence(_Record):
    """Query-local evidence (§3.4): whole sentences of one source turn, with the turn's id, speaker and
    date; supports the current answer and is cleared after it. ``found_by`` says how it was found
    ("dense", "lexical", "segment", "trajectory", "fact": a source turn of a fact in the context;
    several when several paths found it) and ``scores``
    holds the scores of each path (fused rank score, segment and trajectory relevance, ...)."""

    statement: str
    subject: str
    source_message_ids: list[str]
    segment_id: str | None = None
    trajectory_id: str | None = None
    score: float = 0.0
    time: datetime | None = None
    sentence_ids: list[str] = Field(default_factory=list)
    found_by: list[str] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)


# --------------------------------------------------------------------------- the CoreFact schema
@dataclass(frozen=True)
class FactType:
    """One type of the configurable CoreFact schema Y_core (§3.3, App. C.1), fixed before construction."""

    name: str
    description: str


#: The paper's LoCoMo/LongMemEval schema (App. C.1).
DEFAULT_SCHEMA: tuple[FactType, ...] = (
    FactType("Identity", "static attributes such as occupation, location, identity"),
    FactType("Event", "time-anchored occurrences such as travel, achievements, things done"),
    FactType("Preference", "subjective attitudes: likes and dislikes in food, entertainment, career"),
    FactType("Relation", "social ties such as family, friends, colleagues"),
)


def parse_schema(text: str) -> tuple[FactType, ...]:
    """``"Identity:desc;Event:desc"`` (MEMSIF_CORE_SCHEMA) → fact types; empty text → the default."""
    if not text.strip():
        return DEFAULT_SCHEMA
    parts = (part.partition(":") for part in text.split(";"))
    return tuple(FactType(name.strip(), description.strip() or name.strip())
                 for name, _, description in parts if name.strip())
