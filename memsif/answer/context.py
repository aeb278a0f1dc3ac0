"""The answer's context (§3.5): the facts that fit the budget, then the query-local evidence in
chronological order under its dates, each relative date followed by the period it means."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memsif.answer.retrieval import EXCERPTS
from memsif.records import Evidence, RetrievedFact
from memsif.timeparse import annotate_relative_dates, day_text


def render_context(fact_lines: list[str], evidence: list[Evidence]) -> str:
    """Facts, then the evidence in chronological order under its dates, each relative date followed by
    the period it means ("yesterday [7 May 2023]")."""
    lines = ["Facts:", *fact_lines] if fact_lines else []
    if evidence:
        lines.append(EXCERPTS)
        day = None
        for e in evidence:
            if day_text(e.time) != day:
                day = day_text(e.time)
                lines.append(f"{day}:")
            lines.append(f"- {e.subject}: {annotate_relative_dates(e.statement, e.time)[0]}")
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
