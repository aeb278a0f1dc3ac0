"""Topical Segment construction: the double-threshold rule (§3.2)."""

import itertools

import pytest

from memsif.records import BoundaryRule
from tests import ROOT
from tests.conftest import make_messages
from tests.fakes import FakeLLM, FixedEmbedder, TableEntities

# alpha = 1 and the affine mapping make φ = (cos + 1) / 2, easy to compute by hand.
VECTORS = {"same": [1.0, 0.0], "same again": [1.0, 0.0], "opposite": [-1.0, 0.0], "orthogonal": [0.0, 1.0]}
CFG = dict(alpha_segment=1.0, sem_mapping="affine", trajectory_min_phi=1.0, judge_calibration=False)


def _decisions(engine, ns="t"):
    return engine.decisions(ns, "segment")


def test_merge_and_split_by_rule_never_call_the_judge(engine_factory):
    llm = FakeLLM()  # no answers: any judge call fails the test
    engine = engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), **CFG)
    report = engine.ingest(make_messages(["same", "same again", "opposite"]))
    rules = [d.rule for d in _decisions(engine)]
    assert rules == [BoundaryRule.FIRST, BoundaryRule.MERGE, BoundaryRule.SPLIT]
    phis = [d.score.phi for d in _decisions(engine)[1:]]
    assert phis == pytest.approx([1.0, 0.0])
    assert llm.calls == {}
    assert report.judge_calls_segment == 0
    assert [s.message_ids for s in engine.segments("t")] == [["D1:1", "D1:2"], ["D1:3"]]


@pytest.mark.parametrize(("prob", "segments"), [(0.9, [["D1:1", "D1:2"]]), (0.1, [["D1:1"], ["D1:2"]])])
def test_in_between_scores_call_the_judge(engine_factory, prob, segments):
    llm = FakeLLM({"segment_judge": prob})
    engine = engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), **CFG)
    engine.ingest(make_messages(["same", "orthogonal"]))
    decision = _decisions(engine)[1]
    assert decision.score.phi == pytest.approx(0.5)  # τ_split = 0.325 < 0.5 < τ_merge = 0.6
    assert decision.rule == BoundaryRule.JUDGE
    assert decision.judge_prob == pytest.approx(prob)
    assert decision.prompt_version == "segment_judge/2"
    assert len(llm.calls["segment_judge"]) == 1
    assert llm.calls["segment_judge"][0].input_ids == ("D1:1", "D1:2")
    assert [s.message_ids for s in engine.segments("t")] == segments


def test_thresholds_are_inclusive(engine_factory):
    # "orthogonal" after "same" scores exactly φ = 0.5: at τ_merge it merges, at τ_split it splits.
    engine = engine_factory(llm=FakeLLM(), embedder=FixedEmbedder(VECTORS), tau_merge=0.5, tau_split=0.3,
                            **CFG)
    engine.ingest(make_messages(["same", "orthogonal"]))
    assert _decisions(engine)[1].rule == BoundaryRule.MERGE
    engine2 = engine_factory(llm=FakeLLM(), embedder=FixedEmbedder(VECTORS), tau_merge=0.7, tau_split=0.5,
                             **CFG)
    engine2.ingest(make_messages(["same", "orthogonal"]))
    assert _decisions(engine2)[1].rule == BoundaryRule.SPLIT


def test_judge_failure_is_recorded_not_silent(engine_factory):
    llm = FakeLLM(fail={"segment_judge"})
    engine = engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), **CFG)
    report = engine.ingest(make_messages(["same", "orthogonal"]))
    decision = _decisions(engine)[1]
    assert decision.rule == BoundaryRule.JUDGE_ERROR
    assert "fake failure" in decision.error
    assert report.judge_errors == 1


def test_segment_profile_is_mean_pooled_after_each_append(engine_factory):
    # After "same" + "orthogonal" (judge: continue) the segment mean is [0.5, 0.5];
    # "same again" then has cos = 1/√2 → φ = (0.7071 + 1) / 2 = 0.8536 → merge.
    llm = FakeLLM({"segment_judge": 0.9})
    engine = engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), **CFG)
    engine.ingest(make_messages(["same", "orthogonal", "same again"]))
    assert _decisions(engine)[2].score.phi == pytest.approx((2 ** -0.5 + 1) / 2, abs=1e-4)


def test_entities_enter_phi(engine_factory):
    from tests.fakes import TableEntities

    ents = TableEntities({"same": {"paris", "louvre"}, "orthogonal": {"paris"}})
    llm = FakeLLM({"segment_judge": 0.9})
    engine = engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), entities=ents,
                            alpha_segment=0.5, sem_mapping="affine", trajectory_min_phi=1.0,
                            judge_calibration=False)
    engine.ingest(make_messages(["same", "orthogonal"]))
    score = _decisions(engine)[1].score
    assert score.jaccard == pytest.approx(0.5)
    assert score.phi == pytest.approx(0.5 * 0.5 + 0.5 * 0.5)


