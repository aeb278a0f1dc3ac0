"""One evaluated question of one system, typed: the rows of ``questions.jsonl`` (§4.1, App. D).

A row holds the question and its gold (answer and evidence turns), what the system put in its
context and answered, the cost, and the scores: evidence recall by text, by provenance and strict
(``metrics``), token F1 and the LLM judge when answers were generated. Keys a system adds of its
own (MemSIF's trace: ``sys_gate_rule``, ``sys_aggregation`` …) are kept as they come; the one the
report reads (``sys_paths``) is typed. Rows written by earlier versions read back with the fields
they lack at their defaults.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class QuestionResult(BaseModel):
    """One system's result on one question. Recalls and F1 are shares in [0, 1]; seconds are wall
    seconds; tokens are the answer model's."""

    model_config = ConfigDict(extra="allow")

    dataset: str
    system: str
    ablation: str = "none"
    label: str = Field(description="system/ablation@budget, as the report names it")
    sample_id: str
    qid: str
    order: int = Field(0, description="position in the sample's seeded question order")
    category: str
    source_category: str = ""
    question: str
    gold: str
    question_date: str | None = None
    answer: str = ""
    evidence_ids: list[str] = Field(default_factory=list, description="gold evidence turns")
    context_ids: list[str] = Field(default_factory=list, description="turns behind the answer context")
    context_tokens: int = 0
    tokens: int = 0
    llm_calls: int = 0
    seconds: float = 0.0
    ted: float | None = Field(None, description="temporal evidence dispersion of the gold turns")
    nce: bool = Field(False, description="non-contiguous evidence: ted ≥ 0.3")
    recall_text: float | None = Field(None, description="None: the question has no gold evidence turns")
    recall_ids: float | None = None
    recall_strict: float | None = None
    f1: float | None = None
    llm_correct: bool | None = None
    llm_p_correct: float | None = None
    judge_error: str | None = None
    sys_paths: dict[str, str] | None = Field(None, description="MemSIF: how each context turn was found")

    def extra(self, name: str, default: Any = None) -> Any:
        """A key the system added of its own (``sys_…``), or ``default``."""
        return (self.model_extra or {}).get(name, default)

    def json_line(self) -> str:
        """The row as one line of ``questions.jsonl``."""
        return self.model_dump_json()


class Scores(BaseModel):
    """The mean scores of ``n`` questions (shares in [0, 1]; None where no question had that score);
    ``f1_ci``/``acc_ci``: the 95 % percentile bootstrap interval of the mean, questions resampled within
    each conversation or sample (``metrics.mean_interval``)."""

    model_config = ConfigDict(extra="allow")

    n: int
    f1: float | None = None
    acc: float | None = Field(None, description="LLM-judge accuracy")
    f1_ci: tuple[float, float] | None = Field(None, description="token F1's 95 % bootstrap interval")
    acc_ci: tuple[float, float] | None = Field(None, description="LLM-judge accuracy's 95 % bootstrap interval")
    recall_text: float | None = None
    recall_ids: float | None = None
    recall_strict: float | None = None


class Cost(BaseModel):
    """What a system cost on a run (App. H): construction, then per question; seconds are wall seconds."""

    model_config = ConfigDict(extra="allow")

    questions: int
    build_seconds: float = 0.0
    build_tokens: int = 0
    build_llm_calls: int = 0
    build_messages: int | None = Field(None, description="messages built from (None in runs that did not record it)")
    llm_calls_per_message: float = 0.0
    query_seconds_mean: float = 0.0
    query_tokens_mean: float = 0.0
    amortised_seconds_per_query: float = 0.0
    amortised_tokens_per_query: float = 0.0
    context_tokens_mean: float | None = None


class SystemSummary(BaseModel):
    """One system/ablation of a run: scores by category, Total and on the NCE subset; how MemSIF's
    context found the gold turns (``GOLD_PATHS`` kind → count, for "total" and "nce"; None for the
    baselines); its cost."""

    model_config = ConfigDict(extra="allow")

    categories: dict[str, Scores]
    total: Scores
    nce: Scores
    gold_paths: dict[str, dict[str, int] | None] | None = None
    cost: Cost


class EvalSummary(BaseModel):
    """A run's ``summary.json``: what ran (dataset, seed, judge, question limit or list), each
    system's ``SystemSummary`` by label, the run's wall seconds, peak memory and model, and the TSM
    diagnostics of its data (App. A.4). ``limit`` is a string in a report merged from runs with
    different limits; ``common_questions`` says a merged report scored only the questions every run
    answered."""

    model_config = ConfigDict(extra="allow")

    dataset: str
    seed: int = 0
    judge: str = ""
    generate: bool = True
    limit: int | str | None = None
    only: list[str] | None = None
    systems: dict[str, SystemSummary] = Field(default_factory=dict)
    wall_seconds: float = 0.0
    peak_rss_mb: float = 0.0
    model: str = ""
    diagnostics: dict[str, Any] | None = None
    common_questions: int | None = None
