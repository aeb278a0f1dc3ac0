"""How much model work a build of Structured Interaction Memory has ahead of it, for the waits the page states.

Placing a message costs almost nothing unless the segment judge is asked (τ_split < φ < τ_merge, §3.2):
on the packaged 1.5B a judge call is ~0.5–4 s, a message the rules place a few milliseconds. So a build's
time is its judge calls, and a call's time follows its prompt's length (r ≈ 0.95 between prompt
characters and seconds per call on the dev conversations; ``benchmarks/speed/waiting_times.py``). A pace
per message swings with where the judge happens to be asked; a pace per prompt character, measured on the
calls made so far, applied to the calls still expected, does not.

**The forecast** is a dry run of the segment rule over the call's messages, before any is placed: the same
``SegmentBuilder`` with the same φ, session and short-reply rules, from the memory's open segment, where the
judge's place is taken by the thresholds' midpoint (the fallback of a failing judge). It records, per
message, the characters of the judge prompt it expects (0: a rule places it). Where the real judge decides
otherwise, the segments differ until the next rule split, after which the two runs agree again.

**The workload** (``Workload``) is that forecast plus the judge prompt characters actually sent so far,
published under the job's name while the ingest runs (``published``) for a countdown to read
(``inspector.pace.Countdown``'s ``work``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memsif.config import MemSIFConfig
from memsif.interaction.segments import SegmentBuilder
from memsif.interaction.state import InteractionState, SegmentState
from memsif.matching import SemanticMapping
from memsif.prompts import segment_judge
from memsif.records import BoundaryRule, Message


@dataclass
class Workload:
    """The model work of one ingest call's structure step, in judge prompt characters.

    ``expected[i]``: characters of the judge prompt the forecast expects for the call's i-th new message (0:
    placed by a rule). ``sent`` and ``calls``: characters and number of segment-judge prompts sent so far,
    raised by the ingest as it places messages (read from another thread: plain ints, one writer)."""

    expected: list[int]
    sent: int = 0
    calls: int = 0
    _suffix: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._suffix = [*itertools.accumulate(reversed(self.expected), initial=0)][::-1]  # sum(expected[i:])

    @property
    def messages(self) -> int:
        return len(self.expected)

    def expected_from(self, placed: int) -> int:
        """Characters of the judge prompts expected for the messages after the first ``placed``."""
        return int(self._suffix[min(max(placed, 0), len(self.expected))])


class _DryRun(SegmentBuilder):
    """The segment rule without a model: the judge band is decided at the thresholds' midpoint, and each
    prompt the judge would have been sent is measured instead."""

    def __init__(self, config: MemSIFConfig, mapping: SemanticMapping) -> None:
        super().__init__(config, mapping, None)
        self.prompt_chars: dict[str, int] = {}

    def _judge(self, state: InteractionState, current: SegmentState, message: Message,
               phi_value: float) -> tuple[BoundaryRule, bool, dict[str, Any]]:
        cfg = self.config.method
        prompt = segment_judge.build(state.segment_messages(current, cfg.judge_context_messages), message)
        self.prompt_chars[message.id] = len(prompt.text)
        return BoundaryRule.JUDGE, phi_value >= (cfg.tau_split + cfg.tau_merge) / 2, {}


def forecast(config: MemSIFConfig, mapping: SemanticMapping, state: InteractionState, fresh: Sequence[Message],
             vectors: np.ndarray, entity_sets: Sequence[frozenset[str]]) -> Workload:
    """The workload of placing ``fresh`` (numbered, not yet in ``state``; ``vectors`` (n, d)) after the
    memory in ``state``, which is left untouched: a dry run from a copy of its open segment."""
    scratch = InteractionState(state.namespace, state.dim)
    current = state.current_segment
    if current is not None:
        seg = None
        for m in state.segment_messages(current):
            scratch.add_message(m, state.vectors[m.id], state.entities[m.id])
            if seg is None:
                seg = scratch.open_segment(m)
            else:
                scratch.append_to_segment(seg, m)
    dry = _DryRun(config, mapping)
    for m, vector, entities in zip(fresh, vectors, entity_sets, strict=True):
        scratch.add_message(m, vector, entities)
        dry.place(scratch, m)
    return Workload([dry.prompt_chars.get(m.id, 0) for m in fresh])
