"""MemSIF: Structured Interaction Memory and Dual-Track Fact Memory for LLM agents.

The names most programs need, imported lazily so that ``import memsif`` stays cheap::

    from memsif import MemSIF, MemSIFConfig, load_transcripts

    engine = MemSIF(MemSIFConfig.from_env())
    for transcript in load_transcripts("chat.json"):
        engine.ingest(transcript.messages, namespace=transcript.sample_id)
    print(engine.ask("Where did Ana go in May?", namespace="conv-26").answer)
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "MemSIF": "memsif.engine",
    "IngestReport": "memsif.engine",
    "MemSIFConfig": "memsif.config",
    "Message": "memsif.records",
    "load_transcripts": "memsif.io",
    "MemSIFError": "memsif.errors",
    "TranscriptError": "memsif.errors",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'memsif' has no attribute {name!r}")
