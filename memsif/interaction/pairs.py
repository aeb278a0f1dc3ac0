"""Model-free measures of every pair of Topical Segments in a namespace, for the whole-memory Event
Trajectory construction (§3.2; ``interaction.relink``).

Each segment is read once into a ``SegmentView`` (its pooled embedding, content stems, key entities,
title embedding, size, sessions, dates, speakers and the embeddings of the CoreFacts written from it);
the measures of all pairs then come from a few matrix products, so n segments cost one (n, n) matrix
per measure (about 1 s for 2,000 segments on 2 cores; ``benchmarks/quality/trajectory_relink.py --scale``).

Measures (``FEATURES``), each a symmetric (n, n) float32 matrix:

- ``cosine``: cosine of the two segments' mean-pooled message embeddings.
- ``centered_cosine``: the same after subtracting the namespace's mean segment embedding, so the
  direction every segment of a chat shares (greetings, the pair's way of talking) does not count.
- ``idf_overlap``: IDF-weighted Jaccard of their content-word stems (``link.rare_overlap``; words that
  state nothing, ``lexical.EMPTY_STEMS``, left out), IDF over the namespace's segments (BM25's
  smoothed form).
- ``rare_shared``: log(1 + stems both hold that few segments hold: document frequency ≤ ``rare_df``).
- ``entity_jaccard``: Jaccard of their key-entity sets (the J of Eq. 1).
- ``title_cosine``: cosine of their titles' embeddings (0 when either has none).
- ``log_words_min`` / ``log_words_max``: log(1 + words) of the smaller and the larger segment.
- ``log_content_min``: log(1 + distinct content stems) of the one with fewer (a farewell has almost none).
- ``log_gap_days``: log(1 + days from the earlier segment's last message to the later's first); 0
  when either is undated.
- ``speaker_cosine``: cosine of their content-words-per-speaker vectors (1: the same person talks in both).
- ``speaker_idf_overlap``: ``idf_overlap`` of what one person says in each, the best over the persons
  (the same person telling of the same things: James's dogs, not John's).
- ``fact_cosine``: the best cosine between a CoreFact written from one and one written from the
  other (0 when either has none).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from scipy import sparse

from memsif import lexical
from memsif.interaction import link
from memsif.matching import cosine_matrix
from memsif.records import Message

FEATURES: tuple[str, ...] = ("cosine", "centered_cosine", "idf_overlap", "rare_shared", "entity_jaccard",
                             "title_cosine", "log_words_min", "log_words_max", "log_content_min", "log_gap_days",
                             "speaker_cosine", "speaker_idf_overlap", "fact_cosine")


@dataclass(frozen=True)
class SegmentView:
    """What the pair measures read of one Topical Segment.

    ``vector``: (d,) mean of its messages' embeddings; ``title_vector``: (d,) or None;
    ``fact_vectors``: (k, d) embeddings of the CoreFacts written from it (k may be 0)."""

    id: str
    vector: np.ndarray
    stems: Counter[str]
    entities: frozenset[str]
    words: int
    sessions: frozenset[str]
    start: datetime | None
    end: datetime | None
    speakers: dict[str, int]
    by_speaker: dict[str, frozenset[str]] = field(default_factory=dict)  # content stems each speaker said
    title_vector: np.ndarray | None = None
    fact_vectors: np.ndarray | None = None
    surface: dict[str, str] = field(default_factory=dict)  # stem → a word as written, for display


def segment_view(segment_id: str, messages: Sequence[Message], vectors: Sequence[np.ndarray],
                 entities: Iterable[str], title_vector: np.ndarray | None = None,
                 fact_vectors: np.ndarray | None = None) -> SegmentView:
    """A ``SegmentView`` of a segment's ``messages`` (in order) and their (d,) ``vectors``.

    Raises:
        ValueError: no messages, or not one vector per message.
    """
    if not messages or len(messages) != len(vectors):
        raise ValueError(f"segment {segment_id}: {len(messages)} messages and {len(vectors)} vectors; "
                         "a segment view needs one vector per message, at least one message")
    stems: Counter[str] = Counter()
    surface: dict[str, str] = {}
    speakers: Counter[str] = Counter()
    by_speaker: dict[str, set[str]] = {}
    for m in messages:
        n = 0
        said = by_speaker.setdefault(m.speaker, set())
        for w in link.content_words(m.text):
            if w.stem in lexical.EMPTY_STEMS or w.lower in lexical.EMPTY_STEMS:  # words that state nothing
                continue
            stems[w.stem] += 1
            said.add(w.stem)
            surface.setdefault(w.stem, w.lower)
            n += 1
        speakers[m.speaker] += max(n, 1)
    times = [m.time for m in messages if m.time is not None]
    return SegmentView(
        id=segment_id, vector=np.mean(np.asarray(vectors, dtype=np.float64), axis=0), stems=stems,
        entities=frozenset(entities), words=sum(len(m.text.split()) for m in messages),
        sessions=frozenset(m.session_id for m in messages if m.session_id),
        start=min(times) if times else None, end=max(times) if times else None, speakers=dict(speakers),
        by_speaker={sp: frozenset(st) for sp, st in by_speaker.items()}, title_vector=title_vector,
        fact_vectors=fact_vectors, surface=surface)


#: ``speaker_idf_overlap`` looks at the persons who say the most, at most this many.
MAX_SPEAKERS = 8


def rare_df(n_segments: int) -> int:
    """The document frequency at or under which a stem is rare among ``n_segments``: 4 % of them, at least 3."""
    return max(3, round(0.04 * n_segments))


@dataclass
class PairMeasures:
    """The measures of every pair of ``n`` segments: ``matrices[name]`` is (n, n) float32, symmetric.

    ``cross``: (n, n) bool, True where the two segments share no session (the pairs a trajectory
    links across sessions); ``idf``: IDF per stem over the n segments; ``df``: document frequencies."""

    views: list[SegmentView]
    matrices: dict[str, np.ndarray]
    cross: np.ndarray
    idf: dict[str, float]
    df: Counter[str]

    def features(self, names: Sequence[str], rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """(m, len(names)) float64 measures of the pairs (rows[k], cols[k])."""
        return np.stack([self.matrices[f][rows, cols].astype(np.float64) for f in names], axis=1)

    def shared_terms(self, i: int, j: int, n: int = 3) -> list[str]:
        """Up to ``n`` words both segments hold, rarest first (as written in the first of them)."""
        a, b = self.views[i], self.views[j]
        both = sorted(set(a.stems) & set(b.stems), key=lambda s: (-self.idf.get(s, 0.0), s))
        return [a.surface.get(s, s) for s in both[:n]]


def measure_pairs(views: Sequence[SegmentView]) -> PairMeasures:
    """Every measure of ``FEATURES`` for every pair of ``views`` (module docstring).

    Raises:
        ValueError: ``views`` is empty or their vectors differ in dimension.
    """
    if not views:
        raise ValueError("no Topical Segments to measure")
    dims = {v.vector.shape[0] for v in views}
    if len(dims) != 1:
        raise ValueError(f"segment vectors differ in dimension: {sorted(dims)}")
    n, d = len(views), dims.pop()
    df: Counter[str] = Counter(s for v in views for s in v.stems)
    idf = {s: math.log((n + 1) / (c + 0.5)) for s, c in df.items()}
    pooled = np.stack([v.vector for v in views])
    titles = np.stack([v.title_vector if v.title_vector is not None else np.zeros(d) for v in views])
    words = np.log1p(np.array([v.words for v in views], dtype=np.float64))
    content = np.log1p(np.array([len(v.stems) for v in views], dtype=np.float64))
    speakers = sorted({s for v in views for s in v.speakers})
    said = np.array([[v.speakers.get(s, 0) for s in speakers] for v in views], dtype=np.float64)
    sessions = _incidence([v.sessions for v in views], _index(v.sessions for v in views))
    matrices = {
        **_word_measures(views, df, idf), "cosine": cosine_matrix(pooled),
        "centered_cosine": cosine_matrix(pooled - pooled.mean(axis=0, keepdims=True) if n > 2 else pooled),
        "entity_jaccard": _weighted_jaccard(_incidence([v.entities for v in views], _index(v.entities for v in views)),
                                            None),
        "title_cosine": cosine_matrix(titles), "log_words_min": np.minimum(words[:, None], words[None, :]),
        "log_words_max": np.maximum(words[:, None], words[None, :]),
        "log_content_min": np.minimum(content[:, None], content[None, :]), "log_gap_days": np.log1p(_gap_days(views)),
        "speaker_cosine": cosine_matrix(said), "fact_cosine": _fact_cosines(views, d),
    }
    return PairMeasures(list(views), {k: np.asarray(m, dtype=np.float32) for k, m in matrices.items()},
                        ~((sessions @ sessions.T).toarray() > 0), idf, df)


def _index(sets: Iterable[Iterable[str]]) -> dict[str, int]:
    """Column of each member of ``sets``, in sorted order."""
    return {m: k for k, m in enumerate(sorted({m for members in sets for m in members}))}


def _word_measures(views: Sequence[SegmentView], df: Counter[str], idf: dict[str, float]) -> dict[str, np.ndarray]:
    """``idf_overlap``, ``speaker_idf_overlap`` and ``rare_shared`` of every pair."""
    n = len(views)
    vocab = {s: k for k, s in enumerate(sorted(df))}
    present = _incidence([v.stems for v in views], vocab)
    idf_vec = np.array([idf[s] for s in sorted(df)], dtype=np.float64)
    talkers: Counter[str] = Counter()
    for v in views:
        talkers.update(v.speakers)
    speaker_overlap = np.zeros((n, n))
    for sp, _ in talkers.most_common(MAX_SPEAKERS):
        said = _incidence([v.by_speaker.get(sp, frozenset()) for v in views], vocab)
        speaker_overlap = np.maximum(speaker_overlap, _weighted_jaccard(said, idf_vec))
    rare = present @ sparse.diags(np.array([df[s] <= rare_df(n) for s in sorted(df)], dtype=np.float64))
    return {"idf_overlap": _weighted_jaccard(present, idf_vec), "speaker_idf_overlap": speaker_overlap,
            "rare_shared": np.log1p((rare @ rare.T).toarray())}


def _weighted_jaccard(present: sparse.csr_matrix, weights: np.ndarray | None) -> np.ndarray:
    """(n, n) Σ weights of the columns both rows hold / Σ weights of those either holds (0 when neither);
    every column weighs 1 without ``weights`` (plain Jaccard)."""
    if weights is None:
        weights = np.ones(present.shape[1])
    if not len(weights):
        return np.zeros((present.shape[0], present.shape[0]))
    inter = np.asarray((present @ sparse.diags(weights) @ present.T).toarray())
    totals = np.asarray(present @ weights).ravel()
    union = totals[:, None] + totals[None, :] - inter
    out: np.ndarray = np.divide(inter, union, out=np.zeros_like(union), where=union > 0)
    return out


def _incidence(sets: Sequence[Iterable[str]], index: dict[str, int]) -> sparse.csr_matrix:
    """(n, |index|) 0/1 matrix: row k holds the members of ``sets[k]``."""
    cells = [(k, index[m]) for k, members in enumerate(sets) for m in set(members)]
    rows, cols = [k for k, _ in cells], [c for _, c in cells]
    return sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(sets), len(index)))


def _gap_days(views: Sequence[SegmentView]) -> np.ndarray:
    """(n, n) days between the earlier segment's last message and the later's first (0 when undated)."""
    nan = float("nan")
    start = np.array([v.start.timestamp() if v.start else nan for v in views])
    end = np.array([v.end.timestamp() if v.end else nan for v in views])
    a = np.abs(start[None, :] - end[:, None])  # i earlier, j later
    gap: np.ndarray = np.nan_to_num(np.minimum(a, a.T) / 86400, nan=0.0)
    return gap


def _fact_cosines(views: Sequence[SegmentView], d: int) -> np.ndarray:
    """(n, n) best cosine between a CoreFact of one segment and one of the other (0 when either has none)."""
    n = len(views)
    owners = [k for k, v in enumerate(views) if v.fact_vectors is not None for _ in range(len(v.fact_vectors))]
    out = np.zeros((n, n))
    if not owners:
        return out
    facts = np.concatenate([v.fact_vectors for v in views if v.fact_vectors is not None and len(v.fact_vectors)])
    sims = cosine_matrix(facts.reshape(-1, d))
    owner = np.asarray(owners)
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])  # facts are grouped by owner, in order
    rows = np.maximum.reduceat(sims, starts, axis=0)
    best = np.maximum.reduceat(rows, starts, axis=1)
    held = owner[starts]
    out[np.ix_(held, held)] = best
    np.fill_diagonal(out, 0.0)
    return out
