"""Speaker names: one spelling per person.

A name is read in one normal form (:func:`normal_name`): Unicode NFC, invisible characters removed
(zero-width spaces and joiners, byte-order marks, word joiners, bidi marks, embeddings and isolates,
soft hyphens, control characters) and whitespace collapsed to single spaces. Names that then differ
only in case are one person (:func:`one_spelling`): the spelling the memory already holds, else the
most frequent one (the first seen on a tie), is the one stored, and a warning names the variants.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from memsif.records import Message

#: Characters that no one sees in a name: removed before names are compared or stored.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad\u061c\u180e"
                        "\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")


def visible_text(text: str) -> str:
    """``text`` in NFC, without invisible characters, its whitespace collapsed ("" when nothing visible is
    left)."""
    return " ".join(unicodedata.normalize("NFC", _INVISIBLE.sub("", text)).split())


def normal_name(name: str) -> str:
    """``name`` in NFC, without invisible characters, its whitespace collapsed (the name as written,
    stripped, when nothing visible is left)."""
    return visible_text(name) or name.strip()


def _shown(name: str) -> str:
    """A spelling as a warning quotes it: invisible characters and combining marks as ``\\uXXXX``, so
    that two spellings that look alike read differently."""
    return "'" + "".join(f"\\u{ord(c):04x}" if _INVISIBLE.match(c) or unicodedata.combining(c) else c
                         for c in name.strip()) + "'"


def one_spelling(names: Sequence[str], stored: Sequence[str] = ()) -> tuple[dict[str, str], list[str]]:
    """The spelling each name is stored with, and a warning naming the spellings merged.

    Args:
        names: the speaker of each incoming message (frequencies decide between spellings).
        stored: the speaker of each message the memory already holds: a person's stored spelling is
            kept (stored messages are not rewritten).

    Returns:
        ``{name as given: name to store}`` for every distinct name, and one warning (or none).
    """
    given = Counter(normal_name(n) for n in names)
    kept = Counter(normal_name(n) for n in stored)
    best: dict[str, str] = {}
    for counts in (given, kept):  # stored spellings last: they win
        by_person: dict[str, list[str]] = {}
        for written in counts:
            by_person.setdefault(written.casefold(), []).append(written)
        best.update({person: max(spellings, key=lambda s: counts[s])  # max keeps the first of a tie
                     for person, spellings in by_person.items()})
    spelling = {n: best[normal_name(n).casefold()] for n in dict.fromkeys(names)}
    variants: dict[str, list[str]] = {}
    for name, chosen in spelling.items():
        if name.strip() != chosen:
            variants.setdefault(chosen, []).append(_shown(name))
    if not variants:
        return spelling, []
    merged = "; ".join(f"{_shown(chosen)} (also written {', '.join(others)})" for chosen, others in variants.items())
    return spelling, [f"speaker names that differ only in case, invisible characters, spaces or Unicode form are one "
                      f"person, stored under one spelling: {merged}"]


def with_one_spelling(messages: Sequence[Message], stored: Sequence[Message] = ()) -> tuple[list[Message], list[str]]:
    """``messages`` with their speakers spelled as :func:`one_spelling` says (a renamed message is a
    copy), and its warning."""
    spelling, warnings = one_spelling([m.speaker for m in messages], [m.speaker for m in stored])
    return [m if spelling[m.speaker] == m.speaker else m.model_copy(update={"speaker": spelling[m.speaker]})
            for m in messages], warnings
