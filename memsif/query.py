"""Memory retrieval and answer generation (§3.5), feeding the ActiveFact pipeline (§3.4).

For a question q_t: retrieve CoreFacts and promoted ActiveFacts by similarity; the sufficiency gate
decides whether they alone form the answer context (an LLM check, one scored forward pass, when the
model is trusted with it); otherwise trace back to Structured Interaction Memory for query-local
evidence; answer from facts + evidence; then accumulate the evidence into candidate clusters and
promote those that pass Eq. 4. Query-local evidence is dropped after the answer.

Query-local evidence is extractive: whole sentences of the source turns, each item with its turn id,
speaker and date (``Evidence``), found by

1. **hybrid search** over the sentence index: a dense (cosine) and a lexical (BM25) search fused by
   reciprocal rank in Qdrant;
2. **Topical Segments scored by their members**: a segment's relevance is the fused score of its best
   sentences plus the overlap of its key entities with the question's (the J term of φ, Eq. 1); a
   sentence's priority is its own score plus its segment's relevance, and each segment's further
   sentences count for less, so one topic cannot fill the budget;
3. **Event Trajectories as the path to dispersed evidence** (``trajectory_path``, off by default):
   for the trajectories of the best evidence, their *other* segments are searched (a hybrid search
   restricted to those segments) for what the question still lacks — the question's terms not yet
   covered — and the budget is shared across trajectories;
4. **the facts' source turns** (``fact_sources``, off by default): each fact in the context carries
   the turns it was written from, and the sentence of each that best matches the question joins the
   candidates.

**The aggregation path** (§3.3–3.4): a question that asks for several things about the speakers it
names ("What activities does Melanie partake in?", ``entities.asks_for_several``) gathers up to
``aggregation_fact_top_k`` of those speakers' facts across every Event Trajectory beside the nearest
facts, and ranks its evidence with ``aggregation_segment_weight`` for the segments' relevance
(its answer is spread over many events, not one topic).

The items fill the answer context after the facts until ``context_tokens`` is used, and are shown
in chronological order under their dates. It costs no LLM call, which keeps a question within
seconds on the 135M default model, and its provenance is exact.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from memsif import lexical
from memsif.answercheck import unsupported_mentions
from memsif.config import MemSIFConfig
from memsif.embed import Embedder
from memsif.errors import LLMError, NotFoundError, StoreError
from memsif.facts.active import accumulate, normalise_subject
from memsif.llm import LLM, generate_streamed
from memsif.matching import jaccard
from memsif.prompts import answer as answer_prompt
from memsif.prompts import clip, sufficiency
from memsif.records import Evidence, RetrievedFact, TopicalSegment
from memsif.store import MemoryStore
from memsif.store.qdrant import CollectionMissing, SentenceHit
from memsif.timeparse import day_text

#: A message enters the answer context as evidence with at most this many characters (a pasted log
#: of 30,000 tokens is stored whole but shown clipped).
EVIDENCE_CHARS = 600
#: The heading of the evidence in the answer context.
EXCERPTS = "Conversation excerpts (oldest first):"
#: The answer when nothing retrieved passes the relevance floor (``Answer.nothing_relevant``).
NOTHING_RELEVANT = "I don't know: nothing in this memory is about that."
#: The best this many evidence items of an answer (by priority) enter the candidate clusters (§3.4);
#: the rest of the context is there to fill the budget, not as the answer's support.
ACCUMULATED_EVIDENCE = 5
#: Models measured at chance on yes/no judgements of this kind (``eval judge-check``: the packaged
#: SmolLM2-135M labels 100% of mismatched answers CORRECT, separation 0.54; README, "Evaluation").
#: With ``sufficiency_gate="auto"`` their sufficiency verdict is not asked for: evidence is always added.
AT_CHANCE_MODELS = ("SmolLM2-135M",)
#: Models whose sufficiency verdict was measured to help (with it, answer F1 and evidence recall at
#: least those of always adding evidence; ``benchmarks/sufficiency_gate.py``). Under
#: ``sufficiency_gate="auto"`` only these are asked; any other model gets facts + evidence. None yet:
#: Qwen2.5-Coder-1.5B said "sufficient" for facts that held the gold evidence of few of the dev
#: questions it judged (README, "Models").
SUFFICIENCY_MEASURED_MODELS: tuple[str, ...] = ()


def named_speakers(question: str, speakers: Sequence[str]) -> list[str]:
    """The speakers a question names (whole name or first name, any case)."""
    named = []
    for speaker in speakers:
        first = speaker.split()[0] if speaker.split() else speaker
        if any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", question, re.IGNORECASE) for n in {speaker, first} if n):
            named.append(speaker)
    return named


def without_names(question: str, speakers: Sequence[str]) -> str:
    """``question`` with the named speakers' names (and a possessive 's) taken out, for the dense
    search: in a conversation between two people a small embedder matches the name, not the content
    ("That's great, Caroline!" is the closest sentence to "When did Caroline go to the support
    group?"). The speakers are searched through the speaker field and the lexical index instead.
    The question itself when nothing else would be left."""
    text = question
    for speaker in sorted(speakers, key=len, reverse=True):
        for name in dict.fromkeys([speaker, speaker.split()[0]]):
            text = re.sub(rf"(?<!\w){re.escape(name)}(?:['’]s)?(?!\w)", " ", text, flags=re.IGNORECASE)
    text = " ".join(text.split())
    return text if re.search(r"\w", text) else question


@contextmanager
def _stage(result: Answer, name: str) -> Iterator[None]:
    """Adds the wall seconds of the block to ``result.seconds_by_stage[name]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        result.seconds_by_stage[name] = time.perf_counter() - start


class Answer(BaseModel):
    """An answer with its trace (§3.5). Times are wall seconds; tokens are the model's tokens."""

    question: str
    answer: str
    sufficient: bool
    sufficiency_prob: float | None
    traced_back: bool
    facts_used: list[RetrievedFact] = Field(default_factory=list)
    evidence_used: list[Evidence] = Field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    first_token_seconds: float | None = Field(None, description="From the question to the answer's first "
                                              "streamed piece (seconds); None when no answer was generated.")
    seconds_by_stage: dict[str, float] = Field(default_factory=dict)
    active_facts_changed: list[str] = Field(default_factory=list)
    clusters_touched: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    context: str = Field("", description="The memory text given to the answer prompt.")
    context_source_ids: list[str] = Field(default_factory=list, description="Message ids behind that text.")
    context_tokens: int = Field(0, description="Tokens of ``context`` (the model's tokenizer).")
    gate_rule: str = Field("", description="Which sufficiency-gate rule applied, and why.")
    model: str = Field("", description="The LLM that answered.")
    model_at_chance: bool = Field(False, description="Listed in AT_CHANCE_MODELS: a demo model.")
    unsupported_mentions: list[str] = Field(default_factory=list,
                                            description="Names, numbers and dates not in ``context``.")
    relevance: float | None = Field(None, description="Best cosine of the question with what was retrieved "
                                                      "(evidence sentences, facts); None when nothing was.")
    nothing_relevant: bool = Field(False, description="``relevance`` below ``relevance_floor``: nothing in "
                                                      "the memory is about the question.")
    relevance_rule: str = Field("", description="What the relevance floor decided, and why.")
    aggregation: bool = Field(False, description="The question asks for several things about the speakers it "
                                                 "names: their facts were gathered (the aggregation path).")
    aggregation_rule: str = Field("", description="Why the aggregation path was or was not taken.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (dates as ISO strings)."""
        return self.model_dump(mode="json")


@dataclass
class _Item:
    """One turn's evidence being assembled: its chosen sentences and how they were found."""

    message_id: str
    speaker: str
    time: datetime | None
    message_index: int
    segment_id: str | None
    trajectory_id: str | None
    sentences: dict[int, str] = field(default_factory=dict)     # position -> text
    sentence_ids: list[str] = field(default_factory=list)
    found_by: set[str] = field(default_factory=set)
    scores: dict[str, float] = field(default_factory=dict)

    def statement(self) -> str:
        parts, last = [], None
        for pos in sorted(self.sentences):
            if last is not None and pos != last + 1:
                parts.append("…")
            parts.append(self.sentences[pos])
            last = pos
        return clip(" ".join(parts), EVIDENCE_CHARS)

    def evidence(self) -> Evidence:
        return Evidence(statement=self.statement(), subject=self.speaker, source_message_ids=[self.message_id],
                        segment_id=self.segment_id, trajectory_id=self.trajectory_id,
                        score=round(self.scores.get("priority", 0.0), 4), time=self.time,
                        sentence_ids=self.sentence_ids, found_by=sorted(self.found_by),
                        scores={k: round(v, 4) for k, v in self.scores.items()})


@dataclass
class _Candidate:
    hit: SentenceHit
    priority: float
    path: str  # "search" (the whole memory), "trajectory" (another segment of one) or "fact" (a fact's source)
    segment_score: float = 0.0


class QueryPipeline:
    """One question at a time against one namespace."""

    def __init__(self, config: MemSIFConfig, llm: LLM, embedder: Embedder, store: MemoryStore,
                 entities=None) -> None:
        self.config, self.llm, self.embedder, self.store = config, llm, embedder, store
        self.entities = entities
        self._token_counts: dict[str, int] = {}  # one question's pieces, costed once for both fills

    def _tokens(self, text: str) -> int:
        if text not in self._token_counts:
            self._token_counts[text] = self.llm.count_tokens(text)
        return self._token_counts[text]

    def retrieve_facts(self, namespace: str, qv: np.ndarray, subjects: Sequence[str] = ()) -> list[RetrievedFact]:
        """CoreFacts (current only) and ActiveFacts by cosine to the (d,) question embedding ``qv``,
        best first, at most ``fact_top_k``; with ``subjects`` (the aggregation path) also up to
        ``aggregation_fact_top_k`` facts of those speakers, whatever their rank among all facts
        (``found_by="subject"``)."""
        cfg = self.config
        found = self._facts(namespace, qv, cfg.fact_top_k)
        if subjects and cfg.aggregation_fact_top_k:
            taken = {f.id for f in found}
            found += [f.model_copy(update={"found_by": "subject"})
                      for f in self._facts(namespace, qv, cfg.aggregation_fact_top_k, subjects) if f.id not in taken]
        return found

    def _facts(self, namespace: str, qv: np.ndarray, limit: int, subjects: Sequence[str] = ()) -> list[RetrievedFact]:
        """The ``limit`` facts (CoreFacts and ActiveFacts) nearest ``qv``, of ``subjects`` only when given."""
        cfg = self.config
        found: list[RetrievedFact] = []
        if cfg.use_core_facts:
            filters = {"subject": list(subjects)} if subjects else {}
            found += [RetrievedFact(kind="core", id=f.id, subject=f.subject, type=f.type, statement=f.statement,
                                    event_time=f.event_time, source_message_ids=f.source_message_ids,
                                    score=round(score, 4))
                      for f, score in self.store.search_facts(namespace, qv, limit, **filters)]
        if cfg.use_active_facts:
            # an ActiveFact's subject is "speaker: topic" (normalised): its speaker part is matched
            wanted = {normalise_subject(s) for s in subjects}
            nearest = self.store.search_active_facts(namespace, qv, 4 * limit if subjects else limit)
            found += [RetrievedFact(kind="active", id=a.id, subject=a.subject, type="Active", statement=a.statement,
                                    event_time=a.event_time, source_message_ids=a.source_message_ids,
                                    score=round(score, 4))
                      for a, score in nearest if not wanted or a.subject.split(":")[0].strip() in wanted]
        found.sort(key=lambda f: -f.score)
        return found[:limit]

    def require_sentence_index(self, namespace: str) -> None:
        """Raises StoreError (with the command that fixes it) when ``namespace`` was stored before the
        hybrid sentence index existed."""
        if self.store.count("sentence", namespace) == 0:
            self._require_still_there(namespace)
            data = "" if self.config.qdrant_url else f" --data-dir {self.config.resolved_data_dir}"
            raise StoreError(f"Namespace {namespace!r} was stored before the hybrid sentence index existed, so "
                             f"it cannot be searched yet. Add the index (nothing stored changes): "
                             f"python -m memsif upgrade{data}")

    # ------------------------------------------------------------------ query-local evidence
    def trace_back(self, namespace: str, question: str, qv: np.ndarray, budget: int,
                   measure: Callable[[list[Evidence]], int] | None = None, *, named: list[str] | None = None,
                   facts: Sequence[RetrievedFact] = (), aggregation: bool = False) -> list[Evidence]:
        """Query-local evidence (§3.4) for ``question`` within ``budget`` tokens: whole sentences of
        source turns, found by hybrid search, ranked with their Topical Segments' relevance and
        completed through Event Trajectories (module docstring) and through the source turns of
        ``facts`` (the facts in the context; ``fact_sources``); chronological order. ``named``: the
        speakers the question names (found from the store when None); ``aggregation``: the question
        asks for several things about them (with ``aggregation_speaker_only``, only their sentences).

        Items are costed piece by piece (sentence, speaker prefix, date line), which overcounts a
        little (the tokenizer merges across pieces); with ``measure`` (the tokens of the whole
        context holding some evidence) the slack this leaves is filled too, never past ``budget``."""
        cfg = self.config
        qs = lexical.encode_query(question)
        if named is None:
            named = named_speakers(question, self.store.speakers(namespace))
        content = without_names(question, named) if cfg.dense_without_names else question
        cv = self.embedder.embed_query(content) if content != question else qv
        search: dict[str, Any] = dict(speakers=named, speaker_boost=cfg.speaker_boost)
        if aggregation and named and cfg.aggregation_speaker_only:  # what they did is in their own turns
            search.update(speaker=list(named))
        hits = self.store.hybrid_search(namespace, cv, qs, cfg.evidence_candidates, **search)
        if not hits:
            return []
        segments = {s.id: s for s in self.store.segments(namespace)} if (cfg.use_segments or cfg.use_trajectories) \
            else {}
        q_entities = self._question_entities(question)
        weight = cfg.aggregation_segment_weight if aggregation else cfg.segment_weight
        seg_score = self._segment_scores(hits, segments, q_entities, weight) if cfg.use_segments else {}
        candidates = [_Candidate(h, h.fused + seg_score.get(h.sentence.segment_id, 0.0), "search",
                                 seg_score.get(h.sentence.segment_id, 0.0)) for h in hits]
        if cfg.use_trajectories and cfg.trajectory_path and segments:
            candidates += self._trajectory_path(namespace, cv, qs, hits, segments, seg_score, search)
        if cfg.fact_sources and facts:
            candidates += self._fact_source_path(namespace, cv, qs, facts, seg_score, search)
        room = budget - self.llm.count_tokens(EXCERPTS) - 1
        evidence = self._select(candidates, segments, room)
        if measure is not None and evidence:
            slack = budget - measure(evidence)
            if slack > 0:
                more = self._select(candidates, segments, room + slack)
                if measure(more) <= budget:
                    evidence = more
            while evidence and measure(evidence) > budget:  # never past the budget
                evidence.remove(min(evidence, key=lambda e: e.score))
        return evidence

    def _question_entities(self, question: str) -> frozenset[str]:
        if self.entities is None:
            return frozenset()
        return self.entities.extract([question])[0]

    def _segment_scores(self, hits: list[SentenceHit], segments: dict[str, TopicalSegment],
                        q_entities: frozenset[str], weight: float) -> dict[str, float]:
        """A Topical Segment's relevance from its members: the fused scores of its best
        ``segment_members`` sentences, plus the Jaccard overlap of its key entities with the
        question's (the J term of φ) scaled to one top fused score; times ``weight``."""
        cfg = self.config
        by_segment: dict[str, list[float]] = defaultdict(list)
        for h in hits:
            if h.sentence.segment_id:
                by_segment[h.sentence.segment_id].append(h.fused)
        top = max(h.fused for h in hits)
        out = {}
        for sid, scores in by_segment.items():
            best = sorted(scores, reverse=True)[:cfg.segment_members]
            entity = jaccard(q_entities, frozenset(segments[sid].entities)) if sid in segments and q_entities else 0.0
            out[sid] = weight * (sum(best) / cfg.segment_members + cfg.segment_entity_weight * top * entity)
        return out

    def _trajectory_path(self, namespace: str, qv: np.ndarray, qs: lexical.SparseVector,
                         hits: list[SentenceHit], segments: dict[str, TopicalSegment],
                         seg_score: dict[str, float], search: dict[str, Any]) -> list[_Candidate]:
        """Event Trajectories as the NCE path: for the trajectories of the best hits, search their
        other segments for what the question still lacks (its terms the best hits do not cover)."""
        cfg = self.config
        trajectories: list[str] = []
        for h in hits:
            seg = segments.get(h.sentence.segment_id or "")
            if seg and seg.trajectory_id and seg.trajectory_id not in trajectories:
                trajectories.append(seg.trajectory_id)
            if len(trajectories) >= cfg.query_trajectory_top_k:
                break
        if not trajectories:
            return []
        members: dict[str, list[str]] = defaultdict(list)
        for seg in segments.values():
            if seg.trajectory_id in trajectories:
                members[seg.trajectory_id].append(seg.id)
        covered = {i for h in hits[:cfg.trajectory_anchor_hits]
                   for i in lexical.encode_document(h.sentence.text, h.sentence.speaker).indices}
        lacking = qs.without(covered) or qs  # every term covered: search with the whole question
        anchors = {h.sentence.segment_id for h in hits[:cfg.trajectory_anchor_hits]}
        others = {sid: tid for tid in trajectories for sid in members[tid] if sid not in anchors}
        if not others:
            return []
        # one restricted search over every trajectory's other segments, then at most
        # ``trajectory_evidence`` per trajectory, so one event does not crowd out the rest. The filter
        # names the trajectories and the anchor segments (constant size), not every other segment:
        # embedded Qdrant checks a list filter point by point (benchmarks/store_growth.py).
        limit = cfg.trajectory_evidence * len(trajectories)
        found = self.store.hybrid_search(namespace, qv, lacking, limit, candidates=cfg.evidence_candidates,
                                         trajectory_id=trajectories, path_scores=False,
                                         excluded={"segment_id": sorted(a for a in anchors if a)}, **search)
        if not found:  # every other segment has sentences, so none found: sentences stored before they held
            # their trajectory id (``python -m memsif upgrade`` writes it); the list filter still works
            found = self.store.hybrid_search(namespace, qv, lacking, limit, candidates=cfg.evidence_candidates,
                                             segment_id=sorted(others), path_scores=False, **search)
        wanted = set(lacking.indices)
        taken: dict[str, int] = defaultdict(int)
        out: list[_Candidate] = []
        for h in found:
            tid = others.get(h.sentence.segment_id or "")
            if tid is None:  # a sentence whose trajectory id is stale (before ``upgrade``)
                continue
            terms = set(lexical.encode_document(h.sentence.text, h.sentence.speaker).indices)
            if taken[tid] >= cfg.trajectory_evidence or not terms & wanted:  # it must hold a term the anchors lack
                continue
            taken[tid] += 1
            out.append(_Candidate(h, cfg.trajectory_weight * h.fused, "trajectory",
                                  seg_score.get(h.sentence.segment_id, 0.0)))
        return out

    def _fact_source_path(self, namespace: str, qv: np.ndarray, qs: lexical.SparseVector,
                          facts: Sequence[RetrievedFact], seg_score: dict[str, float],
                          search: dict[str, Any]) -> list[_Candidate]:
        """A fact carries its source turns: one hybrid search restricted to the facts' source messages
        gives, for each, its sentence that best matches the question (path "fact")."""
        sources = list(dict.fromkeys(m for f in facts for m in f.source_message_ids))
        if not sources:
            return []
        found = self.store.hybrid_search(namespace, qv, qs, 4 * len(sources), candidates=4 * len(sources),
                                         message_id=sources, path_scores=False, **search)
        best: dict[str, SentenceHit] = {}
        for h in found:
            best.setdefault(h.sentence.message_id, h)
        return [_Candidate(h, self.config.fact_source_weight * h.fused, "fact",
                           seg_score.get(h.sentence.segment_id or "", 0.0)) for h in best.values()]

    def _select(self, candidates: list[_Candidate], segments: dict[str, TopicalSegment],
                budget: int) -> list[Evidence]:
        """Greedy fill of ``budget`` tokens by priority; a segment's k-th sentence counts
        ``segment_decay``^k of its priority (so one topic does not crowd out the rest)."""
        cfg = self.config
        best: dict[str, _Candidate] = {}
        paths: dict[str, set[str]] = defaultdict(set)
        for c in candidates:
            sid = c.hit.sentence.id
            paths[sid].add(c.path)
            if sid not in best or c.priority > best[sid].priority:
                best[sid] = c
        pool = sorted(best.values(), key=lambda c: -c.priority)
        items: dict[str, _Item] = {}
        per_segment: dict[str | None, int] = defaultdict(int)
        left = budget
        dates: set[str] = set()
        while pool:
            if cfg.use_segments and cfg.segment_decay < 1.0:
                pool.sort(key=lambda c: -c.priority * cfg.segment_decay ** per_segment[c.hit.sentence.segment_id])
            c = pool.pop(0)
            s = c.hit.sentence
            item = items.get(s.message_id)
            cost = self._tokens(s.text) + 1
            if item is None:
                cost += self._tokens(f"- {s.speaker}: ")
                day = day_text(s.time)
                if day not in dates:
                    cost += self._tokens(f"{day}:") + 1
            if cost > left:
                continue
            left -= cost
            if item is None:
                seg = segments.get(s.segment_id or "")
                item = items[s.message_id] = _Item(s.message_id, s.speaker, s.time, s.message_index, s.segment_id,
                                                   seg.trajectory_id if seg else None)
                item.scores["priority"] = c.priority
                dates.add(day_text(s.time))
            item.sentences[s.position] = s.text
            item.sentence_ids.append(s.id)
            item.found_by.update(c.hit.found_by)
            item.found_by.update(p for p in ("trajectory", "fact") if p in paths[s.id])
            if c.segment_score:
                item.found_by.add("segment")
                item.scores.setdefault("segment", c.segment_score)
            for name, value in (("fused", c.hit.fused), ("dense", c.hit.dense), ("lexical", c.hit.lexical)):
                if value is not None:
                    item.scores[name] = max(item.scores.get(name, value), value)
            per_segment[s.segment_id] += 1
        return [i.evidence() for i in sorted(items.values(), key=lambda i: i.message_index)]

    # ------------------------------------------------------------------ the gate and the answer
    def model_at_chance(self) -> bool:
        """Whether the configured LLM is one measured at chance on the engine's judgements."""
        name = getattr(self.llm, "name", "") or ""
        return any(m.lower() in name.lower() for m in AT_CHANCE_MODELS)

    def gate_trusted(self) -> bool:
        """Whether the sufficiency verdict may replace the evidence (``sufficiency_gate``; under "auto"
        only for ``SUFFICIENCY_MEASURED_MODELS``)."""
        mode = self.config.sufficiency_gate
        if mode == "auto":
            name = (getattr(self.llm, "name", "") or "").lower()
            return not self.model_at_chance() and any(m.lower() in name for m in SUFFICIENCY_MEASURED_MODELS)
        return mode == "model"

    def ask(self, namespace: str, question: str, question_date: str | None = None, generate: bool = True,
            on_text: Callable[[str], None] | None = None) -> Answer:
        """Answer ``question`` from ``namespace``'s memory, with the trace (§3.5). With ``generate=False``
        everything but the answer generation runs (retrieval-only evaluation; the ActiveFact pipeline
        still accumulates the evidence that would have been used). ``on_text`` receives the answer's
        text piece by piece as the model writes it (``memsif.llm.generate_streamed``).

        The sufficiency gate (``Answer.gate_rule`` says which rule applied): with no facts, or a
        model not trusted with the check (``sufficiency_gate``; under "auto" any model not in
        ``SUFFICIENCY_MEASURED_MODELS``),
        evidence is always added; otherwise the model's P(sufficient) ≥ ``sufficiency_threshold``
        makes the facts the whole context, and a failed check traces back.

        Raises:
            StoreError: the namespace was stored before the sentence index (the message says how to add it).
            NotFoundError: the namespace was deleted while the question was answered.
            LLMError: answer generation failed (sufficiency failures are recorded and fall back to
                tracing back to Structured Interaction Memory).
        """
        try:
            return self._ask(namespace, question, question_date, generate, on_text)
        except CollectionMissing as exc:
            self._require_still_there(namespace)
            raise StoreError(str(exc)) from exc

    def _require_still_there(self, namespace: str) -> None:
        """Raises NotFoundError when ``namespace`` was deleted during the question (by another
        session or process): nothing of the question may be written into a deleted memory."""
        if self.store.count("sentence", namespace) == 0 and self.store.count("message", namespace) == 0:
            raise NotFoundError(f"Namespace {namespace!r} was deleted while this question was being answered; "
                                "its memory is gone. Ingest the transcript again to ask it questions.")

    def _ask(self, namespace: str, question: str, question_date: str | None, generate: bool,
             on_text: Callable[[str], None] | None) -> Answer:
        self.require_sentence_index(namespace)
        start = time.perf_counter()
        result = Answer(question=question, answer="", sufficient=False, sufficiency_prob=None, traced_back=False)
        with _stage(result, "retrieve_facts"):
            qv = self.embedder.embed_query(question)
            named = named_speakers(question, self.store.speakers(namespace))
            self._question_form(question, named, result)
            facts = self.retrieve_facts(namespace, qv, named if result.aggregation else ())
        fact_lines, used_facts, left = self._fit(
            facts, lambda f: f"- {f.subject}: {f.statement} ({day_text(f.event_time)})",
            self.config.context_tokens - (self.llm.count_tokens("Facts:") + 1 if facts else 0))
        with _stage(result, "sufficiency"):
            self._gate(question, used_facts, result)  # on the facts the answer would see
        with _stage(result, "trace_back"):
            evidence: list[Evidence] = []
            if not result.sufficient:
                used = self.config.context_tokens - left

                def measure(items: list[Evidence]) -> int:  # tokens of the evidence part, as the context holds it
                    return self.llm.count_tokens(self._render(fact_lines, items)) - used
                evidence = self.trace_back(namespace, question, qv, left, measure, named=named, facts=used_facts,
                                           aggregation=result.aggregation)
                result.traced_back = True
        self._relevance(facts, evidence, result)
        with _stage(result, "answer"):
            result.facts_used, result.evidence_used = used_facts, evidence
            result.context = self._render(fact_lines, evidence)
            result.context_tokens = self.llm.count_tokens(result.context) if result.context else 0
            result.context_source_ids = list(dict.fromkeys(
                [*(m for f in used_facts for m in f.source_message_ids),
                 *(m for e in evidence for m in e.source_message_ids)]))
            if generate:
                def tap(piece: str) -> None:  # the answer always streams, so its first piece is timed
                    if result.first_token_seconds is None:
                        result.first_token_seconds = time.perf_counter() - start
                    if on_text is not None:
                        on_text(piece)

                if result.nothing_relevant:
                    self._answer_nothing_relevant(result, tap)
                else:
                    self._answer(question, question_date, result, tap)
        self._require_still_there(namespace)  # an answer from a memory deleted meanwhile is no answer
        if self.config.use_active_facts and evidence and not result.nothing_relevant:
            with _stage(result, "active_facts"):
                best = sorted(evidence, key=lambda e: -e.score)[:ACCUMULATED_EVIDENCE]
                self._accumulate(namespace, question, qv, best, result)
        result.seconds = time.perf_counter() - start
        return result

    def _question_form(self, question: str, named: list[str], result: Answer) -> None:
        """``result.aggregation``: the question names speakers and asks for a set of things about them
        (``entities.asks_for_several``): the aggregation path (their facts across Event Trajectories,
        up to ``aggregation_fact_top_k``; segments weighted ``aggregation_segment_weight``)."""
        cfg = self.config
        several = self.entities is not None and self.entities.asks_for_several(question)
        result.aggregation = bool(named) and several
        if result.aggregation:
            facts = (f"up to {cfg.aggregation_fact_top_k} of their facts join the nearest ones"
                     if cfg.aggregation_fact_top_k else "the nearest facts (aggregation_fact_top_k = 0)")
            result.aggregation_rule = (f"asks for several things about {', '.join(named)}: {facts}; segment "
                                       f"relevance weighted {cfg.aggregation_segment_weight:g}")
        elif several:
            result.aggregation_rule = "asks for several things but names no speaker: the nearest facts"
        else:
            result.aggregation_rule = "asks for one thing: the nearest facts"

    def _gate(self, question: str, facts: list[RetrievedFact], result: Answer) -> None:
        """The sufficiency gate (§3.5): sets ``result.sufficient``, its probability and ``gate_rule``."""
        if not facts:
            result.gate_rule = "no facts retrieved: evidence from Structured Interaction Memory"
            return
        if not self.gate_trusted():
            result.gate_rule = (f"sufficiency not asked: {getattr(self.llm, 'name', 'the model')} is not trusted "
                                f"with it (sufficiency_gate={self.config.sufficiency_gate}); facts + evidence")
            return
        best, floor = max(f.score for f in facts), self.config.gate_fact_floor
        relevance = f"best fact {best:.2f} {'≥' if best >= floor else '<'} the gate's relevance floor {floor:.2f}"
        if best < floor:
            result.gate_rule = f"sufficiency not asked: {relevance} (the facts are not about it); facts + evidence"
            return
        prompt = sufficiency.build(question, [f"{f.subject}: {f.statement}" for f in facts])
        result.tokens_in += self.llm.count_tokens(prompt.text)
        try:
            [p] = self.llm.yes_probability([prompt])
        except LLMError as exc:
            result.errors.append(f"sufficiency: {type(exc).__name__}: {exc}")
            result.gate_rule = "sufficiency check failed: facts + evidence"
            return
        result.sufficiency_prob = p
        result.sufficient = p >= self.config.sufficiency_threshold
        result.gate_rule = (f"{relevance}; P(sufficient) = {p:.2f} {'≥' if result.sufficient else '<'} "
                            f"{self.config.sufficiency_threshold}: "
                            f"{'facts only' if result.sufficient else 'facts + evidence'}")

    def _relevance(self, facts: list[RetrievedFact], evidence: list[Evidence], result: Answer) -> None:
        """``result.relevance``: the best cosine of the question with a retrieved fact or evidence
        sentence; below ``relevance_floor`` (or nothing retrieved) the memory holds nothing about it."""
        cosines = [f.score for f in facts] + [e.scores["dense"] for e in evidence if "dense" in e.scores]
        result.relevance = round(max(cosines), 4) if cosines else None
        floor = self.config.relevance_floor
        result.nothing_relevant = floor > 0 and (result.relevance is None or result.relevance < floor)
        best = "nothing was retrieved" if result.relevance is None else f"best match {result.relevance:.2f}"
        result.relevance_rule = (f"nothing relevant: {best}, below the relevance floor {floor:.2f}; answered "
                                 "without the model" if result.nothing_relevant else
                                 f"{best} ≥ relevance floor {floor:.2f}" if floor > 0 else "relevance floor off")

    def _answer_nothing_relevant(self, result: Answer, on_text: Callable[[str], None]) -> None:
        """The answer when nothing retrieved is about the question: said, not generated (on every model)."""
        result.answer = NOTHING_RELEVANT
        result.model = getattr(self.llm, "name", "") or ""
        result.model_at_chance = self.model_at_chance()
        on_text(NOTHING_RELEVANT)

    def _answer(self, question: str, question_date: str | None, result: Answer,
                on_text: Callable[[str], None] | None = None) -> None:
        """Generate the answer from ``result.context`` (streamed to ``on_text``); record tokens, the
        model and unsupported mentions."""
        prompt = answer_prompt.build(question, result.context, question_date)
        gen = generate_streamed(self.llm, prompt, on_text, max_new_tokens=self.config.answer_max_tokens,
                                temperature=self.config.answer_temperature, stop=answer_prompt.STOP)
        result.answer = gen.text.strip().split("\n")[0].strip()
        result.tokens_in += gen.tokens_in
        result.tokens_out += gen.tokens_out
        result.model = getattr(self.llm, "name", "") or ""
        result.model_at_chance = self.model_at_chance()
        # the question is not support: an answer that repeats its premise ("flew to Tokyo") must find it in the context
        result.unsupported_mentions = unsupported_mentions(result.answer, result.context)

    @staticmethod
    def _render(fact_lines: list[str], evidence: list[Evidence]) -> str:
        """Facts, then the evidence in chronological order under its dates."""
        lines = ["Facts:", *fact_lines] if fact_lines else []
        if evidence:
            lines.append(EXCERPTS)
            day = None
            for e in evidence:
                if day_text(e.time) != day:
                    day = day_text(e.time)
                    lines.append(f"{day}:")
                lines.append(f"- {e.subject}: {e.statement}")
        return "\n".join(lines)

    def _fit(self, items, render, budget: int):
        """Rendered lines of ``items`` in order while they fit ``budget`` tokens; returns the lines,
        the items and the tokens left."""
        lines, used = [], []
        for item in items:
            line = render(item)
            cost = self.llm.count_tokens(line) + 1
            if cost > budget:
                continue  # a shorter item further down may still fit
            budget -= cost
            lines.append(line)
            used.append(item)
        return lines, used, budget

    def _accumulate(self, namespace: str, question: str, qv: np.ndarray, evidence: list[Evidence],
                    result: Answer) -> None:
        """Post-answer candidate accumulation and promotion (§3.4, Eqs. 2–4; ``facts.active.accumulate``):
        load the clusters, embed the evidence and find its topics, accumulate, save. A read-only store
        keeps its clusters as they are (said in ``errors``)."""
        cfg = self.config
        if self.store.read_only:
            result.errors.append(f"the memory folder {self.store.location} is read-only: this question's evidence "
                                 "was not added to the ActiveFact clusters")
            return
        clusters = self.store.clusters(namespace)
        vectors = self.embedder.embed_documents([e.statement for e in evidence])
        names = {n for c in clusters for n in c.subject.split()}
        names |= {w for e in evidence for w in normalise_subject(e.subject).split()}
        topics = ([sorted(t - names) for t in self.entities.extract([e.statement for e in evidence])]
                  if self.entities is not None else [[] for _ in evidence])
        done = accumulate(clusters, self.store.active_facts(namespace), evidence, vectors, topics, question, qv,
                          cfg.theta_src, cfg.theta_qry, cfg.active_compatible_cosine,
                          datetime.now(UTC).replace(tzinfo=None), namespace)
        self.store.put_clusters(namespace, done.clusters)
        self.store.put_active_facts(namespace, done.active_facts)
        result.active_facts_changed = [a.id for a, _ in done.active_facts]
        result.clusters_touched = [c.id for c in done.clusters]
