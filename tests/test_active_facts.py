"""Eqs. 2–4 on hand-computed clusters (§3.4)."""

import numpy as np
import pytest

from memsif.facts.active import CandidateCluster, coherence, normalise_subject, promote, score_qry, score_src

E1, E2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])


def test_coherence_of_singleton_is_one_and_pairs_are_normalised():
    assert coherence([E1]) == 1.0
    assert coherence([E1, E1]) == pytest.approx(1.0)
    assert coherence([E1, E2]) == pytest.approx(0.5)          # cos 0 → (0+1)/2
    assert coherence([E1, -E1]) == pytest.approx(0.0)         # cos −1
    assert coherence([E1, E1, E2]) == pytest.approx((1 + 0.5 + 0.5) / 3)


def test_eq2_and_eq3_by_hand():
    # |R| = 3 distinct sources, X = {E1, E2}: (1 − 1/3) · 0.5 = 1/3
    assert score_src(3, [E1, E2]) == pytest.approx(1 / 3)
    # a single source never gives support, however coherent
    assert score_src(1, [E1]) == 0.0
    # |Q| = 2 identical-direction queries: (1 − 1/2) · 1 = 0.5
    assert score_qry([E1, E1]) == pytest.approx(0.5)
    assert score_qry([E1]) == 0.0


def test_promotion_needs_both_scores():
    assert promote(0.5, 0.5, 0.45, 0.45)
    assert not promote(0.5, 0.44, 0.45, 0.45)   # supported but not demanded
    assert not promote(0.44, 0.9, 0.45, 0.45)   # demanded but not supported
    assert promote(0.45, 0.45, 0.45, 0.45)      # thresholds are inclusive


def test_cluster_accumulates_dedupes_and_promotes():
    c = CandidateCluster(normalise_subject(" Melanie. "))
    assert c.subject == "melanie"
    c.add("Melanie paints.", E1, ["D1:3"], "What does Melanie do?", E1)
    assert (c.score_src, c.score_qry) == (0.0, 0.0)
    c.add("Melanie paints.", E1, ["D1:3"], "What does Melanie do?", E1)  # same statement, source, query
    assert (len(c.statements), len(c.queries), len(c.sources)) == (1, 1, 1)
    q2 = np.array([0.9, 0.4359])  # cos ≈ 0.9 with E1: a different but related query
    c.add("Melanie paints landscapes.", np.array([0.8, 0.6]), ["D4:2"], "What hobby has Melanie?", q2)
    # |R| = 2, Coh(X) = (0.8 + 1) / 2 = 0.9 → 0.45; |Q| = 2, Coh(Q) = (0.9 + 1) / 2 = 0.95 → 0.475
    assert c.score_src == pytest.approx(0.45, abs=1e-3)
    assert c.score_qry == pytest.approx(0.475, abs=1e-3)
    assert c.promoted(0.45, 0.45)
    assert not c.promoted(0.45, 0.5)
