"""The measure of answers that ignore the context line holding the answer (benchmarks/quality/best_fact.py)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests import ROOT

CONTEXT = "\n".join([
    "Conversation excerpts (oldest first):", "15 April 2022:", "- Nate: Look at my hair!",
    "20 May 2022:", "- Nate: The tournament was fun.",
    "Facts:", "- Nate: Nate dyed his hair purple (the week before 15 April 2022).",
    "- Nate: Nate won his second tournament, on Street Fighter (21 May 2022)."])


@pytest.fixture(scope="module")
def best_fact():
    spec = importlib.util.spec_from_file_location("best_fact", ROOT / "benchmarks" / "quality" / "best_fact.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _row(answer: str, gold: str, question: str = "When did Nate dye his hair?") -> dict:
    return {"qid": "conv-1/q1", "category": "Temp", "question": question, "gold": gold, "answer": answer,
            "f1": None, "llm_correct": None, "sys_context": CONTEXT}


def test_the_context_splits_into_facts_excerpts_and_day_headers(best_fact):
    ctx = best_fact.Context.parse(CONTEXT)
    assert ctx.facts[0].startswith("Nate: Nate dyed") and len(ctx.facts) == 2
    assert ctx.excerpts == ["Nate: Look at my hair!", "Nate: The tournament was fun."]
    assert ctx.headers == ["15 April 2022", "20 May 2022"]


def test_an_answer_that_gives_the_day_header_ignores_the_best_fact(best_fact):
    item = best_fact.classify(_row("15 April 2022", "The week before 15 April 2022"))
    assert item["best_fact_holds"] and not item["follows"]
    assert item["instead"] == "the line's date without its qualifier"
    followed = best_fact.classify(_row("The week before 15 April 2022.", "The week before 15 April 2022"))
    assert followed["best_fact_holds"] and followed["follows"] and followed["instead"] is None


def test_an_answer_from_another_fact_and_a_line_that_does_not_hold_the_gold(best_fact):
    item = best_fact.classify(_row("21 May 2022", "the week before 15 April 2022"))
    assert item["instead"] == "another fact's date"
    assert best_fact.classify(_row("20 May 2022", "the week before 15 April 2022"))["instead"] == "a day header's date"
    assert best_fact.classify(_row("I don't know.", "the week before 15 April 2022"))["instead"] == "a refusal"
    game = best_fact.classify(_row("CS:GO", "Street Fighter", "What game was the second tournament on?"))
    assert not game["best_fact_holds"] and game["fact_holds"] and not game["follows"]
    nothing = best_fact.classify(_row("Paris", "Lisbon", "Where does Nate live?"))
    assert nothing["line"] is None and nothing["follows"] is None


def test_the_summary_counts_ignored_lines_with_their_interval(best_fact):
    rows = [_row("15 April 2022", "The week before 15 April 2022"),
            _row("The week before 15 April 2022", "The week before 15 April 2022")]
    rows[1]["qid"] = "conv-1/q2"
    out = best_fact.summary([best_fact.classify(r) for r in rows])
    assert out["best_fact_holds"]["ignored"]["k"] == 1 and out["best_fact_holds"]["ignored"]["n"] == 2
    assert out["best_fact_holds"]["instead"] == {"the line's date without its qualifier": 1}
    assert best_fact.paired([best_fact.classify(rows[0])], [best_fact.classify(rows[1] | {"qid": "conv-1/q1"})]) == {
        "questions": 1, "ignored_then_followed": 1, "followed_then_ignored": 0}
