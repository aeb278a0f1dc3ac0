"""Scores that need no LLM: token F1, evidence recall (text, provenance, strict), TED (Eq. 5), ASV (Eqs. 7–8), SNTD@k
(Eqs. 10–11), the paired bootstrap (App. D.2), a mean's bootstrap interval and a share's Wilson interval."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

import numpy as np

from memsif import lexical

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "‘’“”")


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: lower case, no punctuation, no articles (a, an, the, and), single spaces.
    (LoCoMo also Porter-stems tokens; MemSIF does not, to keep NLTK out of the dependencies.)"""
    text = str(text).replace(",", "").lower()
    text = text.translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """Token-level F1 of two normalised strings, in [0, 1] (0 when either is empty)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if not pred or not ref or same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str, category: str) -> float:
    """LoCoMo's F1 by category: for M-hop, gold and prediction are split on commas and each gold part
    takes its best-matching predicted part (mean over gold parts); for Kno only the part of the gold
    before ';' counts; otherwise plain token F1."""
    if category == "M-hop":
        golds = [g for g in str(gold).split(",") if g.strip()]
        preds = [p for p in str(prediction).split(",") if p.strip()] or [""]
        if not golds:
            return 0.0
        return float(np.mean([max(token_f1(p, g) for p in preds) for g in golds]))
    if category == "Kno":
        gold = str(gold).split(";")[0]
    return token_f1(prediction, gold)


def _squash(text: str) -> str:
    return " ".join(str(text).lower().split())


def evidence_recall(gold_ids: Sequence[str], gold_texts: dict[str, str], context: str,
                    context_ids: Sequence[str]) -> tuple[float | None, float | None]:
    """(text recall, provenance recall) of one question's gold evidence turns.

    Text recall: share of gold turns whose text appears verbatim (case and spacing ignored) in the
    answer context. Provenance recall: share whose message id is among the context's source ids (a
    CoreFact built from the turn counts here even when it paraphrases it). None without gold turns.
    """
    if not gold_ids:
        return None, None
    haystack = _squash(context)
    wanted = set(context_ids)
    text = sum(1 for g in gold_ids if _squash(gold_texts.get(g, "\0")) in haystack) / len(gold_ids)
    ids = sum(1 for g in gold_ids if g in wanted) / len(gold_ids)
    return text, ids


def best_sentences(turn: str, answer: str) -> list[str]:
    """The sentences of ``turn`` (split as the sentence index splits them, ``lexical.split_sentences``)
    with the highest token F1 against the gold ``answer``; all of them on a tie (so a turn that shares
    no word with the answer needs every sentence)."""
    sentences = lexical.split_sentences(turn)
    if not sentences:
        return []
    scores = [token_f1(s, answer) for s in sentences]
    top = max(scores)
    return [s for s, f in zip(sentences, scores, strict=True) if f == top]


def strict_recall(gold_ids: Sequence[str], gold_texts: dict[str, str], gold_answer: str,
                  context: str) -> float | None:
    """Strict evidence recall of one question: share of gold turns whose *answer-bearing sentences*
    (``best_sentences``: the turn's sentences that best overlap the gold answer by token F1; ties →
    all) all appear verbatim (case and spacing ignored) in the context. Stricter than both measures
    of ``evidence_recall``, which count a turn when any of its sentences is a context source; a
    paraphrasing CoreFact does not count here. None without gold turns."""
    if not gold_ids:
        return None
    haystack = _squash(context)
    needed = [best_sentences(gold_texts.get(g, ""), str(gold_answer)) for g in gold_ids]
    return sum(bool(n) and all(_squash(s) in haystack for s in n) for n in needed) / len(gold_ids)


def ted(positions: Sequence[int], length: int) -> float | None:
    """Temporal Evidence Dispersion (Eq. 5): (max pos − min pos) / (L − 1), in [0, 1];
    None with fewer than two evidence turns (the NCE subset needs at least two)."""
    if len(positions) < 2 or length < 2:
        return None
    return (max(positions) - min(positions)) / (length - 1)


def fixed_segments(embeddings: np.ndarray, length: int) -> np.ndarray:
    """Consecutive, non-overlapping groups of ``length`` turns, mean-pooled and L2-normalised
    (App. A.2's analysis segments; the last group may be shorter). Shape (m, dim)."""
    if length < 1:
        raise ValueError("segment length must be ≥ 1")
    groups = [embeddings[i:i + length].mean(axis=0) for i in range(0, len(embeddings), length)]
    out = np.asarray(groups, dtype=np.float64)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


def asv(segments: np.ndarray) -> float | None:
    """Adjacent Semantic Volatility (Eqs. 7–8): mean |a_{i+1} − a_i| over the adjacent cosine
    sequence a_i = cos(e_i, e_{i+1}) of L2-normalised segment embeddings (m, dim); None for m < 3."""
    if len(segments) < 3:
        return None
    a = np.sum(segments[:-1] * segments[1:], axis=1)
    return float(np.mean(np.abs(np.diff(a))))


def sntd(segments: np.ndarray, k: int) -> float | None:
    """SNTD@k (Eqs. 10–11): mean normalised temporal distance |i − j| / (m − 1) from each segment to
    its k nearest segments by cosine (itself excluded); None when m ≤ k."""
    m = len(segments)
    if m <= k or m < 2:
        return None
    sims = segments @ segments.T
    np.fill_diagonal(sims, -np.inf)
    neighbours = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    idx = np.arange(m)[:, None]
    return float(np.mean(np.abs(neighbours - idx) / (m - 1)))


def random_sntd(m: int) -> float | None:
    """Random SNTD@k: the expected normalised distance to a uniformly drawn non-self segment
    (the same for every k), computed exactly rather than by sampling."""
    if m < 2:
        return None
    i = np.arange(m)
    return float(np.mean([np.abs(i[i != a] - a).mean() / (m - 1) for a in range(m)]))


def paired_bootstrap(a: Sequence[float], b: Sequence[float], groups: Sequence[str], *, stratified: bool = False,
                     resamples: int = 10_000, seed: int = 0) -> dict[str, float]:
    """Paired bootstrap of mean(a) − mean(b) over the same questions (App. D.2).

    ``stratified=False`` resamples whole groups (LoCoMo: conversations) with replacement;
    ``stratified=True`` resamples questions with replacement within each group (LongMemEval:
    categories). Returns the observed difference, the percentile 95% CI and the share of resamples
    where the difference is ≤ 0 (one-sided p for "a beats b").

    Raises:
        ValueError: the sequences differ in length or are empty.
    """
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a_arr) != len(b_arr) or len(a_arr) != len(groups) or not len(a_arr):
        raise ValueError("a, b and groups must be non-empty and of the same length (the same questions)")
    diff = a_arr - b_arr
    rng = np.random.default_rng(seed)
    labels = np.asarray(groups)
    members = [np.flatnonzero(labels == g) for g in dict.fromkeys(groups)]
    stats = np.empty(resamples)
    for r in range(resamples):
        if stratified:
            picked = np.concatenate([rng.choice(ix, size=len(ix), replace=True) for ix in members])
        else:
            chosen = rng.integers(0, len(members), size=len(members))
            picked = np.concatenate([members[c] for c in chosen])
        stats[r] = diff[picked].mean()
    low, high = np.percentile(stats, [2.5, 97.5])
    return {"diff": float(diff.mean()), "ci_low": float(low), "ci_high": float(high),
            "p_le_zero": float(np.mean(stats <= 0)), "resamples": resamples}


