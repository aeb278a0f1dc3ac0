"""Event Trajectory judge (§3.2): does segment S_i continue the same evolving event or task as S_j?

The question names the paper's three criteria in words a small model follows: the same person's same
event (event identity), project or plan (task continuity), or problem (state consistency). Each side
is its most specific sentences (``interaction.link.specific_sentences``), not its last messages,
which are mostly greetings and sign-offs. Yes/no, scored.
"""

from __future__ import annotations

from collections.abc import Sequence

from memsif.prompts import Prompt, clip
from memsif.records import Message

NAME = "trajectory_judge"
VERSION = "trajectory_judge/4"
#: Characters of one sentence shown.
SENTENCE_CHARS = 160


def _render(earlier: Sequence[str], later: Sequence[str]) -> str:
    return ("A (earlier):\n" + "\n".join(earlier) + "\n\nB (later):\n" + "\n".join(later) +
            "\n\nDoes B continue or update the same story as A (the same person's same event, project, plan "
            "or problem)?")


def _lines(sentences: Sequence[Message]) -> list[str]:
    return [f"{m.speaker}: {clip(m.text.strip(), SENTENCE_CHARS)}" for m in sentences]


def build(earlier: Sequence[Message], later: Sequence[Message]) -> Prompt:
    """Prompt with the most specific sentences of the earlier segment (A) and of the new one (B),
    each a ``Message`` holding one sentence."""
    ids = tuple(dict.fromkeys(m.id for m in (*earlier, *later)))
    return Prompt(NAME, VERSION, _render(_lines(earlier), _lines(later)), input_ids=ids)


def content_free() -> Prompt:
    """The same template with "N/A" content: the model's prior P(yes) for contextual calibration."""
    return Prompt(NAME, VERSION, _render(["A: N/A"], ["B: N/A"]))
