"""Dates of the transcript formats MemSIF reads; never falls back to "now"."""

from __future__ import annotations

from datetime import UTC, datetime

from dateutil import parser as dateutil_parser

_FORMATS = (
    "%I:%M %p on %d %B, %Y",   # LoCoMo: "1:56 pm on 8 May, 2023"
    "%Y/%m/%d (%a) %H:%M",     # LongMemEval: "2023/05/20 (Sat) 02:21"
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
)


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
        parsed = dateutil_parser.parse(value, fuzzy=False)
    except (ValueError, OverflowError) as exc:
        try:
            parsed = dateutil_parser.parse(value.replace(" on ", " "), fuzzy=True)
        except (ValueError, OverflowError):
            raise ValueError(f"not a date: {text!r}") from exc
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed
