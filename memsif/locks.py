"""Fair sharing of one model between the jobs of several sessions.

The inspector serves every session from one engine; the LLM and the embedder run one call at a
time. A plain lock serves whoever grabs it first, and the thread that just released it usually
wins again: one session's CoreFact extraction could hold the model for half an hour while another
session's build waited. A :class:`FairLock` hands the model over call by call:

- by **class** first: interactive work (a person waiting for a chat answer) before Structured
  Interaction Memory builds, and those before CoreFact extraction;
- within a class **round-robin over jobs**: the job served longest ago goes next, so two sessions'
  builds interleave call by call and each runs at about half speed instead of one waiting for
  the other to finish.

A job is named by the code that does the work (the engine names it after its namespace and kind)
with :func:`job`; :func:`interactive` marks a chat answer. :func:`queue_position` tells a waiting
job its place in line, for progress displays. :func:`cancel` stops the jobs of a name that started
before it (a memory replaced or deleted): each raises ``JobCancelled`` at its next model call or
check point (:func:`check_cancelled`), waiting in line or not.

How the job travels. The job is carried by two context variables of this module, set by the code that
starts the work, in the thread that does it, and read where the model is called, so no signature between
them carries it:

    writers   job(namespace, kind)     ingest.IngestPipeline (structure, facts); inspector build.py,
                                       corefacts.py, evaluate.py (inside their worker thread's function)
              interactive()            MemSIF.ask; inspector chat.py (a chat turn written into memory)
                   │
                   ▼
    _job = (name, class, cancel epoch),  _interactive = True
                   │
                   ▼
    readers   FairLock.__enter__ (via _current)   embed.py, llm/transformers_backend.py,
                                                  llm/llamacpp_backend.py: the call's turn in line
              current_kind                        what a waiting job is said to wait behind
              check_cancelled                     ingest.py between steps, inspector/evaluate.py per
                                                  question, both LLM back-ends per token

Which llama.cpp context a call runs on is not read from here: the code that starts CoreFact extraction
calls the back-end's handle for it (``llm.for_job("facts")``, ``memsif.llm.base.for_job``).

A thread started for a job does not inherit it: the function it runs opens ``job`` itself (the
inspector's ``in_background`` work functions do), so a worker thread of a build counts as that build.
"""

from __future__ import annotations

import contextvars
import itertools
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from memsif.errors import JobCancelled

#: Classes of work, most urgent first.
INTERACTIVE, STRUCTURE, FACTS = 0, 1, 2
KINDS = {"interactive": INTERACTIVE, "structure": STRUCTURE, "facts": FACTS}
#: What a class is called in a progress display.
KIND_NAMES = {INTERACTIVE: "a chat answer", STRUCTURE: "a memory build", FACTS: "a CoreFact extraction"}

#: (name, class, cancel epoch at its start) of the job this thread works for.
_job: contextvars.ContextVar[tuple[str, int, int] | None] = contextvars.ContextVar("memsif_job", default=None)
_interactive = contextvars.ContextVar("memsif_interactive", default=False)
_locks: weakref.WeakSet[FairLock] = weakref.WeakSet()
#: name → (cancel epoch, reason): jobs of that name started at an earlier epoch are cancelled.
_cancels: dict[str, tuple[int, str]] = {}
_cancels_lock = threading.Lock()


@dataclass
class Job:
    """The handle of a running job (:func:`job` yields it; :func:`running` finds it from another thread): its
    name and kind, and what it publishes while it runs for a progress display (``workload``: a memory build's
    model work ahead, ``interaction.forecast.Workload``)."""

    name: str
    kind: str
    workload: object = None


#: (name, kind) → the running job's handle (the outermost block of that name and kind)
_running: dict[tuple[str, str], Job] = {}


def running(name: str, kind: str = "structure") -> Job | None:
    """The handle of job ``name`` of ``kind`` running in this process now, or None."""
    with _cancels_lock:
        return _running.get((name, kind))


