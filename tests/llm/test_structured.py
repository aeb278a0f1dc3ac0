"""Parser tests on messy, real-looking LLM replies; constrained decoding on the packaged model."""

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from memsif.errors import LLMOutputError
from memsif.llm.structured import parse_json_reply


class Fact(BaseModel):
    subject: str = Field(max_length=60)
    type: Literal["Identity", "Event", "Preference", "Relation"]
    statement: str = Field(max_length=200)


class Facts(BaseModel):
    facts: list[Fact] = Field(max_length=4)


GOOD = '{"facts": [{"subject": "Melanie", "type": "Preference", "statement": "Melanie loves painting."}]}'


@pytest.mark.parametrize("reply", [
    GOOD,
    f"```json\n{GOOD}\n```",
    f"Sure! Here are the facts I found:\n\n{GOOD}\n\nLet me know if you need anything else.",
    f"```\n{GOOD}```",
    '[{"subject": "Melanie", "type": "Preference", "statement": "Melanie loves painting."}]',
    '{"facts": [{"subject": "Melanie", "type": "Preference", "statement": "She said \\"hi {there}\\"."}]}',
])
def test_recovers_json_from_fences_and_prose(reply):
    facts = parse_json_reply(reply, Facts).facts
    assert len(facts) == 1 and facts[0].subject == "Melanie"


@pytest.mark.parametrize(("reply", "message"), [
    ("", "empty reply"),
    ("   \n", "empty reply"),
    ('{"facts": [{"subject": "Melanie", "type": "Preference", "statement": "Melanie lo', "truncated JSON"),
    ("I could not find any facts in this conversation.", "no JSON"),
    ('{"facts": [{"subject": "Melanie", "type": "Hobby", "statement": "paints"}]}', "does not match Facts"),
    ('{"items": []}', "does not match Facts"),
])
def test_unusable_replies_raise_with_the_reply_quoted(reply, message):
    with pytest.raises(LLMOutputError, match=message):
        parse_json_reply(reply, Facts)


def test_empty_list_is_a_valid_answer_not_an_error():
    assert parse_json_reply('{"facts": []}', Facts).facts == []


@pytest.mark.integration
def test_constrained_decoding_keeps_the_135m_model_inside_the_schema():
    from memsif.config import MemSIFConfig
    from memsif.llm import load_llm
    from memsif.llm.packaged import SMOLLM2
    from memsif.prompts import Prompt

    llm = load_llm(MemSIFConfig.from_env(llm_model=SMOLLM2, llm_backend="transformers"))
    prompt = Prompt("core_extract", "test", "Melanie: I love painting with my kids.\nList facts as JSON.",
                    system="You extract facts as JSON.")
    gen = llm.generate(prompt, max_new_tokens=400, temperature=0.0, json_schema=Facts.model_json_schema())
    parsed = parse_json_reply(gen.text, Facts)
    assert all(f.type in ("Identity", "Event", "Preference", "Relation") for f in parsed.facts)
