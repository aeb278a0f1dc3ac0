"""The LLM judge of answer correctness (§4.1, App. D.1, App. I): CORRECT only when the answer directly
addresses the question and agrees with the essential information of the reference; mere topic or
entity overlap is not enough. Scored: one forward pass comparing the labels' first tokens."""

from __future__ import annotations

from memsif.prompts import Prompt

NAME = "eval_judge"
VERSION = "eval_judge/1"
LABELS = ("CORRECT", "WRONG")
SYSTEM = ("You grade answers against a reference. Label CORRECT only when the generated answer directly "
          "answers the question and is semantically consistent with the essential information in the gold "
          "answer (dates may be written differently). Mere topic or entity overlap is WRONG. Reply with one "
          "word: CORRECT or WRONG.")


def build(question: str, gold: str, answer: str) -> Prompt:
    text = f"Question: {question}\nGold answer: {gold}\nGenerated answer: {answer or '(empty)'}\nLabel:"
    return Prompt(NAME, VERSION, text, system=SYSTEM)
