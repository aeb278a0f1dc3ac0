"""CoreFact extraction (§3.3): schema-eligible facts from a batch of Topical Segment messages.

The model sees the messages numbered 1..n with their session dates (relative dates already resolved)
and answers JSON: facts with subject, type (an enum of the schema), statement, and the numbers of the
messages each fact comes from (range-checked by the caller).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from memsif.prompts import Prompt, clip
from memsif.records import FactType

NAME = "core_extract"
#: Version 4: instructions, fact types and a worked example come first and are the same for every
#: batch (a back-end that keeps the previous prompt's key/value cache computes them once); the
#: conversation comes last, after a note that the example's people are not in it. Version 1 had the
#: conversation first; 2 the example without the note; 3 no example (see ``_EXAMPLE``). Version 5:
#: statements of at most 20 words under a 160-character cap, relative dates annotated with their period,
#: facts from the subject's own messages, photo notes are pictures. Version 6: each fact names what of the
#: subject's life it is about ("about": "dogs", "home", "job"), the key a later fact's change is found by.
VERSION = "core_extract/6"
#: The second pass over a batch whose candidates the checks refused: the same prompt, then the refused
#: statements with the reasons and the statements kept, before the answer (``build_again``).
AGAIN_VERSION = "core_extract/6+again/2"
SYSTEM = "You extract durable personal facts from a conversation as JSON."
MAX_FACTS = 3
#: The second pass asks for fewer: the writers it names have little left to say (and decoding is its cost).
AGAIN_MAX_FACTS = 2
#: Longest statement the response schema allows, well above the 20 words the prompt asks for: one that
#: fills it was cut off by the schema and is never stored (at 100 characters most were).
STATEMENT_MAX_CHARS = 160
#: Longest attribute key ("about") the response schema allows: a few words.
ABOUT_MAX_CHARS = 30
#: Marks the batch's own messages in the prompt (after the worked example).
CONVERSATION = "Conversation:\n"

#: One worked example (its people and facts are not the conversation's: the gate rejects a copied
#: name or number, since the batch's messages do not hold it). Without it Qwen2.5-Coder-1.5B wrote
#: first-person quotes and cited every message of the batch (core_extract/3 on conv-26).
_EXAMPLE_MESSAGES = (
    "1. [3 May 2023] Ana: Guess what, I started a new job as a nurse at St. Mary's today [3 May 2023]!\n"
    "2. [3 May 2023] Ben: Congrats! Is it far from home?\n"
    "3. [3 May 2023] Ana: 20 minutes by bike, so no.\n"
    "4. [3 May 2023] Ben: Nice! I've been hiking a lot lately, I'm obsessed with mountains.\n"
)
EXAMPLE_FACTS = (
    ("Ana", "Event", "Ana started a job as a nurse at St. Mary's on 3 May 2023.", [1]),
    ("Ana", "Identity", "Ana's job at St. Mary's is 20 minutes by bike from her home.", [1, 3]),
    ("Ben", "Preference", "Ben loves hiking in the mountains.", [4]),
)
#: What each example fact is about (its attribute key).
EXAMPLE_ABOUT = ("job", "commute", "hiking")
_EXAMPLE = _EXAMPLE_MESSAGES + "Answer: " + json.dumps(
    {"facts": [{"subject": who, "about": about, "type": kind, "statement": said, "sources": cited}
               for (who, kind, said, cited), about in zip(EXAMPLE_FACTS, EXAMPLE_ABOUT, strict=True)]})
#: Words (stems) of the example's facts that any fact statement may use without its sources holding
#: them; every other content word of the example marks a copy (``memsif.facts.core.EXAMPLE_WORDS``).
EXAMPLE_GENERIC_WORDS = frozenset({"love", "start", "job", "home"})


class ExtractedFacts(BaseModel):
    """The extraction's reply: ``facts``, each with subject, about (its attribute key), type, statement and
    sources (the model ``response_schema`` makes types them)."""

    facts: list[Any]


def response_schema(schema: Sequence[FactType], max_facts: int = MAX_FACTS) -> type[ExtractedFacts]:
    """Pydantic response model whose ``type`` is an enum of the configured fact types, at most ``max_facts``."""
    type_enum = Literal[tuple(t.name for t in schema)]  # type: ignore[valid-type]
    fact = create_model("ExtractedFact",
                        subject=(str, Field(min_length=1, max_length=40)),
                        about=(str, Field("", max_length=ABOUT_MAX_CHARS)),
                        type=(type_enum, ...),  # type: ignore[arg-type]  # a Literal made at run time
                        statement=(str, Field(min_length=3, max_length=STATEMENT_MAX_CHARS)),
                        sources=(list[int], Field(max_length=3)))
    return create_model("ExtractedFacts", __base__=ExtractedFacts, facts=(list[fact], Field(max_length=max_facts)))


def grammar(reply_model: type[ExtractedFacts]) -> dict[str, Any]:
    """The JSON schema the reply is decoded under: ``reply_model``'s, with each fact's ``about`` required (a
    reply read back without it, as a test's or an older model's, gets an empty key)."""
    schema = reply_model.model_json_schema()
    for definition in schema.get("$defs", {}).values():
        if "about" in definition.get("properties", {}):
            definition["required"] = list(dict.fromkeys([*definition.get("required", []), "about"]))
    return schema


def build(lines: Sequence[tuple[str, str, str]], schema: Sequence[FactType]) -> Prompt:
    """``lines`` = (date, speaker, text) per message, numbered 1..n in the prompt after the fixed
    instructions, fact types and worked example."""
    types = "\n".join(f"- {t.name}: {t.description}" for t in schema)
    numbered = "\n".join(f"{i}. [{date}] {speaker}: {clip(text, 220)}" for i, (date, speaker, text)
                         in enumerate(lines, start=1))
    text = (f"Fact types:\n{types}\n\n"
            f"List at most {MAX_FACTS} facts about the people in the conversation. Each fact: subject (the "
            "person's name), about (what of their life it is about, in one to three words: \"dogs\", \"home\", "
            "\"job\"), type, statement (one third-person sentence of at most 20 words that says only "
            "what the messages say, with names, numbers and places copied exactly and absolute dates), and sources "
            "(the numbers of "
            "the messages it comes from). Take each fact from its subject's own messages (what they say about "
            "themselves), not from what others say to them; a [shares a photo: ...] note only shows what a picture "
            "looks like. Leave out greetings, questions, compliments, thanks and small talk. "
            "Answer JSON: {\"facts\": [...]}.\n\nExample (its people and facts are not in the conversation "
            f"below):\n{_EXAMPLE}\n\n{CONVERSATION}{numbered}\nAnswer:")
    return Prompt(NAME, VERSION, text, system=SYSTEM)


def build_again(lines: Sequence[tuple[str, str, str]], schema: Sequence[FactType], writers: Sequence[str],
                kept: Sequence[str]) -> Prompt:
    """The second pass's prompt: ``build``'s up to the conversation's end (a back-end that keeps the
    previous prompt's key/value cache computes the shared part once), then a request for facts about
    ``writers`` (people whose messages the refused facts cited and who have no fact kept from them), each
    from that person's own message, leaving out the ``kept`` statements. The refused statements are not
    shown: with them in the prompt the 1.5B wrote most of them again (core_extract/5+again/1)."""
    first = build(lines, schema).text.removesuffix("\nAnswer:")
    stored = "".join(f"\n- {clip(statement, STATEMENT_MAX_CHARS)}" for statement in kept)
    names = " and ".join(writers)
    text = (f"{first}\n\n" + (f"Already kept:{stored}\n" if kept else "")
            + f"List at most {AGAIN_MAX_FACTS} more facts about {names}, each taken from that person's own message: "
            "what they say they did, have, are or like; not what someone says to them, wishes them or asks them. "
            "Answer {\"facts\": []} if there is none.\nAnswer:")
    return Prompt(NAME, AGAIN_VERSION, text, system=SYSTEM)