def test_judge_is_calibrated_against_the_content_free_prior(engine_factory):
    # The model says P(yes) = 0.2 to "N/A" content and 0.3 to the real pair: the content moved it
    # towards "yes", so the calibrated probability is above 0.5 and the message continues.
    llm = FakeLLM({"segment_judge": lambda p: 0.2 if "N/A" in p.text else 0.3})
    engine = engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), alpha_segment=1.0, sem_mapping="affine",
                            trajectory_min_phi=1.0, judge_calibration=True)
    report = engine.ingest(make_messages(["same", "orthogonal"]))
    decision = _decisions(engine)[1]
    expected = (0.3 / 0.2) / (0.3 / 0.2 + 0.7 / 0.8)
    assert decision.judge_prob == pytest.approx(expected)
    assert decision.judge_prob_raw == pytest.approx(0.3) and decision.judge_prior == pytest.approx(0.2)
    assert decision.continued and report.judge_calls_segment == 1


def test_ablations_without_segments_and_without_trajectories(engine_factory):
    # w/o TS: every message is its own unit and trajectories are built from those raw messages.
    llm = FakeLLM({"trajectory_judge": 0.9})
    engine = engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), use_segments=False, alpha_trajectory=1.0,
                            trajectory_min_phi=0.0, judge_calibration=False, sem_mapping="affine")
    engine.ingest(make_messages(["same", "same again", "opposite"]))
    assert [s.message_ids for s in engine.segments("t")] == [["D1:1"], ["D1:2"], ["D1:3"]]
    assert "segment_judge" not in llm.calls
    assert {d.rule for d in _decisions(engine)[1:]} == {BoundaryRule.NO_SEGMENTS}
    assert sum(len(t.segment_ids) for t in engine.trajectories("t")) == 3
    # w/o ET: no trajectories at all, and no trajectory judge
    llm2 = FakeLLM()
    engine2 = engine_factory(llm=llm2, embedder=FixedEmbedder(VECTORS), use_trajectories=False, **CFG)
    engine2.ingest(make_messages(["same", "same again", "opposite"]))
    assert engine2.trajectories("t") == [] and llm2.calls == {}
    assert all(s.trajectory_id is None for s in engine2.segments("t"))


def test_a_photo_caption_gives_no_key_entities_and_is_a_sentence_of_its_own(engine_factory):
    """LoCoMo image turns carry a machine-written caption: key entities come from what was said, and
    the sentence index keeps the caption whole as its own sentence (no stray "[" on the one before)."""
    from memsif.lexical import split_sentences

    said = "It's a lot to take in, but I'm feeling hopeful and optimistic."
    text = f"{said} [shares a photo: a sign for an adoption agency on a brick wall]"
    assert split_sentences(text) == [said, "[shares a photo: a sign for an adoption agency on a brick wall]"]
    entities = TableEntities({said: {"optimism"}, text: {"sign", "brick wall"}})
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}), entities=entities)
    engine.ingest(make_messages([text]))
    [segment] = engine.segments("t")
    assert segment.entities == ["optimism"], segment.entities
    assert [s.text for s, _ in engine.store.sentences("t")] == split_sentences(text)


@pytest.mark.parametrize("extractor", ["regex", "spacy"])
def test_html_tags_in_a_message_give_no_key_entities(extractor):
    """A tag's name and attributes (``<img src=x onerror=…>``, ``<style>``) are markup, not what the
    message is about: they are no key entities; the text between tags still gives its own."""
    from memsif.entities import RegexEntityExtractor, SpacyEntityExtractor

    if extractor == "spacy":
        try:
            entities = SpacyEntityExtractor()
        except (ImportError, OSError) as exc:
            pytest.skip(f"spaCy's pipeline is not installed: {exc}")
    else:
        entities = RegexEntityExtractor()
    texts = ['I planted San Marzano tomatoes <img src=x onerror="alert(1)"> in the garden.',
             "<b>bold</b> move! <style>body{display:none}</style> <script src=evil.js></script>",
             "The garden at 5 < 7 o'clock and the tomatoes > 3 kilos."]
    found = entities.extract(texts)
    markup = {"img", "src", "onerror", "alert", "style", "script", "evil"}
    assert not markup & set().union(*found), found
    assert {"garden"} <= found[0] and ({"tomatoes", "tomato"} & found[0]) and "garden" in found[2], found


