"""Query-local evidence (§3.4–3.5), found without an LLM call (``EvidenceRetriever``): the facts
nearest a question, and whole sentences of the turns that answer it.

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
in chronological order under their dates (``memsif.answer.query`` assembles the context). It costs no LLM
call, which keeps retrieval within a second on 2 cores, and its provenance is exact.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from memsif import lexical
from memsif.backends import Backends
from memsif.entities import EntityExtractor
from memsif.facts.active import normalise_subject
from memsif.matching import jaccard
from memsif.prompts import clip
from memsif.records import Evidence, RetrievedFact, TopicalSegment
from memsif.store import SentenceHit, SentenceQuery
from memsif.timeparse import day_text

#: A message enters the answer context as evidence with at most this many characters (a pasted log
#: of 30,000 tokens is stored whole but shown clipped).
EVIDENCE_CHARS = 600
#: The heading of the evidence in the answer context.
EXCERPTS = "Conversation excerpts (oldest first):"


#: Words of a question about an earlier state ("What pet did she have before?", "Where did he use to work?").
PAST = re.compile(r"\b(before|used? to|previous(ly)?|earlier|originally|at first|initially|formerly|former|"
                  r"in the past|back then|no longer|any ?more|anymore)\b", re.IGNORECASE)


def asks_about_the_past(question: str) -> bool:
    """Whether ``question`` asks about an earlier state (``PAST``): its answer may need a superseded CoreFact,
    which the context then shows marked as no longer true."""
    return PAST.search(question) is not None


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



class EvidenceRetriever:
    """Facts and evidence sentences for one question at a time (no LLM call; ``llm`` counts tokens)."""

    def __init__(self, backends: Backends, entities: EntityExtractor | None) -> None:
        self.config, self.llm = backends.config, backends.llm
        self.embedder, self.store = backends.embedder, backends.store
        self.entities = entities
        self._token_counts: dict[str, int] = {}  # pieces of the questions asked, each costed once

    def _tokens(self, text: str) -> int:
        if (n := self._token_counts.get(text)) is None:
            n = self._token_counts[text] = self.llm.count_tokens(text)
        return n

    def retrieve_facts(self, namespace: str, qv: np.ndarray, subjects: Sequence[str] = (),
                       history: bool = False) -> list[RetrievedFact]:
        """CoreFacts (current only; with ``history``, a question about an earlier state, the superseded ones
        too, each with the day it stopped holding) and ActiveFacts by cosine to the (d,) question embedding
        ``qv``, best first, at most ``fact_top_k``; with ``subjects`` (the aggregation path) also up to
        ``aggregation_fact_top_k`` facts of those speakers, whatever their rank among all facts
        (``found_by="subject"``)."""
        cfg = self.config.answer
        found = self._facts(namespace, qv, cfg.fact_top_k, history=history)
        if subjects and cfg.aggregation_fact_top_k:
            taken = {f.id for f in found}
            found += [f.model_copy(update={"found_by": "subject"}) for f in
                      self._facts(namespace, qv, cfg.aggregation_fact_top_k, subjects, history) if f.id not in taken]
        return found

    def _facts(self, namespace: str, qv: np.ndarray, limit: int, subjects: Sequence[str] = (),
               history: bool = False) -> list[RetrievedFact]:
        """The ``limit`` facts (CoreFacts and ActiveFacts) nearest ``qv``, of ``subjects`` only when given."""
        method = self.config.method
        found: list[RetrievedFact] = []
        if method.use_core_facts:
            filters = {"subject": list(subjects)} if subjects else {}
            found += [RetrievedFact(kind="core", id=f.id, subject=f.subject, type=f.type, statement=f.statement,
                                    event_time=f.event_time, source_message_ids=f.source_message_ids,
                                    superseded_by=f.superseded_by, score=round(score, 4),
                                    valid_until=f.valid_until if f.status == "superseded" else None)
                      for f, score in self.store.search_facts(namespace, qv, limit, history, **filters)]
        if method.use_active_facts:
            # an ActiveFact's subject is "speaker: topic" (normalised): its speaker part is matched
            wanted = {normalise_subject(s) for s in subjects}
            nearest = self.store.search_active_facts(namespace, qv, 4 * limit if subjects else limit)
            found += [RetrievedFact(kind="active", id=a.id, subject=a.subject, type="Active", statement=a.statement,
                                    event_time=a.event_time, source_message_ids=a.source_message_ids,
                                    score=round(score, 4))
                      for a, score in nearest if not wanted or a.subject.split(":")[0].strip() in wanted]
        found.sort(key=lambda f: -f.score)
        return found[:limit]


    def trace_back(self, namespace: str, question: str, qv: np.ndarray, budget: int,
                   measure: Callable[[list[Evidence]], int] | None = None, *, named: list[str] | None = None,
                   facts: Sequence[RetrievedFact] = (), aggregation: bool = False, floor: int = 0) -> list[Evidence]:
        """Query-local evidence (§3.4) for ``question`` within ``budget`` tokens: whole sentences of
        source turns, found by hybrid search, ranked with their Topical Segments' relevance and
        completed through Event Trajectories (module docstring) and through the source turns of
        ``facts`` (the facts in the context; ``fact_sources``); chronological order. ``named``: the
        speakers the question names (found from the store when None); ``aggregation``: the question
        asks for several things about them (with ``aggregation_speaker_only``, only their sentences);
        ``floor``: the first this many tokens hold the hybrid search's hits in their fused order, as
        Hybrid RAG's context would (the flat floor, ``flat_share``).

        Items are costed piece by piece (sentence, speaker prefix, date line), which overcounts a
        little (the tokenizer merges across pieces); with ``measure`` (the tokens of the whole
        context holding some evidence) the slack this leaves is filled too, never past ``budget``."""
        cfg, method = self.config.answer, self.config.method
        qs = lexical.encode_query(question)
        if named is None:
            named = named_speakers(question, self.store.speakers(namespace))
        content = without_names(question, named) if cfg.dense_without_names else question
        cv = self.embedder.embed_query(content) if content != question else qv
        own_turns = aggregation and named and cfg.aggregation_speaker_only  # what they did is in their own turns
        query = SentenceQuery(cv, qs, speakers=named, speaker_boost=cfg.speaker_boost,
                              within={"speaker": list(named)} if own_turns else {})
        hits = self.store.hybrid_search(namespace, query, cfg.evidence_candidates)
        if not hits:
            return []
        structured = method.use_segments or method.use_trajectories
        segments = {s.id: s for s in self.store.segments(namespace)} if structured else {}
        q_entities = self.entities.extract([question])[0] if self.entities is not None else frozenset()
        weight = cfg.aggregation_segment_weight if aggregation else cfg.segment_weight
        seg_score = self._segment_scores(hits, segments, q_entities, weight) if method.use_segments else {}
        candidates = [_Candidate(h, h.fused + seg_score.get(h.sentence.segment_id or "", 0.0), "search",
                                 seg_score.get(h.sentence.segment_id or "", 0.0)) for h in hits]
        if method.use_trajectories and cfg.trajectory_path and segments:
            candidates += self._trajectory_path(namespace, query, hits, segments, seg_score)
        if cfg.fact_sources and facts:
            candidates += self._fact_source_path(namespace, query, facts, seg_score)
        room = budget - self.llm.count_tokens(EXCERPTS) - 1
        decay = cfg.aggregation_segment_decay if aggregation else cfg.segment_decay
        evidence = self._select(candidates, segments, room, decay, floor)
        if measure is not None and evidence:
            slack = budget - measure(evidence)
            if slack > 0:
                more = self._select(candidates, segments, room + slack, decay, floor)
                if measure(more) <= budget:
                    evidence = more
            while evidence and measure(evidence) > budget:  # never past the budget
                evidence.remove(min(evidence, key=lambda e: e.score))
        return evidence

    def _segment_scores(self, hits: list[SentenceHit], segments: dict[str, TopicalSegment],
                        q_entities: frozenset[str], weight: float) -> dict[str, float]:
        """A Topical Segment's relevance from its members: the fused scores of its best
        ``segment_members`` sentences, plus the Jaccard overlap of its key entities with the
        question's (the J term of φ) scaled to one top fused score; times ``weight``."""
        cfg = self.config.answer
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

    def _trajectory_path(self, namespace: str, query: SentenceQuery, hits: list[SentenceHit],
                         segments: dict[str, TopicalSegment], seg_score: dict[str, float]) -> list[_Candidate]:
        """Event Trajectories as the NCE path: for the trajectories of the best hits, search their
        other segments for what the question still lacks (its terms the best hits do not cover)."""
        cfg = self.config.answer
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
        lacking = query.lexical.without(covered) or query.lexical  # every term covered: search with the whole question
        anchors = {h.sentence.segment_id for h in hits[:cfg.trajectory_anchor_hits]}
        others = {sid: tid for tid in trajectories for sid in members[tid] if sid not in anchors}
        if not others:
            return []
        # one restricted search over every trajectory's other segments, then at most
        # ``trajectory_evidence`` per trajectory, so one event does not crowd out the rest. The filter
        # names the trajectories and the anchor segments (constant size), not every other segment:
        # embedded Qdrant checks a list filter point by point (benchmarks/speed/store_growth.py).
        limit = cfg.trajectory_evidence * len(trajectories)
        restricted = replace(query, lexical=lacking, candidates=cfg.evidence_candidates)
        found = self.store.hybrid_search(namespace, replace(
            restricted, within={**query.within, "trajectory_id": trajectories},
            excluded={"segment_id": sorted(a for a in anchors if a)}), limit, path_scores=False)
        if not found:  # every other segment has sentences, so none found: sentences stored before they held
            # their trajectory id (``python -m memsif upgrade`` writes it); the list filter still works
            found = self.store.hybrid_search(namespace, replace(
                restricted, within={**query.within, "segment_id": sorted(others)}), limit, path_scores=False)
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
                                  seg_score.get(h.sentence.segment_id or "", 0.0)))
        return out

    def _fact_source_path(self, namespace: str, query: SentenceQuery, facts: Sequence[RetrievedFact],
                          seg_score: dict[str, float]) -> list[_Candidate]:
        """A fact carries its source turns: one hybrid search restricted to the facts' source messages
        gives, for each, its sentence that best matches the question (path "fact")."""
        sources = list(dict.fromkeys(m for f in facts for m in f.source_message_ids))
        if not sources:
            return []
        found = self.store.hybrid_search(namespace, replace(query, candidates=4 * len(sources), within={
            **query.within, "message_id": sources}), 4 * len(sources), path_scores=False)
        best: dict[str, SentenceHit] = {}
        for h in found:
            best.setdefault(h.sentence.message_id, h)
        return [_Candidate(h, self.config.answer.fact_source_weight * h.fused, "fact",
                           seg_score.get(h.sentence.segment_id or "", 0.0)) for h in best.values()]

    def _select(self, candidates: list[_Candidate], segments: dict[str, TopicalSegment],
                budget: int, decay: float, floor: int = 0) -> list[Evidence]:
        """Greedy fill of ``budget`` tokens: first, up to ``floor`` tokens, the hybrid search's hits in
        their fused order (Hybrid RAG's own context: the flat floor); then every candidate by priority,
        a segment's k-th sentence counting ``decay``^k of its priority (so one topic does not crowd out
        the rest)."""
        best: dict[str, _Candidate] = {}
        paths: dict[str, set[str]] = defaultdict(set)
        for c in candidates:
            sid = c.hit.sentence.id
            paths[sid].add(c.path)
            if sid not in best or c.priority > best[sid].priority:
                best[sid] = c
        fill = _Fill(segments, self._tokens, paths)
        if floor > 0:
            flat = {c.hit.sentence.id: c for c in candidates if c.path == "search"}
            fill.take(sorted(flat.values(), key=lambda c: -c.hit.fused), min(floor, budget))
        pool = sorted((c for sid, c in best.items() if sid not in fill.taken), key=lambda c: -c.priority)
        fill.take(pool, budget, decay if self.config.method.use_segments and decay < 1.0 else 1.0)
        return [i.evidence() for i in sorted(fill.items.values(), key=lambda i: i.message_index)]


