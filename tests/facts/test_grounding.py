"""The grounding gate before every CoreFact write, and value changes that are never merged by rule
(§3.3)."""

from __future__ import annotations

import re
from datetime import datetime

import numpy as np
import pytest

from memsif.facts.core import EXAMPLE_WORDS
from memsif.facts.grounding import check
from memsif.facts.values import mask, values
from memsif.records import Message
from tests.fakes import FakeLLM, HashEmbedder, grounded_extraction

MAY, AUGUST = datetime(2023, 5, 8, 13, 56), datetime(2023, 8, 14, 10, 0)
CFG = dict(core_facts=True, tau_split=0.0, tau_merge=0.01, sem_mapping="affine", trajectory_min_phi=1.0)
SPEAKERS = ["Caroline", "Melanie"]


def msg(mid: str, speaker: str, text: str, when: datetime = MAY) -> Message:
    return Message(id=mid, namespace="t", speaker=speaker, text=text, time=when, session_id=mid.split(":")[0])


PAINT = msg("D1:14", "Melanie", "Yeah, I painted that lake sunrise last year! It's special to me.")
PRAISE = msg("D1:12", "Melanie", "You'd be a great counselor! Your empathy will really help people.")
PIANO = msg("D5:5", "Caroline", "Wow, Melanie! I'm getting creative too, just learning the piano.")
QUESTION = msg("D3:15", "Caroline", "Wow, what an amazing family pic! How long have you been married?")
SUNRISE_PHOTO = msg("D1:16", "Melanie", "Here it is! [shares a photo: a painting of a sunrise over a calm lake "
                    "with mountains]")
MARRIED = msg("D3:16", "Melanie", "5 years already! Time flies - feels like just yesterday I put this dress on!")


def test_a_statement_its_source_says_passes_with_its_measures():
    verdict = check("Melanie", "Melanie painted a lake sunrise last year.", [PAINT], SPEAKERS)
    assert verdict.passed and verdict.reason == "grounded in its sources"
    assert verdict.scores["overlap"] == 1.0 and verdict.support_ids == ["D1:14"]


def test_a_nickname_subject_is_stored_as_the_speaker():
    verdict = check("Mel", "Mel painted a lake sunrise.", [PAINT], SPEAKERS)
    assert verdict.passed and verdict.subject == "Melanie"


@pytest.mark.parametrize(("subject", "statement", "cited", "reason"), [
    ("Melanie", 'Melanie painted a lake sunrise }, {', [PAINT], "format debris"),
    ("Melanie", ("Melanie painted a lake sunrise last year, it is special to her and she keeps it on the wall of "
                 "her studio")[:100], [PAINT], "cut off at the 100-character limit"),
    ("Melanie", "Melanie painted a lake sunrise and…", [PAINT], "cut off (ends with an ellipsis)"),
    ("Melanie", "I am happy to say that I am happy to say that I am happy to say", [PAINT], "repeated itself"),
    ("I am happy to say that I painted", "Melanie painted a lake sunrise.", [PAINT], "is a sentence, not a name"),
    ("Person", "Melanie painted a lake sunrise.", [PAINT], "names nobody"),
    ("Carolina", "Carolina painted a lake sunrise.", [PAINT], "neither a speaker nor named"),
    ("Melanie", "8 May 2023", [PAINT], "states a bare date"),
    ("Melanie", "Melanie", [PAINT], "states nothing"),
    ("Caroline", "How long have you been married?", [QUESTION], "is a question"),
    ("Melanie", "I am so proud of you for your journey.", [PAINT], "addressed to someone"),
    ("Caroline", "Caroline painted a lake sunrise last year.", [PAINT], "none of D1:14 is by Caroline"),
    ("Melanie", "Melanie is learning the piano.", [PIANO], "none of D5:5 is by Melanie"),
    ("Melanie", "Melanie painted a lake sunrise last year", [PAINT], "cut off mid-phrase"),
    ("Melanie", "Melanie painted a lake sunrise 之前.", [PAINT], "script its sources do not use (CJK)"),
    ("Melanie", "Melanie is a nurse at St. Mary's.", [PAINT], "copies the prompt's worked example"),
    ("Melanie", "Melanie painted a sunrise over a calm lake with mountains.", [SUNRISE_PHOTO], "photo caption"),
    ("Caroline", "Caroline painted a lake sunrise last year.", [PAINT, PIANO], "content words are in the supporting"),
    ("Melanie", "Melanie has been married for 9 years.", [QUESTION, MARRIED], "values not in its sources: 9"),
    ("Melanie", "Melanie painted a lake sunrise in Norway.", [PAINT], "names not in its sources: Norway"),
    ("Melanie", "Melanie sold three paintings at a gallery in June.", [PAINT], "values not in its sources"),
])
def test_each_kind_of_bad_candidate_is_rejected_with_its_reason(subject, statement, cited, reason):
    verdict = check(subject, statement, cited, SPEAKERS, max_statement_chars=100,
                    example_words=EXAMPLE_WORDS)
    assert not verdict.passed and reason in verdict.reason, verdict.reason


