"""Event Trajectories decided over the whole memory (§3.2): a fitted pair score, then precision-first
clustering.

The paper assigns each Topical Segment as it closes, asking an LLM judge about its Top-K candidates.
A small model is at chance on that question, and a decision made one segment at a time cannot take
back a join. Here every pair of segments gets P(same thread) from a logistic model over model-free
measures (``interaction.pairs``), fitted on labelled threads of the dev conversations
(``benchmarks/quality/trajectory_relink.py`` writes ``trajectory_scorer.json``), and the segments are
grouped by average linkage, the cut chosen for link precision: a group joins only where the mean
P(same thread) over all its cross pairs reaches the threshold — never single-link chaining — and a
group that would exceed ``max_share`` of the segments is cut finer (the guard).
Retrospective clustering of a whole stream beats deciding as each story arrives in topic tracking
(Yang, Pierce and Carbonell, SIGIR 1998: F1 82 % against 42 %).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform

from memsif.errors import ConfigError

#: The fitted scorers shipped with the package (one per embedder, and one without the embedder's measures).
SCORER_FILE = Path(__file__).with_name("trajectory_scorer.json")


@dataclass(frozen=True)
class PairScorer:
    """P(same thread) of a pair of Topical Segments = σ(intercept + Σ wᵢ·(xᵢ − meanᵢ)/scaleᵢ) over the
    named measures of ``interaction.pairs``; segments join when the average linkage of their group
    reaches ``threshold``; no trajectory holds more than ``max_share`` of the segments (at least 2);
    a segment that says fewer than ``min_content`` distinct content words stays alone (a greeting
    or a farewell belongs to no thread); two segments of one session score 0
    unless ``within_session`` (the scorer is fitted on pairs across sessions: within one, the
    segmenter has already said they differ).

    ``embedder``: the embedder whose vectors the measures were fitted on (None: the scorer reads no
    embedding, and serves any embedder); ``fitted``: on what and how, shown in every decision."""

    version: str
    embedder: str | None
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float
    threshold: float
    max_share: float
    min_content: int
    fitted: str
    within_session: bool = False

    def __post_init__(self) -> None:
        sizes = {len(self.features), len(self.mean), len(self.scale), len(self.weights)}
        if len(sizes) != 1:
            raise ConfigError(f"pair scorer {self.version}: features, mean, scale and weights differ in length")
        if not 0 < self.threshold < 1 or not 0 < self.max_share <= 1:
            raise ConfigError(f"pair scorer {self.version}: threshold must be in (0, 1) and max_share in (0, 1]")

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """(m,) P(same thread) for (m, len(features)) measures."""
        z = (np.asarray(x, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        logits = self.intercept + z @ np.asarray(self.weights)
        out: np.ndarray = 1.0 / (1.0 + np.exp(-logits))
        return out

    def contributions(self, x: np.ndarray) -> dict[str, float]:
        """Each measure's term of the logit for one pair's (len(features),) measures: what raised or lowered it."""
        z = (np.asarray(x, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        return {f: float(w * v) for f, w, v in zip(self.features, self.weights, z, strict=True)}

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> PairScorer:
        """The scorer of a ``to_json`` document. Raises ``TypeError`` for a missing or unknown field."""
        values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()}
        return cls(**values)


@cache
def shipped_scorers(path: Path = SCORER_FILE) -> tuple[PairScorer, ...]:
    """The scorers of ``trajectory_scorer.json``, the embedder-specific ones first.

    Raises:
        ConfigError: the file is missing or damaged (reinstall the package, or refit it with
            ``benchmarks/quality/trajectory_relink.py --write-scorer``).
    """
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return tuple(PairScorer.from_json(s) for s in doc["scorers"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"The Event Trajectory pair scorer {path} cannot be read ({exc}); reinstall MemSIF "
                          "or refit it: PYTHONPATH=. python benchmarks/quality/trajectory_relink.py "
                          "--write-scorer") from exc


def scorer_for(embedder: str, scorers: tuple[PairScorer, ...] | None = None) -> tuple[PairScorer, str | None]:
    """The scorer fitted for ``embedder``'s vectors, else the one that reads no embedding, with a note
    saying so (None when the embedder's own scorer serves).

    Raises:
        ConfigError: no scorer serves ``embedder`` (the file holds none without an embedder).
    """
    scorers = shipped_scorers() if scorers is None else scorers
    own = next((s for s in scorers if s.embedder == embedder), None)
    if own is not None:
        return own, None
    anyone = next((s for s in scorers if s.embedder is None), None)
    if anyone is None:
        raise ConfigError(f"No Event Trajectory pair scorer serves the embedder {embedder!r}; refit one for it with "
                          "benchmarks/quality/trajectory_relink.py")
    fitted_for = sorted({s.embedder for s in scorers if s.embedder})
    return anyone, (f"the pair scorer was fitted on {', '.join(fitted_for)} vectors, not {embedder}'s: "
                    f"the model-free {anyone.version} without the embedding measures decides")


def max_size(n: int, share: float) -> int:
    """The most segments one trajectory may hold among ``n``: ``share`` of them, at least 2."""
    return max(2, math.floor(share * n))


def average_linkage(scores: np.ndarray, threshold: float, cap: int,
                    alone: np.ndarray | None = None) -> list[list[int]]:
    """Groups of segments whose average pairwise score reaches ``threshold``, none larger than ``cap``.

    ``scores``: (n, n) symmetric P(same thread) in [0, 1] (the diagonal is ignored); ``alone``: (n,)
    bool, segments left out of every group. Average linkage over 1 − score; the dendrogram is cut
    from the top: a node is a group when its merge distance is ≤ 1 − ``threshold`` and it holds at
    most ``cap`` segments, else its two children are looked at (the guard cuts a too-large group
    where its own linkage is weakest). Returns the groups as sorted index lists, ordered by their
    first member; every segment is in exactly one (a singleton when it joins nothing).
    """
    n = scores.shape[0]
    alone = np.zeros(n, dtype=bool) if alone is None else alone
    free = np.flatnonzero(~alone)
    groups: list[list[int]] = [[int(i)] for i in np.flatnonzero(alone)]
    if len(free) == 1:
        groups.append([int(free[0])])
    elif len(free) > 1:
        sub = np.clip(1.0 - scores[np.ix_(free, free)].astype(np.float64), 0.0, 1.0)
        sub = (sub + sub.T) / 2
        np.fill_diagonal(sub, 0.0)
        root = hierarchy.to_tree(hierarchy.linkage(squareform(sub, checks=False), method="average"))
        limit = 1.0 - threshold + 1e-12
        stack = [root]
        while stack:
            node = stack.pop()
            if node.is_leaf() or (node.dist <= limit and node.count <= cap):
                groups.append(sorted(int(free[i]) for i in node.pre_order()))
            else:
                stack += [node.get_left(), node.get_right()]
    return sorted(groups, key=lambda g: g[0])
