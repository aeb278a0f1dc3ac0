"""The rules that answer "not in this memory" without the model (``memsif.answer.relevance``), on questions
shaped like the labelled never-discussed and other-language sets."""

import pytest

from memsif.answer.relevance import Said, judge
from memsif.entities import SpacyEntityExtractor

SPEAKERS = ["Caroline", "Melanie"]
MEMORY = ["I went to the LGBTQ support group yesterday, it was so powerful.",
          "By the way, I bought air tickets to Toronto, and I'm leaving the day after tomorrow.",
          "I adopted a pup from a shelter in Stamford last week.",
          "Oh, I've been to Paris yesterday! Daisy is a Labrador.",
          "Melanie painted a sunrise over the lake last week.",
          "We're thinking about adopting a child next year."]


@pytest.fixture(scope="module")
def entities():
    try:
        return SpacyEntityExtractor()
    except Exception as exc:
        pytest.skip(f"spaCy's tagger is not installed: {exc}")


def decide(question, entities, relevance=0.6, floor=0.3, embedder="all-MiniLM-L6-v2"):
    asked = []

    def said():
        asked.append(True)
        return Said(MEMORY)
    refused, rule, lang = judge(question, relevance, floor, SPEAKERS, said, embedder, entities)
    return refused, rule, lang, bool(asked)


def test_a_thing_no_message_mentions_is_refused_and_named(entities):
    refused, rule, lang, _ = decide("What brand of motorcycle does Caroline ride?", entities)
    assert refused and lang == "en"
    assert "no message of this memory mentions what it asks about (brand, motorcycle)" in rule


@pytest.mark.parametrize("question", ["What did Melanie paint?", "When did Caroline go to the support group?",
                                      "Is Caroline thinking about adoption?"])
def test_things_the_memory_mentions_by_stem_pass(question, entities):
    refused, rule, _, _ = decide(question, entities)
    assert not refused, rule


def test_a_name_no_message_mentions_is_refused(entities):
    refused, rule, _, _ = decide("When did Caroline fly to Tokyo?", entities)
    assert refused and "the question names Tokyo, which no message of this memory mentions" in rule


@pytest.mark.parametrize(("question", "refused_as"), [
    ("When did Caroline leave for her trip to Canada?", None),     # Toronto is in Canada
    ("Does Melanie live in Connecticut?", None),                   # Stamford, Connecticut
    ("When did Caroline fly to Japan?", "Japan"),                  # no Japanese city either
    ("When did Melanie visit Texas?", "Texas"),                    # a US state none of whose cities is named
    ("When did Caroline visit Vancouver?", "Vancouver"),           # a city is not named by another city
    ("When did Melanie fly to Australia?", "Australia"),           # "Labrador" the dog, not the small town
    ("Which cities has Caroline visited?", None),                  # Paris and Toronto are cities
])
def test_a_country_or_state_is_mentioned_by_one_of_its_cities(entities, question, refused_as):
    refused, rule, _, _ = decide(question, entities)
    assert refused is (refused_as is not None), rule
    if refused_as:
        assert f"the question names {refused_as}, which no message" in rule or refused_as in rule


def test_an_inference_question_is_judged_by_the_floor_only(entities):
    refused, rule, _, read = decide("Would Melanie likely enjoy Vivaldi?", entities)
    assert not refused and not read and "≥ relevance floor" in rule


@pytest.mark.parametrize("question,lang", [("¿Qué pintó Melanie la semana pasada?", "es"),
                                           ("Was hat Melanie letzte Woche gemalt?", "de")])
def test_another_language_is_not_held_to_the_english_floor(question, lang, entities):
    refused, rule, detected, _ = decide(question, entities, relevance=0.12)
    assert detected == lang and not refused
    assert "the relevance floor 0.30, measured in English, was not applied" in rule


def test_an_english_question_below_the_floor_is_refused(entities):
    refused, rule, _, _ = decide("What did Melanie paint?", entities, relevance=0.12)
    assert refused and "below the relevance floor 0.30" in rule


def test_nothing_retrieved_is_refused_without_reading_the_memory(entities):
    refused, rule, _, read = decide("What did Melanie paint?", entities, relevance=None)
    assert refused and not read and "nothing was retrieved" in rule


def test_the_memory_stems_are_built_once():
    said = Said(MEMORY)
    assert said.stems is said.stems and "adopt" in said.stems and "motorcycl" not in said.stems
