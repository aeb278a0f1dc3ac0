"""The answer's context (§3.5): the query-local evidence in chronological order under its dates, each
relative date followed by the period it means, then the facts that fit the budget, nearest the question."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memsif.answer.retrieval import EXCERPTS
from memsif.records import Evidence, RetrievedFact
from memsif.timeparse import annotate_relative_dates, day_text

FACTS = "Facts:"


def render_context(fact_lines: list[str], evidence: list[Evidence]) -> str:
    """The evidence in chronological order under its dates, each relative date followed by the period it
    means ("yesterday [7 May 2023]"), then the facts, best first.

    The facts come last, next to the question, where the packaged 1.5B reads them last. On the 233
    questions of conv-26 and conv-30 token F1 went from 37.1 % with the facts first to 38.9 % (+1.8 points,
    paired interval [−0.7, +4.3]); how often an answer passes over the line that holds its answer hardly
    moved (``benchmarks/quality/best_fact.py``; docs/results.md, "Answers that pass over their answer")."""
    lines: list[str] = []
    if evidence:
        lines.append(EXCERPTS)
        day = None
        for e in evidence:
            if day_text(e.time) != day:
                day = day_text(e.time)
                lines.append(f"{day}:")
            lines.append(f"- {e.subject}: {annotate_relative_dates(e.statement, e.time)[0]}")
    if fact_lines:
        lines += [FACTS, *fact_lines]
    return "\n".join(lines)


def fit_lines(items: Sequence[RetrievedFact], render: Callable[[RetrievedFact], str], budget: int,
              count_tokens: Callable[[str], int]) -> tuple[list[str], list[RetrievedFact], int]:
    """Rendered lines of ``items`` in order while they fit ``budget`` tokens (``count_tokens``: the answer
    model's tokenizer); returns the lines, the items and the tokens left."""
    lines, used = [], []
    for item in items:
        line = render(item)
        cost = count_tokens(line) + 1
        if cost > budget:
            continue  # a shorter item further down may still fit
        budget -= cost
        lines.append(line)
        used.append(item)
    return lines, used, budget
