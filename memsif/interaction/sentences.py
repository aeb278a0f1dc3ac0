"""The sentence index of Structured Interaction Memory: every message split into whole sentences,
each with a dense and a sparse lexical vector, the message as provenance and the segment it belongs
to (so a search can be restricted to the segments of one Event Trajectory). Query-local evidence
(§3.4) is made of these sentences.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from memsif import lexical
from memsif.embed import Embedder
from memsif.records import Message, Sentence


def build_sentences(messages: Sequence[Message], vectors: Mapping[str, np.ndarray], segment_of: Mapping[str, str],
                    embedder: Embedder, trajectory_of: Mapping[str, str | None] | None = None,
                    ) -> list[tuple[Sentence, np.ndarray, lexical.SparseVector]]:
    """Sentence records of ``messages`` with their (d,) dense vectors and sparse lexical vectors;
    ``trajectory_of`` maps a segment id to its Event Trajectory id.

    A message that is one sentence reuses its message vector from ``vectors`` (message id → (d,)
    L2-normalised); the sentences of longer messages are embedded here in one batch.
    """
    rows: list[tuple[Sentence, np.ndarray | None]] = []
    to_embed: list[int] = []
    for m in messages:
        parts = lexical.split_sentences(m.text)
        for k, text in enumerate(parts):
            sentence = Sentence(id=f"{m.id}#{k}", namespace=m.namespace, message_id=m.id, position=k, text=text,
                                speaker=m.speaker, time=m.time, message_index=m.index,
                                segment_id=segment_of.get(m.id),
                                trajectory_id=(trajectory_of or {}).get(segment_of.get(m.id) or ""))
            if len(parts) == 1:
                rows.append((sentence, vectors[m.id]))
            else:
                to_embed.append(len(rows))
                rows.append((sentence, None))
    if to_embed:
        embedded = embedder.embed_documents([rows[i][0].text for i in to_embed])
        for i, vec in zip(to_embed, embedded, strict=True):
            rows[i] = (rows[i][0], vec)
    sparse = lexical.encode_documents([s.text for s, _ in rows], [s.speaker for s, _ in rows])
    return [(s, _embedded(v), sp) for (s, v), sp in zip(rows, sparse, strict=True)]


def _embedded(vector: np.ndarray | None) -> np.ndarray:
    """A sentence's vector once every sentence is embedded (each was given one above)."""
    if vector is None:
        raise ValueError("a sentence was left without a vector")
    return vector
