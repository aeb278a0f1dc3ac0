"""Event Trajectory aggregation: Top-K earlier segments by φ, the link model, the likeliest thread wins (§3.2)."""

import math
from dataclasses import replace
from datetime import datetime, timedelta
from types import SimpleNamespace

import numpy as np
import pytest

from memsif.config import MemSIFConfig
from memsif.interaction import link
from memsif.interaction.link import LinkModel
from memsif.interaction.state import InteractionState
from memsif.interaction.trajectories import TrajectoryBuilder, top_k_segments
from memsif.llm.profiles import profile_of
from memsif.matching import SemanticMapping, phi
from tests.conftest import make_messages
from tests.fakes import FakeLLM


def _state_with_trajectories(vectors, texts=None, days=None):
    """One single-message segment + trajectory per vector, then a new segment [1, 0] (the last text)."""
    state = InteractionState("t", 2)
    texts = texts or [f"m{i}" for i in range(len(vectors) + 1)]
    msgs = make_messages(texts)
    if days is not None:
        start = datetime(2023, 5, 1)
        msgs = [m.model_copy(update={"time": start + timedelta(days=d)}) for m, d in zip(msgs, days, strict=True)]
    for msg, vec in zip(msgs, [*vectors, [1.0, 0.0]], strict=True):
        state.add_message(msg, np.array(vec), frozenset())
        seg = state.open_segment(msg)
        if msg is not msgs[-1]:
            state.open_trajectory(seg)
    return state, state.segments[-1]


MAPPING = SemanticMapping("affine")
#: A link model that follows the judge alone: P(same thread) = σ(10·(P(yes) − 0.5)).
BY_JUDGE = LinkModel(name="test/judge", features=("p_yes",), weights=(10.0,), intercept=-5.0, threshold=0.5,
                     fitted="test")


def test_top_k_orders_by_phi():
    state, seg = _state_with_trajectories([[0.0, 1.0], [1.0, 0.1], [-1.0, 0.0], [1.0, 0.5]])
    ranked = top_k_segments(state, seg, k=3, alpha=1.0, mapping=MAPPING)
    assert [s.record.id for s, _ in ranked] == ["S2", "S4", "S1"]
    phis = [s.phi for _, s in ranked]
    assert phis == sorted(phis, reverse=True)
    assert len(top_k_segments(state, seg, k=10, alpha=1.0, mapping=MAPPING)) == 4


@pytest.mark.parametrize("mapping", [MAPPING, SemanticMapping("calibrated", 0.05, 0.5)])
def test_top_k_ranks_as_phi_scored_one_segment_at_a_time(mapping):
    """The scoring of all earlier segments at once keeps Eq. 1's order and terms, entities included."""
    rng = np.random.default_rng(3)
    vocab = [f"e{i}" for i in range(12)]
    vectors = rng.normal(size=(30, 8))
    state = InteractionState("t", 8)
    msgs = make_messages([f"m{i}" for i in range(31)])
    for i, msg in enumerate(msgs):
        ents = frozenset(rng.choice(vocab, size=int(rng.integers(0, 5)), replace=False))
        state.add_message(msg, rng.normal(size=8) if i == 30 else vectors[i], ents)
        seg = state.open_segment(msg)
        if i < 30:
            state.open_trajectory(seg)
    seg = state.segments[-1]
    brute = sorted(((s.record.id, phi(seg.profile.mean, seg.profile.entities, s.profile.mean, s.profile.entities,
                                      0.6, mapping)) for s in state.segments[:-1]),
                   key=lambda item: (-item[1].phi, int(item[0][1:])))
    assert [(s.record.id, score) for s, score in top_k_segments(state, seg, k=5, alpha=0.6, mapping=mapping)] \
        == brute[:5]
    assert top_k_segments(state, seg, k=0, alpha=0.6, mapping=mapping) == []


def test_a_join_records_its_candidates_measures_and_rule():
    texts = ["My pottery class starts today.", "The car needs new tyres.", "We baked bread.",
             "My pottery class made a bowl today."]
    state, seg = _state_with_trajectories([[0.0, 1.0], [1.0, 0.1], [1.0, 0.5]], texts, days=[0, 1, 2, 9])
    # S2 has the highest φ but the judge says no; S1 (pottery) is the likeliest thread
    llm = FakeLLM({"trajectory_judge": lambda p: 0.9 if "pottery" in p.text.split("B (later)")[0] else 0.2})
    cfg = MemSIFConfig(alpha_trajectory=1.0, trajectory_min_phi=0.0, judge_calibration="off")
    decision = TrajectoryBuilder(cfg, MAPPING, llm, BY_JUDGE).assign(state, seg)
    assert [c.segment_id for c in decision.candidates] == ["S2", "S3", "S1"]
    assert [c.compatible for c in decision.candidates] == [False, False, True]
    assert decision.trajectory_id == "E1" and not decision.created
    assert state.trajectory("E1").record.segment_ids == ["S1", "S4"]
    joined = decision.candidates[2]
    assert joined.judge_prob == pytest.approx(0.9) and joined.link_prob == pytest.approx(0.982, abs=1e-3)
    assert joined.gap_days == pytest.approx(9.0) and joined.rare > decision.candidates[0].rare
    assert decision.rule == "joined E1 via S1: test/judge: P(same thread) 0.98 ≥ 0.5"
    assert decision.link_model == "test/judge" and decision.prompt_version == "trajectory_judge/4"
    # the judge saw each side's sentences, not a sign-off
    assert "pottery class made a bowl" in llm.calls["trajectory_judge"][0].text


