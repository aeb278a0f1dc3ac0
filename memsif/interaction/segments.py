"""Topical Segment construction with the double-threshold rule (§3.2).

For each message u_t in order: φ(u_t, S_i) ≥ τ_merge appends to the current segment S_i;
φ ≤ τ_split opens a new segment; in between, the LLM judge decides (one scored forward pass).
"""

from __future__ import annotations

import time
from typing import Any

from memsif.config import MemSIFConfig
from memsif.errors import LLMError
from memsif.interaction.judge import YesNoJudge
from memsif.interaction.state import InteractionState, SegmentState
from memsif.llm import LLM
from memsif.matching import SemanticMapping, phi
from memsif.prompts import segment_judge
from memsif.records import BoundaryRule, Message, SegmentDecision


class SegmentBuilder:
    """Places messages into Topical Segments and records every decision."""

    def __init__(self, config: MemSIFConfig, mapping: SemanticMapping, llm: LLM | None) -> None:
        self.config = config
        self.mapping = mapping
        self.judge = YesNoJudge(llm, segment_judge.content_free, config.method.judge_calibration)
        self.model_name = llm.name if llm is not None else None
        self.judge_calls = 0  # messages that reached the judge

    def place(self, state: InteractionState, message: Message) -> SegmentDecision:
        """Append ``message`` (already in ``state``) to the current segment or open a new one.

        Returns the decision: φ with its terms, the rule or judge that decided, the judge's
        probabilities and the outcome. A failing judge does not stop construction: the decision
        falls back to φ against the thresholds' midpoint and records the error.
        """
        cfg = self.config.method
        current = state.current_segment
        base = dict(namespace=state.namespace, message_id=message.id, message_index=message.index,
                    tau_split=cfg.tau_split, tau_merge=cfg.tau_merge)
        if current is None:
            seg = state.open_segment(message)
            return SegmentDecision(**base, segment_id=seg.record.id, rule=BoundaryRule.FIRST, continued=False)
        if not cfg.use_segments:
            seg = state.open_segment(message)
            return SegmentDecision(**base, segment_id=seg.record.id, rule=BoundaryRule.NO_SEGMENTS, continued=False)

        score = phi(state.vectors[message.id], state.entities[message.id], current.profile.mean,
                    current.profile.entities, cfg.alpha_segment, self.mapping)
        base.update(compared_segment_id=current.record.id, score=score)
        judged: dict[str, Any] = {}
        if score.phi >= cfg.tau_merge:
            rule, continued = BoundaryRule.MERGE, True
        elif score.phi <= cfg.tau_split:
            rule, continued = BoundaryRule.SPLIT, False
        else:
            rule, continued, judged = self._judge(state, current, message, score.phi)
        if continued:
            state.append_to_segment(current, message)
            segment_id = current.record.id
        else:
            segment_id = state.open_segment(message).record.id
        return SegmentDecision(**base, segment_id=segment_id, rule=rule, continued=continued, **judged)

    def _judge(self, state: InteractionState, current: SegmentState, message: Message,
               phi_value: float) -> tuple[BoundaryRule, bool, dict[str, Any]]:
        cfg = self.config.method
        prompt = segment_judge.build(state.segment_messages(current, cfg.judge_context_messages), message)
        info: dict[str, Any] = {"prompt_version": prompt.version, "model": self.model_name}
        start = time.perf_counter()
        self.judge_calls += 1
        try:
            [verdict] = self.judge.score([prompt])
        except LLMError as exc:
            midpoint = (cfg.tau_split + cfg.tau_merge) / 2
            info.update(error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - start)
            return BoundaryRule.JUDGE_ERROR, phi_value >= midpoint, info
        info.update(judge_prob=verdict.prob, judge_prob_raw=verdict.raw, judge_prior=verdict.prior,
                    seconds=time.perf_counter() - start)
        return BoundaryRule.JUDGE, verdict.prob >= cfg.judge_threshold, info
