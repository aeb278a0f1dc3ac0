"""Event Trajectory judge (§3.2): is segment S_i part of the same evolving event or task as E_j?

The question names the paper's three criteria: event identity, task continuity, state consistency.
Yes/no, scored. The new segment comes first: the K candidate prompts of one segment then share their
opening, which the transformers back-end computes once (version 2 put it last).
"""

from __future__ import annotations

from collections.abc import Sequence

from memsif.prompts import Prompt, clip
from memsif.records import Message

NAME = "trajectory_judge"
VERSION = "trajectory_judge/3"


def _render(earlier: Sequence[str], later: Sequence[str]) -> str:
    return ("Later conversation:\n" + "\n".join(later) + "\n\nEarlier conversation:\n" + "\n".join(earlier) +
            "\n\nIs the later conversation about the same event or task as the earlier one "
            "(same event, continued task, or updated situation)?")


def _lines(messages: Sequence[Message]) -> list[str]:
    return [f"{m.speaker}: {clip(m.text, 120)}" for m in messages]


def build(trajectory_messages: Sequence[Message], segment_messages: Sequence[Message]) -> Prompt:
    """Prompt with excerpts of the trajectory's latest segment and of the new segment."""
    ids = tuple(m.id for m in trajectory_messages) + tuple(m.id for m in segment_messages)
    return Prompt(NAME, VERSION, _render(_lines(trajectory_messages), _lines(segment_messages)), input_ids=ids)


def content_free() -> Prompt:
    """The same template with "N/A" content: the model's prior P(yes) for contextual calibration."""
    return Prompt(NAME, VERSION, _render(["A: N/A"], ["B: N/A"]))
