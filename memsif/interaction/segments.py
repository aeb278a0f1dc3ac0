"""Topical Segment construction with the double-threshold rule (§3.2).

For each message u_t in order: φ(u_t, S_i) ≥ τ_merge appends to the current segment S_i;
φ ≤ τ_split opens a new segment; in between, the LLM judge decides (one scored forward pass).

Two rules come first (product decisions; ``MethodSettings.split_sessions``, ``session_gap_hours``,
``short_reply_words``):

- a message of another session than its predecessor's, or one at least ``session_gap_hours`` after it,
  opens a new segment by rule (``BoundaryRule.SESSION``): a topic does not run across a goodbye and the
  days after it; Event Trajectories join the sessions' segments of one matter;
- a reply of at most ``short_reply_words`` words ("At the mall.", "Yes!") is scored read together with
  its predecessor: u_t's embedding is the normalised sum of both, its key entities their union. Alone,
  such a reply shares almost nothing with any segment, so it would split from the question it answers.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from memsif.config import MemSIFConfig
from memsif.errors import LLMError
from memsif.interaction.judge import YesNoJudge
from memsif.interaction.state import InteractionState, SegmentState
from memsif.llm import LLM
from memsif.llm.profiles import UNMEASURED, ModelProfile
from memsif.matching import SemanticMapping, phi
from memsif.prompts import segment_judge
from memsif.records import BoundaryRule, Message, SegmentDecision


class SegmentBuilder:
    """Places messages into Topical Segments and records every decision."""

    def __init__(self, config: MemSIFConfig, mapping: SemanticMapping, llm: LLM | None,
                 profile: ModelProfile = UNMEASURED) -> None:
        self.config = config
        self.mapping = mapping
        self.judge = YesNoJudge(llm, segment_judge.content_free, config.method.judge_calibration, profile)
        self.model_name = llm.name if llm is not None else None
        self.judge_calls = 0  # messages that reached the judge
        self.judge_chars = 0  # characters of the prompts they were judged with (``interaction.forecast``)

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
        if current is None or not cfg.use_segments:
            rule = BoundaryRule.FIRST if current is None else BoundaryRule.NO_SEGMENTS
            return SegmentDecision(**base, segment_id=state.open_segment(message).record.id, rule=rule, continued=False)

        previous = state.messages[current.record.message_ids[-1]]
        vector, entities, read_with = self._reading(state, message, previous)
        score = phi(vector, entities, current.profile.mean, current.profile.entities, cfg.alpha_segment, self.mapping)
        gap = hours_between(previous, message)
        base.update(compared_segment_id=current.record.id, score=score, read_with=read_with, gap_hours=gap)
        judged: dict[str, Any] = {}
        if self._new_session(previous, message, gap):
            rule, continued = BoundaryRule.SESSION, False
        elif score.phi >= cfg.tau_merge:
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

    def _new_session(self, previous: Message, message: Message, gap: float | None) -> bool:
        """Whether ``message`` starts another session than ``previous``: both name a session and they
        differ, or ``gap`` (hours) reaches ``session_gap_hours``."""
        cfg = self.config.method
        if not cfg.split_sessions:
            return False
        if previous.session_id and message.session_id and previous.session_id != message.session_id:
            return True
        return bool(cfg.session_gap_hours) and gap is not None and gap >= cfg.session_gap_hours

    def _reading(self, state: InteractionState, message: Message,
                 previous: Message) -> tuple[np.ndarray, frozenset[str], str | None]:
        """u_t's (d,) embedding and key entities for φ, and the predecessor's id when a short reply is
        read with it (another speaker's message of the same session)."""
        vector, entities = state.vectors[message.id], state.entities[message.id]
        short = len(message.text.split()) <= self.config.method.short_reply_words
        if not short or previous.speaker == message.speaker or previous.session_id != message.session_id:
            return vector, entities, None
        both = vector + state.vectors[previous.id]
        norm = float(np.linalg.norm(both))
        return (both / norm if norm else vector), entities | state.entities[previous.id], previous.id

    def _judge(self, state: InteractionState, current: SegmentState, message: Message,
               phi_value: float) -> tuple[BoundaryRule, bool, dict[str, Any]]:
        cfg = self.config.method
        prompt = segment_judge.build(state.segment_messages(current, cfg.judge_context_messages), message)
        info: dict[str, Any] = {"prompt_version": prompt.version, "model": self.model_name}
        start = time.perf_counter()
        self.judge_calls += 1
        self.judge_chars += len(prompt.text)
        try:
            [verdict] = self.judge.score([prompt])
        except LLMError as exc:
            midpoint = (cfg.tau_split + cfg.tau_merge) / 2
            info.update(error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - start)
            return BoundaryRule.JUDGE_ERROR, phi_value >= midpoint, info
        info.update(judge_prob=verdict.prob, judge_prob_raw=verdict.raw, judge_prior=verdict.prior,
                    seconds=time.perf_counter() - start)
        return BoundaryRule.JUDGE, verdict.prob >= cfg.judge_threshold, info


def hours_between(earlier: Message, later: Message) -> float | None:
    """Hours from ``earlier`` to ``later`` (negative when the transcript goes back in time; None: either
    is undated)."""
    if earlier.time is None or later.time is None:
        return None
    return (later.time - earlier.time).total_seconds() / 3600
