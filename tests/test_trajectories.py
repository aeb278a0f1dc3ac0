"""Event Trajectory aggregation: top-K by φ, judge, highest compatible wins (§3.2)."""

import numpy as np
import pytest

from memsif.config import MemSIFConfig
from memsif.interaction.state import InteractionState
from memsif.interaction.trajectories import TrajectoryBuilder, top_k_candidates
from memsif.matching import SemanticMapping, phi
from tests.conftest import make_messages
from tests.fakes import FakeLLM


def _state_with_trajectories(vectors):
    """One single-message segment + trajectory per vector, then a new segment [1, 0]."""
    state = InteractionState("t", 2)
    msgs = make_messages([f"m{i}" for i in range(len(vectors) + 1)])
    for msg, vec in zip(msgs, [*vectors, [1.0, 0.0]], strict=True):
        state.add_message(msg, np.array(vec), frozenset())
        seg = state.open_segment(msg)
        if msg is not msgs[-1]:
            state.open_trajectory(seg)
    return state, state.segments[-1]


MAPPING = SemanticMapping("affine")


def test_top_k_orders_by_phi():
    state, seg = _state_with_trajectories([[0.0, 1.0], [1.0, 0.1], [-1.0, 0.0], [1.0, 0.5]])
    ranked = top_k_candidates(state, seg, k=3, alpha=1.0, mapping=MAPPING)
    assert [tid for tid, _ in ranked] == ["E2", "E4", "E1"]
    phis = [s.phi for _, s in ranked]
    assert phis == sorted(phis, reverse=True)
    assert len(top_k_candidates(state, seg, k=10, alpha=1.0, mapping=MAPPING)) == 4


@pytest.mark.parametrize("mapping", [MAPPING, SemanticMapping("calibrated", 0.05, 0.5)])
def test_top_k_ranks_as_phi_scored_one_trajectory_at_a_time(mapping):
    """The scoring of all trajectories at once keeps Eq. 1's order and terms, entities included."""
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
    brute = sorted(((t.record.id, phi(seg.profile.mean, seg.profile.entities, t.profile.mean, t.profile.entities,
                                      0.6, mapping)) for t in state.trajectories),
                   key=lambda item: (-item[1].phi, int(item[0][1:])))
    assert top_k_candidates(state, seg, k=5, alpha=0.6, mapping=mapping) == brute[:5]
    assert top_k_candidates(state, seg, k=0, alpha=0.6, mapping=mapping) == []

def test_highest_phi_compatible_trajectory_wins():
    state, seg = _state_with_trajectories([[0.0, 1.0], [1.0, 0.1], [1.0, 0.5]])
    # E2 has the highest φ but the judge rejects it; E3 is the best compatible one.
    verdicts = iter([0.2, 0.8, 0.9])
    llm = FakeLLM({"trajectory_judge": lambda p: next(verdicts)})
    cfg = MemSIFConfig(alpha_trajectory=1.0, trajectory_min_phi=0.0, judge_calibration=False)
    decision = TrajectoryBuilder(cfg, MAPPING, llm).assign(state, seg)
    assert [c.trajectory_id for c in decision.candidates] == ["E2", "E3", "E1"]
    assert [c.compatible for c in decision.candidates] == [False, True, True]
    assert decision.trajectory_id == "E3" and not decision.created
    assert state.trajectory("E3").record.segment_ids == ["S3", "S4"]
    assert len(llm.calls["trajectory_judge"]) == 3


def test_no_compatible_trajectory_opens_a_new_one():
    state, seg = _state_with_trajectories([[1.0, 0.0]])
    llm = FakeLLM({"trajectory_judge": 0.1})
    decision = TrajectoryBuilder(MemSIFConfig(judge_calibration=False), MAPPING, llm).assign(state, seg)
    assert decision.created and decision.trajectory_id == "E2"
    assert decision.candidates[0].judge_prob == pytest.approx(0.1)


def test_low_phi_candidates_are_rejected_without_the_judge():
    state, seg = _state_with_trajectories([[-1.0, 0.0]])  # φ = 0 ≤ trajectory_min_phi
    llm = FakeLLM()
    decision = TrajectoryBuilder(MemSIFConfig(alpha_trajectory=1.0), MAPPING, llm).assign(state, seg)
    assert decision.created and llm.calls == {}
    assert decision.candidates[0].judge_prob is None and not decision.candidates[0].compatible


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
