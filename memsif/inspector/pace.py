"""Waiting times the page states, computed: how long a build or a CoreFact extraction has left, as a
range, from the pace measured so far.

A job's pace is seconds per unit of work (a message placed in Structured Interaction Memory, a batch
of messages read for CoreFacts). Before a job has finished units of its own, its pace is this
process's last measured pace for that work, and before that a **prior**: the prebuilt example's own
build (its provenance records the seconds of each stage on the machine that built it, with the
packaged model). Once the job has finished units, its own pace takes over, measured from its first
finished wave of units (the start — models loading, the first prompt's prefix — is not work of a
unit; see ``Countdown`` for waves). The range narrows as waves finish: ± max(``FLOOR``, ``SPREAD`` /
√(waves measured)) around the estimate, ± ``PRIOR`` on a prior.

A build of Structured Interaction Memory is counted in **judge prompt characters** instead of messages: its
time is its segment-judge calls (a message the rules place costs milliseconds), so the pace per message
swings with where the judge happens to be asked. The build publishes a forecast of the judge prompts ahead
(``interaction.forecast``); its pace per character sent so far, times the characters expected, is the time
left (``Countdown``, ``work``).

Checked against real builds with ``benchmarks/speed/waiting_times.py`` (stated against actual at every
progress step; ``docs/results.md``, "Waiting times the inspector states").
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memsif import Workload

#: Relative half-width of a range estimated from a prior (another machine, another load).
PRIOR = 0.5
#: The narrowest relative half-width a job's own pace gives: builds of Structured Interaction Memory
#: place messages at a pace that drifts by this much over a conversation (the judge is asked more in
#: some sessions than in others).
FLOOR = 0.2
#: Relative half-width with one measured wave; it narrows as 1 / √(waves measured) down to ``FLOOR``.
SPREAD = 0.3
#: CoreFact extraction's pace is taken over the last this many waves: the model's pace on these cores
#: moves with the load and the prompt cache, and a job's first waves are slower than its later ones.
RECENT_WAVES = 3
#: Kinds of work with a pace: messages placed (Structured Interaction Memory), extraction batches, segments
#: titled by the model (after the extraction).
STRUCTURE, FACTS, TITLES = "structure", "facts", "titles"
#: A kind's pace per judge prompt character (``Countdown`` of a job with a workload) is kept under its name
#: with this suffix.
PER_CHAR = " per judge character"


def prior_from(provenance: dict[str, Any], batch_messages: int) -> dict[str, float]:
    """Seconds per unit of each kind of work from a prebuilt memory's provenance (its stage seconds, message
    and segment counts; the CoreFact job's seconds hold its titles' where it names them apart); {} where it
    lacks them."""
    messages = provenance.get("messages") or 0
    titles = float(provenance.get("titles_seconds") or 0.0)
    out: dict[str, float] = {}
    if messages and provenance.get("structure_seconds"):
        out[STRUCTURE] = float(provenance["structure_seconds"]) / messages
    if messages and provenance.get("core_facts_seconds"):
        out[FACTS] = (float(provenance["core_facts_seconds"]) - titles) / math.ceil(messages / batch_messages)
    if titles and provenance.get("segments"):
        out[TITLES] = titles / provenance["segments"]
    return out


@dataclass
class PaceBook:
    """Seconds per unit of each kind of work: measured by this process's finished jobs, else the prior.
    Thread-safe (the app's sessions share it)."""

    prior: dict[str, float] = field(default_factory=dict)
    measured: dict[str, float] = field(default_factory=dict)
    #: Seconds the models took to load where the prior was measured (None: not known).
    model_load_s: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def pace(self, kind: str) -> tuple[float, str] | None:
        """(seconds per unit, where it comes from: "measured" or "prior"), or None without either."""
        with self._lock:
            if kind in self.measured:
                return self.measured[kind], "measured"
            return (self.prior[kind], "prior") if kind in self.prior else None

    def set_prior(self, provenance: dict[str, Any], batch_messages: int) -> None:
        """The prior of each kind of work, and the model load time, from a prebuilt memory's provenance."""
        with self._lock:
            self.prior.update(prior_from(provenance, batch_messages))
            load = provenance.get("model_load_seconds")
            self.model_load_s = float(load) if load else self.model_load_s

    def record(self, kind: str, seconds_per_unit: float) -> None:
        with self._lock:
            self.measured[kind] = seconds_per_unit

    def countdown(self, kind: str, clock: Callable[[], float] = time.monotonic, wave: int = 1,
                  paused: Callable[[], float] = lambda: 0.0, first_wave: int | None = None,
                  work: Callable[[], Workload | None] = lambda: None) -> Countdown:
        """A countdown of one job of ``kind`` whose units finish ``wave`` at a time (the first ``first_wave``
        of them on their own, default a whole wave); ``paused()`` is the seconds the job has spent waiting for
        the model so far (``locks.waited``): its clock stops then; ``work()`` the model work of the job's
        structure step (``interaction.forecast.workload``), None where it publishes none."""
        return Countdown(self, kind, clock, max(1, wave), paused=paused, first_wave=first_wave or max(1, wave),
                         work=work)


@dataclass
class Countdown:
    """One running job of ``kind``: ``update`` with its progress, ``left`` for the time it has left.

    Units finish in **waves** of ``wave`` (CoreFact extraction generates ``fact_parallel`` batches
    together, so they finish within seconds of each other after a long wait; messages finish one by
    one, ``wave`` = 1). The pace is seconds per unit between wave ends, the first end left out (it holds
    the start), over the last ``RECENT_WAVES`` waves when units come in waves; with one wave ended it is
    that wave's time from the start, at the prior's width (units one by one: only without a prior). A
    wave's time grows with its units (a last wave of one batch takes about an eighth of a full one), so
    what is left is counted in units: the rest of the wave under way, then every unit after it. Time counts
    the job's work only: while it waits for the model (``paused``: a chat answer served first) the countdown
    stands still and the pace is not charged.

    A job that publishes its **workload** (``work``: a build of Structured Interaction Memory, whose messages
    cost nothing but their segment-judge calls) is counted in judge prompt characters instead, once a call
    has been made after its first unit: seconds per character sent so far, times the characters its forecast
    expects for the messages not yet placed (``interaction.forecast``).
    """

    book: PaceBook
    kind: str
    clock: Callable[[], float] = time.monotonic
    wave: int = 1
    paused: Callable[[], float] = lambda: 0.0
    first_wave: int = 1  #: units of the first wave (CoreFact extraction reads its first batch alone)
    work: Callable[[], Workload | None] = lambda: None
    total: int = 0
    done: int = 0
    _start: float = 0.0
    _ends: list[tuple[int, float]] = field(default_factory=list)  # (units done, time) at each wave's end
    _arriving: float | None = None  # when the wave under way finished its first unit
    _gaps: list[float] = field(default_factory=list)  # seconds between a finished wave's units
    _sent: list[tuple[int, int]] = field(default_factory=list)  # (judge characters, calls) at each wave's end

    def _now(self) -> float:
        """The job's working time: the clock less the time it waited for the model."""
        return self.clock() - self.paused()

    def update(self, done: int, total: int) -> None:
        now = self._now()
        if total != self.total:  # another stage or a fresh count: measure it afresh
            self.total, self._start, self._ends, self._arriving, self._gaps, self._sent = total, now, [], None, [], []
        work = self._workload()
        counted = self._ends[-1][0] if self._ends else 0
        if done > counted and self._arriving is None:
            self._arriving = now
        while total and done >= (boundary := min(self.first_wave + len(self._ends) * self.wave, total)) \
                and (not self._ends or boundary > self._ends[-1][0]):
            units = boundary - (self._ends[-1][0] if self._ends else 0)
            if units > 1 and self._arriving is not None:
                self._gaps.append((now - self._arriving) / (units - 1))
            self._ends.append((boundary, now))
            self._sent.append((work.sent, work.calls) if work else (0, 0))
            self._arriving = None
        self.done = done

    def pace(self) -> tuple[float, float, str] | None:
        """(seconds per unit, relative half-width of its range, where it comes from), or None when
        nothing gives one."""
        if len(self._ends) >= 2:
            waves = len(self._ends) - 1
            first, last = self._ends[0 if self.wave == 1 else max(0, waves - RECENT_WAVES)], self._ends[-1]
            per_unit = (last[1] - first[1]) / (last[0] - first[0])
            return per_unit, max(FLOOR, min(PRIOR, SPREAD / math.sqrt(waves))), "at this job's pace"
        if len(self._ends) == 1 and (self.wave > 1 or self.book.pace(self.kind) is None):
            if self.wave > 1 and (second := self._second_wave_pace()) is not None:
                return second, SPREAD, "at this job's pace"
            return (self._ends[0][1] - self._start) / self._ends[0][0], PRIOR, "at this job's first wave"
        return self.book_pace()

    def book_pace(self) -> tuple[float, float, str] | None:
        """(seconds per unit, relative half-width, where it comes from) of the book, for a job without a
        pace of its own; None when the book has none."""
        known = self.book.pace(self.kind)
        if known is None:
            return None
        if known[1] == "prior":
            return known[0], PRIOR, "at the example build's pace"
        return known[0], max(FLOOR, SPREAD), "at this server's last pace"

    def _second_wave_pace(self) -> float | None:
        """Seconds per unit of the second wave while its units arrive: its wait for the first of them
        after the first wave ended, and the gaps of the rest (the first wave's time holds the start; a first
        wave of one unit has no gaps: the rest of the wave then comes at once, as a wave's units do)."""
        if self._arriving is None:
            return None
        counted, since = self._ends[0]
        in_wave = min(counted + self.wave, self.total) - counted
        gap = sum(self._gaps) / len(self._gaps) if self._gaps else 0.0
        return ((self._arriving - since) + (in_wave - 1) * gap) / in_wave

    def basis(self) -> str:
        """Where ``pace`` comes from, in words ("" when nothing gives one)."""
        known = self._by_work() if self._workload() is not None else self.pace()
        return known[2] if known else ""

    def _workload(self) -> Workload | None:
        """The job's published workload when it counts this countdown's units (one per message), else None."""
        work = self.work() if self.wave == 1 else None
        return work if work is not None and work.messages == self.total else None

    def _per_char(self) -> tuple[float, int] | None:
        """(seconds per judge prompt character, judge calls it was measured on) since the first unit, once a
        call was made after it; else None."""
        if len(self._ends) < 2 or self._sent[-1][1] <= self._sent[0][1]:
            return None
        seconds = self._ends[-1][1] - self._ends[0][1]
        return seconds / (self._sent[-1][0] - self._sent[0][0]), self._sent[-1][1] - self._sent[0][1]

    def _by_work(self) -> tuple[float, float, str] | None:
        """(middle, relative half-width, basis) of the time left of a job with a workload: counted in judge
        prompt characters at this job's pace once it has one, else at this server's last build's; before
        either, the book's pace per message (the job's own is no measure: the rules place messages at once).
        None without a workload, or without any pace."""
        work = self._workload()
        if work is None:
            return None
        counted, since = self._ends[-1] if self._ends else (0, self._start)
        if (own := self._per_char()) is not None:
            per_char, width, basis = own[0], max(FLOOR, min(PRIOR, SPREAD / math.sqrt(own[1]))), "at this job's pace"
        elif (last := self.book.pace(self.kind + PER_CHAR)) is not None:
            per_char, width, basis = last[0], max(FLOOR, SPREAD), "at this server's last pace"
        elif (known := self.book_pace()) is not None:
            per_unit, width, basis = known
            return per_unit * (self.total - counted), width, basis
        else:
            return None
        ahead = work.expected_from(counted)
        next_message = ahead - work.expected_from(counted + 1)
        current = overdue(next_message * per_char, self._now() - since)  # the message under way
        return current + per_char * (ahead - next_message), width, basis

    def left(self) -> tuple[float, float] | None:
        """(low, high) seconds this job has left, or None when no pace is known yet."""
        if self._workload() is not None:
            if (by_work := self._by_work()) is None:
                return None
            middle, width, _ = by_work
            return middle * (1 - width), middle * (1 + width)
        pace = self.pace()
        if pace is None or not self.total:
            return None
        per_unit, width, _ = pace
        counted, since = self._ends[-1] if self._ends else (0, self._start)
        in_wave = min(counted + (self.wave if self._ends else self.first_wave), self.total) - counted  # under way
        if self.done > counted:  # the wave under way is finishing: its units arrive one after another
            gap = sum(self._gaps) / len(self._gaps) if self._gaps else 0.0
            current = (counted + in_wave - self.done) * gap
        else:  # the wave under way has run this long: past its time, it is stalled and the wait grows
            ran = self._now() - since
            current = overdue(in_wave * per_unit, ran)
            per_unit = max(per_unit, ran / max(in_wave, 1))  # the units after it at no faster a pace than its own
        middle = current + per_unit * (self.total - counted - in_wave)
        return middle * (1 - width), middle * (1 + width)

    def finish(self) -> None:
        """Record this job's pace per unit, and per judge prompt character, for the next jobs of its kind
        (when it measured them)."""
        if len(self._ends) >= 2:
            first, last = self._ends[0], self._ends[-1]
            self.book.record(self.kind, (last[1] - first[1]) / (last[0] - first[0]))
        if (per_char := self._per_char()) is not None:
            self.book.record(self.kind + PER_CHAR, per_char[0])


def overdue(expected: float, ran: float) -> float:
    """Seconds a step expected to take ``expected`` s has left after running ``ran`` s: what remains of its
    time, and once past it as long again as it has overrun (a stalled step's wait grows with the stall
    instead of standing at zero)."""
    return abs(expected - ran)


def duration(seconds: float) -> str:
    """``seconds`` as a person reads a wait: "40 s", "3 min", "1 h 10 min"."""
    if seconds < 90:
        return f"{max(5, round(seconds / 5) * 5):.0f} s"
    if seconds < 3600:
        return f"{round(seconds / 60):.0f} min"
    return f"{int(seconds // 3600)} h {round(seconds % 3600 / 60):.0f} min"


def span_text(span: tuple[float, float]) -> str:
    """"3–5 min" for a (low, high) range of seconds ("40 s" when both read the same)."""
    low, high = duration(span[0]), duration(span[1])
    if low == high:
        return low
    number, _, unit = low.partition(" ")
    same_unit = unit in ("s", "min") and high.endswith(f" {unit}") and " h " not in high
    return f"{number}–{high}" if same_unit else f"{low}–{high}"


def first_unit_text(countdown: Countdown) -> str:
    """" · the first in about 40 s–1 min at the example build's pace" for a job that has not counted its units
    yet (its first wave at the book's pace); "" when the book has none."""
    known = countdown.book_pace()
    if known is None:
        return ""
    per_unit, width, basis = known
    middle = per_unit * countdown.first_wave
    return f" · the first in about {span_text((middle * (1 - width), middle * (1 + width)))} {basis}"


def left_text(countdown: Countdown) -> str:
    """" · about 3–5 min left at this job's pace" for a running job; "" while no pace is known."""
    span = countdown.left()
    if span is None:
        return ""
    if countdown.total and countdown.done >= countdown.total:
        return " · finishing"  # every unit counted; what is left (writing, the last trajectory) is not one
    return f" · about {span_text(span)} left {countdown.basis()}"