class _Fill:
    """Evidence items being filled into a token budget (``EvidenceRetriever._select``): the turns
    taken, their sentences, and the tokens spent (a date line once per day, a speaker prefix once
    per turn)."""

    def __init__(self, segments: dict[str, TopicalSegment], tokens: Callable[[str], int],
                 paths: dict[str, set[str]]) -> None:
        self.segments, self.tokens, self.paths = segments, tokens, paths
        self.items: dict[str, _Item] = {}
        self.taken: set[str] = set()  # sentence ids
        self.spent = 0
        self.per_segment: dict[str | None, int] = defaultdict(int)
        self.dates: set[str] = set()

    def take(self, pool: list[_Candidate], until: int, decay: float = 1.0) -> None:
        """Take the candidates of ``pool`` in order (re-sorted by ``decay``^k of their priority when
        ``decay`` < 1) while the tokens spent stay within ``until``; one that does not fit is skipped."""
        pool = [c for c in pool if c.hit.sentence.id not in self.taken]
        while pool:
            if decay < 1.0:
                pool.sort(key=lambda c: -c.priority * decay ** self.per_segment[c.hit.sentence.segment_id])
            c = pool.pop(0)
            s = c.hit.sentence
            item = self.items.get(s.message_id)
            cost = self.tokens(s.text) + 1
            if item is None:
                cost += self.tokens(f"- {s.speaker}: ")
                day = day_text(s.time)
                if day not in self.dates:
                    cost += self.tokens(f"{day}:") + 1
            if self.spent + cost > until:
                continue
            self.spent += cost
            self.taken.add(s.id)
            if item is None:
                seg = self.segments.get(s.segment_id or "")
                item = self.items[s.message_id] = _Item(s.message_id, s.speaker, s.time, s.message_index,
                                                        s.segment_id, seg.trajectory_id if seg else None)
                item.scores["priority"] = c.priority
                self.dates.add(day_text(s.time))
            self._record(item, c)

    def _record(self, item: _Item, c: _Candidate) -> None:
        s = c.hit.sentence
        item.sentences[s.position] = s.text
        item.sentence_ids.append(s.id)
        item.found_by.update(c.hit.found_by)
        item.found_by.update(p for p in ("trajectory", "fact") if p in self.paths[s.id])
        if c.segment_score:
            item.found_by.add("segment")
            item.scores.setdefault("segment", c.segment_score)
        for name, value in (("fused", c.hit.fused), ("dense", c.hit.dense), ("lexical", c.hit.lexical)):
            if value is not None:
                item.scores[name] = max(item.scores.get(name, value), value)
        self.per_segment[s.segment_id] += 1

