"""Several sessions on one engine (the inspector's case): per-namespace locks, derived settings."""

import itertools
import json
import threading
import time
from datetime import datetime

import pytest

from memsif.errors import ConfigError
from memsif.records import Message
from tests.conftest import make_messages
from tests.fakes import FakeLLM, KeywordEmbedder

MAY = datetime(2023, 5, 8)
FACTS = {"facts": [{"subject": "Melanie", "type": "Preference", "statement": "Melanie loves pottery.",
                    "sources": [1]}]}


def _messages(namespace):
    texts = ["I love pottery, I made a bowl last week.", "Pottery class is on Tuesdays."]
    return [Message(id=f"D1:{i + 1}", namespace=namespace, speaker="Melanie", text=t, time=MAY, session_id="s1")
            for i, t in enumerate(texts)]


def test_a_chat_answers_while_another_namespace_is_being_built(engine_factory):
    entered, release = threading.Event(), threading.Event()

    def slow_extract(prompt):
        if "Melanie" not in prompt.text:  # the build of namespace "b" blocks inside its fact extraction
            entered.set()
            assert release.wait(10), "the test never released the build"
        return json.dumps(FACTS)

    llm = FakeLLM({"core_extract": slow_extract, "core_operation": "A", "sufficiency": 0.9, "answer": "Pottery."})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"pottery": 0}), core_facts=True,
                            tau_split=0.0, tau_merge=0.01, sem_mapping="affine", trajectory_min_phi=1.0)
    engine.ingest(_messages("a"), namespace="a")

    builder = threading.Thread(target=engine.ingest, args=(make_messages(["one", "two", "three"], "b"),),
                               kwargs={"namespace": "b"})
    builder.start()
    try:
        assert entered.wait(10), "the build never reached its LLM call"
        result = []
        asker = threading.Thread(target=lambda: result.append(engine.ask("What does Melanie love?", namespace="a")))
        asker.start()
        asker.join(5)
        assert result and result[0].answer == "Pottery.", "ask waited for another namespace's build"
    finally:
        release.set()
        builder.join(10)
    assert len(engine.messages("b")) == 3


def test_a_chat_in_the_same_namespace_does_not_wait_for_its_core_facts(engine_factory):
    entered, release = threading.Event(), threading.Event()
    calls = []

    def slow_extract(prompt):
        calls.append(prompt)
        if len(calls) > 1:  # the second ingest (new turns) blocks while extracting facts
            entered.set()
            assert release.wait(10)
        return json.dumps(FACTS)

    llm = FakeLLM({"core_extract": slow_extract, "core_operation": "A", "sufficiency": 0.9, "answer": "Pottery."})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"pottery": 0}), core_facts=True,
                            tau_split=0.0, tau_merge=0.01, sem_mapping="affine", trajectory_min_phi=1.0)
    engine.ingest(_messages("a"), namespace="a")
    more = [Message(id="D2:1", namespace="a", speaker="Melanie", text="I bought new pottery glaze.", time=MAY,
                    session_id="s2")]
    builder = threading.Thread(target=engine.ingest, args=(more,), kwargs={"namespace": "a"})
    builder.start()
    try:
        assert entered.wait(10)
        result = []
        asker = threading.Thread(target=lambda: result.append(engine.ask("What does Melanie love?", namespace="a")))
        asker.start()
        asker.join(5)
        assert result, "ask waited for the namespace's CoreFact extraction"
        views = []
        reader = threading.Thread(target=lambda: views.append(
            (engine.fact_log("a"), engine.decisions("a"), engine.facts("a"))))
        reader.start()
        reader.join(5)
        assert views, "the operation log could not be read while the namespace was being written"
        ops, decisions, facts = views[0]
        assert [op.op for op in ops] == ["ADD"] and [f.statement for f in facts] == ["Melanie loves pottery."]
        assert decisions
    finally:
        release.set()
        builder.join(10)


