"""Transcript loaders."""

from memsif.io.transcripts import Transcript, load_transcripts

__all__ = ["Transcript", "load_transcripts"]
