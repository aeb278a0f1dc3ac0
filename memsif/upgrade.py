"""Bringing a memory stored by an earlier MemSIF up to date, in named steps (``python -m memsif upgrade``).

Each step finds what an older store lacks and writes only that, so running it again changes nothing.
Reading older records themselves (payload fields added later) is the records' own business
(``memsif.records`` validators); an export without a sentence index gets one on import through
``add_sentence_index``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memsif import lexical
from memsif.embed import Embedder
from memsif.interaction.sentences import build_sentences
from memsif.interaction.titles import QUOTE_UP_TO, quote_title
from memsif.store import Store, StoredMessage


def unindexed_messages(store: Store, namespace: str) -> list[StoredMessage]:
    """Stored messages without a sentence in the hybrid index (stores built before it existed)."""
    indexed = ({sen.message_id for sen, _ in store.sentences(namespace)}
               if store.count("sentence", namespace) else set())
    return [r for r in store.messages(namespace) if r.message.id not in indexed]


def add_sentence_index(store: Store, embedder: Embedder, namespace: str) -> int:
    """Add the hybrid sentence index (dense + sparse lexical vectors, each sentence with its segment's
    Event Trajectory) of every stored message that lacks it; returns how many sentences were written."""
    rows = unindexed_messages(store, namespace)
    trajectory_of = {s.id: s.trajectory_id for s in store.segments(namespace)}
    sentences = build_sentences([r.message for r in rows], {r.message.id: r.vector for r in rows},
                                {r.message.id: r.segment_id for r in rows if r.segment_id}, embedder, trajectory_of)
    store.put_sentences(namespace, sentences)
    return len(sentences)


def write_sentence_trajectories(store: Store, embedder: Embedder, namespace: str) -> int:
    """Write the Event Trajectory id of every segment whose stored sentences name another (stores made
    before sentences held it); returns how many segments were updated."""
    trajectory_of = {s.id: s.trajectory_id for s in store.segments(namespace)}
    stale = {sen.segment_id: trajectory_of[sen.segment_id] for sen, _ in store.sentences(namespace)
             if sen.segment_id in trajectory_of and sen.trajectory_id != trajectory_of[sen.segment_id]}
    store.set_sentence_trajectories(namespace, stale)
    return len(stale)


def rewrite_lexical_terms(store: Store, embedder: Embedder, namespace: str) -> int:
    """Rewrite the sparse lexical vector of every stored sentence whose terms this version reads
    differently (stores made before unspaced scripts — Chinese, Japanese, Thai — were indexed by
    characters and bigrams); returns how many were rewritten. Dense vectors are kept."""
    stored = store.sentence_lexical(namespace)
    stale = []
    for sentence, vector in store.sentences(namespace, with_vectors=True):
        if vector is None:
            continue
        fresh = lexical.encode_document(sentence.text, sentence.speaker)
        old = stored.get(sentence.id)
        if old is not None and (old.indices, old.values) != (fresh.indices, fresh.values):
            stale.append((sentence, vector, fresh))
    store.put_sentences(namespace, stale)
    return len(stale)


def quote_short_titles(store: Store, _embedder: Embedder, namespace: str) -> int:
    """Title by a quote (``interaction.titles.quote_title``) every segment of at most ``QUOTE_UP_TO`` messages
    whose model-free title is its key terms, a word list (stores made before quote titles); returns how many
    were titled again. A model's title, or a longer segment's, is left as it is."""
    todo = [s for s in store.segments(namespace)
            if s.title is not None and s.title.source == "key terms" and len(s.message_ids) <= QUOTE_UP_TO]
    if not todo:
        return 0
    rows = {r.message.id: r for r in store.messages(namespace)}
    speakers = store.speakers(namespace)
    for seg in todo:
        said = [rows[i].message for i in seg.message_ids if i in rows]
        if seg.title is not None:
            seg.title = seg.title.model_copy(update={"lines": quote_title(said, speakers), "source": "quote"})
    store.put_segments(namespace, [(seg, np.mean([rows[i].vector for i in seg.message_ids if i in rows], axis=0))
                                   for seg in todo])
    return len(todo)


@dataclass(frozen=True)
class Step:
    """One upgrade: its name, what it does to a namespace (returns how much it changed) and what to
    say when it changed something (``{n}``: that number)."""

    name: str
    run: Callable[[Store, Embedder, str], int]
    says: str


#: Every upgrade, in the order they run.
STEPS: tuple[Step, ...] = (
    Step("sentence_index", add_sentence_index, "sentence index added ({n} sentences)"),
    Step("sentence_trajectories", write_sentence_trajectories,
         "Event Trajectory ids written into the sentences of {n} segments"),
    Step("lexical_terms", rewrite_lexical_terms,
         "lexical terms rewritten for {n} sentences (Chinese, Japanese, Thai … by characters and bigrams)"),
    Step("quote_titles", quote_short_titles,
         "{n} segments of one or two messages titled by a quote of what was said instead of a word list"),
)


def run_steps(store: Store, embedder: Embedder, namespace: str, steps: Sequence[str] | None = None) -> dict[str, int]:
    """Run the named ``STEPS`` (all by default, in their order) on ``namespace``; returns each step's
    count of what it changed (0: already up to date).

    Raises:
        ValueError: a step name that does not exist (nothing is run).
    """
    if unknown := sorted(set(steps or ()) - {s.name for s in STEPS}):
        raise ValueError(f"unknown upgrade steps {unknown}; the steps are {[s.name for s in STEPS]}")
    return {s.name: s.run(store, embedder, namespace) for s in STEPS if steps is None or s.name in steps}
