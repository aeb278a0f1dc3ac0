"""Transcript loaders: the interaction history H of §3.2 comes in here. Format detection, one typed record
per source format, decoding of any encoding (``decode``), who is the user and who the assistant
(``roles``), one spelling per speaker (``speakers``), implausible dates (``dates``) and where a loaded
transcript goes in a memory that holds messages already (``placement``).
"""

from memsif.io.transcripts import Transcript, as_memories, load_transcripts, one_history

__all__ = ["Transcript", "as_memories", "load_transcripts", "one_history"]
