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

import numpy as np

from memsif import lexical
from memsif.config import MemSIFConfig
from memsif.errors import LLMError
from memsif.interaction.judge import Verdict, YesNoJudge
from memsif.interaction.state import InteractionState, SegmentState
from memsif.llm import LLM
from memsif.matching import SemanticMapping, phi, phi_many
from memsif.prompts import trajectory_judge
from memsif.records import EventTrajectory, PhiScore, TopicalSegment, TrajectoryCandidate, TrajectoryDecision

#: Messages of each side shown to the trajectory judge.
EXCERPT_MESSAGES = 2


def top_k_candidates(state: InteractionState, seg: SegmentState, k: int, alpha: float,
                     mapping: SemanticMapping) -> list[tuple[str, PhiScore]]:
    """The ``k`` trajectories with the highest φ(S_i, E_j), best first (ties: older first).

    φ is scored against every trajectory at once (``phi_many``: one (T, d) product and set sizes),
    so a segment costs O(T) array work rather than T set copies; the kept ``k`` get their terms from
    ``phi`` for the record.
    """
    others = [traj for traj in state.trajectories if seg.record.id not in traj.record.segment_ids]
    if not others or k <= 0:
        return []
    scores = phi_many(seg.profile.mean, seg.profile.entities, np.stack([t.profile.mean for t in others]),
                      [t.profile.entities for t in others], alpha, mapping)
    order = sorted(range(len(others)), key=lambda i: (-scores[i], others[i].record.index))[:k]
    best = [others[i] for i in order]
    return [(t.record.id, phi(seg.profile.mean, seg.profile.entities, t.profile.mean, t.profile.entities,
                              alpha, mapping)) for t in best]


class TrajectoryBuilder:
    """Assigns closed Topical Segments to Event Trajectories and records every decision."""

    def __init__(self, config: MemSIFConfig, mapping: SemanticMapping, llm: LLM | None) -> None:
        self.config = config
        self.mapping = mapping
        self.judge = YesNoJudge(llm, trajectory_judge.content_free, config.judge_calibration)
        self.model_name = getattr(llm, "name", None)
        self.judge_calls = 0  # candidate pairs that reached the judge

    def assign(self, state: InteractionState, seg: SegmentState) -> TrajectoryDecision:
        """Put ``seg`` into its best compatible trajectory, or open a new one.

        A failing judge marks all judged candidates incompatible and records the error.
        """
        cfg = self.config
        start = time.perf_counter()
        ranked = top_k_candidates(state, seg, cfg.construction_top_k, cfg.alpha_trajectory, self.mapping)
        to_judge = [(tid, score) for tid, score in ranked if score.phi > cfg.trajectory_min_phi]
        verdicts: dict[str, Verdict] = {}
        error = prompt_version = None
        if to_judge:
            seg_excerpt = state.segment_messages(seg, EXCERPT_MESSAGES)
            prompts = []
            for tid, _ in to_judge:
                latest = state.segment(state.trajectory(tid).record.segment_ids[-1])
                prompts.append(trajectory_judge.build(state.segment_messages(latest, EXCERPT_MESSAGES),
                                                      seg_excerpt))
            prompt_version = prompts[0].version
            self.judge_calls += len(prompts)
            try:
                scored = self.judge.score(prompts)
                verdicts = {tid: v for (tid, _), v in zip(to_judge, scored, strict=True)}
            except LLMError as exc:
                error = f"{type(exc).__name__}: {exc}"
        candidates = []
        for tid, score in ranked:
            v = verdicts.get(tid)
            candidates.append(TrajectoryCandidate(
                trajectory_id=tid, score=score, judge_prob=v.prob if v else None,
                judge_prob_raw=v.raw if v else None, judge_prior=v.prior if v else None,
                compatible=v is not None and v.prob >= cfg.judge_threshold))
        compatible = [c for c in candidates if c.compatible]
        if compatible:
            best = max(compatible, key=lambda c: c.score.phi)
            state.assign(seg, state.trajectory(best.trajectory_id))
            trajectory_id, created = best.trajectory_id, False
        else:
            trajectory_id, created = state.open_trajectory(seg).record.id, True
        return TrajectoryDecision(namespace=state.namespace, segment_id=seg.record.id, candidates=candidates,
                                  trajectory_id=trajectory_id, created=created, prompt_version=prompt_version,
                                  model=self.model_name if to_judge else None, error=error,
                                  seconds=time.perf_counter() - start)


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
    names = {part.lower() for sp in speakers for part in sp.split()}
    df = Counter(e for s in segments for e in set(s.entities))
    words = {e: [w for w in lexical.words(e) if w.is_alpha] for e in df}  # each entity tokenised once
    stems_of = {e: {w.stem for w in ws} for e, ws in words.items() if _meaningful(e, ws, names)}
    by_id = {s.id: s for s in segments}
    out = {}
    for t in trajectories:
        held = Counter(e for i in t.segment_ids if i in by_id for e in set(by_id[i].entities))
        ranked = sorted((e for e in held if e in stems_of),
                        key=lambda e: (-held[e] * math.log((len(segments) + 1) / df[e]), len(e), e))
        terms: list[str] = []
        seen: set[str] = set()
        for e in ranked:
            stems = stems_of[e]
            if stems & seen:
                continue
            seen |= stems
            terms.append(e)
            if len(terms) == n:
                break
        out[t.id] = terms
    return out


def _meaningful(term: str, words: Sequence[lexical.Word], names: set[str]) -> bool:
    return (len(term) >= 3 and bool(words) and not any(_names(w.lower, names) for w in words)
            and not all(w.is_stop or w.stem in lexical.EMPTY_STEMS or w.lower in lexical.EMPTY_STEMS
                        or _interjection(w.lower) for w in words))


def _names(word: str, names: set[str]) -> bool:
    return any(n == word or (len(word) >= 3 and n.startswith(word)) for n in names)


def _interjection(word: str) -> bool:
    """"oof", "sooo", "hmm", "whoa", "btw": letters repeated, no vowel, or a chat abbreviation."""
    return (any(c * 3 in word for c in set(word)) or not set(word) & set("aeiouy")
            or word in {"oof", "whoa", "btw", "lol", "omg", "wanna", "gonna", "gotta", "yay", "ugh", "aww"})
