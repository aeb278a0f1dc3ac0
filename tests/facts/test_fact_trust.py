"""What a CoreFact, an ActiveFact and an answer may claim (§3.3–3.5): dates settled against the
sources, the model's verification recorded and enforced, ActiveFacts made of statements only, computed
spans in answers not flagged. The inputs are real: candidates the packaged 1.5B wrote for dev conv-26
and conv-30 (benchmarks/quality/data/corefact-stored-*.jsonl) and sentences of their messages."""

from __future__ import annotations

from datetime import datetime

import pytest

from memsif.answer.check import unsupported_mentions
from memsif.facts.active import is_statement, stated
from memsif.facts.dates import settle_dates
from memsif.records import Message
from tests.fakes import FakeLLM, KeywordEmbedder, grounded_extraction


def said(text: str, when: datetime, speaker: str = "Jon", mid: str = "D1:1") -> Message:
    return Message(id=mid, namespace="t", speaker=speaker, text=text, time=when, session_id="s1")


@pytest.mark.parametrize(("statement", "message", "when", "settled"), [
    ("Gina lost her job at Door Dash on 20 January 2023.",
     "Sorry about your job Jon, but starting your own business sounds awesome! Unfortunately, I also lost my job "
     "at Door Dash this month. What business are you thinking of?", datetime(2023, 1, 20),
     "Gina lost her job at Door Dash in January 2023."),
    ("Jon started hitting the gym last week (9 March 2023) on 9 March 2023.",
     "Hi Gina! Been hectic for me lately. Started hitting the gym last week to stay on track with the venture.",
     datetime(2023, 3, 16), "Jon started hitting the gym last week (the week before 16 March 2023)."),
    ("Jon went to networking events to make things happen on 21 June 2023.",
     "That's awesome, Gina! Yesterday I chose to go to networking events to make things happen.",
     datetime(2023, 6, 21), "Jon went to networking events to make things happen on 20 June 2023."),
    ("Caroline's art show is 25 September 2023.",
     "I'm putting together an LGBTQ art show next month and I'm gonna show my paintings. Super stoked!",
     datetime(2023, 8, 25), "Caroline's art show is in September 2023."),
    ("Caroline started playing acoustic guitar about five years ago (28 August 2018) on 28 August 2018.",
     "I started playing acoustic guitar about five years ago; it's been a great way to express myself.",
     datetime(2023, 8, 28), "Caroline started playing acoustic guitar about five years ago (2018)."),
    ("Melanie's son got into an accident on 20 October 2023.",
     "Hey Caroline, that roadtrip this past weekend was insane! We were all freaked when my son got into an "
     "accident.", datetime(2023, 10, 20), "Melanie's son got into an accident on the weekend before 20 October 2023."),
    ("Caroline went to a pride parade on 15 July 2023.",
     "One special memory for me was this pride parade I went to a few weeks ago.", datetime(2023, 7, 15),
     "Caroline went to a pride parade a few weeks before 15 July 2023."),
    ("Melanie took her kids to a pottery workshop on 15 July 2023.",
     "So much since we talked! Last Fri I finally took my kids to a pottery workshop.", datetime(2023, 7, 15),
     "Melanie took her kids to a pottery workshop on 14 July 2023."),
    ("Jon is hosting a dance competition next month (3 May 2023) (3 May 2023) to showcase local talent.",
     "I'm also hosting a dance competition next month to showcase local talent.", datetime(2023, 4, 3),
     "Jon is hosting a dance competition next month (May 2023) to showcase local talent."),
])
def test_a_date_the_sources_do_not_give_is_replaced_by_the_period_they_name(statement, message, when, settled):
    new, note = settle_dates(statement, [said(message, when)])
    assert new == settled
    assert note


@pytest.mark.parametrize(("statement", "message"), [
    ("Ana started a job as a nurse on 3 May 2023.", "I started a new job as a nurse today!"),
    ("Jon's studio opens on 10 June 2023.", "My studio opens on 10 June 2023, so excited!"),
])
def test_a_date_the_sources_give_stays(statement, message):
    assert settle_dates(statement, [said(message, datetime(2023, 5, 3))]) == (statement, "")


def test_the_day_a_message_was_written_is_not_the_day_of_what_it_tells():
    """"I volunteered with …" written on 20 April 2022 says nothing of when (the 1.5B wrote the session
    date onto such acts; 6 of the 82 stored conv-47 facts labelled)."""
    message = said("I volunteered with an organisation that helps kids learn to code.", datetime(2022, 4, 20))
    new, note = settle_dates("James volunteered with a coding organisation on 20 April 2022.", [message])
    assert new == "James volunteered with a coding organisation." and "dropped 20 April 2022" in note


