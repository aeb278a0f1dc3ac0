"""MemSIF: Structured Interaction Memory and Dual-Track Fact Memory for LLM agents.

``memsif.__all__`` is the public surface, imported lazily so that ``import memsif`` stays cheap; the
rest of the package is the engine's inside and may change without notice::

    from memsif import MemSIF, MemSIFConfig, load_transcripts

    engine = MemSIF(MemSIFConfig.from_env())
    for transcript in load_transcripts("chat.json"):
        engine.ingest(transcript.messages, namespace=transcript.sample_id)
    print(engine.ask("Where did Ana go in May?", namespace="conv-26").answer)

- **The engine** (§3) and what it is made of: ``MemSIF``, its settings (``MemSIFConfig``, ``AnswerSettings``), the
  back-ends it holds (``Backends``) and what its model was measured to do (``ModelProfile``).
- **What it returns**: the records of a memory (``Message``, ``TopicalSegment``, ``EventTrajectory``, ``CoreFact``,
  ``ActiveFact``, ... §3.2–3.4), an ingest's ``IngestReport``, an ``Answer`` with its trace (§3.5), a search's
  ``Found``.
- **Histories and exports**: ``load_transcripts`` and the export format (``NamespaceExport``, ``read_export``, ...).
- **Serving one model to chats and builds**: the job handles a server wraps each piece of work in, so a chat
  answer goes before a build's calls and a replaced memory's jobs stop (``job``, ``interactive``, ``cancel``, ...).
- **Errors**, all ``MemSIFError``.
"""

from typing import Any

import lazy_loader

__version__ = "0.1.0"

# every name of ``__init__.pyi``, imported from its module the first time it is read
_lazy, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
__all__ += ["__version__"]


def __getattr__(name: str) -> Any:
    try:
        return _lazy(name)
    except AttributeError:  # Python's own words, as for any module
        raise AttributeError(f"module 'memsif' has no attribute {name!r}") from None
