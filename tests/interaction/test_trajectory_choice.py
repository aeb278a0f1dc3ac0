"""Event Trajectories by gate and comparative choice (§3.2): the gate's rule, the choice asked in two
orders and averaged, the margin over "none of these", every probability recorded."""

from datetime import datetime, timedelta

import numpy as np
import pytest

from memsif.config import MemSIFConfig
from memsif.interaction import joinable
from memsif.interaction.state import InteractionState
from memsif.interaction.trajectories import TrajectoryBuilder
from memsif.matching import SemanticMapping
from memsif.prompts import trajectory_choice
from memsif.records import Message, SegmentTitle
from tests.fakes import FakeLLM

DAY = datetime(2023, 5, 1)


def _side(persons, stems, titled=(), day=0):
    when = DAY + timedelta(days=day)
    return joinable.Side(frozenset(persons), frozenset(stems), frozenset(titled), when, when)


def _idf(stem):
    return {"adopt": 3.0, "agenc": 3.0, "potteri": 3.0}.get(stem, 0.1)


RULE = joinable.GateRule(rare_share=0.1, max_gap_days=30)


def test_a_candidate_needs_a_person_and_a_rare_or_title_word_in_common_within_the_window():
    new = _side({"caroline"}, {"adopt", "today"}, {"interview"}, day=20)
    assert joinable.check(new, _side({"caroline"}, {"adopt"}), _idf, 40, RULE).passed
    no_person = joinable.check(new, _side({"melanie"}, {"adopt"}), _idf, 40, RULE)
    assert not no_person.passed and no_person.reason == "no person in common"
    common_only = joinable.check(new, _side({"caroline"}, {"today"}), _idf, 40, RULE)  # a word every segment holds
    assert not common_only.passed and "no rare word" in common_only.reason
    by_title = joinable.check(new, _side({"caroline"}, {"today"}, {"interview"}), _idf, 40, RULE)
    assert by_title.passed and by_title.terms == ("interview",)
    too_old = joinable.check(_side({"caroline"}, {"adopt"}, day=100), _side({"caroline"}, {"adopt"}), _idf, 40, RULE)
    assert not too_old.passed and "100 days apart" in too_old.reason
    assert joinable.check(_side({"caroline"}, {"adopt"}, day=100), _side({"caroline"}, {"adopt"}), _idf, 40,
                      joinable.GateRule()).passed  # no window


def test_a_trajectory_is_gated_as_the_union_of_its_segments():
    side = joinable.Side.union([_side({"caroline"}, {"adopt"}, day=0), _side({"melanie"}, {"potteri"}, day=9)])
    assert side.persons == {"caroline", "melanie"} and side.stems == {"adopt", "potteri"}
    assert side.start == DAY and side.end == DAY + timedelta(days=9)


def _state(titles):
    """One single-message segment per title (all in their own trajectory but the last), a day apart."""
    state = InteractionState("t", 2)
    for k, lines in enumerate(titles):
        who = lines[0].split(":")[0]
        msg = Message(id=f"D{k + 1}:1", namespace="t", speaker=who, text=lines[0].split(": ", 1)[1] + " today",
                      time=DAY + timedelta(days=k), session_id=f"session_{k + 1}", index=k)
        state.add_message(msg, np.array([1.0, float(k)]), frozenset())
        seg = state.open_segment(msg)
        seg.record.title = SegmentTitle(lines=lines, source="model", input_ids=[msg.id], message_count=1)
        if k < len(titles) - 1:
            state.open_trajectory(seg)
    return state, state.segments[-1]


def _builder(llm, margin=0.3):
    cfg = MemSIFConfig(data_dir="unused", trajectory_link="choice", trajectory_choice_margin=margin)
    return TrajectoryBuilder(cfg, SemanticMapping("affine"), llm)


