"""Event Trajectories over the whole memory: pair measures, the fitted scorer, average linkage with its
guard, stable ids, the fallback for another embedder, the decision record, and a relink that keeps a
person's corrections (§3.2; ``interaction.pairs``, ``interaction.clustering``, ``interaction.relink``)."""

from __future__ import annotations

import logging
import math
from collections import Counter
from datetime import datetime, timedelta

import numpy as np
import pytest

from memsif.errors import ConfigError
from memsif.interaction.clustering import PairScorer, average_linkage, max_size, scorer_for, shipped_scorers
from memsif.interaction.pairs import SegmentView, measure_pairs, segment_view
from memsif.interaction.relink import stable_ids
from memsif.records import Message
from tests.facts.test_core_facts import extraction
from tests.fakes import FakeLLM


def _view(sid, vector, stems, entities=(), words=10, sessions=("s1",), day=0, speakers=None, facts=None, title=None):
    start = datetime(2023, 5, 1) + timedelta(days=day)
    return SegmentView(id=sid, vector=np.asarray(vector, dtype=np.float64), stems=Counter(stems),
                       entities=frozenset(entities), words=words, sessions=frozenset(sessions), start=start,
                       end=start + timedelta(hours=1), speakers=speakers or {"Ann": words},
                       title_vector=None if title is None else np.asarray(title, dtype=np.float64),
                       fact_vectors=None if facts is None else np.asarray(facts, dtype=np.float64))


def test_measures_of_a_hand_made_pair():
    """Every measure of two segments, computed by hand; a third segment only sets the document frequencies."""
    a = _view("S1", [1.0, 0.0], ["shelter", "toby", "walk"], {"toby", "shelter"}, words=9, sessions=("s1",),
              day=0, speakers={"Andrew": 9}, facts=[[1.0, 0.0], [0.0, 1.0]], title=[1.0, 0.0])
    b = _view("S2", [1.0, 1.0], ["shelter", "toby", "park"], {"toby"}, words=99, sessions=("s2",), day=10,
              speakers={"Andrew": 60, "Audrey": 80}, facts=[[0.6, 0.8]], title=[0.0, 1.0])
    c = _view("S3", [0.0, 1.0], ["walk", "park", "cake"], {"cake"}, sessions=("s2",), day=11)
    m = measure_pairs([a, b, c])
    idf = {s: math.log(4 / (df + 0.5)) for s, df in {"shelter": 2, "toby": 2, "walk": 2, "park": 2, "cake": 1}.items()}
    inter = idf["shelter"] + idf["toby"]
    union = inter + idf["walk"] + idf["park"]
    expected = {
        "cosine": 1 / math.sqrt(2), "idf_overlap": inter / union, "rare_shared": math.log(3),  # df ≤ 3: all rare
        "entity_jaccard": 0.5, "title_cosine": 0.0, "log_words_min": math.log(10), "log_words_max": math.log(100),
        "log_gap_days": math.log1p(10 - 1 / 24), "speaker_cosine": 60 / math.hypot(60, 80), "fact_cosine": 0.8,
    }
    for name, value in expected.items():
        assert m.matrices[name][0, 1] == pytest.approx(value, abs=1e-5), name
        assert m.matrices[name][1, 0] == pytest.approx(value, abs=1e-5), name
    assert m.matrices["fact_cosine"][0, 2] == 0.0  # S3 has no CoreFact
    assert m.cross[0, 1] and not m.cross[1, 2]  # S2 and S3 share a session
    assert m.shared_terms(0, 1) == ["shelter", "toby"] or m.shared_terms(0, 1) == ["toby", "shelter"]


def test_segment_view_reads_messages():
    said = [("Ann", "We adopted a puppy named Toby"), ("Bob", "Toby is lovely")]
    msgs = [Message(id=f"D1:{k}", namespace="t", speaker=sp, text=text, time=datetime(2023, 5, k),
                    session_id="session_1", index=k) for k, (sp, text) in enumerate(said, start=1)]
    v = segment_view("S1", msgs, [np.array([1.0, 0.0]), np.array([0.0, 1.0])], {"toby"})
    assert v.words == 9 and v.sessions == {"session_1"} and v.start == datetime(2023, 5, 1)
    assert v.stems["tobi"] == 2 and set(v.speakers) == {"Ann", "Bob"}
    np.testing.assert_allclose(v.vector, [0.5, 0.5])
    with pytest.raises(ValueError, match="one vector per message"):
        segment_view("S1", msgs, [np.array([1.0, 0.0])], set())


def test_average_linkage_joins_by_the_mean_not_a_chain():
    """A–B strong, B–C strong, A–C weak: single link would chain all three; the average does not."""
    s = np.array([[0, 0.9, 0.1], [0.9, 0, 0.9], [0.1, 0.9, 0]])
    groups = average_linkage(s, threshold=0.6, cap=3)
    assert [0, 1, 2] not in groups and len(groups) == 2
    assert average_linkage(s, threshold=0.05, cap=3) == [[0, 1, 2]]


