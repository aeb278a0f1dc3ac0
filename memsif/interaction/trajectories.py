"""Event Trajectory aggregation (§3.2).

For each Topical Segment S_i in order: score φ(S_i, E_j) for every trajectory, keep the top-K,
ask the LLM judge (event identity, task continuity, state consistency) about each candidate in one
batched forward pass; the highest-φ compatible trajectory receives S_i, else S_i opens a new one.
Candidates with φ ≤ ``trajectory_min_phi`` are incompatible by rule and cost no judge call.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from memsif import lexical
from memsif.config import MemSIFConfig
from memsif.errors import LLMError
from memsif.interaction import link
from memsif.interaction.choice import NAME as CHOICE
from memsif.interaction.choice import ChoiceLinker
from memsif.interaction.joinable import GateRule
from memsif.interaction.judge import Verdict, YesNoJudge
from memsif.interaction.relink import whole_memory
from memsif.interaction.state import InteractionState, SegmentState
from memsif.interaction.titles import TitleWriter, meaningful, name_parts, one_per_stem
from memsif.llm import LLM
from memsif.llm.profiles import UNMEASURED, ModelProfile
from memsif.matching import SemanticMapping, phi, phi_many
from memsif.prompts import trajectory_judge
from memsif.records import EventTrajectory, PhiScore, TopicalSegment, TrajectoryCandidate, TrajectoryDecision

#: Sentences of each side shown to the trajectory judge: the most specific ones (``link.specific_sentences``).
JUDGE_SENTENCES = 3


def top_k_segments(state: InteractionState, seg: SegmentState, k: int, alpha: float,
                   mapping: SemanticMapping) -> list[tuple[SegmentState, PhiScore]]:
    """The ``k`` earlier Topical Segments (already in a trajectory) with the highest φ(S_i, S_j),
    best first (ties: older first): the candidates' trajectories are theirs (single link, so a
    trajectory is found by any of its segments, not by its pooled mean alone).

    φ is scored against every earlier segment at once (``phi_many``: one (n, d) product and set
    sizes); the kept ``k`` get their terms from ``phi`` for the record.
    """
    earlier = [s for s in state.segments if s is not seg and s.record.trajectory_id is not None]
    if not earlier or k <= 0:
        return []
    scores = phi_many(seg.profile.mean, seg.profile.entities, np.stack([s.profile.mean for s in earlier]),
                      [s.profile.entities for s in earlier], alpha, mapping)
    order = sorted(range(len(earlier)), key=lambda i: (-scores[i], earlier[i].record.index))[:k]
    return [(earlier[i], phi(seg.profile.mean, seg.profile.entities, earlier[i].profile.mean,
                             earlier[i].profile.entities, alpha, mapping)) for i in order]


class TrajectoryBuilder:
    """Assigns closed Topical Segments to Event Trajectories and records every decision."""

    def __init__(self, config: MemSIFConfig, mapping: SemanticMapping, llm: LLM | None,
                 link_model: link.LinkModel | None = None, profile: ModelProfile = UNMEASURED) -> None:
        self.config = config
        self.mapping = mapping
        method = config.method
        self.link = link_model or link.model_for(method.trajectory_link, llm, profile, method.judge_threshold)
        self.judge = YesNoJudge(llm, trajectory_judge.content_free, method.judge_calibration, profile) \
            if self.link.uses_judge else None
        self.model_name = llm.name if llm is not None else None
        self.provisional = link_model is None and whole_memory(method)  # a link model given: decide online
        self.vocabulary = link.Vocabulary()
        self.judge_calls = 0  # candidate pairs that reached the judge
        self.titles = TitleWriter(llm if titles_at_close(config, llm, profile) else None)
        self.choice = ChoiceLinker(llm, GateRule(),
                                   method.trajectory_choice_margin, method.construction_top_k, method.alpha_trajectory,
                                   mapping) if method.trajectory_link == "choice" and llm is not None else None

    def title(self, state: InteractionState, seg: SegmentState) -> None:
        """Give ``seg`` its title (``interaction.titles``) unless it already has one for its present
        messages (a segment left open by an ingest is titled again when it has grown)."""
        have = seg.record.title
        if have is not None and have.message_count == len(seg.record.message_ids):
            return
        for s in state.segments[:seg.record.index + 1]:
            self._read(state, s)
        messages = state.segment_messages(seg)
        seg.record.title = self.titles.title(messages, [state.entities[m.id] for m in messages], self.vocabulary.idf)

    def assign(self, state: InteractionState, seg: SegmentState) -> TrajectoryDecision | None:
        """Put ``seg`` into the trajectory of its likeliest earlier segment when the link model's
        P(same thread) reaches its threshold, or open a new trajectory (``link`` module docstring).
        With the whole-memory construction (``relink.whole_memory``) the segment opens its own
        trajectory until the relink after the structure step decides, and nothing is recorded (None).

        A failing judge leaves the judged candidates unjoined and records the error.
        """
        if self.provisional:
            state.open_trajectory(seg)
            return None
        if self.choice is not None:
            return self._assign_by_choice(state, seg, self.choice)
        cfg = self.config.method
        start = time.perf_counter()
        ranked = top_k_segments(state, seg, cfg.construction_top_k, cfg.alpha_trajectory, self.mapping)
        stems = {s.record.id: self._read(state, s) for s in state.segments[:seg.record.index + 1]}
        idf = self.vocabulary.idf
        measures = [link.LinkMeasures(phi=score.phi, jaccard=score.jaccard, gap_days=_gap_days(other, seg),
                                      rare=link.rare_overlap(stems[seg.record.id], stems[other.record.id], idf))
                    for other, score in ranked]
        to_judge = [i for i, (_, score) in enumerate(ranked) if score.phi > cfg.trajectory_min_phi] \
            if self.judge is not None else []
        verdicts: dict[int, Verdict] = {}
        error = prompt_version = None
        if to_judge and self.judge is not None:
            later = link.specific_sentences(state.segment_messages(seg), idf, JUDGE_SENTENCES)
            prompts = [trajectory_judge.build(link.specific_sentences(state.segment_messages(ranked[i][0]), idf,
                                                                      JUDGE_SENTENCES), later) for i in to_judge]
            prompt_version = prompts[0].version
            self.judge_calls += len(prompts)
            try:
                verdicts = dict(zip(to_judge, self.judge.score(prompts), strict=True))
            except LLMError as exc:
                error = f"{type(exc).__name__}: {exc}"
        candidates = []
        for i, ((other, score), m) in enumerate(zip(ranked, measures, strict=True)):
            v = verdicts.get(i)
            p = None
            if not self.link.uses_judge or v is not None:
                p = self.link.probability(replace(m, p_yes=v.prob if v else None))
            candidates.append(TrajectoryCandidate(
                trajectory_id=other.record.trajectory_id or "", score=score, segment_id=other.record.id,
                rare=round(m.rare, 4), gap_days=round(m.gap_days, 2), judge_prob=v.prob if v else None,
                judge_prob_raw=v.raw if v else None, judge_prior=v.prior if v else None,
                link_prob=None if p is None else round(p, 4), compatible=p is not None and p >= self.link.threshold))
        best = max((c for c in candidates if c.link_prob is not None), key=lambda c: c.link_prob or 0.0, default=None)
        if best is not None and best.compatible:
            state.assign(seg, state.trajectory(best.trajectory_id))
            trajectory_id, created = best.trajectory_id, False
        else:
            trajectory_id, created = state.open_trajectory(seg).record.id, True
        return TrajectoryDecision(namespace=state.namespace, segment_id=seg.record.id, candidates=candidates,
                                  trajectory_id=trajectory_id, created=created, rule=self._rule(best, created),
                                  link_model=self.link.name, prompt_version=prompt_version,
                                  model=self.model_name if verdicts or error else None, error=error,
                                  seconds=time.perf_counter() - start)

    def _assign_by_choice(self, state: InteractionState, seg: SegmentState, choice: ChoiceLinker) -> TrajectoryDecision:
        """The gate, then one comparative choice among the gated trajectories (``interaction.choice``)."""
        start = time.perf_counter()
        for s in state.segments[:seg.record.index + 1]:
            self._read(state, s)
        calls = choice.calls
        out = choice.decide(state, seg, self.vocabulary.idf, seg.record.index + 1)
        self.judge_calls += choice.calls - calls
        if out.joined is not None:
            state.assign(seg, state.trajectory(out.joined))
            trajectory_id, created = out.joined, False
        else:
            trajectory_id, created = state.open_trajectory(seg).record.id, True
        return TrajectoryDecision(namespace=state.namespace, segment_id=seg.record.id, candidates=out.candidates,
                                  trajectory_id=trajectory_id, created=created, rule=out.rule, link_model=CHOICE,
                                  none_prob=out.none_prob, margin=out.margin, gated_out=out.gated_out,
                                  prompt_version=out.prompt_version, error=out.error,
                                  model=self.model_name if out.prompt_version else None,
                                  seconds=time.perf_counter() - start)

    def _read(self, state: InteractionState, s: SegmentState) -> Counter[str]:
        """The segment's content stems, counted into the vocabulary (rare words are rare so far)."""
        return self.vocabulary.read(s.record.id, len(s.record.message_ids),
                                    lambda: (m.text for m in state.segment_messages(s)))

    def _rule(self, best: TrajectoryCandidate | None, created: bool) -> str:
        t = self.link.threshold
        if best is None:
            floor = f" (none above the judge's φ floor {self.config.method.trajectory_min_phi:g})" if self.judge else ""
            return f"new trajectory: no candidate scored{floor}; {self.link.name}"
        p = best.link_prob or 0.0
        how = f"{self.link.name}: P(same thread) {p:.2f} {'≥' if not created else '<'} {t:g}"
        if created:
            return f"new trajectory: the likeliest, {best.trajectory_id} via {best.segment_id}, {how}"
        return f"joined {best.trajectory_id} via {best.segment_id}: {how}"