def test_no_likely_thread_opens_a_new_trajectory_and_says_why():
    state, seg = _state_with_trajectories([[1.0, 0.0]], ["We baked bread together.", "The car needs new tyres."])
    llm = FakeLLM({"trajectory_judge": 0.1})
    decision = TrajectoryBuilder(MemSIFConfig(judge_calibration="off"), MAPPING, llm, BY_JUDGE).assign(state, seg)
    assert decision.created and decision.trajectory_id == "E2"
    assert decision.candidates[0].judge_prob == pytest.approx(0.1) and not decision.candidates[0].compatible
    assert decision.rule.startswith("new trajectory: the likeliest, E1 via S1, test/judge: P(same thread) 0.02 < 0.5")


def test_low_phi_candidates_are_not_judged():
    state, seg = _state_with_trajectories([[-1.0, 0.0]])  # φ = 0 ≤ trajectory_min_phi
    llm = FakeLLM()
    decision = TrajectoryBuilder(MemSIFConfig(alpha_trajectory=1.0), MAPPING, llm, BY_JUDGE).assign(state, seg)
    assert decision.created and llm.calls == {}
    assert decision.candidates[0].judge_prob is None and decision.candidates[0].link_prob is None
    assert decision.rule.startswith("new trajectory: no candidate scored (none above the judge's φ floor 0.6)")


def test_a_model_without_a_measured_judge_links_by_rule_without_calling_it():
    texts = ["My pottery class starts today.", "My pottery class made a bowl today."]
    state, seg = _state_with_trajectories([[1.0, 0.0]], texts, days=[0, 3])
    llm = FakeLLM()  # any judge call would fail the test
    builder = TrajectoryBuilder(MemSIFConfig(trajectory_link="rule"), MAPPING, llm)
    decision = builder.assign(state, seg)
    assert builder.link is link.RULE and llm.calls == {} and decision.model is None
    c = decision.candidates[0]
    assert c.judge_prob is None and c.link_prob == pytest.approx(link.RULE.probability(
        link.LinkMeasures(phi=c.score.phi, rare=c.rare, jaccard=c.score.jaccard, gap_days=c.gap_days)), abs=1e-4)
    assert decision.link_model == link.RULE.name and link.RULE.name in decision.rule
    qwen = "Qwen2.5-Coder-1.5B-Instruct (packaged)"
    assert link.model_for("auto", SimpleNamespace(name=qwen), profile_of(qwen)) is link.RULE
    assert link.model_for("model", llm) is link.JUDGE_ALONE and link.model_for("model", None) is link.RULE
    assert link.model_for("model", llm, judge_threshold=0.7).threshold == 0.7


def test_the_default_leaves_each_segment_to_the_relink():
    """``auto`` is the whole-memory construction: a closing segment opens its own trajectory and records
    nothing (the relink after the structure step decides and records); no model is asked."""
    state, seg = _state_with_trajectories([[1.0, 0.0]], ["My pottery class starts today.", "Pottery again."])
    llm = FakeLLM()
    builder = TrajectoryBuilder(MemSIFConfig(trajectory_link="auto"), MAPPING, llm)
    assert builder.assign(state, seg) is None and llm.calls == {}
    assert seg.record.trajectory_id == "E2" and state.trajectory("E2").record.segment_ids == [seg.record.id]


def test_the_papers_rule_joins_the_likeliest_candidate_the_judge_accepts():
    state, seg = _state_with_trajectories([[0.0, 1.0], [1.0, 0.1], [1.0, 0.5]])
    verdicts = iter([0.2, 0.8, 0.9])  # S2 (highest φ) refused; S3 and S1 accepted, S1 likelier
    llm = FakeLLM({"trajectory_judge": lambda p: next(verdicts)})
    cfg = MemSIFConfig(alpha_trajectory=1.0, trajectory_min_phi=0.0, judge_calibration="off", trajectory_link="model")
    decision = TrajectoryBuilder(cfg, MAPPING, llm).assign(state, seg)
    assert [c.link_prob for c in decision.candidates] == pytest.approx([0.2, 0.8, 0.9], abs=1e-4)
    assert decision.trajectory_id == "E1" and decision.link_model == link.JUDGE_ALONE.name
    assert len(llm.calls["trajectory_judge"]) == 3


