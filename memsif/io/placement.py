"""Where a transcript's messages go in a memory that already holds messages: already stored, appended
as new, or in conflict with what is stored.

The rules (README "Appending to a memory"):

- The same id with the same text, speaker and time is already stored (skipped).
- The same id with another text, speaker or time is a *difference*: the memory and the source
  disagree, and nothing is written until the caller replaces the stored version
  (``MemSIF.ingest_transcript(replace=True)``).
- Ids the loader numbered itself (``Transcript.source_ids`` false: plain text ``D1:1``, OpenAI
  ``M1``, JSONL ``J3``) restart at 1 in every file and every MCP call. For those, a session whose
  messages are all stored in order under other ids is already stored (an export read again, ids of
  an older MemSIF version); a session that extends a stored one continues it; a session whose ids
  are taken by messages of *other* text (most of the ids that collide hold another text) is a new
  session, numbered after the stored ones. When most colliding ids hold the same text the session
  is an edited version of the stored one: its changes are differences.
- A speaker the memory holds under another spelling (case, invisible characters, Unicode form) is
  the same person: the transcript's messages take the stored spelling, with a note
  (:mod:`memsif.io.speakers`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memsif.io.chatlog import app_text
from memsif.io.roles import without_reasoning
from memsif.io.speakers import with_one_spelling
from memsif.records import Message
from memsif.timeparse import day_text

_TEXT_ID = re.compile(r"^D(\d+):(\d+)$")        # plain text: D<session>:<turn>
_NUMBERED_ID = re.compile(r"^([A-Za-z]+)(\d+)$")  # OpenAI M<k>, JSONL J<line>
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


@dataclass(frozen=True)
class Difference:
    """One field of one message that the source and the memory disagree on."""

    message_id: str
    field: str  # "text", "speaker" or "time"
    stored: str
    given: str

    def describe(self) -> str:
        return f"{self.message_id} {self.field} {_short(self.stored)!r} → {_short(self.given)!r}"


@dataclass
class Placement:
    """``messages``: the transcript's messages with the ids they have in the memory (stored ones keep
    theirs, so ingest skips them); ``renumbered`` maps a given id to its id in the memory where they
    differ; ``differences`` lists every disagreement; ``notes`` says what was renumbered or matched."""

    messages: list[Message]
    renumbered: dict[str, str] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _time_text(m: Message) -> str:
    return m.time.isoformat(sep=" ") if m.time else "undated"


def differences(stored: Message, given: Message) -> list[Difference]:
    """The fields of ``given`` that differ from the stored message with the same id. What the loaders now
    read differently of the same file is no difference (``read_again``): the stored message stays as it is."""
    out = []
    for name, a, b in (("text", stored.text, given.text), ("speaker", stored.speaker, given.speaker),
                       ("time", _time_text(stored), _time_text(given))):
        if a != b and not read_again(name, a, b):
            out.append(Difference(stored.id, name, a, b))
    return out


def read_again(field: str, stored: str, given: str) -> bool:
    """Whether ``given`` is how today's loaders read the same source as ``stored``: a text without the
    model's reasoning blocks (``roles.without_reasoning``), without the "[image]" lines older loaders
    wrote for a voice recording, or without a chat app's marks (``chatlog.app_text``: an edited message's
    mark, an attached file as "[attachment: …]"); a time where the message was stored undated (it now takes its
    conversation's)."""
    if field == "time":
        return stored == "undated"
    if field != "text":
        return False
    unvoiced = "\n".join(line for line in stored.split("\n") if line.strip() != "[image]").strip()
    return given in (without_reasoning(stored)[0], unvoiced, without_reasoning(unvoiced)[0], app_text(stored))


def _content(m: Message) -> tuple[str, str, datetime | None]:
    return m.speaker, m.text, m.time


def _sessions(messages: Sequence[Message]) -> list[list[Message]]:
    groups: dict[str, list[Message]] = {}
    for m in messages:
        groups.setdefault(m.session_id, []).append(m)
    return list(groups.values())


def _continue_id(last_id: str, step: int) -> str:
    match = _TRAILING_NUMBER.match(last_id)
    return f"{match.group(1)}{int(match.group(2)) + step}" if match else f"{last_id}+{step}"


def _renumbered(session: list[Message], taken: set[str], sessions: set[str]) -> tuple[list[str], str] | None:
    """New ids and session id for a session of loader-numbered ids, after every taken id (``sessions``:
    the session ids in use); None when its ids follow no numbering this module knows (then a collision
    is a difference)."""
    if all(_TEXT_ID.match(m.id) for m in session):
        after = max((int(x.group(1)) for t in taken if (x := _TEXT_ID.match(t))), default=0)
        first = min(int(x.group(1)) for m in session if (x := _TEXT_ID.match(m.id)))
        ids = [f"D{int(x.group(1)) - first + after + 1}:{x.group(2)}" for m in session if (x := _TEXT_ID.match(m.id))]
        return ids, f"session_{after + 1}"
    prefixes = {x.group(1) for m in session if (x := _NUMBERED_ID.match(m.id))}
    if len(prefixes) == 1 and all(_NUMBERED_ID.match(m.id) for m in session):
        (prefix,) = prefixes
        after = max((int(x.group(2)) for t in taken if (x := _NUMBERED_ID.match(t)) and x.group(1) == prefix),
                    default=0)
        ids = [f"{prefix}{int(x.group(2)) + after}" for m in session if (x := _NUMBERED_ID.match(m.id))]
        sid = session[0].session_id
        if sid in sessions:
            numbers = [int(t) for t in sessions if t.isdigit()]
            sid = str(max(numbers) + 1) if sid.isdigit() else next(
                f"{sid}#{k}" for k in range(2, len(sessions) + 3) if f"{sid}#{k}" not in sessions)
        return ids, sid
    return None


def place(given: Sequence[Message], stored: Sequence[Message], source_ids: bool = True) -> Placement:
    """Map one transcript's messages onto a memory's stored ones (see the module's rules).

    Args:
        given: the transcript's messages, in order.
        stored: the memory's messages, in order (empty for a new memory).
        source_ids: the ids come from the file (``Transcript.source_ids``).
    """
    given, named = with_one_spelling(given, stored)
    by_id = {m.id: m for m in stored}
    if source_ids or not stored:
        diffs = [d for m in given if m.id in by_id for d in differences(by_id[m.id], m)]
        return Placement(list(given), differences=diffs, notes=named)
    placement = Placement([], notes=named)
    taken = set(by_id)
    stored_sessions = _sessions(stored)
    session_ids = {m.session_id for m in stored}
    for session in _sessions(given):
        placed = _place_session(session, stored_sessions, by_id, taken, session_ids, placement)
        session_ids.update(m.session_id for m in placed)
        placement.messages.extend(placed)
    return placement


def _place_session(session: list[Message], stored_sessions: list[list[Message]], by_id: dict[str, Message],
                   taken: set[str], session_ids: set[str], placement: Placement) -> list[Message]:
    content = [_content(m) for m in session]
    for old in sorted(stored_sessions, key=lambda s: s[0].session_id != session[0].session_id):
        known = [_content(m) for m in old]
        n = min(len(known), len(content))
        if known[:n] != content[:n]:
            continue
        ids = [m.id for m in old[:n]] + [_continue_id(old[-1].id, k) for k in range(1, len(session) - n + 1)]
        if any(i in taken for i in ids[n:]):
            continue  # its continuation would reuse ids: not this stored session
        taken.update(ids)
        return _mapped(session, ids, old[0].session_id, placement)
    colliding = [m for m in session if m.id in taken]  # stored, or given to an earlier session of this call
    if not colliding:
        taken.update(m.id for m in session)
        return list(session)
    same_text = sum(m.id in by_id and by_id[m.id].text == m.text for m in colliding)
    renumber = _renumbered(session, taken, session_ids) if same_text * 2 < len(colliding) else None
    if renumber is None:
        placement.differences.extend(d for m in colliding if m.id in by_id for d in differences(by_id[m.id], m))
        return list(session)
    ids, session_id = renumber
    taken.update(ids)
    placement.notes.append(f"session {session[0].session_id} ({len(session)} messages, {day_text(session[0].time)}) "
                           f"restarts the numbering of ids the memory already uses: stored as {ids[0]}…{ids[-1]}")
    return _mapped(session, ids, session_id, placement)


def _mapped(session: list[Message], ids: list[str], session_id: str, placement: Placement) -> list[Message]:
    out = []
    for m, new in zip(session, ids, strict=True):
        if new != m.id:
            placement.renumbered[m.id] = new
        out.append(m.model_copy(update={"id": new, "session_id": session_id}))
    return out