@contextmanager
def job(name: str, kind: str = "structure") -> Iterator[Job]:
    """Model calls made inside this block (in this thread) belong to job ``name`` of ``kind``
    ("interactive", "structure" or "facts"); yields its handle (:class:`Job`). The job can be cancelled from
    the moment it is entered (:func:`cancel`); a block of the same name inside it is part of it (cancelled
    with it).

    Raises:
        ValueError: an unknown kind.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}; use one of {', '.join(KINDS)}")
    outer = _job.get()
    if outer is not None and outer[0] == name:  # a step of a job already under way: cancelled with it
        epoch = outer[2]
    else:
        with _cancels_lock:
            epoch = _cancels.get(name, (0, ""))[0]
    token = _job.set((name, KINDS[kind], epoch))
    with _cancels_lock:
        outermost = (name, kind) not in _running
        handle = _running.setdefault((name, kind), Job(name, kind))
    try:
        yield handle
    finally:
        _job.reset(token)
        if outermost:
            with _cancels_lock:
                _running.pop((name, kind), None)


@contextmanager
def interactive() -> Iterator[None]:
    """Mark model calls made inside this block (in this thread) as interactive."""
    token = _interactive.set(True)
    try:
        yield
    finally:
        _interactive.reset(token)


def cancel(name: str, reason: str) -> None:
    """Stop every job named ``name`` that is running or waiting now: each raises ``JobCancelled(reason)``
    at its next model call or :func:`check_cancelled`. Jobs of that name started later run normally."""
    with _cancels_lock:
        _cancels[name] = (_cancels.get(name, (0, ""))[0] + 1, reason)
    for lock in list(_locks):
        with lock._cond:
            lock._cond.notify_all()


def cancelled_reason() -> str | None:
    """Why this thread's job was cancelled, or None while it may go on."""
    named = _job.get()
    if named is None:
        return None
    with _cancels_lock:
        epoch, reason = _cancels.get(named[0], (0, ""))
    return reason if epoch > named[2] else None


def check_cancelled() -> None:
    """A check point of long work. Raises JobCancelled: this thread's job was cancelled (:func:`cancel`)."""
    reason = cancelled_reason()
    if reason is not None:
        raise JobCancelled(reason)


def current_kind() -> str:
    """What this thread's model calls count as, in the words a progress display uses ("a chat answer",
    "a memory build", "a CoreFact extraction")."""
    return KIND_NAMES[_current()[1]]


def _current() -> tuple[str, int]:
    named = _job.get()
    name = named[0] if named else f"thread-{threading.get_ident()}"
    if _interactive.get():
        return name, INTERACTIVE
    return (name, named[1]) if named else (name, STRUCTURE)


@dataclass
class _Ticket:
    job: str
    cls: int
    arrival: int
    since: float = field(default_factory=time.monotonic)


