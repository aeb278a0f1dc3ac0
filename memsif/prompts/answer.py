"""Answer generation (§3.5, App. I): shared by MemSIF and the baselines; temperature 0.1."""

from __future__ import annotations

from memsif.prompts import Prompt

NAME = "answer"
#: The answer is one line: generation stops at the first line break (the token cap stays 512, App. D).
STOP = ("\n",)
VERSION = "answer/2"  # the facts after the excerpts, nearest the question (answer.context)
SYSTEM = ("You answer questions about a long conversation using only the memory given. Answer briefly, "
          "in a few words or one sentence. Use absolute dates.")


def build(question: str, context: str, question_date: str | None = None) -> Prompt:
    when = f"\nToday is {question_date}." if question_date else ""
    text = f"Memory:\n{context or '(empty)'}\n{when}\nQuestion: {question}\nAnswer:"
    return Prompt(NAME, VERSION, text, system=SYSTEM)
