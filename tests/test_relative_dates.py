"""Relative dates are resolved against the session date, never the current date."""

from datetime import datetime

import pytest

from memsif.timeparse import annotate_relative_dates, relative_date, resolve_relative_date

SESSION = datetime(2023, 5, 8, 13, 56)  # a Monday ("1:56 pm on 8 May, 2023", LoCoMo conv-26 session 1)


@pytest.mark.parametrize(("expression", "expected"), [
    ("yesterday", datetime(2023, 5, 7)),
    ("the day before yesterday", datetime(2023, 5, 6)),
    ("tomorrow", datetime(2023, 5, 9)),
    ("two days ago", datetime(2023, 5, 6)),
    ("3 weeks ago", datetime(2023, 4, 17)),
    ("last week", datetime(2023, 5, 1)),
    ("last year", datetime(2022, 5, 8)),
    ("last Friday", datetime(2023, 5, 5)),
    ("last Monday", datetime(2023, 5, 1)),
    ("next Friday", datetime(2023, 5, 12)),
    ("last Fri", datetime(2023, 5, 5)),
    ("this past weekend", datetime(2023, 5, 6)),
    ("last weekend", datetime(2023, 5, 6)),
    ("a few days ago", datetime(2023, 5, 5)),
])
def test_resolved_against_the_session_date(expression, expected):
    assert resolve_relative_date(expression, SESSION).date() == expected.date()


def test_annotation_keeps_the_text_and_adds_the_date():
    text, found = annotate_relative_dates("I went to a LGBTQ support group yesterday.", SESSION)
    assert text == "I went to a LGBTQ support group yesterday [7 May 2023]."
    assert [(r.expression, r.when) for r in found] == [("yesterday", resolve_relative_date("yesterday", SESSION))]


@pytest.mark.parametrize(("expression", "precision", "written"), [
    ("yesterday", "day", "7 May 2023"),
    ("last Fri", "day", "5 May 2023"),
    ("two days ago", "day", "6 May 2023"),
    ("last week", "week", "the week before 8 May 2023"),
    ("this week", "week", "the week of 8 May 2023"),
    ("3 weeks ago", "week", "the week of 17 April 2023"),
    ("this past weekend", "weekend", "the weekend before 8 May 2023"),
    ("next weekend", "weekend", "the weekend after 8 May 2023"),
    ("a few weeks ago", "about", "a few weeks before 8 May 2023"),
    ("a couple of days ago", "about", "a few days before 8 May 2023"),
    ("this month", "month", "May 2023"),
    ("last month", "month", "April 2023"),
    ("next month", "month", "June 2023"),
    ("last year", "year", "2022"),
    ("about five years ago", "year", "2018"),
])
def test_a_period_is_written_as_precisely_as_it_was_said(expression, precision, written):
    resolved = relative_date(expression, SESSION)
    assert (resolved.precision, resolved.text) == (precision, written)


def test_an_annotated_expression_is_not_annotated_again():
    once = annotate_relative_dates("I ran last week.", SESSION)[0]
    assert once == "I ran last week [the week before 8 May 2023]."
    assert annotate_relative_dates(once, SESSION)[0] == once
    assert annotate_relative_dates("I ran yesterday (7 May 2023).", SESSION)[0] == "I ran yesterday (7 May 2023)."


def test_without_a_session_date_nothing_is_resolved():
    assert annotate_relative_dates("I ran yesterday.", None) == ("I ran yesterday.", [])


#: phrasing → what it means said on Monday 8 May 2023, Wednesday 10 May 2023 and Saturday 13 May 2023
TABLE = {
    "yesterday": ("7 May 2023", "9 May 2023", "12 May 2023"),
    "last night": ("7 May 2023", "9 May 2023", "12 May 2023"),
    "this morning": ("8 May 2023", "10 May 2023", "13 May 2023"),
    "earlier today": ("8 May 2023", "10 May 2023", "13 May 2023"),
    "two days ago": ("6 May 2023", "8 May 2023", "11 May 2023"),
    "this past Friday": ("5 May 2023", "5 May 2023", "12 May 2023"),
    "last weekend": ("the weekend before 8 May 2023", "the weekend before 10 May 2023",
                     "the weekend before 13 May 2023"),
    "over the weekend": ("the weekend before 8 May 2023", "the weekend before 10 May 2023",
                         "the weekend of 13 May 2023"),
    "last week": ("the week before 8 May 2023", "the week before 10 May 2023", "the week before 13 May 2023"),
    "the other day": ("a few days before 8 May 2023", "a few days before 10 May 2023",
                      "a few days before 13 May 2023"),
}
SAID_ON = (datetime(2023, 5, 8, 13, 56), datetime(2023, 5, 10, 9, 0), datetime(2023, 5, 13, 20, 0))


@pytest.mark.parametrize("phrasing", sorted(TABLE))
@pytest.mark.parametrize("day", range(3))
def test_a_relative_date_reaches_the_answer_and_the_facts_as_the_message_meant_it(phrasing, day):
    """Every path that shows a message's words to the model (the answer's context, a CoreFact's statement)
    follows the phrasing with the period it means, against the message's own date."""
    from memsif.answer.context import render_context
    from memsif.facts.dates import settle_dates
    from memsif.records import Evidence, Message

    meant, said_on = TABLE[phrasing][day], SAID_ON[day]
    evidence = Evidence(subject="Ana", statement=f"I went hiking {phrasing}.", time=said_on,
                        source_message_ids=["D1:1"], score=1.0)
    assert f"I went hiking {phrasing} [{meant}]." in render_context([], [evidence])
    source = Message(id="D1:1", namespace="t", speaker="Ana", text=f"I went hiking {phrasing}.", time=said_on)
    statement, _ = settle_dates(f"Ana went hiking {phrasing}.", [source])
    assert statement == f"Ana went hiking {phrasing} ({meant})."
