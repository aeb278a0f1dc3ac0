"""Dates of the transcript formats MemSIF reads; never falls back to "now"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, cast

from dateutil import parser as dateutil_parser

_FORMATS = (
    "%I:%M %p on %d %B, %Y",   # LoCoMo: "1:56 pm on 8 May, 2023"
    "%Y/%m/%d (%a) %H:%M",     # LongMemEval: "2023/05/20 (Sat) 02:21"
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
)


def day_text(when: datetime | None) -> str:
    """A date as MemSIF writes it into prompts and contexts: "8 May 2023" (or "undated")."""
    return f"{when.day} {when:%B %Y}" if when else "undated"


def dated(text: str, when: datetime | None) -> str:
    """``text`` followed by its day in brackets ("… (8 May 2023)"), unless it already names that day or
    has no date (a statement drawn from a dated message carries the day once, not twice)."""
    if when is None or day_text(when) in text:
        return text
    return f"{text} ({day_text(when)})"


def parse_time(text: str) -> datetime:
    """Parse a transcript date into a naive datetime.

    Accepts LoCoMo's and LongMemEval's forms, ISO 8601 with or without a time zone (an aware
    time is converted to UTC, then stored without tzinfo), and what ``dateutil`` reads.

    Raises:
        ValueError: the text is empty or not a date.
    """
    value = " ".join(str(text).split())
    if not value:
        raise ValueError("empty date")
    for fmt in _FORMATS:
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    try:
        parsed = _dateutil(value, fuzzy=False)
    except (ValueError, OverflowError) as exc:
        if " on " not in value:
            raise ValueError(f"not a date: {text!r} ({exc})") from exc
        try:  # LoCoMo-like "1:56 pm on 8 May 2023" in a shape the formats above do not cover
            parsed = _dateutil(value.replace(" on ", " "), fuzzy=True)
        except (ValueError, OverflowError):
            raise ValueError(f"not a date: {text!r}") from exc
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


#: Two defaults for the parts a date leaves out: a part that differs between the two parses was not
#: in the text. dateutil's own default is today, which would put the clock into a transcript.
_DEFAULTS = (datetime(1900, 1, 1), datetime(1904, 2, 2))


def _dateutil(value: str, fuzzy: bool) -> datetime:
    """dateutil's parse without the clock: a year and a month must be written; a missing day is the
    1st, a missing time 00:00.

    Raises:
        ValueError: not a date, or no year or month in it.
    """
    first, second = (dateutil_parser.parse(value, default=d, fuzzy=fuzzy) for d in _DEFAULTS)
    if first.year != second.year:
        raise ValueError("it has no year")
    if first.month != second.month:
        raise ValueError("it has no month")
    return cast(datetime, first)


#: A date inside a longer text, as headers write it: "Session 2 — 10 September 2024", "## 2024-03-03".
DATE_IN_TEXT = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{4}/\d{1,2}/\d{1,2}(?: \(\w{3}\))?(?: \d{1,2}:\d{2})?"
    r"|(?:\d{1,2}:\d{2}\s*(?:[ap]\.?m\.?)?\s+on\s+)?\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?,?\s+\d{4}"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{4}",
    re.IGNORECASE)


def find_date(text: str) -> datetime | None:
    """The first date written inside ``text`` (a header such as "Session 2 — 10 September 2024"),
    or None when it holds none. Never the clock."""
    for match in DATE_IN_TEXT.finditer(text):
        try:
            return parse_time(match.group(0))
        except ValueError:
            continue
    return None


_NUMBER = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of)"
_UNIT = r"(?:day|week|month|year)s?"
_WEEKDAY = (r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday"
            r"|mon|tue|tues|wed|thu|thur|thurs|fri|sat)")
_RELATIVE = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|the day before yesterday|last night|earlier today|the other day"
    rf"|this (?:morning|afternoon|evening)|over the weekend"
    rf"|(?:this past|last|next|this|past) (?:{_UNIT}|weekend|{_WEEKDAY})"
    rf"|(?:about |around )?{_NUMBER} {_UNIT} ago|in {_NUMBER} {_UNIT})\b"
    rf"(?! ?[\[(][^\])]*\d{{4}}[\])])",  # not one already annotated ("yesterday [7 May 2023]", "(7 May 2023)")
    re.IGNORECASE,
)
_WORD_NUMBERS = {"a": "1", "an": "1", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
                 "seven": "7", "eight": "8", "nine": "9", "ten": "10", "a few": "3", "a couple of": "2"}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


#: Expressions that name a day a fixed number of days before the session's.
_DAYS_BEFORE = {"the day before yesterday": 2, "tonight": 0, "earlier today": 0, "this morning": 0,
                "this afternoon": 0, "this evening": 0, "last night": 1, "the other day": 3}


def _weekday(word: str) -> int | None:
    """0 (Monday) … 6 for a weekday name or its abbreviation ("Fri", "Tues."), else None."""
    word = word.rstrip(".")
    return next((k for k, name in enumerate(_WEEKDAYS) if len(word) >= 3 and name.startswith(word)), None)


def _normalised(expression: str) -> str:
    """A relative expression in lower case with single spaces, without "about"/"around", "this past" as "last"."""
    return re.sub(r"^(?:about|around) ", "", " ".join(expression.lower().split())).replace("this past ", "last ")


def resolve_relative_date(expression: str, base: datetime) -> datetime | None:
    """The date a relative expression ("yesterday", "last week", "two days ago", "last Friday")
    means when said at ``base`` — the message's session date, never now. None when unknown.
    A period ("last week", "last year") gives a day inside it; :func:`relative_date` says how precise.

    Uses ``dateparser`` with ``RELATIVE_BASE = base``; "last/this <weekday>" is resolved here
    (dateparser reads "last Friday" but not "this Friday").
    """
    import dateparser

    text = _normalised(expression)
    if text in _DAYS_BEFORE:
        return base - timedelta(days=_DAYS_BEFORE[text])
    if text == "over the weekend":  # said Monday–Thursday: the one before; Friday–Sunday: this one
        return base - timedelta(days=(base.weekday() - 5) % 7 or 7) if base.weekday() < 4 else base
    words = text.split()
    if len(words) == 2 and (target := _weekday(words[1])) is not None and words[0] in ("last", "this", "next", "past"):
        delta = (base.weekday() - target) % 7
        if words[0] in ("last", "past"):
            return base - timedelta(days=delta or 7)
        ahead = (target - base.weekday()) % 7
        return base + timedelta(days=ahead or (7 if words[0] == "next" else 0))
    if words and words[0] in ("this", "past") and len(words) == 2:
        return base  # "this week", "this weekend": the session's own period
    if words in (["last", "weekend"], ["next", "weekend"]):  # the Saturday before / after the session
        if words[0] == "last":
            return base - timedelta(days=(base.weekday() - 5) % 7 or 7)
        return base + timedelta(days=(5 - base.weekday()) % 7 or 7)
    for word, digit in sorted(_WORD_NUMBERS.items(), key=lambda item: -len(item[0])):
        text = re.sub(rf"^(in )?{word} ", rf"\g<1>{digit} ", text)
    parsed = dateparser.parse(text, settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past",
                                              "RETURN_AS_TIMEZONE_AWARE": False})
    return cast(datetime | None, parsed)


Precision = Literal["day", "about", "week", "weekend", "month", "year"]


@dataclass(frozen=True)
class RelativeDate:
    """A relative expression resolved against its session date: ``when`` (a day inside the period),
    how precise the expression is, and ``text``, the period as MemSIF writes it (LoCoMo's own way of
    answering: "7 May 2023", "the week before 8 May 2023", "the weekend before 8 May 2023",
    "April 2023", "2022")."""

    expression: str
    when: datetime
    precision: Precision
    text: str


def relative_date(expression: str, base: datetime) -> RelativeDate | None:
    """``expression`` said at ``base`` as a :class:`RelativeDate`, or None when it cannot be resolved.

    "yesterday", "last night", "this morning", "earlier today", "last Friday", "two days ago" name a day;
    "a few days ago", "a couple of weeks ago", "the other day" say only "about" (some days or weeks before
    the session); "last week" the week before it, "this week" the week of it; "last weekend" / "this past
    weekend" the weekend before it, "over the weekend" the one before it said Monday–Thursday and the one
    of it said Friday–Sunday; "last month", "two
    months ago" a month; "last year", "five years ago" a year. Never the current date.
    """
    when = resolve_relative_date(expression, base)
    if when is None:
        return None
    text = _normalised(expression)
    said = day_text(base)
    unit = re.search(r"(day|week|month|year)s?\b", text)
    period = "weekend" if "weekend" in text else (unit.group(1) if unit else "day")
    ahead = text.startswith(("next", "in ")) or text == "tomorrow"
    if text.startswith(("a few", "a couple of", "in a few", "in a couple of")) or text == "the other day":
        return RelativeDate(expression, when, "about", f"a few {period}s {'after' if ahead else 'before'} {said}")
    if period == "day":
        return RelativeDate(expression, when, "day", day_text(when))
    if period == "weekend":
        spoken_in_it = text == "over the weekend" and base.weekday() >= 4  # said on Friday–Sunday
        where = "of" if text.startswith("this") or spoken_in_it else ("after" if ahead else "before")
        return RelativeDate(expression, when, "weekend", f"the weekend {where} {said}")
    if period == "week":
        if text.startswith(("this", "past")):
            return RelativeDate(expression, when, "week", f"the week of {said}")
        if text in ("last week", "next week"):
            return RelativeDate(expression, when, "week", f"the week {'after' if ahead else 'before'} {said}")
        return RelativeDate(expression, when, "week", f"the week of {day_text(when)}")
    if period == "month":
        return RelativeDate(expression, when, "month", f"{when:%B %Y}")
    return RelativeDate(expression, when, "year", f"{when.year}")


def annotate_relative_dates(text: str, base: datetime | None, brackets: str = "[]") -> tuple[str, list[RelativeDate]]:
    """Append the resolved period after each relative expression: "yesterday" said on 8 May 2023 becomes
    "yesterday [7 May 2023]", "last week" becomes "last week [the week before 8 May 2023]", "last year"
    "last year [2022]" (:func:`relative_date`). An expression already annotated is left alone;
    ``brackets="()"`` writes "yesterday (7 May 2023)" (a stored statement, where square brackets read as
    JSON debris). Returns the new text and the resolved expressions in order. Without a session date the
    text is returned unchanged (never resolved against now).
    """
    if base is None:
        return text, []
    found: list[RelativeDate] = []

    def replace(match: re.Match[str]) -> str:
        resolved = relative_date(match.group(0), base)
        if resolved is None:
            return str(match.group(0))
        found.append(resolved)
        return f"{match.group(0)} {brackets[0]}{resolved.text}{brackets[1]}"

    return _RELATIVE.sub(replace, text), found
