"""Whole namespaces: one lock per namespace and part, shared by an engine and the engines derived from it
(``MemSIF.with_config``), so a build in one namespace never waits for another session's chat or build
(back-ends serialise their own calls; see ``store._Guarded``); and a namespace exported, imported, deleted
or upgraded as a whole (``MemSIF.admin``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from memsif.backends import Backends
from memsif.engine.reads import Reads
from memsif.io.names import checked_namespace
from memsif.transfer import NamespaceExport


class NamespaceLocks:
    """``locks(namespace, part)``: the reentrant lock of ``namespace``'s ``part``. "memory" guards messages,
    segments, trajectories and CoreFacts (ingest, corrections); "clusters" guards the ActiveFact clusters
    (ask), so a chat never waits for a long ingest."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], threading.RLock] = {}
        self._guard = threading.Lock()

    def __call__(self, namespace: str, part: str = "memory") -> threading.RLock:
        with self._guard:
            return self._locks.setdefault((namespace, part), threading.RLock())


class NamespaceAdmin:
    """A namespace as a whole, over ``backends``' store (``MemSIF.admin``)."""

    def __init__(self, backends: Backends, reads: Reads, locks: NamespaceLocks) -> None:
        self.backends, self.reads, self.locks = backends, reads, locks

    def missing_sentence_index(self, namespace: str) -> int:
        """How many of ``namespace``'s messages have no sentence in the hybrid index (stores built
        before it existed; the upgrade step "sentence_index" adds them)."""
        from memsif.upgrade import unindexed_messages

        return len(unindexed_messages(self.backends.store, namespace))

    def upgrade(self, namespace: str, steps: Sequence[str] | None = None) -> dict[str, int]:
        """Run the named upgrade steps (``memsif.upgrade.STEPS``; all by default, in their order) on
        ``namespace``; returns each step's count of what it changed (0: already up to date).

        Raises:
            NotFoundError: no memory in ``namespace``.
            ValueError: a step name that does not exist.
        """
        from memsif.upgrade import run_steps

        self.reads.require(namespace)
        with self.locks(namespace):
            return run_steps(self.backends.store, self.backends.embedder, namespace, steps)

    def export_namespace(self, namespace: str, decimals: int | None = None,
                         provenance: dict[str, Any] | None = None) -> NamespaceExport:
        """Everything of ``namespace`` as one ``NamespaceExport`` (``memsif.transfer.export_namespace``:
        ``decimals`` rounds vectors, ``provenance`` says how the memory was built).

        Raises:
            NotFoundError: the namespace holds no memory.
        """
        from memsif.transfer import export_namespace

        self.reads.require(namespace)  # no lock: a copy for Evaluate must not wait for a CoreFact extraction
        store = self.backends.store  # the embedder is loaded only for a store that records none
        embedded_with = store.recorded_embedder() or (self.backends.embedder.name, self.backends.embedder.dim)
        return export_namespace(store, embedded_with, namespace, decimals, provenance)

    def import_namespace(self, data: NamespaceExport | dict[str, Any], namespace: str | None = None) -> str:
        """Write an export (a ``NamespaceExport``, or its decoded JSON) into the store (under ``namespace``
        if given); returns the namespace written.

        Raises:
            MemSIFError: not an export, a damaged one, or the target namespace already holds memory.
            EmbedderError: the export was made with another embedder.
        """
        from memsif.transfer import check_export, import_namespace, parse_export

        data = parse_export(data)
        check_export(data, self.backends.embedder)
        ns = checked_namespace(namespace or data.namespace)
        with self.locks(ns), self.locks(ns, "clusters"):
            import_namespace(self.backends.store, self.backends.embedder, data, ns)
        return ns

    def delete_namespace(self, namespace: str) -> None:
        with self.locks(namespace), self.locks(namespace, "clusters"):
            self.backends.store.delete_namespace(namespace)