def test_a_settled_statement_stays_as_it_is():
    message = said("I got into board games last week.", datetime(2022, 9, 18))
    once = settle_dates("John started board games on 18 September 2022.", [message])[0]
    assert once == "John started board games in the week before 18 September 2022."
    assert settle_dates(once, [message]) == (once, "")


def test_two_periods_in_the_sources_leave_no_invented_day():
    sources = [said("I moved last year.", datetime(2023, 5, 3)),
               said("Last week I painted the kitchen.", datetime(2023, 5, 3), mid="D1:2")]
    new, note = settle_dates("Jon moved on 3 May 2023.", sources)
    assert new == "Jon moved." and "dropped 3 May 2023" in note


# ------------------------------------------------------------------ the verification in the log
CFG = dict(core_facts=True, tau_split=0.0, tau_merge=0.01, sem_mapping="affine", trajectory_min_phi=1.0)
FACTS = {"pottery": {"subject": "Melanie", "type": "Event",
                     "statement": "Melanie took her kids to a pottery workshop."},
         "camping": {"subject": "Melanie", "type": "Event", "statement": "Melanie went camping with her family."}}


def _engine(engine_factory, p_yes, **extra):
    llm = FakeLLM({"core_extract": grounded_extraction(FACTS), "fact_verify": p_yes, "core_operation": "A"})
    return llm, engine_factory(llm=llm, embedder=KeywordEmbedder({}), **CFG, **extra)


def test_a_verified_fact_carries_its_check_and_an_unverified_candidate_is_rejected_with_its_score(engine_factory):
    llm, engine = _engine(engine_factory, lambda prompt: 0.9 if "pottery" in prompt.text else 0.2,
                          fact_verification="model")
    engine.ingest([said("Last Fri I took my kids to a pottery workshop.", datetime(2023, 7, 15), "Melanie"),
                   said("We went camping with the family last summer.", datetime(2023, 7, 15), "Melanie", "D1:2")])
    [fact] = engine.facts("t")
    assert fact.verified and fact.verification.p_yes == 0.9 and fact.verification.min_p == 0.5
    assert fact.verification.rule.startswith("P(yes) 0.90 ≥ 0.50 that D1:1 state it")
    add, reject = sorted(engine.fact_log("t"), key=lambda r: str(r.op))
    assert add.scores.verification["p_yes"] == 0.9
    assert reject.op == "REJECT" and reject.decided_by == "llm" and reject.candidate.statement.startswith(
        "Melanie went camping")
    assert reject.scores.verification == {"p_yes": 0.2, "min_p": 0.5, "word_overlap": 1.0, "min_word_overlap": 0.7}
    assert "not verified against D1:2: P(yes) 0.20 < 0.50" in reject.reason
    verify = llm.calls["fact_verify"][0]
    assert verify.text.startswith("Melanie wrote:\n(15 July 2023) ") and verify.input_ids == ("D1:1",)


def test_a_model_not_measured_to_verify_stores_facts_marked_not_verified(engine_factory):
    llm, engine = _engine(engine_factory, 0.9)  # fact_verification="auto"; the fake model is not measured
    engine.ingest([said("Last Fri I took my kids to a pottery workshop.", datetime(2023, 7, 15), "Melanie")])
    [fact] = engine.facts("t")
    assert not fact.verified and "fake-llm is not measured to verify facts" in fact.verification.rule
    assert "fact_verify" not in llm.calls


# ------------------------------------------------------------------ ActiveFacts: statements only
@pytest.mark.parametrize(("sentence", "statement"), [
    ("What made you try pottery?", False),
    ("It really inspired me.", False),
    ("Keep up with the active lifestyle!", False),
    ("Thanks, Mel! Talk soon.", False),
    ("Caroline, you're so brave and strong!", False),
    ("Tell me more about it.", False),
    ("I went to a LGBTQ support group yesterday and it was so powerful.", True),
    ("My kids love the beach.", True),
    ("Melanie ran a charity race for mental health.", True),
])
def test_only_statements_about_people_feed_activefacts(sentence, statement):
    assert is_statement(sentence, ["Caroline", "Melanie"]) is statement


def test_an_evidence_excerpt_keeps_its_statements_only():
    text = "Wow, that's awesome! I took my kids to the museum last week. What did you do?"
    assert stated(text, ["Caroline", "Melanie"]) == "I took my kids to the museum last week."


# ------------------------------------------------------------------ answers: computed spans
CONTEXT = ("Excerpts:\n8 May 2023:\n- Caroline: I started the adoption process.\n"
           "14 August 2023:\n- Caroline: It went through!")


def test_a_span_the_context_dates_give_is_computed_not_invented():
    assert unsupported_mentions("About 3 months.", CONTEXT) == []
    assert unsupported_mentions("14 weeks later.", CONTEXT) == []
    assert unsupported_mentions("About 5 months.", CONTEXT) == ["5"]
    assert unsupported_mentions("She has 3 kids.", CONTEXT) == ["3"], "a count is not a span of time"
