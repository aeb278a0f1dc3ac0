"""CoreFact extraction (§3.3): schema-eligible facts from a batch of Topical Segment messages.

The model sees the messages numbered 1..n with their session dates (relative dates already resolved)
and answers JSON whose facts are one line each, ``"subject | about | type | statement | sources"``
(``FACT_FORM``): the person, what of their life it is about, the type (one of the schema's), the
statement, and the numbers of the messages it comes from (range-checked by the caller). The line form
writes 29 tokens a fact where JSON objects wrote 50 (``benchmarks/speed/output_forms.py``), and writing
is most of an extraction's seconds; the grammar (``grammar``) holds each line to its pattern.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from memsif.errors import LLMOutputError
from memsif.llm.structured import parse_json_reply
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
#: Version 7: each fact is one "subject | about | type | statement | sources" line (``FACT_FORM``) instead of
#: a JSON object: 40 % fewer tokens written for the same facts.
VERSION = "core_extract/7"
#: The second pass over a batch whose candidates the checks refused: the same prompt, then the refused
#: statements with the reasons and the statements kept, before the answer (``build_again``).
AGAIN_VERSION = "core_extract/7+again/2"
SYSTEM = "You extract durable personal facts from a conversation as JSON."
MAX_FACTS = 3
#: The second pass asks for fewer: the writers it names have little left to say (and decoding is its cost).
AGAIN_MAX_FACTS = 2
#: Longest statement the response schema allows, well above the 20 words the prompt asks for: one that
#: fills it was cut off by the schema and is never stored (at 100 characters most were).
STATEMENT_MAX_CHARS = 160
#: Longest attribute key ("about") the response schema allows: a few words.
ABOUT_MAX_CHARS = 30
#: Longest subject the reply's pattern allows (a name).
SUBJECT_MAX_CHARS = 40
#: Most messages a fact may cite.
MAX_SOURCES = 3
#: Marks the batch's own messages in the prompt (after the worked example).
CONVERSATION = "Conversation:\n"
#: The order of a fact line's fields, as the prompt names them.
FACT_FORM = "subject | about | type | statement | sources"
SEPARATOR = " | "
#: What a field's text may hold: no field separator, no quote or backslash (they would need escaping inside
#: the reply's JSON string) and no control character.
_FIELD = r'[^|"\\\x00-\x1f]'

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


def fact_line(subject: str, about: str, kind: str, statement: str, sources: Sequence[int]) -> str:
    """One fact in the reply's line form (``FACT_FORM``): ``"Ana | job | Event | Ana started … | 1, 3"``."""
    return SEPARATOR.join([subject, about, kind, statement, ", ".join(str(n) for n in sources)])


_EXAMPLE = _EXAMPLE_MESSAGES + "Answer: " + json.dumps(
    {"facts": [fact_line(who, about, kind, said, cited)
               for (who, kind, said, cited), about in zip(EXAMPLE_FACTS, EXAMPLE_ABOUT, strict=True)]})
#: Words (stems) of the example's facts that any fact statement may use without its sources holding
#: them; every other content word of the example marks a copy (``memsif.facts.core.EXAMPLE_WORDS``).
EXAMPLE_GENERIC_WORDS = frozenset({"love", "start", "job", "home"})


class ExtractedFact(BaseModel):
    """One fact of the extraction's reply, read from its line (``read_reply``)."""

    subject: str = Field(min_length=1, max_length=SUBJECT_MAX_CHARS)
    about: str = Field("", max_length=ABOUT_MAX_CHARS)
    type: str
    statement: str = Field(min_length=3, max_length=STATEMENT_MAX_CHARS)
    sources: list[int] = Field(default_factory=list, max_length=MAX_SOURCES)


class _Reply(BaseModel):
    facts: list[Any]


def fact_pattern(schema: Sequence[FactType]) -> str:
    """The regular expression a fact line matches (``FACT_FORM``): a subject of 1..40 characters, an
    "about" of at most 30, one of the schema's type names, a statement of 3..160 and 1..3 message
    numbers, separated by ``" | "``."""
    types = "|".join(re.escape(t.name) for t in schema)
    return (f"^{_FIELD}{{1,{SUBJECT_MAX_CHARS}}} \\| {_FIELD}{{0,{ABOUT_MAX_CHARS}}} \\| ({types}) \\| "
            f"{_FIELD}{{3,{STATEMENT_MAX_CHARS}}} \\| [1-9][0-9]?(, [1-9][0-9]?){{0,{MAX_SOURCES - 1}}}$")


