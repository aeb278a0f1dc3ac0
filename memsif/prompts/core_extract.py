"""CoreFact extraction (§3.3): schema-eligible facts from a batch of Topical Segment messages.

The model sees the messages numbered 1..n with their session dates (relative dates already resolved)
and answers JSON: facts with subject, type (an enum of the schema), statement, and the numbers of the
messages each fact comes from (range-checked by the caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, create_model

from memsif.prompts import Prompt, clip
from memsif.records import FactType

NAME = "core_extract"
#: Version 4: instructions, fact types and a worked example come first and are the same for every
#: batch (a back-end that keeps the previous prompt's key/value cache computes them once); the
#: conversation comes last, after a note that the example's people are not in it. Version 1 had the
#: conversation first; 2 the example without the note; 3 no example (see ``_EXAMPLE``).
VERSION = "core_extract/4"
SYSTEM = "You extract durable personal facts from a conversation as JSON."
MAX_FACTS = 3
#: Longest statement the response schema allows; one that fills it without ending was cut off.
STATEMENT_MAX_CHARS = 100
#: Marks the batch's own messages in the prompt (after the worked example).
CONVERSATION = "Conversation:\n"

#: One worked example (its people and facts are not the conversation's: the gate rejects a copied
#: name or number, since the batch's messages do not hold it). Without it Qwen2.5-Coder-1.5B wrote
#: first-person quotes and cited every message of the batch (core_extract/3 on conv-26).
_EXAMPLE = (
    "1. [3 May 2023] Ana: Guess what, I started a new job as a nurse at St. Mary's today!\n"
    "2. [3 May 2023] Ben: Congrats! Is it far from home?\n"
    "3. [3 May 2023] Ana: 20 minutes by bike, so no.\n"
    "4. [3 May 2023] Ben: Nice! I've been hiking a lot lately, I'm obsessed with mountains.\n"
    'Answer: {"facts": [{"subject": "Ana", "type": "Event", "statement": "Ana started a job as a nurse at '
    'St. Mary\'s on 3 May 2023.", "sources": [1]}, {"subject": "Ana", "type": "Identity", "statement": '
    '"Ana\'s job at St. Mary\'s is 20 minutes by bike from her home.", "sources": [1, 3]}, {"subject": "Ben", '
    '"type": "Preference", "statement": "Ben loves hiking in the mountains.", "sources": [4]}]}'
)


def response_schema(schema: Sequence[FactType]) -> type[BaseModel]:
    """Pydantic response model whose ``type`` is an enum of the configured fact types."""
    type_enum = Literal[tuple(t.name for t in schema)]  # type: ignore[valid-type]
    fact = create_model("ExtractedFact",
                        subject=(str, Field(min_length=1, max_length=40)),
                        type=(type_enum, ...),
                        statement=(str, Field(min_length=3, max_length=STATEMENT_MAX_CHARS)),
                        sources=(list[int], Field(max_length=3)))
    return create_model("ExtractedFacts", facts=(list[fact], Field(max_length=MAX_FACTS)))


def build(lines: Sequence[tuple[str, str, str]], schema: Sequence[FactType]) -> Prompt:
    """``lines`` = (date, speaker, text) per message, numbered 1..n in the prompt after the fixed
    instructions, fact types and worked example."""
    types = "\n".join(f"- {t.name}: {t.description}" for t in schema)
    numbered = "\n".join(f"{i}. [{date}] {speaker}: {clip(text, 220)}" for i, (date, speaker, text)
                         in enumerate(lines, start=1))
    text = (f"Fact types:\n{types}\n\n"
            f"List at most {MAX_FACTS} facts about the people in the conversation. Each fact: subject (the "
            "person's name), type, statement (one short third-person sentence that says only what the messages "
            "say, with names, numbers and places copied exactly and absolute dates), and sources (the numbers of "
            "the messages it comes from). Leave out greetings, questions, compliments and small talk. "
            "Answer JSON: {\"facts\": [...]}.\n\nExample (its people and facts are not in the conversation "
            f"below):\n{_EXAMPLE}\n\n{CONVERSATION}{numbered}\nAnswer:")
    return Prompt(NAME, VERSION, text, system=SYSTEM)
