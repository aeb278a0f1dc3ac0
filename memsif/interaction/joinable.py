"""Which earlier Event Trajectories a new Topical Segment may join at all, decided by rule (§3.2).

Before any model is asked, a candidate trajectory must share with the new segment a person (a name
of their titles' lines: whose matter it is) and a term — a content word rare in the namespace that
both said, or a word of both titles' matters — and must have been active within a time window. The
share of true candidates among those that pass is what lets one comparative model decision link at
high precision (``trajectories``; figures in ``docs/results.md``). The trajectory side is the whole
trajectory: the union of its segments' persons, words and title words, and its last segment's end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from memsif import lexical
from memsif.interaction import link


@dataclass(frozen=True)
class Side:
    """What the gate knows of a segment or a trajectory: lower-case person names (its titles'), the
    content-word stems said in it, the content-word stems of its titles' matters, and its first and
    last message times (None: undated)."""

    persons: frozenset[str]
    stems: frozenset[str]
    title_stems: frozenset[str]
    start: datetime | None = None
    end: datetime | None = None

    @classmethod
    def union(cls, sides: Iterable[Side]) -> Side:
        """A trajectory's side: the union of its segments' (earliest start, latest end)."""
        sides = list(sides)
        starts = [s.start for s in sides if s.start]
        ends = [s.end for s in sides if s.end]
        return cls(frozenset().union(*(s.persons for s in sides)), frozenset().union(*(s.stems for s in sides)),
                   frozenset().union(*(s.title_stems for s in sides)), min(starts, default=None),
                   max(ends, default=None))


def title_side(lines: Iterable[str], texts: Iterable[str], start: datetime | None, end: datetime | None) -> Side:
    """A segment's side from its title ``lines`` ("Name: matter") and its messages' ``texts``."""
    lines = [line for line in lines if ":" in line]
    persons = frozenset(line.split(":", 1)[0].strip().lower() for line in lines)
    matters = link.content_stems(line.split(":", 1)[1] for line in lines)
    return Side(persons, frozenset(link.content_stems(texts)),
                frozenset(s for s in matters if s not in lexical.EMPTY_STEMS), start, end)


@dataclass(frozen=True)
class GateRule:
    """The gate's constants: a said word is rare when at most ``rare_share`` of the namespace's segments
    so far hold it (and at least ``min_segments`` segments were read); a candidate passes when its last
    message is at most ``max_gap_days`` before the new segment's first (None: no window)."""

    rare_share: float = 0.1
    max_gap_days: float | None = None

    def rare(self, stem: str, idf: Callable[[str], float], segments: int) -> bool:
        """Whether ``stem`` is rare: its IDF (``Vocabulary.idf``, N = ``segments``) is at least that of a
        word held by ``rare_share`` of the segments (two segments where fewer have been read)."""
        df = max(2.0, self.rare_share * segments)
        return idf(stem) >= math.log((segments + 1) / (df + 0.5)) - 1e-9


@dataclass(frozen=True)
class GateResult:
    """Why a candidate passed or not: the persons and terms both sides share, the days between."""

    passed: bool
    persons: tuple[str, ...]
    terms: tuple[str, ...]
    gap_days: float | None
    reason: str


def check(new: Side, candidate: Side, idf: Callable[[str], float], segments: int, rule: GateRule) -> GateResult:
    """Whether ``candidate`` (a trajectory's side) may be offered for ``new`` (the new segment's side).

    ``idf`` and ``segments``: the namespace's vocabulary as the new segment closes. Returns the shared
    persons and terms (rare said words, then title words, sorted) and the reason in words.
    """
    persons = tuple(sorted(new.persons & candidate.persons))
    said = {s for s in new.stems & candidate.stems if rule.rare(s, idf, segments)}
    titled = (new.title_stems & candidate.title_stems) - said
    terms = tuple(sorted(said)) + tuple(sorted(titled))
    gap = None
    if candidate.end is not None and new.start is not None:
        gap = max(0.0, (new.start - candidate.end).total_seconds() / 86400)
    if not persons:
        return GateResult(False, persons, terms, gap, "no person in common")
    if not terms:
        return GateResult(False, persons, terms, gap, "no rare word or title word in common")
    if rule.max_gap_days is not None and gap is not None and gap > rule.max_gap_days:
        return GateResult(False, persons, terms, gap, f"{gap:.0f} days apart (window {rule.max_gap_days:g})")
    return GateResult(True, persons, terms, gap, f"shares {', '.join(persons)} and {', '.join(terms[:4])}")
