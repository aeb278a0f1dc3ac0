"""Transcript loaders: format detection, one typed record per source format, decoding of any
encoding (the interaction history H of §3.2 comes in here)."""

from memsif.io.transcripts import Transcript, as_memories, load_transcripts, one_history

__all__ = ["Transcript", "as_memories", "load_transcripts", "one_history"]