def test_praise_from_the_other_speaker_is_not_a_fact_and_the_question_is_not_support():
    """Melanie's "You'd be a great counselor" is a compliment, not a fact about Caroline: of the labelled
    stored facts whose sources were all another speaker's words, 13 of 14 were unsupported
    (benchmarks/quality/data/corefact-stored-*.jsonl). Caroline's question states nothing."""
    praise = check("Caroline", "Caroline has empathy.", [PRAISE], SPEAKERS)
    assert not praise.passed and "none of D1:12 is by Caroline: another speaker's words" in praise.reason
    assert not check("Melanie", "Melanie has empathy.", [PRAISE], SPEAKERS).passed
    verdict = check("Melanie", "Melanie has been married for 5 years.", [QUESTION, MARRIED], SPEAKERS)
    assert verdict.passed and verdict.support_ids == ["D3:16"]


def test_similarity_is_a_second_witness_when_words_only_partly_match():
    emb = HashEmbedder()
    statement = "Melanie painted a sunrise over the sea for her gallery."  # half its words are in the source
    vector = emb.embed_documents([statement])[0]
    unrelated = emb.embed_documents(["completely different words here"])
    verdict = check("Melanie", statement, [PAINT], SPEAKERS, vector, unrelated)
    assert not verdict.passed and "cosine with its closest source" in verdict.reason
    assert check("Melanie", statement, [PAINT], SPEAKERS, vector, emb.embed_documents([statement])).passed


def test_a_candidate_must_cite_a_message():
    with pytest.raises(ValueError, match="cite at least one message"):
        check("Melanie", "Melanie paints.", [], SPEAKERS)


# ------------------------------------------------------------------ the engine: REJECT is logged
def test_a_rejected_candidate_is_logged_counted_and_never_stored(engine_factory):
    facts = grounded_extraction({
        "lake sunrise": {"subject": "Melanie", "type": "Event", "statement": "Melanie painted a lake sunrise."},
        "counselor": {"subject": "Melanie", "type": "Identity", "statement": "Melanie is a great counselor."},
    })
    engine = engine_factory(llm=FakeLLM({"core_extract": facts}), **CFG)
    report = engine.ingest([PRAISE, PAINT])
    assert report.fact_ops == {"ADD": 1, "REJECT": 1} and report.core_facts == 1
    [fact] = engine.facts("t")
    assert fact.statement == "Melanie painted a lake sunrise." and fact.source_message_ids == ["D1:14"]
    [reject] = engine.fact_log("t", op="reject")
    assert reject.fact_ids == [] and reject.decided_by == "rule"
    assert reject.candidate.statement == "Melanie is a great counselor."
    # all of Melanie's sentences there are addressed to Caroline: none is about Melanie
    assert reject.reason == "not grounded in D1:12: none of D1:12 is by or about Melanie"
    assert reject.scores.grounding["overlap"] == 0.0
    added = engine.fact_log("t", op="add")[0]
    assert added.scores.grounding["overlap"] == 1.0


# ------------------------------------------------------- value changes are never merged by rule
_VALUE_WORDS = re.compile(r"\b(\d[\d,.:]*|one|two|three|four|five|not|never|no|may|june|july|august|"
                          r"monday|friday|am|pm|euros?|dollars?)\b|[$€%]", re.I)


class ValueBlindEmbedder(HashEmbedder):
    """Sees no numbers, dates, times, amounts or negations, like a small embedder nearly does:
    "rent is 1,200 euros" and "rent is 1,500 euros" get the same vector (MiniLM: cosine 0.99)."""

    def embed_documents(self, texts):
        return super().embed_documents([_VALUE_WORDS.sub(" ", t) for t in texts])