def titles_at_close(config: MemSIFConfig, llm: LLM | None, profile: ModelProfile) -> bool:
    """Whether the LLM titles each segment as it closes: with ``segment_titles="model"``, or "auto"
    when the trajectory decision reads titles (``trajectory_link="choice"``). Otherwise segments get
    the model-free title at close and the LLM's after the CoreFacts (``facts.step.CoreFactStep.model_titles``),
    so the timeline does not wait for titles (one generation per segment, about as long as the whole
    structure step on 2 cores)."""
    by_model = titles_by_model(config.method.segment_titles, llm, profile)
    return by_model and (config.method.segment_titles == "model" or config.method.trajectory_link == "choice")


def titles_by_model(mode: str, llm: LLM | None, profile: ModelProfile) -> bool:
    """Whether segment titles are written by ``llm`` under ``segment_titles`` ``mode``: "model" always
    (with an LLM), "rule" never, "auto" unless the model's judgements are at chance (its profile)."""
    if llm is None or mode == "rule":
        return False
    return mode == "model" or not profile.at_chance


def _gap_days(earlier: SegmentState, later: SegmentState) -> float:
    t0, t1 = earlier.record.end_time, later.record.start_time
    return abs((t1 - t0).total_seconds()) / 86400 if t0 and t1 else 0.0


