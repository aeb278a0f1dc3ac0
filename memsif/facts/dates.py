"""The dates a CoreFact statement gives, settled by rule against its source messages (§3.3).

A small model writes the session date into a statement whatever the message said ("I lost my job this
month" said on 20 January 2023 becomes "lost her job on 20 January 2023"), and copies the resolved
dates of the prompt twice. Before the gate sees a candidate, every day-precise date of its statement
is checked against its sources:

- a date a source writes, or a day a source's relative expression names ("yesterday" said on 21 June,
  "today"), stays;
- any other date is replaced by the one period the sources name ("in January 2023", "in the week before
  21 July 2023", "on the weekend before 20 October 2023", "a few weeks before 15 July 2023"), or, when
  they name none or several, removed. The session date of a message that gives no date ("I volunteered
  at the shelter") is when it was said, not when it happened: it is removed from the statement, and the
  fact keeps it as its event time (an answer context shows a fact with that date, unless the statement
  names a day of its own: :func:`names_a_day`).

Relative expressions left in the statement carry their period in parentheses ("last week (the week
before 16 March 2023)"; :func:`memsif.timeparse.annotate_relative_dates`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memsif.records import Message
from memsif.timeparse import DATE_IN_TEXT, RelativeDate, annotate_relative_dates, day_text, parse_time

#: An annotation after a relative expression, as the prompt showed it or the model rewrote it:
#: "last week [the week before 16 March 2023]", "last week (9 March 2023)".
_ANNOTATION = re.compile(r" ?[\[(](?:the |a few )?[^\[\]()]*\d{4}[\])]")
_DAY_DATE = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)? (?:of )?[A-Z][a-z]+,? \d{4}\b"
                       r"|\b[A-Z][a-z]+ \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b")
_PREPOSITION = {"day": "on ", "weekend": "on ", "week": "in ", "month": "in ", "year": "in ", "about": ""}


def _day_dates(text: str) -> list[tuple[str, str]]:
    """(the written date, its day as MemSIF writes it) for each day-precise date in ``text``."""
    found = []
    for match in _DAY_DATE.finditer(text):
        if not DATE_IN_TEXT.fullmatch(match.group(0)):
            continue
        try:
            found.append((match.group(0), day_text(parse_time(match.group(0)))))
        except ValueError:
            continue
    return found


def names_a_day(statement: str) -> bool:
    """Whether ``statement`` names a day of its own ("on 5 July 2023", "yesterday (7 May 2023)", "the week
    before 27 March 2022"): after :func:`settle_dates` such a day is one its sources give, and the session
    day beside it would be a second date for the same event."""
    return bool(_day_dates(statement))


def settle_dates(statement: str, sources: Sequence[Message]) -> tuple[str, str]:
    """``statement`` with its dates settled against ``sources`` (see the module). Returns the new
    statement and a note of what was changed ("" when nothing was)."""
    resolved: list[RelativeDate] = []
    written: set[str] = set()
    for m in sources:
        resolved += annotate_relative_dates(m.text, m.time)[1]
        written |= {day for _, day in _day_dates(m.text)}
    allowed = written | {r.text for r in resolved if r.precision == "day"}
    periods = list(dict.fromkeys((r.precision, r.text) for r in resolved))
    base = max((m.time for m in sources if m.time), default=None)
    # the model's copies of the prompt's annotations go; the statement's own relative expressions get theirs
    text = _ANNOTATION.sub("", statement) if resolved or base else statement
    text = annotate_relative_dates(text, base, brackets="()")[0]
    notes = []
    outside = _ANNOTATION.sub(lambda m: "#" * len(m.group(0)), text)  # dates inside annotations are ours
    for precision, period in periods:  # and so is a period the statement already says ("the week before 8 May 2023")
        if precision in ("week", "weekend", "about"):
            outside = outside.replace(period, "#" * len(period))
    for date, day in reversed(_day_dates(outside)):
        if day in allowed:
            continue
        start = outside.rfind(date)
        before = re.search(r"(?:\b(?:on|in|at)\s+)?$", text[:start])
        cut_from = before.start() if before and before.group(0) else start
        if len(periods) == 1 and f"({periods[0][1]})" in text:  # already said by the annotated expression
            replacement = ""
            notes.append(f"dropped {date}: the statement's own relative date says {periods[0][1]}")
        elif len(periods) == 1:
            precision, period = periods[0]
            replacement = f"{_PREPOSITION[precision]}{period}"
            notes.append(f"{date} is not what {_ids(sources)} {'say' if len(sources) > 1 else 'says'}: {replacement}")
        else:
            replacement = ""
            notes.append(f"dropped {date}: {_ids(sources)} {'give' if len(sources) > 1 else 'gives'} no such day")
        text = text[:cut_from] + replacement + text[start + len(date):]
        outside = outside[:cut_from] + replacement + outside[start + len(date):]
    text = re.sub(r"\s+([.,;!?])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
    if text != statement and not notes and _ANNOTATION.search(statement):
        notes.append("the prompt's date annotations rewritten")
    return text, "; ".join(notes)


def _ids(sources: Sequence[Message]) -> str:
    return ", ".join(m.id for m in sources)
