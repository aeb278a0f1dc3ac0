"""Who did it, asked as a choice (§3.3; DESIGN: the small model picks among a few concrete, short
candidates): which person does the cited message say did or holds what a CoreFact candidate claims —
one of the conversation's speakers by name, or someone else they mention. Scored from the names'
probabilities (``LLM.choice_probabilities``), never generated.
"""

from __future__ import annotations

from collections.abc import Sequence

from memsif.prompts import Prompt, clip
from memsif.records import Message, spoken_text

NAME = "fact_speaker"
VERSION = "fact_speaker/1"
SYSTEM = "Answer with one name."
#: The option for a person who is not a speaker (a child, a partner, a friend).
SOMEONE_ELSE = "someone else"
#: Characters of each cited message shown.
MESSAGE_CHARS = 400


def build(predicate: str, sources: Sequence[Message], speakers: Sequence[str]) -> tuple[Prompt, list[str]]:
    """The cited messages (photo captions left out), then "Who <predicate>?" with the speakers' first names
    and ``SOMEONE_ELSE`` as the answers. Returns the prompt and the labels in the order scored (a
    speaker's first name, …, "someone")."""
    names = [s.split()[0] for s in speakers]
    lines = "\n".join(f"{m.speaker}: {clip(spoken_text(m.text), MESSAGE_CHARS)}" for m in sources)
    options = ", ".join([*names, SOMEONE_ELSE])
    text = (f"{lines}\n\nAccording to these messages, who {predicate.rstrip('.!')}? "
            f"Answer {options}.")
    return Prompt(NAME, VERSION, text, system=SYSTEM, input_ids=tuple(m.id for m in sources)), [*names, "someone"]