def test_with_config_shares_store_and_llm_but_not_settings(engine_factory):
    llm = FakeLLM({"segment_judge": 0.9})
    engine = engine_factory(llm=llm)
    derived = engine.with_config(engine.config.replace(tau_merge=0.9, tau_split=0.1))
    assert derived.store is engine.store and derived.llm is llm
    assert derived.config.tau_merge == 0.9 and engine.config.tau_merge == 0.6
    derived.ingest(make_messages(["alpha", "beta"], "x"), namespace="x")
    assert [m.id for m in engine.messages("x")] == ["D1:1", "D1:2"]
    with pytest.raises(ConfigError, match="embedder_model"):
        engine.with_config(engine.config.replace(embedder_model="other"))


def test_priority_lock_serves_a_waiting_interactive_caller_before_background_ones():
    from memsif.locks import FairLock, interactive

    lock, order = FairLock(), []
    started = threading.Event()

    def background(name):
        started.wait(5)
        with lock:
            order.append(name)

    def asker():
        started.wait(5)
        with interactive(), lock:
            order.append("chat")

    with lock:  # a background call is in flight; others queue behind it
        threads = [threading.Thread(target=background, args=(f"bg{i}",)) for i in range(3)]
        threads.append(threading.Thread(target=asker))
        for t in threads:
            t.start()
        started.set()
        time.sleep(0.3)  # everyone is waiting now
    for t in threads:
        t.join(5)
    assert order[0] == "chat" and sorted(order[1:]) == ["bg0", "bg1", "bg2"]


def test_a_long_background_call_yields_to_an_interactive_one_between_steps():
    from memsif.locks import FairLock, interactive

    lock, events = FairLock(), []
    holding = threading.Event()

    def long_background_generation():
        with lock:
            holding.set()
            for step in range(50):
                events.append(f"step{step}")
                time.sleep(0.01)
                lock.yield_to_urgent()

    worker = threading.Thread(target=long_background_generation)
    worker.start()
    assert holding.wait(5)
    with interactive(), lock:
        events.append("chat")
    worker.join(5)
    assert "chat" in events and events.index("chat") < len(events) - 1, "the chat waited for the whole generation"
    assert events[-1] == "step49"


def _hold_then_release_waiters(lock, workers, settle=0.3):
    """Start ``workers`` while the lock is held, wait until all queue, release, join."""
    with lock:
        for t in workers:
            t.start()
        time.sleep(settle)
    for t in workers:
        t.join(10)


def test_two_sessions_builds_interleave_call_by_call_instead_of_one_waiting_for_the_other():
    from memsif.locks import FairLock, job

    lock, order = FairLock(), []

    def build(name):
        with job(name, "structure"):
            for _ in range(4):
                with lock:
                    order.append(name)
                    time.sleep(0.01)  # the thread that just released is the first to ask again

    _hold_then_release_waiters(lock, [threading.Thread(target=build, args=(n,)) for n in ("a", "b")])
    assert sorted(order) == ["a"] * 4 + ["b"] * 4
    assert all(x != y for x, y in itertools.pairwise(order)), f"not round-robin: {order}"


def test_a_memory_build_goes_ahead_of_corefact_extraction_and_a_chat_ahead_of_both():
    from memsif.locks import FairLock, interactive, job

    lock, order = FairLock(), []
    start = threading.Event()

    def work(name, kind):
        start.wait(5)
        with job(name, kind), lock:
            order.append(kind)

    def chat():
        start.wait(5)
        with interactive(), lock:
            order.append("chat")

    workers = [threading.Thread(target=work, args=("s1", "facts")),
               threading.Thread(target=work, args=("s2", "structure")), threading.Thread(target=chat)]
    with lock:
        for t in workers:
            t.start()
        start.set()
        time.sleep(0.3)
    for t in workers:
        t.join(10)
    assert order == ["chat", "structure", "facts"]


