"""Event Trajectory choice (§3.2): which of a few earlier threads does a new Topical Segment continue?

One prompt shows the new segment's title lines and up to K gated Event Trajectories, each as its
segments' title lines, labelled A, B, …, plus "none of these"; the answer is one letter, scored from
the label probabilities of one forward pass (``LLM.choice_probabilities``), not generated. The
caller asks twice with the options in two orders and averages each option's probability, which
cancels the model's preference for a letter or a position (setwise ranking, Zhuang et al., SIGIR 2024).
"""

from __future__ import annotations

from collections.abc import Sequence

from memsif.prompts import Prompt, clip

NAME = "trajectory_choice"
VERSION = "trajectory_choice/1"
SYSTEM = "Answer with one letter."
LABELS = "ABCDEFGH"
#: The option that continues no earlier thread.
NONE = "none of these"
#: Characters of one option or of the new segment's title.
OPTION_CHARS = 200


def labels(n_options: int) -> list[str]:
    """The letters of ``n_options`` options (the threads and "none of these")."""
    if not 2 <= n_options <= len(LABELS):
        raise ValueError(f"a choice needs 2 to {len(LABELS)} options, got {n_options}")
    return list(LABELS[:n_options])


def build(new: Sequence[str], options: Sequence[str], input_ids: Sequence[str] = ()) -> Prompt:
    """Prompt with the new segment's title lines (``new``) and the ``options`` in the order given,
    each one line of text (an earlier thread's titles, or ``NONE``), lettered A, B, …"""
    letters = labels(len(options))
    shown = "\n".join(f"{letter}. {clip(option, OPTION_CHARS)}"
                      for letter, option in zip(letters, options, strict=True))
    text = ("New part of the conversation:\n" + clip("; ".join(new), OPTION_CHARS) + "\n\nEarlier threads:\n" + shown +
            "\n\nWhich earlier thread does the new part continue: the same person's same matter (event, plan, "
            f"project or problem)? Answer {', '.join(letters[:-1])} or {letters[-1]}.")
    return Prompt(NAME, VERSION, text, system=SYSTEM, input_ids=tuple(dict.fromkeys(input_ids)))
