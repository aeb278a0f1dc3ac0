"""The wait for a prompt, said before the answer: a back-end announces the tokens it is about to read and
the time they take at the speed it measured; the chat shows it until the first piece of the answer."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from memsif.llm import Reading, announce_reading, reading_reported


def test_a_reading_is_told_only_inside_the_block_and_only_when_it_is_worth_waiting_for():
    heard: list[Reading] = []
    announce_reading(640, 20.0)  # nobody listens
    with reading_reported(heard.append):
        announce_reading(10, 20.0)  # under READING_MIN_TOKENS
        announce_reading(640, 20.0)
        announce_reading(300, None)
    announce_reading(640, 20.0)
    assert heard == [Reading(640, 32.0), Reading(300, None)]
    assert heard[0].text() == "Reading 640 tokens of memory, about 32 s on this CPU…"
    assert heard[1].text() == "Reading 300 tokens of memory…"


def test_another_thread_does_not_hear_this_threads_readings():
    heard: list[Reading] = []
    with reading_reported(heard.append):
        worker = threading.Thread(target=announce_reading, args=(640, 20.0))
        worker.start()
        worker.join()
    assert heard == []


class _Context:
    """What ``LlamaCppLLM._prefill`` uses of a llama.cpp context: the tokens it holds and ``eval``."""

    def __init__(self, held: list[int]) -> None:
        self.input_ids, self.n_tokens, self.evaluated = list(held), len(held), []

    def n_ctx(self) -> int:
        return 4096

    def eval(self, tokens: list[int]) -> None:
        self.evaluated += tokens
        self.input_ids[self.n_tokens:self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)


def test_the_llamacpp_back_end_announces_the_uncached_tokens_and_measures_its_prompt_speed():
    from memsif.llm.llamacpp_backend import LlamaCppLLM

    shared = _Context(held=list(range(100)))
    backend = object.__new__(LlamaCppLLM)  # no model: only the prefill bookkeeping runs
    backend._llm, backend.prompt_tokens_per_s = shared, None
    heard: list[Reading] = []
    with reading_reported(heard.append):
        backend._prefill(shared, list(range(100)) + list(range(1000, 1200)))  # 100 cached, 200 to read
    assert heard == [Reading(200, None)], "no speed measured before the first prompt"
    assert shared.evaluated == list(range(1000, 1200)) and backend.prompt_tokens_per_s > 0
    measured = backend.prompt_tokens_per_s
    with reading_reported(heard.append):
        backend._prefill(shared, list(range(100)) + list(range(2000, 2300)))
    assert heard[1] == Reading(300, pytest.approx(300 / measured)), "the wait at the speed measured before"


def test_the_chat_says_what_the_model_reads_before_the_answer_streams():
    from memsif.answer.query import Answer
    from memsif.inspector.chat import _streamed_answer

    def ask(question, namespace, on_text):
        announce_reading(640, 20.0)
        for piece in ("Melanie ", "paints."):
            on_text(piece)
        return Answer(question=question, answer="Melanie paints.", sufficient=False, sufficiency_prob=None,
                      traced_back=True)

    shown = list(_streamed_answer(SimpleNamespace(ask=ask), "What does Melanie do?", "ns"))
    assert shown[0] == ("Reading 640 tokens of memory, about 32 s on this CPU…", None)
    assert shown[-1][1].answer == "Melanie paints." and shown[-1][0] == ""
    assert all("Reading" not in text for text, _ in shown[1:])


def test_a_chat_answer_says_first_that_it_waits_for_a_model_another_job_holds():
    """While a CoreFact extraction holds the model, the chat's first line says so (it is let in at the
    extraction's next step); with the model free, the first line is the reading itself."""
    from memsif.answer.query import Answer
    from memsif.inspector.chat import _streamed_answer
    from memsif.locks import FairLock, job

    def ask(question, namespace, on_text):
        announce_reading(640, 20.0)
        return Answer(question=question, answer="Melanie paints.", sufficient=False, sufficiency_prob=None,
                      traced_back=True)

    model = FairLock()
    holding, done = threading.Event(), threading.Event()

    def extraction():
        with job("ns", "facts"), model:
            holding.set()
            done.wait(10)

    worker = threading.Thread(target=extraction)
    worker.start()
    holding.wait(10)
    try:
        shown = list(_streamed_answer(SimpleNamespace(ask=ask), "What does Melanie do?", "ns"))
    finally:
        done.set()
        worker.join(10)
    assert shown[0][0].startswith("⏳ Waiting for the model: a CoreFact extraction is using it and lets this "
                                  "answer in at its next step")
    assert shown[1] == ("Reading 640 tokens of memory, about 32 s on this CPU…", None)
    free = list(_streamed_answer(SimpleNamespace(ask=ask), "What does Melanie do?", "ns"))
    assert free[0][0].startswith("Reading 640 tokens")