CHANGES = [  # (kind, first message, first statement, later message, later statement)
    ("amount", "My rent is 1,200 euros a month.", "Alice's rent is 1,200 euros a month.",
     "My rent is 1,500 euros a month now.", "Alice's rent is 1,500 euros a month."),
    ("count", "I have two dogs at home.", "Alice has two dogs.",
     "I have three dogs at home now!", "Alice has three dogs."),
    ("date", "My exam is on 3 June.", "Alice's exam is on 3 June.",
     "My exam moved, it is on 5 July.", "Alice's exam is on 5 July."),
    ("time", "My shift starts at 9 am.", "Alice's shift starts at 9 am.",
     "My shift starts at 11 am now.", "Alice's shift starts at 11 am."),
    ("number", "My flat is on floor 3 of the tower.", "Alice's flat is on floor 3.",
     "I moved, my flat is on floor 12 of the tower.", "Alice's flat is on floor 12."),
    ("polarity", "I am vegetarian, have been for years.", "Alice is vegetarian.",
     "I am not vegetarian any more.", "Alice is not vegetarian."),
]


@pytest.mark.parametrize(("kind", "first", "first_fact", "later", "later_fact"), CHANGES, ids=[c[0] for c in CHANGES])
def test_a_changed_value_with_newer_evidence_supersedes_by_rule(engine_factory, kind, first, first_fact, later,
                                                                 later_fact):
    facts = {first: first_fact, later: later_fact}
    extract = grounded_extraction({k: {"subject": "Alice", "type": "Identity", "statement": v}
                                   for k, v in facts.items()})
    llm = FakeLLM({"core_extract": extract})  # no core_operation answer: the model must not be asked
    engine = engine_factory(llm=llm, embedder=ValueBlindEmbedder(), **CFG)
    engine.ingest([msg("D1:1", "Alice", first, MAY)])
    report = engine.ingest([msg("D2:1", "Alice", later, AUGUST)])
    assert report.fact_ops == {"SUPERSEDE": 1}, engine.fact_log("t")
    [current] = engine.facts("t")
    assert current.statement == later_fact and current.source_message_ids == ["D2:1"]
    old = next(f for f in engine.facts("t", history=True) if f.status == "superseded")
    assert old.statement == first_fact and old.superseded_by == current.id and old.valid_until == AUGUST
    op = engine.fact_log("t", op="supersede")[0]
    assert op.decided_by == "rule" and "changed" in op.reason and "newer evidence" in op.reason


def test_the_same_values_still_merge_by_rule(engine_factory):
    extract = grounded_extraction({"rent": {"subject": "Alice", "type": "Identity",
                                            "statement": "Alice's rent is 1,200 euros a month."}})
    engine = engine_factory(llm=FakeLLM({"core_extract": extract}), embedder=ValueBlindEmbedder(), **CFG)
    engine.ingest([msg("D1:1", "Alice", "My rent is 1,200 euros a month.", MAY)])
    report = engine.ingest([msg("D2:1", "Alice", "Still paying my rent, 1,200 euros a month.", AUGUST)])
    assert report.fact_ops == {"MERGE": 1}
    [fact] = engine.facts("t")
    assert fact.source_message_ids == ["D1:1", "D2:1"]


def test_a_value_change_without_newer_evidence_goes_to_the_model_without_a_merge_option(engine_factory):
    extract = grounded_extraction({
        "1,200": {"subject": "Alice", "type": "Identity", "statement": "Alice's rent is 1,200 euros a month."},
        "1,500": {"subject": "Alice", "type": "Identity", "statement": "Alice's rent is 1,500 euros a month."}})
    llm = FakeLLM({"core_extract": extract, "core_operation": "A"})
    engine = engine_factory(llm=llm, embedder=ValueBlindEmbedder(), **CFG)
    engine.ingest([msg("D1:1", "Alice", "My rent is 1,200 euros a month.", MAY),
                   msg("D1:2", "Alice", "Sorry, I misread: it is 1,500 euros a month.", MAY)])
    [prompt] = llm.calls["core_operation"]
    assert "merge them" not in prompt.text and "replace fact 1" in prompt.text
    op = engine.fact_log("t")[-1]
    assert op.decided_by == "llm" and "Merge with it was not offered" in op.reason


@pytest.mark.parametrize(("a", "b", "differs"), [
    ("Rent is 1,200 euros.", "Rent is 1,500 euros.", ["numbers"]),
    ("Rent is 1,200 euros.", "Rent is 1200 euros.", []),
    ("She has two dogs.", "She has 2 dogs.", []),
    ("She has two dogs.", "She has three dogs.", ["numbers"]),
    ("The party is on Friday.", "The party is on Monday.", ["calendar"]),
    ("Meeting at 10:30.", "Meeting at 11:00.", ["times"]),
    ("It costs 40 dollars.", "It costs 40 euros.", ["units"]),
    ("She likes sushi.", "She doesn't like sushi.", ["polarity"]),
    ("She may come in May.", "She may come in May.", []),
])
def test_values_are_read_as_numbers_calendar_words_times_units_and_polarity(a, b, differs):
    assert values(a).differences(values(b)) == differs
    assert np.all([w not in mask("Rent is 1,200 euros on 3 May at 10:30, not more.") for w in ("1,200", "euros", "May",
                                                                                             "10:30", "not")])


