"""Persistence of all engine state in Qdrant (embedded folder, in-memory, or a server).

``qdrant.py``: ``MemoryStore``, typed records in and out (collection names are its own);
``transfer.py``: a namespace as one JSON document and back.
"""

from memsif.store.qdrant import MemoryStore, StoredMessage

__all__ = ["MemoryStore", "StoredMessage"]
