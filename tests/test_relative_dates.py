"""Relative dates are resolved against the session date, never the current date."""

from datetime import datetime

import pytest

from memsif.timeparse import annotate_relative_dates, resolve_relative_date

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
])
def test_resolved_against_the_session_date(expression, expected):
    assert resolve_relative_date(expression, SESSION).date() == expected.date()


def test_annotation_keeps_the_text_and_adds_the_date():
    text, found = annotate_relative_dates("I went to a LGBTQ support group yesterday.", SESSION)
    assert text == "I went to a LGBTQ support group yesterday (7 May 2023)."
    assert found == [("yesterday", resolve_relative_date("yesterday", SESSION))]


def test_without_a_session_date_nothing_is_resolved():
    assert annotate_relative_dates("I ran yesterday.", None) == ("I ran yesterday.", [])
