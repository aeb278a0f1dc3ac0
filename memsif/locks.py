"""A lock that lets interactive work (a person waiting for a chat answer) go before background
work (ingest, CoreFact extraction) on a shared model.

The inspector serves every session from one engine; the LLM and the embedder run one call at a
time. With a plain lock, a question asked while another session's CoreFacts are being extracted
competes with every extraction call; with this one it waits for at most the call in flight.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_interactive = contextvars.ContextVar("memsif_interactive", default=False)


@contextmanager
def interactive() -> Iterator[None]:
    """Mark model calls made inside this block (in this thread) as interactive."""
    token = _interactive.set(True)
    try:
        yield
    finally:
        _interactive.reset(token)


class PriorityLock:
    """Mutual exclusion where waiting interactive callers are served before background callers.
    Not re-entrant."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held = False
        self._urgent_waiting = 0

    def __enter__(self) -> PriorityLock:
        urgent = _interactive.get()
        with self._cond:
            if urgent:
                self._urgent_waiting += 1
            try:
                while self._held or (not urgent and self._urgent_waiting):
                    self._cond.wait()
            finally:
                if urgent:
                    self._urgent_waiting -= 1
            self._held = True
        return self

    def yield_to_urgent(self) -> None:
        """Called by the holder between two steps of long work: if interactive callers are waiting,
        let them run, then take the lock back (interactive holders never give it up here)."""
        if _interactive.get() or not self._urgent_waiting:  # called per token: no lock when nobody waits
            return
        with self._cond:
            if not self._urgent_waiting:
                return
            self._held = False
            self._cond.notify_all()
            while self._held or self._urgent_waiting:
                self._cond.wait()
            self._held = True

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._held = False
            self._cond.notify_all()