def grammar(schema: Sequence[FactType], max_facts: int = MAX_FACTS) -> dict[str, Any]:
    """The JSON schema the reply is decoded under: ``{"facts": [line, ...]}`` with at most ``max_facts``
    lines, each held to ``fact_pattern``."""
    line = {"type": "string", "pattern": fact_pattern(schema)}
    return {"type": "object", "properties": {"facts": {"type": "array", "items": line, "maxItems": max_facts}},
            "required": ["facts"], "additionalProperties": False}


def _fact(item: Any, schema: Sequence[FactType]) -> ExtractedFact:
    """One reply item as a fact: a line (``FACT_FORM``) or, as an older reply or a test's gives it, an object
    with the same fields.

    Raises:
        ValueError: the item is neither, its type is not one of ``schema``'s, or a field breaks its limit.
    """
    if isinstance(item, str):
        fields = [f.strip() for f in item.split("|")]
        if len(fields) != 5 or not re.fullmatch(r"\d+(\s*,\s*\d+)*", fields[4]):
            raise ValueError(f"not a fact line \"{FACT_FORM}\": {item!r}")
        item = dict(zip(("subject", "about", "type", "statement"), fields[:4], strict=False),
                    sources=[int(n) for n in fields[4].split(",")])
    if not isinstance(item, dict):
        raise ValueError(f"a fact is a line \"{FACT_FORM}\", not {type(item).__name__}: {item!r}")
    fact = ExtractedFact.model_validate(item)  # ValidationError is a ValueError
    if fact.type not in {t.name for t in schema}:
        raise ValueError(f"fact type {fact.type!r} is not one of the schema's: {item!r}")
    return fact


def read_reply(text: str, schema: Sequence[FactType]) -> list[ExtractedFact]:
    """The facts of an extraction's reply (``{"facts": [line, ...]}``, fences and prose around it allowed).

    Raises:
        LLMOutputError: the reply is empty, not JSON, cut off, or a fact in it is malformed (the message
            names which).
    """
    items = parse_json_reply(text, _Reply).facts
    try:
        return [_fact(item, schema) for item in items]
    except ValueError as exc:  # pydantic's ValidationError included
        raise LLMOutputError(f"the reply holds a malformed fact: {exc}; reply: {text[:300]!r}") from exc


def salvage_reply(text: str, schema: Sequence[FactType]) -> list[ExtractedFact]:
    """The well-formed facts of a reply that was cut off (at the token limit) or holds a malformed one:
    every complete item after the first '[' that reads as a fact. Empty when none."""
    start = text.find("[")
    if start < 0:
        return []
    decoder, position = json.JSONDecoder(), start + 1
    facts: list[ExtractedFact] = []
    while True:
        while position < len(text) and text[position] in " ,\n\t":
            position += 1
        try:
            item, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:  # cut off, or the list's end
            return facts
        try:
            facts.append(_fact(item, schema))
        except ValueError:
            continue


def build(lines: Sequence[tuple[str, str, str]], schema: Sequence[FactType]) -> Prompt:
    """``lines`` = (date, speaker, text) per message, numbered 1..n in the prompt after the fixed
    instructions, fact types and worked example."""
    types = "\n".join(f"- {t.name}: {t.description}" for t in schema)
    numbered = "\n".join(f"{i}. [{date}] {speaker}: {clip(text, 220)}" for i, (date, speaker, text)
                         in enumerate(lines, start=1))
    text = (f"Fact types:\n{types}\n\n"
            f"List at most {MAX_FACTS} facts about the people in the conversation, each as one line \"{FACT_FORM}\": "
            "subject (the person's name), about (what of their life it is about, in one to three words: \"dogs\", "
            "\"home\", \"job\"), type, statement (one third-person sentence of at most 20 words that says only "
            "what the messages say, with names, numbers and places copied exactly and absolute dates), and sources "
            "(the numbers of the messages it comes from). Take each fact from its subject's own messages (what they "
            "say about themselves), not from what others say to them; a [shares a photo: ...] note only shows what a "
            "picture looks like. Leave out greetings, questions, compliments, thanks and small talk. "
            "Answer JSON: {\"facts\": [\"line\", ...]}.\n\nExample (its people and facts are not in the conversation "
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
