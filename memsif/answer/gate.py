"""The sufficiency gate (§3.5): whether the retrieved facts alone answer the question, so that the answer's
context is the facts without the evidence of Structured Interaction Memory. One scored yes/no call, asked
only of a model trusted with it and only on facts above the gate's relevance floor; the rule that applied is
recorded on the answer (``Answer.gate_rule``)."""

from __future__ import annotations

from dataclasses import dataclass

from memsif.config import MemSIFConfig
from memsif.errors import LLMError
from memsif.llm import LLM
from memsif.llm.profiles import ModelProfile
from memsif.prompts import sufficiency
from memsif.records import RetrievedFact


@dataclass(frozen=True)
class GateVerdict:
    """What the gate decided: the ``rule`` that applied (``Answer.gate_rule``), whether the facts alone answer
    (``sufficient``) with the model's P(sufficient) (``prob``; None: not asked), the prompt tokens it cost and
    the error of a failed call (the answer then keeps facts + evidence)."""

    rule: str
    sufficient: bool = False
    prob: float | None = None
    tokens_in: int = 0
    error: str | None = None


@dataclass(frozen=True)
class SufficiencyGate:
    """The gate of one ``QueryPipeline``: its settings (``config.answer``) and the model it asks."""

    config: MemSIFConfig
    llm: LLM
    profile: ModelProfile

    def trusted(self) -> bool:
        """Whether the sufficiency verdict may replace the evidence (``sufficiency_gate``: "model" always,
        "never" never; "auto" only for a model whose profile says its verdict was measured not to lose
        answer F1 or evidence recall, ``ModelProfile.judges_sufficiency``: none yet — asked above the
        relevance floor on conv-26, Qwen2.5-Coder-1.5B sent 19 of 152 questions facts-only and lost 7.9
        points of answer F1 on them [−12.6, −3.6], ``benchmarks/quality/gate_table.py``). Any other model gets
        facts + evidence."""
        mode = self.config.answer.sufficiency_gate
        if mode == "auto":
            return self.profile.judges_sufficiency and not self.profile.at_chance
        return mode == "model"

    def decide(self, question: str, facts: list[RetrievedFact]) -> GateVerdict:
        """The verdict for ``facts`` (those the answer would see)."""
        if not facts:
            return GateVerdict("no facts retrieved: evidence from Structured Interaction Memory")
        cfg = self.config.answer
        if not self.trusted():
            return GateVerdict(f"sufficiency not asked: {self.llm.name or 'the model'} is not trusted "
                               f"with it (sufficiency_gate={cfg.sufficiency_gate}); facts + evidence")
        best, floor = max(f.score for f in facts), cfg.gate_fact_floor
        relevance = f"best fact {best:.2f} {'≥' if best >= floor else '<'} the gate's relevance floor {floor:.2f}"
        if best < floor:
            return GateVerdict(f"sufficiency not asked: {relevance} (the facts are not about it); facts + evidence")
        prompt = sufficiency.build(question, [f"{f.subject}: {f.statement}" for f in facts])
        tokens = self.llm.count_tokens(prompt.text)
        try:
            [p] = self.llm.yes_probability([prompt])
        except LLMError as exc:
            return GateVerdict("sufficiency check failed: facts + evidence", tokens_in=tokens,
                               error=f"sufficiency: {type(exc).__name__}: {exc}")
        enough = p >= cfg.sufficiency_threshold
        return GateVerdict(f"{relevance}; P(sufficient) = {p:.2f} {'≥' if enough else '<'} "
                           f"{cfg.sufficiency_threshold}: {'facts only' if enough else 'facts + evidence'}",
                           sufficient=enough, prob=p, tokens_in=tokens)
