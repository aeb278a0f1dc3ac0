"""Topical Segment title (§3.2): what a closed segment is about, as up to three "Name: matter" lines.

The model sees the segment's most specific sentences (``interaction.link.specific_sentences``) with
their speakers and writes one line per personal matter: the person it concerns, then the matter in a
few words ("Caroline: adopting a child as a single parent"). Titles name trajectories in the
inspector and are what the trajectory decision compares (short, LLM-written summaries, as MemoryOS
and A-Mem compare, rather than raw turns). The caller checks every line before it is kept
(``interaction.titles``): the name must be a speaker or a name the segment holds, the matter must
share a word with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from memsif.prompts import Prompt, clip
from memsif.records import Message

NAME = "segment_title"
VERSION = "segment_title/1"
SYSTEM = "You write short titles for parts of a conversation."
#: Lines asked for, and words of a matter.
MAX_LINES = 3
MAX_WORDS = 8
#: Characters of one sentence shown.
SENTENCE_CHARS = 160
#: Tokens the model may write (three lines of eight words with their names fit in ~45).
MAX_NEW_TOKENS = 48


def build(sentences: Sequence[Message]) -> Prompt:
    """Prompt with the segment's most specific sentences (each a ``Message`` holding one sentence),
    in their order."""
    lines = "\n".join(f"{m.speaker}: {clip(m.text.strip(), SENTENCE_CHARS)}" for m in sentences)
    text = ("Part of a conversation:\n" + lines + "\n\n"
            f"What personal matters does this part discuss? Write 1 to {MAX_LINES} lines, each \"Name: matter\": "
            f"the person the matter is about, then the matter in at most {MAX_WORDS} words (for example "
            "\"Ana: starting a new job as a nurse\"). Leave out greetings and small talk.")
    ids = tuple(dict.fromkeys(m.id for m in sentences))
    return Prompt(NAME, VERSION, text, system=SYSTEM, input_ids=ids)
