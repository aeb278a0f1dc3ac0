import math

import numpy as np
import pytest

from memsif.matching import SemanticMapping, UnitProfile, cosine, jaccard, phi


def test_phi_hand_computed_affine():
    # cos = 0.6 (3-4-5 triangle), s_sem = (0.6 + 1) / 2 = 0.8; J = |{x}| / |{x,y,z}| = 1/3
    a, b = np.array([1.0, 0.0]), np.array([0.6, 0.8])
    score = phi(a, {"x", "y"}, b, {"x", "z"}, alpha=0.8, mapping=SemanticMapping("affine"))
    assert score.cosine == pytest.approx(0.6)
    assert score.s_sem == pytest.approx(0.8)
    assert score.jaccard == pytest.approx(1 / 3)
    assert score.phi == pytest.approx(0.8 * 0.8 + 0.2 / 3)


def test_phi_calibrated_mapping_clips_to_unit_interval():
    mapping = SemanticMapping("calibrated", 0.0, 0.6)
    assert mapping(0.3) == pytest.approx(0.5)
    assert mapping(-0.2) == 0.0
    assert mapping(0.9) == 1.0
    score = phi(np.array([1.0, 0.0]), set(), np.array([0.0, 1.0]), set(), 0.8, mapping)
    assert score.phi == 0.0  # orthogonal, no entities


def test_alpha_one_ignores_entities_and_alpha_zero_is_pure_jaccard():
    a, b = np.array([1.0, 0.0]), np.array([1.0, 0.0])
    assert phi(a, {"x"}, b, {"y"}, 1.0, SemanticMapping("affine")).phi == pytest.approx(1.0)
    assert phi(a, {"x"}, b, {"x"}, 0.0, SemanticMapping("affine")).phi == pytest.approx(1.0)
    assert phi(a, {"x"}, b, {"y"}, 0.0, SemanticMapping("affine")).phi == pytest.approx(0.0)


def test_jaccard_and_cosine_edge_cases():
    assert jaccard(set(), set()) == 0.0
    assert jaccard({"a"}, {"a"}) == 1.0
    assert cosine(np.zeros(3), np.ones(3)) == 0.0


def test_unit_profile_mean_pools_and_unions():
    profile = UnitProfile(2)
    profile.add(np.array([1.0, 0.0]), {"a"})
    profile.add(np.array([0.0, 1.0]), {"b"})
    assert np.allclose(profile.mean, [0.5, 0.5])
    assert profile.entities == {"a", "b"}
    other = UnitProfile(2)
    other.add(np.array([0.0, 1.0]), {"c"})
    profile.absorb(other)
    assert profile.count == 3 and np.allclose(profile.mean, [1 / 3, 2 / 3])
    assert math.isclose(cosine(profile.mean, np.array([1.0, 2.0])), 1.0)


def test_mapping_for_embedder():
    assert SemanticMapping.for_embedder("all-MiniLM-L6-v2").kind == "calibrated"
    assert SemanticMapping.for_embedder("all-MiniLM-L6-v2", "affine").kind == "affine"
    assert SemanticMapping.for_embedder("some/other-model").kind == "affine"
    with pytest.raises(ValueError, match="COSINE_RANGES"):
        SemanticMapping.for_embedder("some/other-model", "calibrated")