def test_an_event_with_other_values_is_another_occurrence_not_a_change(engine_factory):
    extract = grounded_extraction({
        "20 May": {"subject": "Alice", "type": "Event", "statement": "Alice ran a charity race on 20 May."},
        "15 June": {"subject": "Alice", "type": "Event", "statement": "Alice ran a charity race on 15 June."}})
    engine = engine_factory(llm=FakeLLM({"core_extract": extract}), embedder=ValueBlindEmbedder(), **CFG)
    engine.ingest([msg("D1:1", "Alice", "I ran a charity race on 20 May!", MAY)])
    report = engine.ingest([msg("D2:1", "Alice", "I ran another charity race on 15 June.", AUGUST)])
    assert report.fact_ops == {"ADD": 1} and len(engine.facts("t")) == 2
    assert "another occurrence than F1" in engine.fact_log("t")[-1].reason


def test_a_speaker_named_user_is_a_subject_like_any_other():
    """ChatGPT, Claude and OpenAI transcripts name their speakers "user" and "assistant"."""
    said = msg("M1", "user", "I moved to Porto last week.")
    verdict = check("user", "The user moved to Porto.", [said], ["user", "assistant"])
    assert verdict.passed and verdict.subject == "user"
    assert not check("Person", "The user moved to Porto.", [said], ["user", "assistant"]).passed


def test_a_value_stated_in_another_message_of_the_batch_repairs_the_provenance():
    from memsif.facts.grounding import repair_sources

    batch = [Message(id=f"D2:{i}", namespace="t", speaker=s, text=t, time=datetime(2024, 9, 10), session_id="s2")
             for i, (s, t) in enumerate([("Alice", "Bad news, Bob. My landlord raised the rent."),
                                         ("Bob", "Oh no, by how much?"),
                                         ("Alice", "My rent went up to 1,500 euros a month.")], start=1)]
    statement = "Alice's landlord raised the rent to 1,500 euros a month on 10 September 2024."
    assert repair_sources(statement, batch, [1]) == ([1, 3], [3])  # the date's numbers are the session's
    assert repair_sources("Alice's landlord raised the rent.", batch, [1]) == ([1], [])
    assert repair_sources("Alice pays 900 euros.", batch, [1]) == ([1], [])  # no message holds 900
    repaired, _ = repair_sources(statement, batch, [1])
    verdict = check("Alice", statement, [batch[i - 1] for i in repaired], ["Alice", "Bob"])
    assert verdict.passed, verdict.reasons
    assert not check("Alice", statement, [batch[0]], ["Alice", "Bob"]).passed


def test_a_neighbour_cited_in_place_of_the_message_that_says_it_is_repaired_and_the_wrong_person_is_not():
    from memsif.facts.grounding import repair_sources

    lines = [("Melanie", "Hey Caroline, I ran a charity race for mental health last Saturday."),
             ("Caroline", "That charity race sounds great, Mel!"),
             ("Caroline", "I'm researching adoption agencies these days.")]
    batch = [Message(id=f"D2:{i}", namespace="t", speaker=s, text=t, time=datetime(2023, 5, 25), session_id="s2")
             for i, (s, t) in enumerate(lines, start=1)]
    speakers = ["Melanie", "Caroline"]
    race = "Melanie ran a charity race for mental health."
    assert repair_sources(race, batch, [2], "Melanie", speakers) == ([1], [1])
    assert repair_sources(race, batch, [1], "Melanie", speakers) == ([1], [])  # already right: untouched
    # Caroline's message says it about Caroline: no message says it about Melanie, nothing is repaired
    assert repair_sources("Melanie is researching adoption agencies.", batch, [3], "Melanie", speakers) == ([3], [])


