"""Topical Segment boundary judge (§3.2): does u_t continue the topic of S_i? Yes/no, scored."""

from __future__ import annotations

from collections.abc import Sequence

from memsif.prompts import Prompt, clip
from memsif.records import Message

NAME = "segment_judge"
VERSION = "segment_judge/2"


def _render(context_lines: Sequence[str], new_line: str) -> str:
    return ("Chat so far:\n" + "\n".join(context_lines) + "\n\nNext message:\n" + new_line +
            "\n\nDoes the next message continue the same topic?")


def build(context: Sequence[Message], new: Message) -> Prompt:
    """Prompt with the last messages of the current segment and the new message."""
    text = _render([f"{m.speaker}: {clip(m.text)}" for m in context], f"{new.speaker}: {clip(new.text)}")
    return Prompt(NAME, VERSION, text, input_ids=(*tuple(m.id for m in context), new.id))


def content_free() -> Prompt:
    """The same template with "N/A" content: the model's prior P(yes) for contextual calibration."""
    return Prompt(NAME, VERSION, _render(["A: N/A"], "B: N/A"))
