"""Chat logs as messaging apps export them: every message starts a line with its date and time, then the
speaker and what they said; a line without a stamp continues the message before it.

Layouts recognised (``LAYOUTS``): WhatsApp on Android (``12/31/23, 10:02 PM - Ana: text``, also with dots
or a 24-hour clock), WhatsApp on iOS (``[31/12/2023, 22:02:11] Ana: text``), a time alone
(``[10:02] Ana: text``, dated by ``## 1 March 2024`` headers) and an ISO stamp (``[2024-03-01 10:02] Ana:``).
A stamped line without a speaker is the app's own notice ("Messages and calls are end-to-end
encrypted", "Ana joined") and is left out. So is a message that holds only WhatsApp's own words in place
of what was said (``app_words``: "<Media omitted>", "image omitted", "This message was deleted", a missed
call, a view-once message exported as "null", the encryption notice iOS puts under the chat's name); an
edited message keeps its words without the "<This message was edited>" mark, and a file exported with the
chat is marked "[attachment: IMG-….jpg]" as other formats mark theirs (``app_text``). Each message keeps
the number of its line within its day, so ids stay those of the export. Day and month are told apart by
the file's own dates (a first number above 12 is a day, a second above 12 a month); a file where every
date could be either is refused, naming the ``--format`` that settles it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memsif.errors import TranscriptError
from memsif.records import Message
from memsif.timeparse import find_date

DateOrder = Literal["dmy", "mdy"]
#: What each layout looks like, for the README and error messages.
LAYOUTS = ("12/31/23, 10:02 PM - Ana: text (WhatsApp, Android)", "[31/12/2023, 22:02:11] Ana: text (WhatsApp, iOS)",
           "[10:02] Ana: text", "[2024-03-01 10:02] Ana: text")
#: The app's own notices (a stamped line without a speaker), as the load's warning counts them.
NOTICE = "chat app notice"

_DATE = r"\d{1,4}[./-]\d{1,2}[./-]\d{1,4}"
_TIME = r"\d{1,2}[:.]\d{2}(?:[:.]\d{2})?(?:\s?[AaPp]\.?\s?[Mm]\.?)?"
_LINE = re.compile(rf"^\[(?P<bracket>(?:{_DATE},?\s+)?{_TIME})\]\s*(?P<rest>.*)$"
                   rf"|^(?P<plain>{_DATE},?\s+{_TIME})\s+[-–]\s+(?P<rest2>.*)$")
_STAMP = re.compile(r"^(?:(?P<a>\d{1,4})[./-](?P<b>\d{1,2})[./-](?P<c>\d{1,4}),?\s+)?(?P<h>\d{1,2})[:.](?P<m>\d{2})"
                    r"(?:[:.](?P<s>\d{2}))?(?:\s?(?P<ampm>[AaPp])\.?\s?[Mm]\.?)?$")
_SPEAKER = re.compile(r"^(?P<name>[^:：\n]{1,60}?)\s*[:：]\s?(?P<text>.*)$")
_HEADER = re.compile(r"^#{1,6}\s*(.*?)\s*$")
#: Marks the apps put in their lines: left-to-right marks, and no-break spaces before AM/PM.
_MARKS = str.maketrans({"\u200e": None, "\u200f": None, "\u202f": " ", "\u00a0": " "})
#: WhatsApp's own words in the place of a message, by what they stand for (one, several; the load's warning
#: counts them): a message whose whole text is one of them is left out.
APP_WORDS = (
    (("media file not in the export", "media files not in the export"), re.compile(
        r"<media omitted>|(?:image|video|audio|sticker|gif|document|contact card|video note|voice message)\s+"
        r"omitted|<view once (?:photo|video|voice message) omitted>", re.I)),
    (("deleted message", "deleted messages"), re.compile(
        r"(?:this message was deleted|you deleted this message|waiting for this message\. this may take a while)\.?",
        re.I)),
    (("call", "calls"), re.compile(r"(?:missed\s+)?(?:group\s+)?(?:voice|video)\s+call(?:\s*[,·•].*)?", re.I)),
    (("view-once message", "view-once messages"), re.compile(r"null")),  # what an Android export writes for one
    (("notice under the chat's name", "notices under the chat's name"), re.compile(
        r"messages (?:and calls )?are end-to-end encrypted\..*|your security code with .* changed\..*", re.I)),
)
_EDITED = re.compile(r"\s*<this message was edited>", re.I)
_ATTACHED = re.compile(r"^<attached:\s*(?P<ios>[^>]+?)\s*>|^(?P<android>\S+\.\w{2,5})\s+\(file attached\)", re.I)
_SAMPLE_LINES = 30
_SAMPLE_CHARS = 64 * 1024


class AmbiguousDates(TranscriptError):
    """A chat log whose every date could be day/month or month/day: the reader must say which."""


@dataclass
class _Stamp:
    """A line's stamp: its date's three numbers as written (None: a time alone) and its time."""

    date: tuple[int, int, int] | None
    hour: int
    minute: int
    second: int


def _clean(line: str) -> str:
    return line.translate(_MARKS).rstrip()


def _stamped(line: str) -> tuple[_Stamp, str] | None:
    """(the stamp, the rest of the line) of a line that starts with a date and time, else None."""
    found = _LINE.match(_clean(line))
    if not found:
        return None
    stamp = _STAMP.match((found.group("bracket") or found.group("plain")).strip())
    if not stamp:
        return None
    hour, minute = int(stamp.group("h")), int(stamp.group("m"))
    if (ampm := stamp.group("ampm")) is not None:
        hour = hour % 12 + (12 if ampm.lower() == "p" else 0)
    if hour > 23 or minute > 59:
        return None
    date = (int(stamp.group("a")), int(stamp.group("b")), int(stamp.group("c"))) if stamp.group("a") else None
    return _Stamp(date, hour, minute, int(stamp.group("s") or 0)), found.group("rest") or found.group("rest2") or ""


def is_chat_log(raw: str) -> bool:
    """Whether ``raw`` is a chat log: its first line of conversation (after ``#`` headers) is stamped, and
    so are at least half of its first lines."""
    head = raw[:_SAMPLE_CHARS].splitlines()  # a large JSON file is not split whole to look at its start
    lines = [line for line in head if line.strip() and not _HEADER.match(line)][:_SAMPLE_LINES]
    return bool(lines) and _stamped(lines[0]) is not None and \
        sum(_stamped(line) is not None for line in lines) * 2 >= len(lines)


def date_order(dates: list[tuple[int, int, int]], path: str) -> DateOrder | None:
    """Whether the file's numeric dates are day/month or month/day (None: year first, or no dates).

    Raises:
        TranscriptError: every date could be either, or the dates contradict each other.
    """
    short = [d for d in dates if d[0] < 1000]
    if not short:
        return None
    day_first = any(a > 12 for a, _, _ in short)
    month_first = any(b > 12 for _, b, _ in short)
    if day_first and month_first:
        raise TranscriptError("the chat log's dates are neither all day/month nor all month/day (e.g. "
                              f"{'/'.join(map(str, next(d for d in short if d[0] > 12)))} and "
                              f"{'/'.join(map(str, next(d for d in short if d[1] > 12)))})", path=path)
    if not (day_first or month_first):
        example = "/".join(f"{n:02d}" for n in short[0])
        raise AmbiguousDates(f"the chat log's dates could be day/month or month/day (every one, e.g. {example}, "
                              "has both numbers at 12 or below). Say which: --format chatlog-dmy (31/12) or "
                              "--format chatlog-mdy (12/31); in Python, format='chatlog-dmy'.", path=path)
    return "dmy" if day_first else "mdy"


def _when(stamp: _Stamp, order: DateOrder | None, day: datetime | None) -> datetime | None:
    """The stamp's date and time: its own date read in ``order``, else the ``day`` of the header above."""
    if stamp.date is None:
        return day.replace(hour=stamp.hour, minute=stamp.minute, second=stamp.second) if day else None
    a, b, c = stamp.date
    year, month, dom = (a, b, c) if a >= 1000 else (c, b, a) if order == "dmy" else (c, a, b)
    year += 2000 if year < 100 else 0
    return datetime(year, month, dom, stamp.hour, stamp.minute, stamp.second)


def load_chat_log(raw: str, path: str, sid: str, order: DateOrder | None = None) -> tuple[list[Message], list[str]]:
    """The messages of a chat log (one session per day; ids ``<day>:<n>``, or ``D1:<n>`` undated) and the
    load's warnings. ``order`` says how to read day and month; None: the file's own dates tell.

    Raises:
        TranscriptError: a date that does not exist, or dates that leave day and month undecided.
    """
    lines = raw.splitlines()
    stamps = [s for line in lines if (s := _stamped(line))]
    order = order or date_order([s.date for s, _ in stamps if s.date], path)
    messages: list[Message] = []
    notices: Counter[str] = Counter()
    day: datetime | None = None
    turns: Counter[str] = Counter()
    undated = 0
    in_notice = False
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        found = _stamped(line)
        if found is None:
            header = _HEADER.match(line)
            if header:  # a header without a date keeps the day, once a message has it
                day = find_date(header.group(1)) or (day if messages else None)
            elif messages and not in_notice:
                messages[-1].text += "\n" + _clean(line).strip()
            elif not messages and not in_notice:
                raise TranscriptError("expected a stamped line ('[date, time] Name: text') before any other text",
                                      path=path, position=f"line {line_no}")
            continue
        stamp, rest = found
        said = _SPEAKER.match(rest)
        in_notice = said is None
        if said is None:
            notices[NOTICE] += 1
            continue
        try:
            when = _when(stamp, order, day)
        except ValueError as exc:
            raise TranscriptError(f"the date {'/'.join(map(str, stamp.date or ()))} does not exist ({exc})",
                                  path=path, position=f"line {line_no}") from exc
        session = when.date().isoformat() if when else "1"
        undated += when is None
        turns[session] += 1
        messages.append(Message(id=f"{session if when else 'D1'}:{turns[session]}", namespace=sid,
                                speaker=said.group("name").strip(), text=said.group("text").strip(), time=when,
                                session_id=session, index=len(messages)))
    kept: list[Message] = []
    placeholders: Counter[tuple[str, str]] = Counter()
    for m in messages:
        if (kind := app_words(m.text)) is not None:
            placeholders[kind] += 1
            continue
        m.text = app_text(m.text)
        if m.text:
            kept.append(m.model_copy(update={"index": len(kept)}))
    return kept, _warnings(notices[NOTICE], placeholders, undated)


def app_words(text: str) -> tuple[str, str] | None:
    """What WhatsApp's own words stand for when they are the whole of a message's ``text`` (("deleted
    message", "deleted messages"), …; ``APP_WORDS``), else None: the message is what a person said."""
    said = _EDITED.sub("", text).strip()
    return next((kind for kind, words in APP_WORDS if words.fullmatch(said)), None)


def app_text(text: str) -> str:
    """A message's ``text`` without WhatsApp's marks: the words of an edited message without its "<This
    message was edited>", and a file exported with the chat ("<attached: 0012-PHOTO-….jpg>", "IMG-….jpg
    (file attached)") as "[attachment: <name>]", its caption after it."""
    text = _EDITED.sub("", text).strip()
    found = _ATTACHED.match(text)
    if found:
        name = found.group("ios") or found.group("android")
        text = f"[attachment: {name}]{text[found.end():]}"
    return text


def _warnings(notices: int, placeholders: Counter[tuple[str, str]], undated: int) -> list[str]:
    """What a chat log's load left out (``notices`` lines, ``placeholders`` messages by kind) and could not
    date."""
    out = []
    if notices:
        out.append(f"left out {notices} line{'s' if notices != 1 else ''} of the chat app's own notices (no "
                   "speaker: encryption notices, people joining or leaving)")
    if placeholders:
        total = sum(placeholders.values())
        kinds = ", ".join(f"{n} {one if n == 1 else many}"
                          for (one, many), n in sorted(placeholders.items(), key=lambda kv: (-kv[1], kv[0])))
        out.append(f"left out {total} message{'s' if total != 1 else ''} that "
                   f"{'hold' if total != 1 else 'holds'} only the chat app's own words, not what anyone said "
                   f"({kinds})")
    if undated:
        out.append(f"{undated} message{'s carry' if undated != 1 else ' carries'} a time but no date: stored "
                   "undated; put a '## 1 March 2024' line before each day's messages to date them")
    return out
