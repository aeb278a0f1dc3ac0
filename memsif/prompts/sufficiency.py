"""Sufficiency check (§3.5): do the retrieved facts cover what the question needs? Yes/no, scored."""

from __future__ import annotations

from collections.abc import Sequence

from memsif.prompts import Prompt

NAME = "sufficiency"
VERSION = "sufficiency/1"


def build(question: str, fact_lines: Sequence[str]) -> Prompt:
    facts = "\n".join(f"{i}. {line}" for i, line in enumerate(fact_lines, start=1)) or "(no facts)"
    text = f"Facts:\n{facts}\n\nQuestion: {question}\n\nDo these facts contain the answer to the question?"
    return Prompt(NAME, VERSION, text)