def test_guard_keeps_every_trajectory_under_its_cap():
    rng = np.random.default_rng(0)
    s = 0.9 + 0.05 * rng.random((40, 40))
    s = (s + s.T) / 2
    cap = max_size(40, 0.25)
    groups = average_linkage(s, threshold=0.5, cap=cap)
    assert cap == 10 and max(len(g) for g in groups) <= cap
    assert sorted(i for g in groups for i in g) == list(range(40))  # every segment in exactly one group
    alone = np.zeros(40, dtype=bool)
    alone[[3, 7]] = True
    groups = average_linkage(s, threshold=0.5, cap=cap, alone=alone)
    assert [3] in groups and [7] in groups


def test_stable_ids_follow_the_largest_overlap():
    earlier = {"E1": ["S1", "S4"], "E2": ["S2"], "E3": ["S3"], "E5": ["S5"]}
    groups = [["S1", "S4", "S6"], ["S2", "S3"], ["S5"], ["S7"]]
    assert stable_ids(groups, earlier) == ["E1", "E2", "E5", "E6"]  # S7 is new: after the largest id ever used
    assert stable_ids([["S1"], ["S4"]], {"E1": ["S1", "S4"]}) == ["E1", "E2"]


def test_the_shipped_scorer_and_the_fallback_for_another_embedder():
    own, note = scorer_for("all-MiniLM-L6-v2")
    assert note is None and own.embedder == "all-MiniLM-L6-v2" and "cosine" in own.features
    other, note = scorer_for("hash-embedder")
    assert other.embedder is None and "cosine" not in other.features
    assert "hash-embedder" in note and other.version in note
    with pytest.raises(ConfigError, match="No Event Trajectory pair scorer"):
        scorer_for("hash-embedder", tuple(s for s in shipped_scorers() if s.embedder))
    for s in shipped_scorers():
        assert 0 < s.threshold < 1 and s.max_share <= 0.25 and "labelled thread" in s.fitted


def test_scorer_is_the_logistic_of_its_standardised_measures():
    s = PairScorer(version="t/1", embedder=None, features=("a", "b"), mean=(1.0, 0.0), scale=(2.0, 1.0),
                   weights=(1.0, -1.0), intercept=0.5, threshold=0.5, max_share=0.25, min_content=0, fitted="test")
    p = s.probabilities(np.array([[3.0, 1.0]]))[0]
    assert p == pytest.approx(1 / (1 + math.exp(-(0.5 + 1.0 - 1.0))))
    assert s.contributions(np.array([3.0, 1.0])) == {"a": 1.0, "b": -1.0}
    with pytest.raises(ConfigError, match="differ in length"):
        PairScorer(version="t/1", embedder=None, features=("a",), mean=(), scale=(), weights=(), intercept=0,
                   threshold=0.5, max_share=0.25, min_content=0, fitted="test")


# ---------------------------------------------------------------------------------------------- the engine
STORIES = {
    "dog": ["I adopted a rescue puppy named Toby from the shelter", "Toby the puppy chewed my shoes again",
            "The shelter vet says Toby the puppy is healthy"],
    "bake": ["I baked a sourdough loaf with my new starter", "The sourdough starter bubbles in the jar now",
             "My sourdough loaf came out with a great crust"],
    "run": ["I signed up for the city marathon in October", "Marathon training: twenty miles this morning",
            "The marathon route passes the old harbour"],
}


def _sessions(first: int, count: int, namespace: str = "t") -> list[Message]:
    """``count`` sessions from ``first``: each says one sentence of each story (a segment per story, split by rule)."""
    out = []
    for s in range(first, first + count):
        when = datetime(2023, 1, 1) + timedelta(days=7 * s)
        for k, story in enumerate(STORIES):
            text = STORIES[story][(s - 1) % 3]
            out.append(Message(id=f"D{s}:{k + 1}", namespace=namespace, speaker="Ann" if k % 2 else "Bo", text=text,
                               time=when + timedelta(minutes=k), session_id=f"session_{s}", index=len(out)))
    return out


def _story_of(engine, ns: str) -> dict[str, str]:
    by_msg = {m.id: m.text for m in engine.messages(ns)}
    out = {}
    for seg in engine.segments(ns):
        texts = [by_msg[i] for i in seg.message_ids]
        out[seg.id] = next(k for k, v in STORIES.items() if texts[0] in v)
    return out


@pytest.fixture
def lexical_scorer(monkeypatch):
    """The fakes' embedder has no fitted scorer: a plain lexical one decides (and says it is a fallback)."""
    scorer = PairScorer(version="test/lexical", embedder=None, features=("idf_overlap",), mean=(0.0,), scale=(1.0,),
                        weights=(20.0,), intercept=-1.0, threshold=0.5, max_share=0.5, min_content=0,
                        fitted="test: idf overlap alone")
    monkeypatch.setattr("memsif.interaction.relink.scorer_for",
                        lambda name: (scorer, f"no scorer for {name}: {scorer.version} decides"))
    return scorer


