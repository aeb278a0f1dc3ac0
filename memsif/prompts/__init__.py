"""Prompts of every LLM step (§3.2–3.5; the paper's prompt templates, App. F): one module per task, each
with a name, a version and (where the task generates) its response schema — ``segment_judge`` and
``trajectory_judge``/``trajectory_choice`` (§3.2), ``core_extract``, ``core_operation`` and
``fact_verify`` (§3.3), ``sufficiency``, ``answer`` and ``answer_check`` (§3.5), ``eval_judge``
(the LLM-judge metric, App. D). The LLM sees short local labels and excerpts, never store ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memsif.records import Message

#: Kept short on purpose: every token of a judge prompt is paid on every call.
JUDGE_SYSTEM = "Answer yes or no."


@dataclass(frozen=True)
class Prompt:
    """One rendered prompt: ``name`` keys fake LLMs in tests; ``version`` goes into decision records."""

    name: str
    version: str
    text: str
    system: str = JUDGE_SYSTEM
    input_ids: tuple[str, ...] = field(default_factory=tuple)


def turn_line(message: Message, limit: int | None = None) -> str:
    """A message as every answer context shows it: ``Speaker (8 May 2023): text``; with ``limit``
    the text is clipped to that many characters (``clip``). Shared by MemSIF's query-local
    evidence and the evaluation baselines, so their contexts differ only in what they select. Relative
    dates are followed by the period they mean ("yesterday [7 May 2023]")."""
    from memsif.timeparse import annotate_relative_dates, day_text

    text = annotate_relative_dates(message.text, message.time)[0]
    text = text if limit is None else clip(text, limit)
    return f"{message.speaker} ({day_text(message.time)}): {text}"


def clip(text: str, limit: int = 160) -> str:
    """One line of at most ``limit`` characters (the judge sees short excerpts)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
