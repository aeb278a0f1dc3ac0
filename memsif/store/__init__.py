"""Persistence of all engine state in Qdrant (embedded folder, in-memory, or a server)."""

from memsif.store.qdrant import MemoryStore, StoredMessage

__all__ = ["MemoryStore", "StoredMessage"]
