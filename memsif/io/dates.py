"""Dates that cannot be right: a message dated after the day it is loaded, or before any chat
transcript (a year typo such as 2203, or the epoch default 1970-01-01 of a timestamp 0).

Such a message is kept with its date (nothing is lost, the date may be deliberate) and the load
warns, naming it: answers and timelines sort and date by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from memsif.records import Message

#: The earliest date a message of a chat transcript plausibly has.
EARLIEST = datetime(1990, 1, 1)
#: How far after the load a date may lie: clocks and time zones disagree by up to a day.
CLOCK_SLACK = timedelta(days=1)
#: How many messages a warning names (it gives the count of the rest).
NAMED = 5


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def implausible(when: datetime | None, now: datetime | None = None) -> bool:
    """Whether ``when`` (naive, as ``Message.time``) lies before :data:`EARLIEST` or more than
    :data:`CLOCK_SLACK` after ``now`` (default: the clock, UTC)."""
    return when is not None and (when < EARLIEST or when > (now or _now()) + CLOCK_SLACK)


def implausible_dates(messages: Sequence[Message], now: datetime | None = None) -> list[str]:
    """One warning naming the messages whose date is :func:`implausible` (the first :data:`NAMED`,
    with the count), or none."""
    now = now or _now()
    odd = [m for m in messages if implausible(m.time, now)]
    if not odd:
        return []
    named = ", ".join(f"{m.id} ({m.time:%Y-%m-%d})" for m in odd[:NAMED] if m.time)
    more = f" and {len(odd) - NAMED} more" if len(odd) > NAMED else ""
    return [f"{len(odd)} message{'s are' if len(odd) != 1 else ' is'} dated before {EARLIEST:%Y-%m-%d} or after "
            f"{now + CLOCK_SLACK:%Y-%m-%d}, which cannot be right: {named}{more}. They are stored with these dates "
            "(answers and timelines order and date them by these); correct the file if a date is a typo or a "
            "timestamp 0"]
