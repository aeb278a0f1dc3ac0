"""An answer to "When …?" given the period its context resolves (``memsif.answer.when``), no model."""

import json
from datetime import datetime

import pytest

from memsif.answer.when import resolved_period
from memsif.records import Message
from memsif.viz import answer_markdown, trace_markdown
from tests.fakes import TRUSTS_SUFFICIENCY, FakeLLM, KeywordEmbedder

EXCERPTS = """Conversation excerpts (oldest first):
25 August 2023:
- Caroline: I went hiking last week [the week before 25 August 2023] and got into a bad spot with some people.
- Melanie: Oh no, that sounds scary. Are you okay?
- Caroline: We had a picnic yesterday [24 August 2023] with the kids."""


@pytest.mark.parametrize("answer, expected", [
    ("25 August 2023", "The week before 25 August 2023"),  # the anchor day without its qualifier
    ("On 25 August 2023.", "The week before 25 August 2023"),
    ("24 August 2023", "The week before 25 August 2023"),  # another line's day
    ("August 2023", "The week before 25 August 2023"),
])
def test_a_when_answer_gives_the_period_of_the_line_closest_to_the_question(answer, expected):
    got = resolved_period("When did Caroline encounter people on a hike?", answer, EXCERPTS)
    assert got is not None and got.answer == expected
    assert got.line.startswith("- Caroline: I went hiking") and got.shared >= 2
    assert answer in got.explain(answer) and expected in got.explain(answer)


def test_a_qualifier_is_restored_on_the_answers_own_day_in_a_stored_facts_round_brackets():
    context = ("Conversation excerpts (oldest first):\n23 August 2023:\n- Caroline: Big news today!\n"
               "Facts (most relevant first):\n"
               "- Caroline: Caroline applied to adoption agencies in the week of 23 August 2023.\n"
               "- Caroline: Caroline drew a self-portrait last week (the week before 23 August 2023).")
    got = resolved_period("When did Caroline apply to adoption agencies?", "23 August 2023", context)
    assert got is not None and (got.answer, got.rule) == ("The week of 23 August 2023", "qualifier")
    drew = resolved_period("When did Caroline draw a self-portrait?", "23 August 2023", context)
    assert drew is not None and drew.answer == "The week before 23 August 2023"


@pytest.mark.parametrize("line, period", [
    ("- Melanie: Yeah, I painted that lake sunrise last year [2022]!", "2022"),
    ("- Melanie: Last month [September 2023] I got hurt and took a break from pottery.", "September 2023"),
    ("- Melanie: Melanie took her kids to the museum yesterday (5 July 2023).", "5 July 2023"),
    ("- Gina: Got the tattoo a few years ago [a few years before 8 February 2023], it stands for freedom.",
     "A few years before 8 February 2023"),
    ("- Caroline: I went to the pride parade last Friday [11 August 2023].", "11 August 2023"),
])
def test_each_period_the_context_writes_replaces_a_day_header_s_date(line, period):
    context = f"Conversation excerpts (oldest first):\n15 July 2023:\n{line}\n- Caroline: That's lovely!"
    question = {"2022": "When did Melanie paint the lake sunrise?",
                "September 2023": "When did Melanie get hurt and take a break?",
                "5 July 2023": "When did Melanie take the kids to the museum?",
                "11 August 2023": "When did Caroline go to a pride parade?"}.get(
                    period, "When did Gina get a tattoo for freedom?")
    got = resolved_period(question, "15 July 2023", context)
    assert got is not None and (got.answer, got.rule) == (period, "closest line")


@pytest.mark.parametrize("question, answer", [
    ("What did Caroline do on a hike?", "25 August 2023"),  # not a "when" question
    ("When did Caroline encounter people on a hike?", "The week before 25 August 2023"),  # already the period
    ("When did Caroline encounter people on a hike?", "Two weeks ago"),  # a period, no date
    ("When did Caroline encounter people on a hike?", "She did not say."),  # no date
    ("When did Melanie bake bread?", "25 August 2023"),  # no line is about it
    ("When was the picnic and the hike?", "24 August 2023"),  # one term each: two lines tie, no qualifier on the day
])
def test_an_answer_is_kept_where_no_line_settles_its_period(question, answer):
    assert resolved_period(question, answer, EXCERPTS) is None


def test_the_speakers_names_do_not_make_a_line_closest():
    context = ("Conversation excerpts (oldest first):\n9 June 2023:\n"
               "- Caroline: Caroline Caroline, we met yesterday [8 June 2023].\n"
               "- Melanie: My school speech went well.")
    assert resolved_period("When did Caroline meet Melanie?", "9 June 2023", context) is None


def test_the_engine_answers_with_the_period_and_shows_the_models_words_and_the_rule(engine_factory, monkeypatch):
    facts = {"facts": [{"subject": "Melanie", "type": "Event", "statement": "Melanie made a pottery bowl yesterday.",
                        "sources": [1]}]}
    llm = FakeLLM({"core_extract": json.dumps(facts), "core_operation": "A", "sufficiency": 0.9,
                   "answer": "8 May 2023."})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"pottery": 0, "bowl": 0}), core_facts=True,
                            tau_split=0.0, tau_merge=0.01, sem_mapping="affine", trajectory_min_phi=1.0,
                            gate_fact_floor=0.0, profile=TRUSTS_SUFFICIENCY)
    engine.ingest([Message(id="D1:1", namespace="t", speaker="Melanie", text="I made a pottery bowl yesterday.",
                           time=datetime(2023, 5, 8), session_id="s1")])
    result = engine.ask("When did Melanie make a pottery bowl?", namespace="t")
    assert (result.answer, result.model_answer) == ("7 May 2023", "8 May 2023.")
    assert "closest line" in result.when_rule
    assert "Melanie made a pottery bowl yesterday (7 May 2023)" in result.when_rule
    assert "The model wrote **8 May 2023.**" in answer_markdown(result)
    assert "Date of the answer: the model wrote" in trace_markdown(result)[1]