#: Terms shown as what a trajectory is about.
NAME_TERMS = 3


def trajectory_terms(trajectories: Sequence[EventTrajectory], segments: Sequence[TopicalSegment],
                     speakers: Sequence[str] = (), n: int = NAME_TERMS) -> dict[str, list[str]]:
    """What each Event Trajectory is about: up to ``n`` of its key entities, most specific first.

    A term scores (member segments holding it) × its IDF over all the namespace's segments, so what
    ties several sessions together and few other segments mention comes first. Speakers' names and
    their short forms ("Mel" for Melanie), words that state nothing (``lexical.EMPTY_STEMS``:
    "congrats", "awesome"), interjections ("oof", "sooo") and other forms of a stem already named are
    left out. Returns {trajectory id: terms}; a trajectory with no such term gets [].
    """
    names = name_parts(speakers)
    df = Counter(e for s in segments for e in set(s.entities))
    words = {e: [w for w in lexical.words(e) if w.is_alpha] for e in df}  # each entity tokenised once
    stems_of = {e: {w.stem for w in ws} for e, ws in words.items() if meaningful(e, ws, names)}
    by_id = {s.id: s for s in segments}
    out = {}
    for t in trajectories:
        held = Counter(e for i in t.segment_ids if i in by_id for e in set(by_id[i].entities))
        out[t.id] = one_per_stem(sorted((e for e in held if e in stems_of), key=lambda e: (
            -held[e] * math.log((len(segments) + 1) / df[e]), len(e), e)), stems_of, n)
    return out
