"""The values a statement asserts, so that a changed value is never merged away (§3.3, docs/method.md).

Two statements that differ only in a number, date, time, count, amount or polarity score above the
duplicate threshold with small embedders ("rent is 1,200 euros" / "rent is 1,500 euros": cosine 0.99
with MiniLM). A statement's :class:`Values` are read with the tokenizer of :mod:`memsif.lexical`
(spaCy's ``like_num`` for digits and number words); :func:`mask` gives the statement with those
values removed, to compare the claim itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memsif import lexical

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 1000, "million": 1_000_000, "once": 1, "twice": 2, "first": 1, "second": 2, "third": 3,
    "dozen": 12, "half": 0.5, "single": 1, "couple": 2,
}
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
_MONTH_ABBREVIATIONS = {m[:3]: m for m in MONTHS} | {"sept": "september"}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: Words that make an amount's unit or a time's half of day part of the value.
UNITS = {"$", "€", "£", "¥", "%", "percent", "euro", "euros", "dollar", "dollars", "pound", "pounds", "usd",
         "eur", "gbp", "yen", "am", "pm", "a.m.", "p.m.", "km", "kilometers", "kilometres", "miles", "mile",
         "kg", "kilos", "lbs", "hours", "hour", "minutes", "minute", "days", "day", "weeks", "week", "months",
         "month", "years", "year"}
NEGATIONS = {"not", "n't", "never", "no", "none", "nobody", "nothing", "neither", "nor", "without",
             "cannot", "nowhere"}
_TIME = re.compile(r"^\d{1,2}[:.]\d{2}$")
_ORDINAL = re.compile(r"^(\d+)(st|nd|rd|th)$")


@dataclass(frozen=True)
class Values:
    """What a statement asserts beyond its claim: numbers (digits and number words, as numbers),
    calendar words (months, weekdays), clock times, units of amounts, and polarity."""

    numbers: frozenset[float] = frozenset()
    calendar: frozenset[str] = frozenset()
    times: frozenset[str] = frozenset()
    units: frozenset[str] = frozenset()
    negated: bool = False

    def differences(self, other: Values) -> list[str]:
        """The kinds of value on which two statements differ ([] when they assert the same values)."""
        kinds = [name for name in ("numbers", "calendar", "times", "units")
                 if getattr(self, name) != getattr(other, name)]
        if self.negated != other.negated:
            kinds.append("polarity")
        return kinds

    def describe(self) -> str:
        """Short text for logs: "numbers 1200; units euros"."""
        parts = [f"{name} {', '.join(sorted(_fmt(v) for v in getattr(self, name)))}"
                 for name in ("numbers", "calendar", "times", "units") if getattr(self, name)]
        if self.negated:
            parts.append("negated")
        return "; ".join(parts) or "no values"


def _fmt(value: float | str) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _number(word: str) -> float | None:
    text = word.replace(",", "").replace("_", "")
    if match := _ORDINAL.match(text):
        text = match.group(1)
    try:
        return float(text)
    except ValueError:
        return float(NUMBER_WORDS[text]) if text in NUMBER_WORDS else None


def _classify(word: lexical.Word) -> tuple[str, float | str] | None:
    low = word.lower
    if _TIME.match(low):
        return "times", low.replace(".", ":")
    if word.like_num or _ORDINAL.match(low) or low in NUMBER_WORDS:
        number = _number(low)
        if number is not None:
            return "numbers", number
    if low in MONTHS or low in WEEKDAYS:
        return "calendar", low
    if low.rstrip(".") in _MONTH_ABBREVIATIONS and word.text[:1].isupper():
        return "calendar", _MONTH_ABBREVIATIONS[low.rstrip(".")]
    if low in UNITS:
        return "units", low.rstrip("s") if low.endswith("s") and len(low) > 3 else low
    if low in NEGATIONS:
        return "negation", low
    return None


def values(text: str, words: list[lexical.Word] | None = None) -> Values:
    """The :class:`Values` of ``text`` (or of its ``words`` when the caller has tokenised it already).
    "may" counts as a month only when written "May"."""
    found: dict[str, set[Any]] = {"numbers": set(), "calendar": set(), "times": set(), "units": set()}
    negated = False
    for word in lexical.words(text) if words is None else words:
        kind = _classify(word)
        if kind is None or (word.lower == "may" and word.text != "May"):
            continue
        if kind[0] == "negation":
            negated = True
        else:
            found[kind[0]].add(kind[1])
    return Values(frozenset(found["numbers"]), frozenset(found["calendar"]), frozenset(found["times"]),
                  frozenset(found["units"]), negated)


def mask(text: str) -> str:
    """``text`` with its values and negations left out: the claim, to compare two statements' claims."""
    kept = [w.text for w in lexical.words(text)
            if _classify(w) is None or (w.lower == "may" and w.text != "May")]
    return " ".join(kept)