def _by_letter_prior(thread_words, prior=("A",)):
    """A fake choice that likes the option naming ``thread_words`` and, by a letter prior, letter A."""
    def answer(prompt):
        options = prompt.text.split("Earlier threads:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        probs = {}
        for line in options:
            letter, text = line.split(". ", 1)
            probs[letter] = (0.5 if thread_words in text else 0.1) + (0.3 if letter in prior else 0.0)
        total = sum(probs.values())  # as every back-end gives them: shares of the labels' mass
        return {letter: p / total for letter, p in probs.items()}
    return answer


def test_the_choice_is_asked_in_two_orders_averaged_and_joins_past_the_margin():
    state, seg = _state([["Caroline: adoption agencies"], ["Melanie: pottery class"],
                         ["Caroline: adoption agency interview"]])
    llm = FakeLLM({"trajectory_choice": _by_letter_prior("adoption")})
    decision = _builder(llm).assign(state, seg)
    prompts = llm.calls["trajectory_choice"]
    assert len(prompts) == 2 and prompts[0].version == trajectory_choice.VERSION
    assert "A. Caroline: adoption agencies" in prompts[0].text and "B. none of these" in prompts[0].text
    assert "A. none of these" in prompts[1].text  # the second order puts "none" first
    [cand] = decision.candidates  # Melanie's pottery shares no person: gated out
    assert decision.gated_out == 1 and cand.persons == ["caroline"] and "adopt" in cand.terms
    forward = 0.8 / (0.8 + 0.1)          # the thread holds letter A
    backward = 0.5 / (0.4 + 0.5)         # "none" holds letter A
    assert cand.choice_probs == pytest.approx([forward, backward], abs=1e-4)
    mean = (forward + backward) / 2
    assert cand.choice_prob == pytest.approx(mean, abs=1e-4)
    assert decision.none_prob == pytest.approx(1 - mean, abs=1e-4)
    assert decision.margin == pytest.approx(cand.choice_prob - decision.none_prob, abs=1e-4)
    assert not decision.created and decision.trajectory_id == "E1" and cand.compatible
    assert decision.link_model == "trajectory_link/choice-1" and decision.rule.startswith("joined E1")
    assert "margin 0.3" in decision.rule and "two orders" in decision.rule
    assert set(prompts[0].input_ids) == {"D3:1", "D1:1"}


def test_below_the_margin_or_with_nothing_gated_a_new_trajectory_opens():
    state, seg = _state([["Caroline: adoption agencies"], ["Caroline: adoption agency interview"]])
    llm = FakeLLM({"trajectory_choice": {"A": 0.5, "B": 0.5}})  # no preference either way
    decision = _builder(llm, margin=0.2).assign(state, seg)
    assert decision.created and decision.margin == pytest.approx(0.0) and not decision.candidates[0].compatible
    assert decision.rule.startswith("new trajectory") and "< margin 0.2" in decision.rule
    state, seg = _state([["Melanie: pottery class"], ["Caroline: adoption agency interview"]])
    llm = FakeLLM()  # any call fails the test
    decision = _builder(llm).assign(state, seg)
    assert decision.created and not decision.candidates and "passed the gate" in decision.rule
    assert not llm.calls


def test_a_failing_choice_joins_nothing_and_records_the_error():
    state, seg = _state([["Caroline: adoption agencies"], ["Caroline: adoption agency interview"]])
    decision = _builder(FakeLLM(fail={"trajectory_choice"})).assign(state, seg)
    assert decision.created and decision.error and "fake failure" in decision.error


def test_a_title_is_shown_escaped_in_the_timeline_graph_and_picker():
    from memsif.inspector.trajectories import trajectory_choices
    from memsif.viz import phi_timeline, trajectory_graph

    state, seg = _state([["Caroline: <img src=x onerror=alert(1)> adoption"],
                         ["Caroline: <b>adoption</b> agency"]])
    state.assign(seg, state.trajectory("E1"))
    segments = [s.record for s in state.segments]
    messages = list(state.messages.values())
    timeline = phi_timeline([], messages, 0.325, 0.6, segments)
    hover = " ".join(h for trace in timeline.data for h in (trace.hovertext or []))
    assert "&lt;img" in hover and "<img" not in hover
    graph = trajectory_graph(segments, [t.record for t in state.trajectories], {m.id: m.index for m in messages})
    shown = " ".join(graph.data[1].hovertext) + " ".join(graph.layout.yaxis.ticktext)
    assert "<b>" not in shown and "&lt;b&gt;" in shown
    [(label, value)] = trajectory_choices(segments, [t.record for t in state.trajectories], messages)
    assert value == "E1" and "adoption" in label
