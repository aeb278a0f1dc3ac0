"""One error tree for MemSIF: every message says what went wrong and what to do next."""

from __future__ import annotations

from typing import Any


class MemSIFError(Exception):
    """Base class of every error MemSIF raises on purpose."""


class ConfigError(MemSIFError):
    """A setting is out of range or inconsistent (e.g. τ_split ≥ τ_merge)."""


class TranscriptError(MemSIFError):
    """A transcript could not be read; the message names the file, sample and position.

    Nothing is stored when this is raised: loaders parse the whole input before the engine
    writes anything.
    """

    def __init__(self, message: str, *, path: str | None = None, sample: str | None = None,
                 position: str | None = None) -> None:
        where = ", ".join(
            part for part in (
                f"file {path}" if path else None,
                f"sample {sample}" if sample else None,
                position,
            ) if part
        )
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.sample = sample
        self.position = position


class LLMError(MemSIFError):
    """The language model could not be loaded or called."""


class BackendUnavailable(LLMError):
    """An LLM back-end cannot run on this machine: ``reason`` says why, ``fix`` is the command that
    makes it run (the message is both)."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(f"{reason} Fix: {fix}")
        self.reason, self.fix = reason, fix


class LLMOutputError(LLMError):
    """The language model answered, but not in the form the task requires."""


class EmbedderError(MemSIFError):
    """The embedding model could not be loaded or does not match the store."""


class StoreError(MemSIFError):
    """The memory store could not be opened, read or written."""


class CollectionMissing(StoreError):
    """A collection the store expected is gone (deleted by another session, or by hand)."""


class FileWriteError(MemSIFError):
    """A file written for the user (an export, an evaluation report) could not be written; the message
    names the path and the system's reason. A file that was at that path before is left as it was."""


class NotFoundError(MemSIFError):
    """A namespace, record or file that was asked for does not exist."""


class SourceConflict(MemSIFError):
    """A transcript disagrees with the memory about messages it already holds (same id, another text,
    speaker or time). ``differences`` lists each (``memsif.io.placement.Difference``); nothing was
    written."""

    def __init__(self, namespace: str, differences: list[Any]) -> None:
        shown = "; ".join(d.describe() for d in differences[:5])
        more = f" and {len(differences) - 5} more" if len(differences) > 5 else ""
        ids = sorted({d.message_id for d in differences})
        super().__init__(
            f"Namespace {namespace!r} already holds {len(ids)} of these messages with other content: {shown}{more}. "
            "Nothing was written. If the file is a corrected version of what is stored, replace the stored "
            "version (CLI --replace, the page's 'Replace this source', MCP replace=true); if it is another "
            "conversation, ingest it into another namespace.")
        self.namespace = namespace
        self.differences = differences


class ExportWarning(UserWarning):
    """An export was read, but not all of it: made by a newer MemSIF, it holds parts this version
    does not know (named in the message), which were left out."""


class JobCancelled(MemSIFError):
    """A job (a build, a CoreFact extraction, an answer) stopped before it finished because the memory
    it works on was replaced or deleted (``memsif.locks.cancel``); ``str()`` is the reason. What the
    job had not yet written is not written."""
