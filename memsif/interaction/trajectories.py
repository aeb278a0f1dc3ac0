"""Event Trajectory aggregation (§3.2).

For each Topical Segment S_i in order: score φ(S_i, E_j) for every trajectory, keep the top-K,
ask the LLM judge (event identity, task continuity, state consistency) about each candidate in one
batched forward pass; the highest-φ compatible trajectory receives S_i, else S_i opens a new one.
Candidates with φ ≤ ``trajectory_min_phi`` are incompatible by rule and cost no judge call.
"""

from __future__ import annotations

import time

import numpy as np

from memsif.config import MemSIFConfig
from memsif.errors import LLMError
from memsif.interaction.judge import Verdict, YesNoJudge
from memsif.interaction.state import InteractionState, SegmentState
from memsif.llm import LLM
from memsif.matching import SemanticMapping, phi, phi_many
from memsif.prompts import trajectory_judge
from memsif.records import PhiScore, TrajectoryCandidate, TrajectoryDecision

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