def test_a_build_links_sessions_by_story_and_records_why(engine_factory, lexical_scorer, caplog):
    engine = engine_factory(tau_split=0.98, tau_merge=0.99)
    with caplog.at_level(logging.WARNING):
        report = engine.ingest(_sessions(1, 3))
    assert "no scorer for hash-embedder" in caplog.text  # the fallback is announced: in the log and the report
    assert report.trajectory_note == "no scorer for hash-embedder: test/lexical decides"
    story = _story_of(engine, "t")
    trajectories = engine.trajectories("t")
    assert report.trajectories == len(trajectories) == 3
    for t in trajectories:
        assert len({story[s] for s in t.segment_ids}) == 1 and len(t.segment_ids) == 3
    decisions = {d.segment_id: d for d in engine.decisions("t", "trajectory")}
    assert set(decisions) == set(story)  # one recorded decision per segment, none provisional
    d = decisions[trajectories[0].segment_ids[1]]
    assert d.link_model == "test/lexical" and d.threshold == 0.5 and not d.created
    assert {c.segment_id for c in d.candidates} == set(trajectories[0].segment_ids) - {d.segment_id}
    assert all(c.compatible and c.link_prob is not None and "idf_overlap" in c.measures for c in d.candidates)
    assert "average P(same thread)" in d.rule and "≥ 0.5" in d.rule
    sentences = {s.segment_id: s.trajectory_id for s, _ in engine.store.sentences("t")}
    assert all(sentences[s.id] == s.trajectory_id for s in engine.segments("t"))


def test_an_append_keeps_the_trajectory_ids(engine_factory, lexical_scorer):
    engine = engine_factory(tau_split=0.98, tau_merge=0.99)
    engine.ingest(_sessions(1, 2))
    before = {t.id: set(t.segment_ids) for t in engine.trajectories("t")}
    logged = len(engine.decisions("t", "trajectory"))
    engine.ingest(_sessions(3, 2))
    after = {t.id: set(t.segment_ids) for t in engine.trajectories("t")}
    for tid, members in before.items():
        assert members <= after[tid]  # each earlier trajectory kept its id and grew
    assert len(after) == 3
    new = engine.decisions("t", "trajectory")[logged:]
    assert new and all(d.segment_id not in {s for m in before.values() for s in m} or not d.created for d in new)
    # the store holds what the state holds: every segment listed by exactly the trajectory it names
    listed = {sid: t.id for t in engine.trajectories("t") for sid in t.segment_ids}
    assert listed == {s.id: s.trajectory_id for s in engine.segments("t")}
    # a relink with nothing new changes and records nothing
    result = engine.relink("t")
    assert not result.moved and not result.rewritten and not result.decisions and result.linked == 3


def test_relink_keeps_a_persons_correction(engine_factory, lexical_scorer):
    puppy = {"subject": "Bo", "type": "Event", "statement": "Bo adopted a rescue puppy named Toby.", "sources": [1]}
    llm = FakeLLM({"core_extract": extraction({"adopted a rescue puppy": [puppy]}), "core_operation": "B"})
    engine = engine_factory(llm=llm, core_facts=True, sem_mapping="affine", tau_split=0.98, tau_merge=0.99)
    engine.ingest(_sessions(1, 3))
    fact = next(f for f in engine.facts("t") if "puppy" in f.statement)
    op = engine.edit_fact("t", fact.id, statement="Bo adopted Toby, a rescue puppy, in January.")
    deleted = [f for f in engine.facts("t") if f.id != op.fact_ids[1]]
    for f in deleted:
        engine.delete_fact("t", f.id)
    engine.ingest(_sessions(4, 1))
    engine.relink("t")
    current = {f.id: f for f in engine.facts("t")}
    assert current[op.fact_ids[1]].statement == "Bo adopted Toby, a rescue puppy, in January."
    assert current[op.fact_ids[1]].corrected and fact.id not in current
    assert all(f.id not in current for f in deleted)  # what the person deleted stays deleted
    trajectory_of = {s.id: s.trajectory_id for s in engine.segments("t")}
    kept = current[op.fact_ids[1]]
    assert kept.trajectory_ids == list(dict.fromkeys(trajectory_of[s] for s in kept.segment_ids))


def test_the_online_path_stays_selectable(engine_factory):
    engine = engine_factory(trajectory_link="rule", tau_split=0.98, tau_merge=0.99)
    engine.ingest(_sessions(1, 2))
    decisions = engine.decisions("t", "trajectory")
    assert len(decisions) == len(engine.segments("t"))
    assert all(d.link_model and d.link_model.startswith("trajectory_link/rule") for d in decisions)
