"""Waiting times the page states, computed: how long a build or a CoreFact extraction has left, as a
range, from the pace measured so far.

A job's pace is seconds per unit of work (a message placed in Structured Interaction Memory, a batch
of messages read for CoreFacts). Before a job has finished units of its own, its pace is this
process's last measured pace for that work, and before that a **prior**: the prebuilt example's own
build (its provenance records the seconds of each stage on the machine that built it, with the
packaged model). Once the job has finished units, its own pace takes over, measured from its first
finished unit (the start — models loading, the first prompt's prefix — is not a unit of work). The
range narrows as units finish: ± max(``FLOOR``, 1 / √(units measured)) around the estimate, ± ``PRIOR``
on a prior.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Relative half-width of a range estimated from a prior (another machine, another load).
PRIOR = 0.5
#: The narrowest relative half-width a job's own pace gives.
FLOOR = 0.1
#: Kinds of work with a pace: messages placed (Structured Interaction Memory), extraction batches.
STRUCTURE, FACTS = "structure", "facts"


def prior_from(provenance: dict[str, Any], batch_messages: int) -> dict[str, float]:
    """Seconds per unit of each kind of work from a prebuilt memory's provenance (its stage seconds
    and message count); {} where it lacks them."""
    messages = provenance.get("messages") or 0
    out: dict[str, float] = {}
    if messages and provenance.get("structure_seconds"):
        out[STRUCTURE] = float(provenance["structure_seconds"]) / messages
    if messages and provenance.get("core_facts_seconds"):
        out[FACTS] = float(provenance["core_facts_seconds"]) / math.ceil(messages / batch_messages)
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

    def countdown(self, kind: str, clock: Callable[[], float] = time.monotonic) -> Countdown:
        return Countdown(self, kind, clock)


@dataclass
class Countdown:
    """One running job of ``kind``: ``update`` with its progress, ``left`` for the time it has left."""

    book: PaceBook
    kind: str
    clock: Callable[[], float] = time.monotonic
    total: int = 0
    done: int = 0
    _first: tuple[int, float] | None = None  # (units done, time) when the first unit finished
    _last: float = 0.0

    def update(self, done: int, total: int) -> None:
        now = self.clock()
        if total != self.total:  # another stage or a fresh count: measure it afresh
            self.total, self._first = total, None
        if done > self.done or self._first is None:
            if done > 0 and self._first is None:
                self._first = (done, now)
            self._last = now if done > self.done else self._last
        self.done = done

    def pace(self) -> tuple[float, float] | None:
        """(seconds per unit, relative half-width of its range), or None when nothing gives one."""
        if self._first is not None and self.done - self._first[0] >= 1:
            units = self.done - self._first[0]
            return (self._last - self._first[1]) / units, max(FLOOR, 1 / math.sqrt(units))
        known = self.book.pace(self.kind)
        if known is None:
            return None
        return known[0], PRIOR if known[1] == "prior" else 2 * FLOOR

    def basis(self) -> str:
        """Where ``pace`` comes from, in words."""
        if self._first is not None and self.done - self._first[0] >= 1:
            return "at this job's pace"
        known = self.book.pace(self.kind)
        if known is None:
            return ""
        return "at this server's last pace" if known[1] == "measured" else "at the example build's pace"

    def left(self) -> tuple[float, float] | None:
        """(low, high) seconds this job has left, or None when no pace is known yet."""
        pace = self.pace()
        if pace is None or not self.total:
            return None
        rate, width = pace
        since = self.clock() - self._last if self._last else 0.0  # the unit under way has run this long
        middle = max(rate * (self.total - self.done) - since, 0.0)
        return middle * (1 - width), middle * (1 + width)

    def finish(self) -> None:
        """Record this job's pace for the next jobs of its kind (when it measured one)."""
        if self._first is not None and self.done - self._first[0] >= 1:
            self.book.record(self.kind, (self._last - self._first[1]) / (self.done - self._first[0]))


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


def left_text(countdown: Countdown) -> str:
    """" · about 3–5 min left at this job's pace" for a running job; "" while no pace is known."""
    span = countdown.left()
    if span is None:
        return ""
    if countdown.total and countdown.done >= countdown.total:
        return " · finishing"  # every unit counted; what is left (writing, the last trajectory) is not one
    return f" · about {span_text(span)} left {countdown.basis()}"