def mean_interval(values: Sequence[float], groups: Sequence[str], *, resamples: int = 10_000,
                  seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``values`` (one per question) with its 95 % percentile bootstrap interval: questions
    resampled with replacement within each group (LoCoMo: conversation), as ``paired_bootstrap`` with
    ``stratified=True`` against zeros. Returns (mean, low, high) in the unit of ``values``.

    Raises:
        ValueError: ``values`` is empty or its length differs from ``groups``'.
    """
    x = np.asarray(values, dtype=float)
    if not len(x) or len(x) != len(groups):
        raise ValueError("values and groups must be non-empty and of the same length (one per question)")
    rng = np.random.default_rng(seed)
    labels = np.asarray(groups)
    totals = np.zeros(resamples)
    for g in dict.fromkeys(groups):
        members = x[labels == g]
        totals += members[rng.integers(0, len(members), size=(resamples, len(members)))].sum(axis=1)
    low, high = np.percentile(totals / len(x), [2.5, 97.5])
    return float(x.mean()), float(low), float(high)


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson score 95 % interval of ``k`` successes in ``n`` trials, as shares in [0, 1]
    (``scipy.stats.binomtest``); (0, 1) when ``n`` is 0. Used for labelled samples (stored facts)."""
    from scipy.stats import binomtest

    if n == 0:
        return 0.0, 1.0
    ci = binomtest(k, n).proportion_ci(method="wilson")
    return float(ci.low), float(ci.high)
