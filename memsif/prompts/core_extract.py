"""CoreFact extraction (§3.3): schema-eligible facts from a batch of Topical Segment messages.

The model sees the messages numbered 1..n with their session dates (relative dates already resolved)
and answers JSON: facts with subject, type (an enum of the schema), statement, and the numbers of the
messages each fact comes from (range-checked by the caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, create_model

from memsif.facts.schema import FactType
from memsif.prompts import Prompt, clip

NAME = "core_extract"
VERSION = "core_extract/1"
SYSTEM = "You extract durable personal facts from a conversation as JSON."
MAX_FACTS = 3
#: Longest statement the response schema allows; one that fills it without ending was cut off.
STATEMENT_MAX_CHARS = 100


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
    """``lines`` = (date, speaker, text) per message, numbered 1..n in the prompt."""
    types = "\n".join(f"- {t.name}: {t.description}" for t in schema)
    numbered = "\n".join(f"{i}. [{date}] {speaker}: {clip(text, 220)}" for i, (date, speaker, text)
                         in enumerate(lines, start=1))
    text = (f"Conversation:\n{numbered}\n\nFact types:\n{types}\n\n"
            f"List at most {MAX_FACTS} facts about the people in this conversation. Each fact: subject (the "
            "person), type, statement (one short third-person sentence with absolute dates), and sources "
            "(the numbers of the messages it comes from). Answer JSON: {\"facts\": [...]}.")
    return Prompt(NAME, VERSION, text, system=SYSTEM)
