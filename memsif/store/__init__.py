"""Persistence of all memory state in Qdrant (embedded folder, in-memory, or a server): messages and the
sentence index, Topical Segments and Event Trajectories with their decisions (§3.2), CoreFacts and their
operation log (§3.3), candidate clusters and ActiveFacts (§3.4).

``base.py``: the ``Store`` contract; ``qdrant.py``: ``MemoryStore`` (its collections listed there), made
of ``writes.py`` (``StoreWrites``) and ``reads.py`` (``StoreReads``) over ``points.py`` (point ids,
filters, payloads, the hybrid search's requests); ``connection.py``: opening and guarding the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memsif.store.base import RecordKind, SentenceHit, SentenceQuery, Store, StoredMessage
from memsif.store.connection import WhenBusy
from memsif.store.qdrant import MemoryStore

if TYPE_CHECKING:
    from memsif.config import MemSIFConfig

__all__ = ["MemoryStore", "RecordKind", "SentenceHit", "SentenceQuery", "Store", "StoredMessage", "open_store"]


def open_store(config: MemSIFConfig, when_busy: WhenBusy = "refuse") -> Store:
    """The store ``config`` names: a Qdrant server (``qdrant_url``) or the embedded folder
    ``<data_dir>/qdrant``; with ``when_busy="read"`` always from a read-only snapshot (a reader never holds
    the folder), with ``when_busy="snapshot"`` a folder another process holds is read from a
    read-only snapshot (``Store.opened_from`` says so).

    Raises:
        StoreError: the store cannot be opened (a damaged folder, a folder another process holds under
            ``when_busy="refuse"``, an unreachable server), saying what to do.
    """
    return MemoryStore.for_config(config, when_busy=when_busy)
