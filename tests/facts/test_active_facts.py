"""Eqs. 2–4 on hand-computed clusters (§3.4)."""

import numpy as np
import pytest

from memsif.config import MemSIFConfig
from memsif.facts.active import (
    add_evidence,
    coherence,
    compatibility,
    is_promoted,
    new_cluster,
    normalise_subject,
    promote,
    score_qry,
    score_src,
)

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
    c = new_cluster("C1", "t", normalise_subject(" Melanie. "))
    assert c.subject == "melanie"
    add_evidence(c, "Melanie paints.", E1, ["D1:3"], "What does Melanie do?", E1)
    assert (c.score_src, c.score_qry) == (0.0, 0.0)
    add_evidence(c, "Melanie paints.", E1, ["D1:3"], "What does Melanie do?", E1)  # same statement, source, query
    assert (len(c.statements), len(c.queries), len(c.sources)) == (1, 1, 1)
    q2 = np.array([0.9, 0.4359])  # cos ≈ 0.9 with E1: a different but related query
    add_evidence(c, "Melanie paints landscapes.", np.array([0.8, 0.6]), ["D4:2"], "What hobby has Melanie?", q2)
    # |R| = 2, Coh(X) = (0.8 + 1) / 2 = 0.9 → 0.45; |Q| = 2, Coh(Q) = (0.9 + 1) / 2 = 0.95 → 0.475
    assert c.score_src == pytest.approx(0.45, abs=1e-3)
    assert c.score_qry == pytest.approx(0.475, abs=1e-3)
    assert is_promoted(c, 0.45, 0.45)
    assert not is_promoted(c, 0.45, 0.5)


# --------------------------------------------------- clusters that mean something (complete link)
def test_a_bridge_statement_does_not_chain_unrelated_statements():
    COMPATIBLE_COSINE = MemSIFConfig().active_compatible_cosine

    bridge = (E1 + E2) / np.sqrt(2)  # cos 0.71 with each, while E1 ⟂ E2
    cluster = new_cluster("C1", "t", "ana")
    add_evidence(cluster, "Ana makes bowls.", E1, ["D1:1"], "q1", E1)
    add_evidence(cluster, "Ana runs to her pottery class.", bridge, ["D1:2"], "q2", E1)
    assert compatibility(cluster, E2) < COMPATIBLE_COSINE <= compatibility(cluster, E1)


def test_the_promoted_statement_is_stable_until_another_is_clearly_more_central():
    from memsif.facts.active import choose_statement

    a, b = np.array([1.0, 0.0, 0.0]), np.array([0.9, 0.436, 0.0])
    cluster = new_cluster("C1", "t", "ana")
    for text, vec in (("first", a), ("second", b)):
        add_evidence(cluster, text, vec, [text], text, vec)
    cluster.statement = "second"
    # "third" is slightly more central than "second"
    add_evidence(cluster, "third", np.array([0.95, 0.0, 0.312]), ["third"], "q3", a)
    assert choose_statement(cluster) == "second"
    cluster.statement = "gone"  # a statement no longer in X_k is replaced by the most central one
    assert choose_statement(cluster) in cluster.statements


def test_five_questions_on_two_topics_give_topic_clusters_with_statement_sources_and_queries(engine_factory):
    from datetime import datetime

    from memsif.records import Message
    from tests.fakes import FakeLLM, KeywordEmbedder

    texts = ["I made a clay bowl in my pottery class.", "My pottery teacher says my bowls are getting better.",
             "I ran my first marathon in the rain today.", "Marathon training means I run every morning now.",
             "The pottery studio fired my clay vase at last.",
             "I jog to the pottery studio as marathon practice."]  # a bridge: single link would chain the topics
    day = datetime(2024, 3, 2)
    messages = [Message(id=f"D1:{i + 1}", namespace="t", speaker="Ana", text=t, time=day, session_id="s1")
                for i, t in enumerate(texts)]
    llm = FakeLLM({"segment_judge": 0.9, "trajectory_judge": 0.9, "answer": "Pottery.", "sufficiency": 0.1})
    embedder = KeywordEmbedder({"pottery": 0, "marathon": 1})  # one topic word per statement
    engine = engine_factory(llm=llm, embedder=embedder, theta_src=0.3, theta_qry=0.3)
    engine.ingest(messages)
    for question in ("What does Ana make in pottery class?", "What did Ana make from clay?",
                     "Where is Ana's pottery studio?", "How does Ana train for the marathon?",
                     "When did Ana run a marathon?"):
        engine.ask(question, namespace="t")
    clusters = engine.clusters("t")
    topical = [c for c in clusters if len(c.statements) > 1]
    assert len(topical) >= 2
    for c in clusters:  # no cluster holds both a pottery-only and a marathon-only statement
        kinds = {("pottery" in s) - ("marathon" in s.lower()) for s in c.statements}
        assert not {1, -1} <= kinds, c.statements
    for fact in engine.active_facts("t"):
        cluster = next(c for c in clusters if c.id == fact.cluster_id)
        assert fact.statement in cluster.statements and fact.subject.startswith("ana")
        assert set(fact.source_message_ids) <= set(fact.supporting_message_ids) and fact.queries
        assert fact.event_time == day, "an ActiveFact carries its source turn's date"
    assert all(c.statement_times == [day] * len(c.statements) for c in clusters)


def test_a_cluster_stored_before_statements_had_dates_loads_them_as_undated():
    from memsif.records import CandidateCluster

    old = CandidateCluster(id="C1", subject="ana", statements=["a", "b"], statement_vectors=[E1, E1],
                           statement_sources=[["D1:1"], ["D1:2"]]).model_dump(mode="json")
    del old["statement_times"]
    assert CandidateCluster(**old).statement_times == [None, None]
