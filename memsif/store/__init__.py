"""Persistence of all engine state in Qdrant (embedded folder, in-memory, or a server).

``base.py``: the ``Store`` contract; ``qdrant.py``: ``MemoryStore``, typed records in and out (collection
names are its own); ``connection.py``: opening and guarding the Qdrant client.
"""

from memsif.store.base import RecordKind, SentenceHit, SentenceQuery, Store, StoredMessage
from memsif.store.qdrant import MemoryStore

__all__ = ["MemoryStore", "RecordKind", "SentenceHit", "SentenceQuery", "Store", "StoredMessage"]
