"""Prompts: one module per LLM task, each with a name, a version and (where the task generates)
its response schema. The LLM sees short local labels and excerpts, never store ids."""

from __future__ import annotations

from dataclasses import dataclass, field

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


def clip(text: str, limit: int = 160) -> str:
    """One line of at most ``limit`` characters (the judge sees short excerpts)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
