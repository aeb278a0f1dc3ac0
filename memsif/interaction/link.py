"""Whether a Topical Segment continues an Event Trajectory (§3.2), as one calibrated probability.

The paper asks an LLM judge, for each of the Top-K candidates by φ, whether the new segment shares
the candidate's event identity, task continuity and state consistency. The packaged 1.5B's P(yes)
alone barely separates the pairs a person calls one thread from the rest, so the decision is a
logistic model over the measures of the pair (``LinkMeasures``): the judge's P(yes) on a short,
focused prompt (the two segments' most specific sentences), φ (Eq. 1), the overlap of their rare
words, their entity Jaccard and the days between them. Its weights were fitted on the labelled
threads of the dev conversations and tested on the conversation left out
(``benchmarks/quality/trajectory_decision.py``). A model whose judge was not measured gets the same kind of
model without P(yes): a rule, recorded as such.

Rare words: content-word stems weighted by their inverse document frequency over the namespace's
segments so far (what the builder knows when the segment closes), so "adoption" and "pottery"
count and "today" does not.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from memsif import lexical
from memsif.config import MethodSettings
from memsif.llm import LLM
from memsif.llm.profiles import UNMEASURED, ModelProfile
from memsif.records import Message

#: Stems shorter than this are not content (``'s``, ``go``).
MIN_STEM = 3


def content_words(text: str) -> list[lexical.Word]:
    """The content words of ``text`` (stop words, numbers and short stems left out)."""
    return [w for w in lexical.words(text) if w.is_alpha and not w.is_stop and len(w.stem) >= MIN_STEM]


def content_stems(texts: Iterable[str]) -> Counter[str]:
    """Content-word stems of ``texts`` with their counts (``content_words``)."""
    return Counter(w.stem for t in texts for w in content_words(t))


class Vocabulary:
    """Document frequencies of content stems over a namespace's Topical Segments, kept as they grow.

    ``read(segment_id, texts)`` (re)counts a segment when its number of messages changed, so reading
    every segment before each decision costs a lookup per unchanged segment. ``idf`` follows BM25's
    smoothed form, log((N + 1) / (df + 0.5)), N the segments read.
    """

    def __init__(self) -> None:
        self._stems: dict[str, tuple[int, Counter[str]]] = {}
        self._df: Counter[str] = Counter()

    def read(self, segment_id: str, size: int, texts: Callable[[], Iterable[str]]) -> Counter[str]:
        """The content stems of a segment of ``size`` messages (``texts`` called only when it changed)."""
        cached = self._stems.get(segment_id)
        if cached is None or cached[0] != size:
            if cached is not None:
                self._df.subtract(cached[1].keys())
            cached = self._stems[segment_id] = (size, content_stems(texts()))
            self._df.update(cached[1].keys())
        return cached[1]

    def idf(self, stem: str) -> float:
        """IDF of ``stem`` over the segments read; a stem none holds gets the highest."""
        n = len(self._stems)
        return math.log((n + 1) / (self._df.get(stem, 0) + 0.5))


def rare_overlap(a: Iterable[str], b: Iterable[str], idf: Callable[[str], float]) -> float:
    """IDF-weighted Jaccard of two stem sets, in [0, 1]."""
    sa, sb = set(a), set(b)
    union = sum(idf(s) for s in sa | sb)
    return sum(idf(s) for s in sa & sb) / union if union else 0.0


def specific_sentences(messages: Sequence[Message], idf: Callable[[str], float], n: int) -> list[Message]:
    """The ``n`` sentences of ``messages`` whose content stems are rarest (sum of IDF), as one-sentence
    messages in their original order; sentences of fewer than three content words are skipped."""
    scored = []
    for pos, m in enumerate(messages):
        for k, sentence in enumerate(lexical.split_sentences(m.text)):
            stems = content_stems([sentence])
            if sum(stems.values()) < 3:
                continue
            scored.append((sum(idf(s) for s in stems), pos, k, m.model_copy(update={"text": sentence})))
    best = sorted(scored, key=lambda x: -x[0])[:n]
    return [m for _, _, _, m in sorted(best, key=lambda x: (x[1], x[2]))]


@dataclass(frozen=True)
class LinkMeasures:
    """What is known of one (later segment, earlier segment) pair: φ (Eq. 1) in [0, 1], cosine of the
    pooled embeddings, rare-word overlap in [0, 1], entity Jaccard in [0, 1], days between the
    earlier's last message and the later's first (0 when either has no date), and the judge's
    calibrated P(yes) (None when no judge was asked)."""

    phi: float
    rare: float
    jaccard: float
    gap_days: float
    p_yes: float | None = None

    def value(self, name: str) -> float:
        """A measure by name; ``log_gap_days`` is log(1 + days), ``logit_p_yes`` log(p / (1 − p))."""
        if name == "log_gap_days":
            return math.log1p(max(self.gap_days, 0.0))
        if name == "logit_p_yes":
            p = min(max(self.value("p_yes"), 1e-6), 1 - 1e-6)
            return math.log(p / (1 - p))
        v = getattr(self, name)
        if v is None:
            raise ValueError(f"measure {name!r} was not taken for this pair")
        return float(v)


@dataclass(frozen=True)
class LinkModel:
    """P(same thread) = σ(intercept + Σ weight·measure); the segment joins when it is ≥ ``threshold``.

    ``features`` name ``LinkMeasures`` values (``log_gap_days`` is log(1 + days)); ``fitted`` says on
    what and how (shown in every decision's rule)."""

    name: str
    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    threshold: float
    fitted: str

    @property
    def uses_judge(self) -> bool:
        return any("p_yes" in f for f in self.features)

    def probability(self, measures: LinkMeasures) -> float:
        z = self.intercept + sum(w * measures.value(f) for f, w in zip(self.features, self.weights, strict=True))
        return 1.0 / (1.0 + math.exp(-z))


#: The measures only, no LLM call: a logistic regression fitted on the 1,080 Top-5 cross-session pairs
#: of the three dev conversations (122 in one labelled thread; ROC AUC 0.62), the threshold the one
#: that links the most gold-evidence pairs while link precision stays ≥ 0.75 — which, on dev, joins
#: almost nothing: the measures alone do not tell one thread from a similar topic.
RULE = LinkModel(name="trajectory_link/rule-1", features=("phi", "rare", "jaccard", "log_gap_days"),
                 weights=(1.5606, 0.9638, 0.6833, -0.0906), intercept=-3.0194, threshold=0.25,
                 fitted="logistic on the dev conversations' labelled threads")
#: The paper's decision: the judge's calibrated P(yes) alone, joined at ``judge_threshold`` (0.5), not fitted.
JUDGE_ALONE = LinkModel(name="trajectory_link/judge-alone", features=("logit_p_yes",), weights=(1.0,),
                        intercept=0.0, threshold=0.5, fitted="not fitted: P(same thread) = the judge's P(yes)")


def model_for(mode: str, llm: LLM | None, profile: ModelProfile = UNMEASURED,
              judge_threshold: float = JUDGE_ALONE.threshold) -> LinkModel:
    """The link model for ``trajectory_link`` ``mode`` and ``llm``: "model" asks the judge
    (``JUDGE_ALONE`` at ``judge_threshold``), "rule" never (``RULE``), "auto" only for a model whose
    link model with the judge was fitted and measured on the labelled threads
    (``ModelProfile.links_trajectories``, ``benchmarks/quality/trajectory_decision.py``; none yet: the 1.5B's joins
    were 8 %, 9 % and 22 % precise on conv-26, conv-30 and conv-47); always ``RULE`` without an LLM."""
    judged = mode == "model" or (mode == "auto" and llm is not None and profile.links_trajectories)
    if llm is None or not judged:
        return RULE
    return JUDGE_ALONE if judge_threshold == JUDGE_ALONE.threshold else replace(JUDGE_ALONE, threshold=judge_threshold)


def decision_threshold(method: MethodSettings, llm: LLM | None, profile: ModelProfile) -> float:
    """The score a segment's best Event Trajectory must reach to be joined under ``method``: the margin
    over "none of these" for ``trajectory_link`` "choice", else the link model's threshold (``model_for``)."""
    if method.trajectory_link == "choice":
        return method.trajectory_choice_margin
    return model_for(method.trajectory_link, llm, profile, method.judge_threshold).threshold