def test_a_waiting_job_is_told_its_place_without_other_sessions_names():
    from memsif.locks import FairLock, job, queue_position

    lock = FairLock()
    queued = threading.Event()

    def extraction():
        with job("ui-secret", "facts"), lock:
            pass

    def build():
        queued.wait(5)
        with job("ui-mine", "structure"), lock:
            pass

    holder_in = threading.Event()
    release = threading.Event()

    def holder():
        with job("ui-other", "facts"), lock:
            holder_in.set()
            release.wait(5)

    h = threading.Thread(target=holder)
    h.start()
    assert holder_in.wait(5)
    workers = [threading.Thread(target=extraction), threading.Thread(target=build)]
    for t in workers:
        t.start()
    queued.set()
    time.sleep(0.3)
    said = queue_position("ui-mine")
    assert said is not None and "place 2 in line" in said and "CoreFact extraction" in said
    assert "ui-other" not in said and "ui-secret" not in said
    assert queue_position("ui-nobody") is None
    release.set()
    for t in [h, *workers]:
        t.join(5)
    assert queue_position("ui-mine") is None


def test_a_cancelled_job_leaves_the_line_and_a_job_started_after_the_cancel_runs():
    from memsif.errors import JobCancelled
    from memsif.locks import FairLock, cancel, job

    lock, outcome = FairLock(), {}
    queued = threading.Event()

    def waiter(name):
        with job("ns-cancel", "facts"):
            queued.set()
            try:
                with lock:
                    outcome[name] = "ran"
            except JobCancelled as exc:
                outcome[name] = f"cancelled: {exc}"

    with lock:  # another job holds the model; ours waits in line
        t = threading.Thread(target=waiter, args=("old",))
        t.start()
        assert queued.wait(5)
        time.sleep(0.2)
        cancel("ns-cancel", "the memory was replaced")
        t.join(5)
        assert outcome == {"old": "cancelled: the memory was replaced"}, "the cancel did not reach the waiter"
    assert lock.position("ns-cancel") is None
    waiter("new")  # started after the cancel: not affected
    assert outcome["new"] == "ran"
    with lock:  # the line moves on after a cancelled waiter left it
        pass


def test_a_build_cancelled_midway_writes_nothing_and_a_corefact_job_stops_before_its_batch(engine_factory):
    from memsif.errors import JobCancelled
    from memsif.locks import cancel

    cancels = iter([True])

    def judge(prompt):  # the first judge call happens while the page replaces this memory
        if next(cancels, False):
            cancel("cancel-me", "the memory was replaced by a build of `b.txt`")
        return 0.9

    engine = engine_factory(llm=FakeLLM({"segment_judge": judge, "trajectory_judge": 0.1}), tau_split=0.0,
                            tau_merge=1.0)
    texts = [f"Message number {i} about the garden." for i in range(6)]
    with pytest.raises(JobCancelled, match="replaced by a build of"):
        engine.ingest(make_messages(texts, namespace="cancel-me"), namespace="cancel-me")
    assert not engine.has_memory("cancel-me"), "a cancelled build stored part of its messages"
    engine.ingest(make_messages(texts, namespace="cancel-me"), namespace="cancel-me")  # a new job runs
    assert engine.has_memory("cancel-me")

    def extract(prompt):
        cancel("cancel-me", "this session's memory was deleted")
        return json.dumps(FACTS)

    engine.llm.answers.update({"core_extract": extract, "core_operation": "A"})
    with pytest.raises(JobCancelled, match="was deleted"):
        engine.build_core_facts("cancel-me")
    assert engine.store.count("fact_op", "cancel-me") == 0 and not engine.facts("cancel-me"), \
        "a batch finished after the cancel was written"


def test_a_step_of_a_job_is_cancelled_with_the_job_it_belongs_to():
    from memsif.errors import JobCancelled
    from memsif.locks import cancel, check_cancelled, job

    with job("ns-steps", "structure"):
        cancel("ns-steps", "the memory was deleted")
        with job("ns-steps", "facts"), pytest.raises(JobCancelled, match="was deleted"):
            check_cancelled()  # entered after the cancel, but part of the job that was under way
        with job("ns-other", "facts"):
            check_cancelled()  # another name: not cancelled
