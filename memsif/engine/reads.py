"""What a memory holds, read through the engine (part of ``MemSIF``): its namespaces, messages, Topical
Segments, Event Trajectories and their decisions (§3.2), CoreFacts with their operation log (§3.3),
candidate clusters and ActiveFacts (§3.4). Each read of a namespace raises ``NotFoundError`` when it
holds no memory.
"""

from __future__ import annotations

from typing import Literal

from memsif.backends import Backends
from memsif.errors import NotFoundError
from memsif.records import (
    ActiveFact,
    CandidateCluster,
    CoreFact,
    Decision,
    EventTrajectory,
    FactOperation,
    Message,
    TopicalSegment,
)
from memsif.store import Store


class Reads:
    """The reads of a memory over ``backends``' store (``MemSIF.reads``)."""

    def __init__(self, backends: Backends) -> None:
        self.backends = backends

    @property
    def _stored(self) -> Store:
        return self.backends.store

    def namespaces(self) -> list[str]:
        return self._stored.namespaces()

    def has_memory(self, namespace: str) -> bool:
        """Whether ``namespace`` holds any message."""
        return self._stored.count("message", namespace) > 0

    def require(self, namespace: str) -> None:
        """Raises NotFoundError when ``namespace`` holds no memory, naming the namespaces that do."""
        if not self.has_memory(namespace):
            raise NotFoundError(f"No memory in namespace {namespace!r} (known: "
                                f"{', '.join(self._stored.namespaces()[:10]) or 'none'}). Ingest a transcript first.")

    def messages(self, namespace: str) -> list[Message]:
        self.require(namespace)
        return [row.message for row in self._stored.messages(namespace, with_vectors=False)]

    def segments(self, namespace: str) -> list[TopicalSegment]:
        self.require(namespace)
        return self._stored.segments(namespace)

    def trajectories(self, namespace: str) -> list[EventTrajectory]:
        self.require(namespace)
        return self._stored.trajectories(namespace)

    def decisions(self, namespace: str, kind: Literal["segment", "trajectory"] | None = None) -> list[Decision]:
        """Recorded decisions in order; ``kind`` is "segment" or "trajectory" (or None for all)."""
        self.require(namespace)
        return self._stored.decisions(namespace, kind)

    def active_facts(self, namespace: str, deleted: bool = False) -> list[ActiveFact]:
        """Promoted ActiveFacts of ``namespace`` in id order (with ``deleted`` those a person deleted too)."""
        self.require(namespace)
        return [a for a in self._stored.active_facts(namespace) if deleted or a.status == "current"]

    def clusters(self, namespace: str) -> list[CandidateCluster]:
        """Candidate clusters C_k with their Score_src and Score_qry, in id order."""
        self.require(namespace)
        return self._stored.clusters(namespace)

    def facts(self, namespace: str, history: bool = False) -> list[CoreFact]:
        """CoreFacts of ``namespace``: current ones, or with ``history`` the superseded ones too."""
        self.require(namespace)
        facts = [f for f, _ in self._stored.facts(namespace)]
        return facts if history else [f for f in facts if f.status == "current"]

    def fact_log(self, namespace: str, op: str | None = None, subject: str | None = None) -> list[FactOperation]:
        """The CoreFact operation log, optionally filtered by operation and by subject (case-insensitive)."""
        from memsif.facts.core import select_operations

        self.require(namespace)
        return select_operations(self._stored.fact_ops(namespace), op, subject)