def _at(texts, sessions, hours, speakers=None):
    """Messages with a session each and a time ``hours`` after the first."""
    from datetime import datetime, timedelta

    from memsif.records import Message
    speakers = speakers or ["A"] * len(texts)
    return [Message(id=f"m{i}", namespace="t", speaker=speakers[i], text=t, session_id=sessions[i],
                    time=datetime(2023, 5, 8) + timedelta(hours=hours[i]), index=i) for i, t in enumerate(texts)]


@pytest.mark.parametrize(("sessions", "hours", "gap_setting", "opened"), [
    (["s1", "s2"], [0, 0], 6.0, True),       # another session, same moment: the transcript's boundary
    (["s1", "s1"], [0, 7], 6.0, True),       # one session id over 7 hours (a resumed conversation)
    (["s1", "s1"], [0, 5.9], 6.0, False),    # under the gap: the topic decides (merged here)
    (["", ""], [0, 30], 6.0, True),          # no session ids: the gap alone
    (["", ""], [0, 30], 0.0, False),         # gap rule off: session ids only
    (["s1", ""], [0, 1], 6.0, False),        # one side without a session id is no boundary
])
def test_a_new_session_opens_a_new_segment_by_rule_whatever_phi(engine_factory, sessions, hours, gap_setting, opened):
    llm = FakeLLM()  # a judge call would fail: the rule decides without the model
    engine = engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), session_gap_hours=gap_setting, **CFG)
    engine.ingest(_at(["same", "same again"], sessions, hours))
    decision = _decisions(engine)[1]
    assert decision.rule == (BoundaryRule.SESSION if opened else BoundaryRule.MERGE)
    assert decision.continued is not opened
    assert decision.score.phi == pytest.approx(1.0)  # φ is still recorded for the timeline
    assert decision.gap_hours == pytest.approx(hours[1])
    assert len(engine.segments("t")) == (2 if opened else 1)
    assert llm.calls == {}


def test_the_session_rule_can_be_switched_off(engine_factory):
    engine = engine_factory(llm=FakeLLM(), embedder=FixedEmbedder(VECTORS), split_sessions=False, **CFG)
    engine.ingest(_at(["same", "same again"], ["s1", "s2"], [0, 100]))
    assert _decisions(engine)[1].rule == BoundaryRule.MERGE


def test_no_segment_spans_two_sessions_of_a_locomo_conversation(engine_factory):
    from memsif.io.transcripts import load_transcripts
    from tests.fakes import HashEmbedder
    [conv] = load_transcripts(ROOT / "assets" / "locomo-conv-26.json")
    messages = conv.messages[:80]
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.9}), embedder=HashEmbedder())
    engine.ingest(messages, namespace="t")
    segments = engine.segments("t")
    assert all(len(s.session_ids) == 1 for s in segments)
    starts = {d.message_id for d in _decisions(engine) if d.rule == BoundaryRule.SESSION}
    firsts = [m.id for a, m in itertools.pairwise(messages) if a.session_id != m.session_id]
    assert firsts and starts == set(firsts)


REPLY = {"Where did you get the bowl?": [1.0, 0.0, 0.0], "At the mall.": [0.0, 1.0, 0.0],
         "At the mall, on the way back from the pottery class with my kids.": [0.0, 1.0, 0.0]}


@pytest.mark.parametrize(("reply", "speaker", "read_with"), [
    ("At the mall.", "B", "m0"),              # another speaker's short reply: read with the question
    ("At the mall.", "A", None),              # the same speaker: a message of its own
    ("At the mall, on the way back from the pottery class with my kids.", "B", None),  # 14 words: alone
])
def test_a_short_reply_is_read_with_the_message_it_answers(engine_factory, reply, speaker, read_with):
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.1}), embedder=FixedEmbedder(REPLY), **CFG)
    engine.ingest(_at(["Where did you get the bowl?", reply], ["s1", "s1"], [0, 0], ["A", speaker]))
    decision = _decisions(engine)[1]
    assert decision.read_with == read_with
    if read_with:  # cos((q + r)/|q + r|, q) = 1/√2 → φ = (1 + 0.707)/2 ≥ τ_merge: kept with its question
        assert decision.score.phi == pytest.approx((1 + 2 ** -0.5) / 2)
        assert decision.rule == BoundaryRule.MERGE
    else:  # alone it is orthogonal to the question: φ = 0.5, the judge (0.1 here) splits it off
        assert decision.score.phi == pytest.approx(0.5)
        assert decision.rule == BoundaryRule.JUDGE and not decision.continued


def test_a_short_message_of_a_new_session_is_not_read_with_the_last_session(engine_factory):
    engine = engine_factory(llm=FakeLLM(), embedder=FixedEmbedder(REPLY), **CFG)
    engine.ingest(_at(["Where did you get the bowl?", "At the mall."], ["s1", "s2"], [0, 48], ["A", "B"]))
    decision = _decisions(engine)[1]
    assert decision.rule == BoundaryRule.SESSION and decision.read_with is None