def test_the_link_models_give_their_probability_on_fixed_measures():
    """The shipped weights, checked on fixed inputs: φ and shared rare words raise P(same thread), a
    longer gap does not; the paper's rule is the judge's P(yes) itself."""
    m = link.LinkMeasures(phi=0.7, rare=0.1, jaccard=0.1, gap_days=6.0, p_yes=0.6)
    z = -3.0194 + 1.5606 * 0.7 + 0.9638 * 0.1 + 0.6833 * 0.1 - 0.0906 * math.log(7.0)
    assert link.RULE.probability(m) == pytest.approx(1 / (1 + math.exp(-z)), abs=1e-9)
    assert link.RULE.probability(m) == pytest.approx(0.126, abs=1e-3)
    assert link.RULE.probability(replace(m, phi=0.9)) > link.RULE.probability(m)
    assert link.RULE.probability(replace(m, rare=0.3)) > link.RULE.probability(m)
    assert link.RULE.probability(replace(m, gap_days=60.0)) <= link.RULE.probability(m)
    assert link.JUDGE_ALONE.probability(m) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="p_yes"):
        link.JUDGE_ALONE.probability(replace(m, p_yes=None))


def test_rare_words_count_more_than_common_ones():
    vocab = link.Vocabulary()
    texts = {"S1": ["pottery class today"], "S2": ["class today tyres"], "S3": ["today pottery"],
             "S4": ["today class"]}
    stems = {sid: vocab.read(sid, 1, lambda t=t: t) for sid, t in texts.items()}
    pottery, klass, today = (next(iter(link.content_stems([w]))) for w in ("pottery", "class", "today"))
    assert vocab.idf(pottery) > vocab.idf(klass) > vocab.idf(today)
    assert link.rare_overlap(stems["S1"], stems["S3"], vocab.idf) > link.rare_overlap(stems["S2"], stems["S4"],
                                                                                        vocab.idf)
    vocab.read("S4", 2, lambda: ["today", "pottery wheel"])  # a segment that grew is counted again
    assert vocab.idf(pottery) == pytest.approx(math.log(5 / 3.5))  # now in three of four segments


def test_trajectory_profile_follows_segment_growth():
    state, _seg = _state_with_trajectories([[0.0, 1.0]])
    traj = state.trajectory("E1")
    extra = make_messages(["x"])[0].model_copy(update={"id": "D2:1"})
    state.add_message(extra, np.array([1.0, 0.0]), frozenset({"k"}))
    state.append_to_segment(state.segment("S1"), extra)
    assert traj.profile.count == 2 and np.allclose(traj.profile.mean, [0.5, 0.5])
    assert traj.record.entities == ["k"]


def test_sentences_hold_their_segments_trajectory_across_ingests_and_upgrade_writes_it(engine_factory):
    """The trajectory path filters sentences by their Event Trajectory id: it must match the segment's,
    also for a segment continued by a later ingest, and ``upgrade`` writes it into older stores."""
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.9, "trajectory_judge": 0.2}))
    texts = ["We adopted a dog.", "The dog is called Luna.", "Luna loves the park.", "Luna chewed a shoe.",
             "My car broke down.", "The garage fixed the car."]
    messages = make_messages(texts)
    engine.ingest(messages[:3])
    engine.ingest(messages[3:])

    def mismatched() -> list[str]:
        trajectory_of = {s.id: s.trajectory_id for s in engine.segments("t")}
        return [sen.id for sen, _ in engine.store.sentences("t")
                if sen.trajectory_id is None or sen.trajectory_id != trajectory_of[sen.segment_id]]

    assert engine.store.count("sentence", "t") >= len(texts) and mismatched() == []
    segments = {s.id for s in engine.segments("t")}
    engine.store.set_sentence_trajectories("t", {sid: None for sid in segments})  # as a store made before
    assert len(mismatched()) == engine.store.count("sentence", "t")
    assert engine.upgrade("t", ["sentence_trajectories"])["sentence_trajectories"] == len(segments)
    assert mismatched() == [] and engine.upgrade("t", ["sentence_trajectories"])["sentence_trajectories"] == 0


def test_a_trajectory_is_named_by_its_most_specific_terms():
    from memsif.interaction.trajectories import trajectory_terms
    from memsif.records import EventTrajectory, TopicalSegment

    def seg(i, entities):
        return TopicalSegment(id=f"S{i}", namespace="t", index=i, message_ids=[f"m{i}"], entities=entities)
    segments = [seg(1, ["adoption", "agency", "mel", "congrats"]), seg(2, ["adoption", "agencies", "interview", "oof"]),
                seg(3, ["pottery", "class", "melanie"]), seg(4, ["class", "sooo", "awesome"]),
                seg(5, ["class", "yoga"])]
    trajectories = [EventTrajectory(id="E1", namespace="t", index=0, segment_ids=["S1", "S2"]),
                    EventTrajectory(id="E2", namespace="t", index=1, segment_ids=["S3"]),
                    EventTrajectory(id="E3", namespace="t", index=2, segment_ids=["S4"])]
    names = trajectory_terms(trajectories, segments, ["Caroline", "Melanie"])
    # shared by both members first, "agencies" folded into "agency"; no name, nickname, praise or interjection
    assert names["E1"] == ["adoption", "agency", "interview"]
    assert names["E2"] == ["pottery", "class"]  # rarer first; the speaker's name left out
    assert names["E3"] == ["class"]
