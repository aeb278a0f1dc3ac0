"""What the engine's parts (``reads``, ``editing``, ``search``, ``sources``) need of the engine they are mixed into
(``MemSIF``), as one Protocol, so each part is typed without importing the engine."""

from __future__ import annotations

import threading
from typing import Protocol

from memsif.config import MemSIFConfig
from memsif.embed import Embedder
from memsif.entities import EntityExtractor
from memsif.llm import LLM
from memsif.records import FactOperation, Message
from memsif.store import Store


class EngineCore(Protocol):
    """The engine's settings, back-ends, namespace locks and the reads its parts build on."""

    config: MemSIFConfig

    @property
    def store(self) -> Store: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def llm(self) -> LLM: ...

    @property
    def entity_extractor(self) -> EntityExtractor: ...

    def _require(self, namespace: str) -> None: ...

    def _namespace_lock(self, namespace: str, part: str = "memory") -> threading.RLock: ...

    def messages(self, namespace: str) -> list[Message]: ...

    def has_memory(self, namespace: str) -> bool: ...

    def carry_corrections(self, namespace: str, corrections_made: list[FactOperation]) -> list[str]: ...