def test_another_speaker_named_in_the_statement_must_be_named_in_its_support():
    """"We both looked so great on our wedding day!" is about Melanie and her husband: a statement that
    puts Caroline in it has no support for her (the 1.5B wrote one for conv-26)."""
    m = Message(id="D3:17", namespace="n", speaker="Melanie", time=datetime(2023, 6, 9), session_id="s3",
                text="Thanks! My husband and I both looked so great on our wedding day! Many happy years to come!")
    bad = check("Melanie", "Melanie and Caroline both looked so great on their wedding day.", [m],
                          ["Caroline", "Melanie"])
    assert not bad.passed and "names Caroline, whom its supporting sentences do not name" in bad.reason
    good = check("Melanie", "Melanie looked great on her wedding day.", [m], ["Caroline", "Melanie"])
    assert good.passed, good.reason
    named = Message(id="D3:18", namespace="n", speaker="Melanie", time=datetime(2023, 6, 9), session_id="s3",
                    text="Caroline came to my wedding and we danced all night.")
    assert check("Melanie", "Caroline came to Melanie's wedding.", [named], ["Caroline", "Melanie"]).passed
    car = Message(id="D4:1", namespace="n", speaker="Melanie", time=datetime(2023, 7, 1), session_id="s4",
                  text="I finally bought a new car last week!")
    assert check("Melanie", "Melanie bought a new car.", [car], ["Caroline", "Melanie"]).passed, \
        "a nickname of another speaker ('Car') is not a mention in the statement"


@pytest.mark.parametrize("text", [
    # conv-26 D18:1 (labelled "invented detail": Caroline was not on the trip; her reply says "you guys")
    "Hey Caroline, that roadtrip this past weekend was insane! We were all freaked when my son got into an "
    "accident. [shares a photo: a photo of a car dashboard with a white cloth and a steering wheel]",
    "Thanks, Caroline! That roadtrip this past weekend was insane!",
    "That roadtrip this past weekend was insane, Caroline!",
    "Caroline, that roadtrip this past weekend was insane!",
])
def test_a_speaker_only_addressed_is_not_named_as_taking_part(text):
    """The listener addressed by name ("Hey Caroline,") did not do what the sentence says; and the "car" of a
    photo caption is not a nickname of Caroline (nicknames count only written as names)."""
    m = msg("D18:1", "Melanie", text, datetime(2023, 10, 20))
    bad = check("Melanie", "Melanie and Caroline went on a roadtrip this past weekend.", [m], SPEAKERS)
    assert not bad.passed and "names Caroline, whom its supporting sentences do not name" in bad.reason
    assert check("Melanie", "Melanie went on a roadtrip this past weekend.", [m], SPEAKERS).passed


def test_a_speaker_named_as_taking_part_or_by_a_nickname_is_named():
    both = msg("D18:2", "Melanie", "Hey Caroline, remember? Caroline and I went on that roadtrip with Car's sister!")
    assert check("Melanie", "Melanie and Caroline went on a roadtrip.", [both], SPEAKERS).passed
    from memsif.lexical import without_address

    assert without_address("Caroline and I went hiking.", ["Caroline"]) == "Caroline and I went hiking."
    assert without_address("I met my friends, Anna and Caroline.", ["Caroline"]) == \
        "I met my friends, Anna and Caroline."


@pytest.mark.parametrize(("statement", "refused"), [
    # conv-26, second pass (labelled "other": the message copied with its "we" and "my fam")
    ("Melanie had a quiet weekend after we went camping with my fam two weekends ago.", True),
    # conv-47 (labelled "empty": copied with "I'd")
    ("Melanie's dogs make dark days better. Don't know what I'd do without them.", True),
    # supported facts whose "me", "us" and "our" are the subject's own words
    ("Melanie is carving out some me-time each day to refresh herself.", False),
    ("Melanie's son is okay, a reminder to cherish our family.", False),
])
def test_a_statement_in_the_writers_first_person_is_a_copy_not_a_fact(statement, refused):
    m = msg("D20:1", "Melanie", "I had a quiet weekend after we went camping with my fam two weekends ago. My dogs "
            "make dark days better. Don't know what I'd do without them. I'm carving out some me-time each day to "
            "refresh myself. My son is okay, a reminder to cherish our family.")
    verdict = check("Melanie", statement, [m], SPEAKERS)
    assert ("statement is in the first person" in verdict.reason) is refused, verdict.reason


TAIL = " He wants to open a dance studio and teach the kids of his town to dance like he did when he was young"


@pytest.mark.parametrize("statement, kept", [
    (("Jon lost his job at the bank in January." + TAIL)[:100], "Jon lost his job at the bank in January."),
    (("Jon wants to open a dance studio" + TAIL)[:100], None),  # no complete sentence
    (("Jon is ok." + TAIL)[:100], None),  # too short to say anything alone
    ("Jon lost his job! He is opening a studio.", None),  # under the limit: not cut off
])
def test_a_cut_off_statement_keeps_only_complete_sentences_long_enough_to_say_something(statement, kept):
    from memsif.facts.grounding import whole_sentences

    text, note = whole_sentences(statement, 100)
    assert (text, bool(note)) == ((kept, True) if kept else (statement, False))
