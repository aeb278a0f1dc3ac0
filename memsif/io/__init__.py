"""Transcript loaders: format detection, one typed record per source format, decoding of any
encoding (the interaction history H of §3.2 comes in here)."""

from memsif.io.transcripts import Transcript, load_transcripts

__all__ = ["Transcript", "load_transcripts"]
