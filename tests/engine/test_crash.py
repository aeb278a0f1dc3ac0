"""An ingest interrupted between its writes (kill -9, power loss) leaves a store that the next
process repairs and can finish: same memory as an uninterrupted build, no duplicates."""

import subprocess
import sys
import time
from datetime import datetime

import pytest

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.records import Message
from memsif.store import MemoryStore
from tests import ROOT
from tests.fakes import FakeLLM, HashEmbedder, TableEntities, grounded_extraction

REPLAY = ROOT / "tests" / "replay" / "crash_ingest.py"
TOPICS = ["pottery class glaze kiln", "camping lake tent fire", "adoption agency interview", "concert violin band"]


def chat(n: int = 120) -> list[Message]:
    """A chat that changes topic every few messages, over several sessions."""
    return [Message(id=f"D{k // 30 + 1}:{k % 30 + 1}", namespace="crash", speaker="AB"[k % 2],
                    text=f"{TOPICS[(k // 5) % 4]} note {k}", time=datetime(2023, 5, 1 + k // 30),
                    session_id=f"session_{k // 30 + 1}") for k in range(n)]


def slow_judge(prompt) -> float:
    time.sleep(0.01)
    return 0.3 if "note 1" in prompt.text else 0.7


def _engine(store, data_dir, judge=slow_judge, **config):
    return MemSIF(MemSIFConfig(data_dir=str(data_dir), core_facts=False, sem_mapping="affine", **config),
                  llm=FakeLLM({"segment_judge": judge, "trajectory_judge": 0.7}), embedder=HashEmbedder(),
                  entities=TableEntities(), store=store)


# --------------------------------------------- class: a build written in parts as it places messages
def test_a_build_written_in_parts_is_the_build_written_at_once(tmp_path):
    whole = _engine(MemoryStore(in_memory=True), tmp_path, persist_every=1000)
    whole.ingest(chat(), namespace="crash")
    parts = _engine(MemoryStore(in_memory=True), tmp_path, persist_every=7)
    parts.ingest(chat(), namespace="crash")
    assert _shape(parts) == _shape(whole)
    titled = [s.title is not None for s in parts.segments("crash")]
    assert all(titled), "a segment left open at a part's end was never titled"


def test_a_build_is_readable_while_it_places_its_messages(tmp_path):
    seen: list[int] = []
    engine = None

    def judge(prompt) -> float:  # a reader beside the build, at every judge call
        seen.append(len(engine.messages("crash")))
        return slow_judge(prompt)

    engine = _engine(MemoryStore(in_memory=True), tmp_path, judge=judge, persist_every=10)
    engine.ingest(chat(), namespace="crash")
    assert set(seen) <= set(range(0, 120, 10)), f"a reader saw a part half written: {seen}"
    assert len(set(seen)) >= 4 and seen == sorted(seen), f"the reader did not see the memory grow: {seen}"


def test_a_build_stopped_midway_keeps_the_parts_it_wrote_and_the_next_ingest_resumes(tmp_path):
    from memsif.errors import JobCancelled
    from memsif.locks import cancel
    calls = iter(range(10_000))

    def judge(prompt) -> float:
        if next(calls) == 2:
            cancel("crash", "stopped")
        return slow_judge(prompt)

    clean = _engine(MemoryStore(in_memory=True), tmp_path)
    clean.ingest(chat(), namespace="crash")
    store = MemoryStore(in_memory=True)
    engine = _engine(store, tmp_path, judge=judge, persist_every=10)
    with pytest.raises(JobCancelled, match="stopped"):
        engine.ingest(chat(), namespace="crash")
    stored = len(engine.messages("crash"))
    assert 0 < stored < 120 and stored % 10 == 0, stored
    report = engine.ingest(chat(), namespace="crash")
    assert report.skipped == stored and report.total_messages == 120
    assert _shape(engine) == _shape(clean)


def _shape(engine, ns="crash"):
    segs = [(s.id, s.message_ids, s.trajectory_id) for s in engine.segments(ns)]
    trajs = [(t.id, t.segment_ids) for t in engine.trajectories(ns)]
    decisions = engine.decisions(ns)
    return segs, trajs, [(d.kind, getattr(d, "message_id", None), d.segment_id) for d in decisions], \
        [d.seq for d in decisions]


def test_an_ingest_that_dies_before_its_messages_are_written_is_repaired_and_finished(tmp_path):
    messages = chat()
    clean = _engine(MemoryStore(in_memory=True), tmp_path)
    clean.ingest(messages[:60], namespace="crash")
    clean.ingest(messages[60:], namespace="crash")

    store = MemoryStore(in_memory=True)
    first = _engine(store, tmp_path)
    first.ingest(messages[:60], namespace="crash")

    def die(*args, **kwargs):
        raise KeyboardInterrupt("killed")  # the process dies after segments, trajectories, decisions

    original = store.put_messages
    store.put_messages = die
    with pytest.raises(KeyboardInterrupt):
        first.ingest(messages[60:], namespace="crash")
    store.put_messages = original
    assert len(first.messages("crash")) == 60
    assert len(store.segments("crash")) > len(clean.segments("crash")) // 2  # dangling records exist

    restarted = _engine(store, tmp_path)
    report = restarted.ingest(messages[60:], namespace="crash")
    assert report.messages == 60 and report.total_messages == 120
    got, want = _shape(restarted), _shape(clean)
    assert got[0] == want[0], "segments differ from an uninterrupted build"
    assert got[1] == want[1], "trajectories differ from an uninterrupted build"
    assert got[2] == want[2] and got[3] == list(range(len(got[3]))), "decisions duplicated or missing"
    again = restarted.ingest(messages, namespace="crash")
    assert again.messages == 0 and _shape(restarted) == got, "re-ingesting the transcript changed memory"


def test_a_part_killed_after_a_whole_segments_trajectory_decision_leaves_no_gap_in_the_decision_log(tmp_path):
    """The second part's first message opens a segment, closing one stored whole in the first part: its
    trajectory decision is logged after that message's segment decision. Killed before the part's messages are
    written, the segment decision is stale and the trajectory decision kept (its segment and trajectory are
    stored): the log is numbered on without a gap, and the restart ends with the uninterrupted build's memory."""
    from tests.fakes import FixedEmbedder

    vectors = {"kiln one": [1.0, 0.0], "kiln two": [1.0, 0.0], "lake one": [-1.0, 0.0], "lake two": [-1.0, 0.0]}
    texts = ["kiln one", "kiln two", "lake one", "lake two"]
    messages = [Message(id=f"D1:{i + 1}", namespace="crash", speaker="A", text=t, time=datetime(2023, 5, 8),
                        session_id="s1", index=i) for i, t in enumerate(texts)]

    def engine(store):
        return MemSIF(MemSIFConfig(data_dir=str(tmp_path), core_facts=False, sem_mapping="affine", alpha_segment=1.0,
                                   persist_every=2, segment_titles="rule", trajectory_link="rule"),
                      llm=FakeLLM(), embedder=FixedEmbedder(vectors), entities=TableEntities(), store=store)

    clean = engine(MemoryStore(in_memory=True))
    clean.ingest(messages, namespace="crash")
    store = MemoryStore(in_memory=True)
    first, original, calls = engine(store), store.put_messages, []

    def die_on_the_second_part(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        return original(*args, **kwargs)

    store.put_messages = die_on_the_second_part
    with pytest.raises(KeyboardInterrupt):
        first.ingest(messages, namespace="crash")
    store.put_messages = original
    logged = [(d.kind, getattr(d, "message_id", None) or d.segment_id) for d in store.decisions("crash")]
    assert logged[2:4] == [("segment", "D1:3"), ("trajectory", "S1")], "the case: S1's decision after a stale one"
    restarted = engine(store)
    restarted.ingest(messages, namespace="crash")
    seqs = [d.seq for d in restarted.decisions("crash")]
    assert seqs == list(range(len(seqs))), f"a gap in the decision log: {seqs}"
    assert _shape(restarted)[:2] == _shape(clean)[:2]
    assert [d.message_id for d in restarted.decisions("crash", "segment")] == [m.id for m in messages]


def test_kill_9_in_the_middle_of_an_ingest_then_a_restart_finishes_it(tmp_path):
    proc = subprocess.Popen([sys.executable, str(REPLAY), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("ingested 20")
        time.sleep(0.35)  # somewhere inside a later ingest
    finally:
        proc.kill()  # SIGKILL: no cleanup, no lock release by the process
        proc.wait(10)
    engine = MemSIF(MemSIFConfig(data_dir=str(tmp_path), core_facts=False, sem_mapping="affine"),
                    llm=FakeLLM({"segment_judge": slow_judge, "trajectory_judge": 0.7}), embedder=HashEmbedder(),
                    entities=TableEntities())
    stored = len(engine.messages("crash"))
    assert 20 <= stored < 120
    report = engine.ingest(chat(), namespace="crash")
    assert report.total_messages == 120 and report.messages == 120 - stored
    segments = engine.segments("crash")
    assert [m for s in segments for m in s.message_ids] == [m.id for m in chat()]
    in_trajectories = sorted((s for t in engine.trajectories("crash") for s in t.segment_ids), key=lambda i: int(i[1:]))
    assert in_trajectories == [s.id for s in segments], "every segment belongs to exactly one trajectory"
    seqs = [d.seq for d in engine.decisions("crash")]
    assert seqs == list(range(len(seqs)))
    assert [d.message_id for d in engine.decisions("crash", "segment")] == [m.id for m in chat()]
    engine.close()


# --------------------------------------------- class: kill -9 during CoreFact extraction
def _facts_engine(store, data_dir):
    facts = grounded_extraction({"kiln": {"subject": "A", "type": "Event", "statement": "A fired pots in the kiln."},
                                 "lake": {"subject": "B", "type": "Event", "statement": "B camped at the lake."},
                                 "violin": {"subject": "A", "type": "Preference",
                                            "statement": "A plays the violin in a band."}})
    return MemSIF(MemSIFConfig(data_dir=str(data_dir), core_facts=False, sem_mapping="affine", fact_batch_messages=6,
                               fact_operation="model", fact_second_pass=True),
                  llm=FakeLLM({"segment_judge": slow_judge, "trajectory_judge": 0.7, "core_extract": facts,
                               "core_operation": "A"}),
                  embedder=HashEmbedder(), entities=TableEntities(), store=store)


def _log(engine, ns="crash"):
    return [(op.op, op.fact_ids, [f.statement for f in op.after]) for op in engine.fact_log(ns)]


@pytest.mark.parametrize("dies_in", ["put_facts", "put_segments"])
def test_an_extraction_killed_after_a_batchs_log_write_resumes_without_writing_it_twice(tmp_path, dies_in):
    messages = chat(40)
    clean = _facts_engine(MemoryStore(in_memory=True), tmp_path)
    clean.ingest(messages, namespace="crash")
    clean.build_core_facts("crash")
    assert len(_log(clean)) >= 4

    store = MemoryStore(in_memory=True)
    first = _facts_engine(store, tmp_path)
    first.ingest(messages, namespace="crash")
    original, calls = getattr(store, dies_in), []

    def die_on_the_third_batch(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")  # after the third batch's operations reached the log
        return original(*args, **kwargs)

    setattr(store, dies_in, die_on_the_third_batch)
    with pytest.raises(KeyboardInterrupt):
        first.build_core_facts("crash")
    setattr(store, dies_in, original)
    restarted = _facts_engine(store, tmp_path)
    restarted.build_core_facts("crash")
    assert _log(restarted) == _log(clean), "an interrupted batch's operations were written twice or lost"
    assert [f.statement for f in restarted.facts("crash")] == [f.statement for f in clean.facts("crash")]
    assert [op.seq for op in restarted.fact_log("crash")] == list(range(len(_log(clean))))
