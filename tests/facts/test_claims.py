"""The claim rules and the empty-remark rule (memsif.facts.claims) on real candidates of the labelled dev
facts (benchmarks/quality/data/corefact-verified-*.jsonl): refused where the cited sentence shows someone else
did it, that it was only wished or denied, or that no liking was said; kept where the writer did it."""

from __future__ import annotations

from datetime import datetime

import pytest

from memsif.facts.claims import available, check_claims, empty_remark
from memsif.records import Message

pytestmark = pytest.mark.skipif(not available(), reason="spaCy's en_core_web_sm is not installed")


def said(speaker: str, text: str, mid: str = "D1:1") -> Message:
    return Message(id=mid, namespace="t", speaker=speaker, text=text, time=datetime(2023, 5, 8), session_id="D1")


def refused(subject: str, statement: str, *messages: Message, speakers=("Caroline", "Melanie")) -> list[str]:
    return [f"{c.rule}: {c.reason}" for c in check_claims(subject, statement, messages, list(speakers)) if not c.passed]


@pytest.mark.parametrize(("subject", "statement", "text", "rule", "words"), [
    # the listener did it (conv-26 F23, labelled "speaker swapped")
    ("Caroline", "Caroline found something that makes her so happy.",
     "Glad you found something that makes you so happy! Surrounding ourselves with things that bring us joy is "
     "important.", "who did it", "listener"),
    # the writer's child did it (conv-26 F22)
    ("Melanie", "Melanie took her first steps.",
     "I'll never forget the day my youngest took her first steps. Seeing her wobble really put into perspective "
     "how fleeting life is.", "who did it", "youngest"),
    # the act as the topic of a remark (conv-47 F38, "speaker swapped")
    ("Caroline", "Caroline started her blog about coding.",
     "Wow, starting a blog about coding is awesome! Must be so exciting.", "who did it", "in general"),
    # wished, not done (conv-30 F2, "invented detail")
    ("Caroline", "Caroline started a dance studio.",
     "I've been into dancing since I was a kid. I wanna start a dance studio so I can teach others the joy "
     "that dancing brings me.", "said as done", "want"),
    # the opposite said (conv-47 F61)
    ("Caroline", "Caroline likes cooking.",
     "Yes, two days ago I signed up for a cooking class. I never liked cooking, but I felt that I wanted to learn "
     "something new.", "liking said", "never"),
    # a liking nobody said (conv-47 F5)
    ("Caroline", "Caroline loves gaming and building a community.",
     "Connecting with other gamers has been great! We've shared tips, strategies, and stories about gaming.",
     "liking said", "no sentence"),
    # liked when younger, not now (conv-30 F20)
    ("Caroline", "Caroline loves taking lessons with her friends.",
     "I loved taking lessons with my friends when I was younger.", "liking said", "in the past"),
    # a speaker the sentence that states it does not name (conv-47 F41)
    ("Caroline", "Caroline is introducing Max, Daisy, and the new pup Ned to Melanie.",
     "Hey Melanie, since our last chat, something awesome happened. Last Friday, I started introducing Max, Daisy "
     "and the new pup Ned.", "who did it", "names Melanie"),
    # wished to the listener (conv-47 F10)
    ("Caroline", "Caroline is exploring different game genres.",
     "Cool, that sounds exciting. Have fun exploring different genres of games!", "who did it", "listener"),
    # the listener's act congratulated (conv-47 F45, "speaker swapped": James won, John congratulates him)
    ("Caroline", "Caroline won the online gaming tournament.",
     "Hey Melanie! Congrats on winning the online gaming tournament! It's super fulfilling to see your hard work "
     "pay off.", "who did it", "listener"),
])
def test_a_claim_the_cited_sentence_does_not_give_the_subject_is_refused_with_its_rule(subject, statement, text, rule,
                                                                                     words):
    reasons = refused(subject, statement, said(subject, text))
    assert reasons and all(r.startswith(rule) for r in reasons) and words in reasons[0]


@pytest.mark.parametrize(("subject", "statement", "text"), [
    ("Caroline", "Caroline applied to adoption agencies.",  # conv-26 F24: "I applied"
     "Guess what I did this week? I took the first step towards becoming a mom - I applied to adoption agencies!"),
    ("Caroline", "Caroline started hitting the gym last week.",  # conv-30 F14: no subject at all, the writer
     "Been hectic for me lately. Started hitting the gym last week to stay on track with the venture."),
    ("Melanie", "Melanie loves pottery and clay.",  # conv-26 F12: "brings me so much joy"
     "Pottery is a huge part of my life, not just a hobby. Clay is incredible, it brings me so much joy!"),
    ("Caroline", "Caroline finished her Unity strategy game.",  # conv-47 F57: a passive names no doer
     "My Unity strategy game is finally finished—it took loads of time and effort, but I'm really proud."),
    ("Caroline", "Caroline will start looking for a country to visit.",  # "I'll" is "will"
     "I'll start looking for a country to visit."),
    ("Caroline", "Caroline had luck with finding a flat.",  # luck of the writer's own, not wished to the listener
     "I had luck with finding a flat near the studio."),
])
def test_a_claim_the_writer_states_as_done_is_kept(subject, statement, text):
    checks = check_claims(subject, statement, [said(subject, text)], ["Caroline", "Melanie"])
    assert all(c.passed for c in checks)


def test_the_claims_are_split_and_each_names_its_sentence():
    checks = check_claims("Caroline", "Caroline applied to adoption agencies and wants to start a dance studio.",
                          [said("Caroline", "I applied to adoption agencies! I wanna start a dance studio too.",
                                "D13:1")], ["Caroline", "Melanie"])
    assert [c.passed for c in checks] == [True, True]
    assert {c.message_id for c in checks} == {"D13:1"}
    assert checks[0].sentence.startswith("I applied") and "applied" in checks[0].claim


def test_statements_about_someone_else_or_a_possession_are_left_to_the_model():
    assert check_claims("Max", "Max took his first steps.", [said("Melanie", "My youngest took her first steps.")],
                        ["Caroline", "Melanie"]) == []
    assert check_claims("Melanie", "Melanie's painting conveys unity.", [said("Melanie", "It conveys unity!")],
                        ["Caroline", "Melanie"]) == []


@pytest.mark.parametrize("statement", [
    "Jon thanked Gina for her support.",  # conv-30 F30, labelled "empty"
    "John hopes everything works out for them, he will believe in it!",  # conv-47 F18
])
def test_a_remark_with_nothing_to_remember_is_refused(statement):
    subject = statement.split()[0]
    assert "nothing to remember" in empty_remark(subject, statement, ["Jon", "Gina", "John", "James"])


@pytest.mark.parametrize("statement", ["Jon lost his job at Door Dash.", "Melanie likes hobby1.",
                                       "Caroline went to an LGBTQ support group."])
def test_a_statement_with_something_to_remember_is_not_empty(statement):
    assert empty_remark(statement.split()[0], statement, ["Jon", "Gina"]) is None


def test_a_claim_another_speaker_says_they_did_is_refused():
    checks = check_claims("Melanie", "Melanie won the online gaming tournament.",
                          [said("Caroline", "Guess what? I actually won an online gaming tournament!", "D9:1"),
                           said("Melanie", "Congrats! That is so cool.", "D9:2")], ["Caroline", "Melanie"])
    assert [(c.passed, c.rule, c.message_id, c.doer) for c in checks] == [(False, "who did it", "D9:1",
                                                                            "someone else: Caroline")]
