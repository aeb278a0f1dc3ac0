"""The model work a build has ahead (``interaction.forecast``): a dry run of the segment rule that expects a
judge prompt where the judge will be asked and none where a rule places the message, published while the
build runs for the countdown the page states."""

import pytest

from memsif.interaction.forecast import Workload
from memsif.prompts import segment_judge
from tests.conftest import make_messages
from tests.fakes import FakeLLM, FixedEmbedder

# alpha = 1 and the affine mapping make φ = (cos + 1) / 2: "orthogonal" after "same" scores 0.5, inside
# (τ_split, τ_merge) = (0.325, 0.6) and above its midpoint (0.4625); "opposite" after either splits by rule.
VECTORS = {"same": [1.0, 0.0], "same again": [1.0, 0.0], "opposite": [-1.0, 0.0], "orthogonal": [0.0, 1.0]}
CFG = dict(alpha_segment=1.0, sem_mapping="affine", trajectory_min_phi=1.0, judge_calibration=False)


def _build(engine, messages, ns="t"):
    """Ingest ``messages``; the workload the build published, as read from its progress."""
    seen: list[Workload | None] = []
    engine.ingest(messages, namespace=ns, progress=lambda done, total, stage: seen.append(engine.workload(ns)))
    assert seen and all(w is seen[0] for w in seen), "one workload for the whole call"
    assert engine.workload(ns) is None, "published only while the build runs"
    return seen[0]


@pytest.fixture
def judged(engine_factory):
    llm = FakeLLM({"segment_judge": 0.9})  # "continues", as the midpoint does for φ = 0.5
    return llm, engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), **CFG)


def test_the_forecast_expects_exactly_the_prompts_a_judge_that_agrees_is_sent(judged):
    llm, engine = judged
    texts = ["same", "same again", "orthogonal", "opposite", "same", "orthogonal", "same again"]
    work = _build(engine, make_messages(texts))
    sent = [len(p.text) for p in llm.calls["segment_judge"]]
    assert len(sent) == 2 and work.calls == 2 and work.sent == sum(sent)
    # merge, merge... : the judge is asked for "orthogonal" after "same" (twice), nothing else
    assert [c > 0 for c in work.expected] == [False, False, True, False, False, True, False]
    assert [c for c in work.expected if c] == sent, "the characters of the very prompts sent"
    assert work.expected_from(0) == sum(sent) and work.expected_from(3) == sent[1] and work.expected_from(7) == 0


def test_rules_expect_no_judge_a_new_session_included(judged):
    llm, engine = judged
    messages = make_messages(["same", "orthogonal", "orthogonal"])
    messages[1] = messages[1].model_copy(update={"session_id": "session_2"})  # a new session opens a segment
    work = _build(engine, messages)
    assert work.expected == [0, 0, 0] and work.sent == 0 and not llm.calls


def test_a_second_call_is_forecast_from_the_memorys_open_segment_and_leaves_it_untouched(judged):
    llm, engine = judged
    first = make_messages(["same", "same again"])
    engine.ingest(first)
    before = [s.message_ids for s in engine.segments("t")]
    later = [m.model_copy(update={"id": f"D1:{k + 3}", "index": k + 2})
             for k, m in enumerate(make_messages(["orthogonal", "same"]))]
    work = _build(engine, later)
    [prompt] = llm.calls["segment_judge"]
    assert prompt.input_ids == ("D1:1", "D1:2", "D1:3"), "judged against the segment the first call left open"
    assert work.expected == [len(prompt.text), 0]
    assert len(prompt.text) == len(segment_judge.build(first, later[0]).text)
    assert before == [["D1:1", "D1:2"]] and [s.message_ids for s in engine.segments("t")] == [
        ["D1:1", "D1:2", "D1:3", "D1:4"]]


def test_where_the_judge_disagrees_the_forecast_differs_and_the_countdown_still_counts_what_was_sent(engine_factory):
    llm = FakeLLM({"segment_judge": 0.1})  # splits where the midpoint would continue
    engine = engine_factory(llm=llm, embedder=FixedEmbedder(VECTORS), **CFG)
    work = _build(engine, make_messages(["same", "orthogonal", "same"]))
    # the dry run keeps "orthogonal" with "same" (mean [0.5, 0.5]): "same" then scores φ ≈ 0.85, merged by
    # rule; the judge split them, so "same" is compared with "orthogonal" alone (φ = 0.5) and judged again
    assert [c > 0 for c in work.expected] == [False, True, False]
    assert work.calls == 2 and work.sent == sum(len(p.text) for p in llm.calls["segment_judge"])