class FairLock:
    """Mutual exclusion served by class, then round-robin over jobs, then arrival (module
    docstring). Not re-entrant. ``mean_hold_s`` is a running mean of how long one call holds it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holder: _Ticket | None = None
        self._waiting: list[_Ticket] = []
        self._served: dict[str, int] = {}
        self._last_seen: dict[str, float] = {}
        self._arrivals = itertools.count()
        self._rounds = itertools.count()
        self._acquired_at = 0.0
        self._waited: dict[str, float] = {}  # seconds each job spent in line
        self.mean_hold_s = 0.0
        _locks.add(self)

    def _order_key(self, t: _Ticket) -> tuple[int, int, int]:
        return t.cls, self._served.get(t.job, -1), t.arrival

    def _next(self) -> _Ticket:
        return min(self._waiting, key=self._order_key)

    def __enter__(self) -> FairLock:
        check_cancelled()
        name, cls = _current()
        ticket = _Ticket(name, cls, next(self._arrivals))
        with self._cond:
            self._queue_and_take(ticket)
        return self

    def _queue_and_take(self, ticket: _Ticket, cancellable: bool = True) -> None:
        """Wait (holding ``_cond``) until ``ticket`` is next and the lock is free, then take it. A
        cancelled job leaves the line with JobCancelled (``cancel`` wakes every waiter) unless not
        ``cancellable`` (a holder taking back the lock it lent, whose ``with`` block must release it)."""
        self._waiting.append(ticket)
        queued = time.monotonic()
        try:
            while self._holder is not None or self._next() is not ticket:
                self._cond.wait()
                if cancellable:
                    check_cancelled()
        except BaseException:
            self._cond.notify_all()  # the one behind may be next now
            raise
        finally:
            self._waiting.remove(ticket)
            if ticket.cls != INTERACTIVE:  # a job's time in line (a chat's own wait is no job's)
                self._waited[ticket.job] = self._waited.get(ticket.job, 0.0) + time.monotonic() - queued
        self._take(ticket)

    def _take(self, ticket: _Ticket) -> None:
        self._holder = ticket
        self._served[ticket.job] = next(self._rounds)
        self._acquired_at = self._last_seen[ticket.job] = time.monotonic()

    def _release(self) -> None:
        held = time.monotonic() - self._acquired_at
        self.mean_hold_s = held if not self.mean_hold_s else 0.9 * self.mean_hold_s + 0.1 * held
        self._holder = None
        self._cond.notify_all()

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._release()

    def yield_to_urgent(self) -> bool:
        """Called by the holder between two steps of long work (per generated token): if a caller
        of a more urgent class waits, let it run, then take the lock back. Costs nothing when
        nobody waits. Returns whether it let another caller run."""
        if not self._waiting:
            return False
        with self._cond:
            holder = self._holder
            if holder is None or not self._waiting or self._next().cls >= holder.cls:
                return False
            self._release()
            self._queue_and_take(holder, cancellable=False)
            return True

    def position(self, name: str) -> tuple[int, list[int]] | None:
        """(place in line, classes of the jobs ahead) of job ``name`` if it waits here, else None.
        Place 1 = next; the holder counts as ahead."""
        with self._cond:
            mine = [t for t in self._waiting if t.job == name]
            if not mine:
                return None
            key = self._order_key(mine[0])
            ahead = [t.cls for t in self._waiting if t.job != name and self._order_key(t) < key]
            if self._holder is not None and self._holder.job != name:
                ahead.insert(0, self._holder.cls)
            return len(ahead) + 1, ahead

    def jobs(self, within_s: float = 10.0) -> set[str]:
        """Names of the jobs waiting for this lock, holding it, or served in the last ``within_s``
        seconds (a job between two calls still shares the model)."""
        with self._cond:
            recent = time.monotonic() - within_s
            return ({t.job for t in self._waiting} | ({self._holder.job} if self._holder else set())
                    | {j for j, at in self._last_seen.items() if at >= recent})


def queue_position(name: str) -> str | None:
    """A sentence for a progress display when job ``name`` waits for a shared model, e.g. "waiting
    for the model: 2nd in line, behind a chat answer and a memory build (about 3 s per call)"; None
    when it does not wait. Names of other jobs (other sessions' namespaces) are never shown."""
    for lock in list(_locks):
        pos = lock.position(name)
        if pos is None:
            continue
        place, ahead = pos
        behind = ", ".join(KIND_NAMES.get(c, "another job") for c in ahead) or "nobody"
        per_call = f" (about {lock.mean_hold_s:.1f} s per call)" if lock.mean_hold_s else ""
        return f"waiting for the model: place {place} in line, behind {behind}{per_call}"
    return None


def held_by_jobs() -> list[str]:
    """What the jobs holding a shared model now are, in a progress display's words ("a CoreFact extraction",
    "a memory build"; a chat answer's own hold is left out): a chat answer says what it waits behind."""
    out = []
    for lock in list(_locks):
        holder = lock._holder
        if holder is not None and holder.cls != INTERACTIVE:
            out.append(KIND_NAMES.get(holder.cls, "another job"))
    return list(dict.fromkeys(out))


def waited(name: str) -> float:
    """Seconds job ``name`` has spent in line for the shared models so far (behind a chat answer, another
    session's job): time in which none of its work was done. A countdown of the job runs on its working
    time (``inspector.pace.Countdown``)."""
    return sum(lock._waited.get(name, 0.0) for lock in list(_locks))


def sharing(name: str) -> int:
    """How many other jobs use a model that job ``name`` uses now (served or waiting in the last
    10 s)."""
    others: set[str] = set()
    for lock in list(_locks):
        jobs = lock.jobs()
        if name in jobs:
            others |= jobs - {name}
    return len(others)

