"""Scored yes/no judges with contextual calibration.

A judge is one forward pass comparing P(yes) and P(no) of the first answer token. Small models are
biased towards one answer whatever the content (SmolLM2-135M gives P(yes) ≈ 0.1 to nearly every
boundary question), so by default the probability is calibrated against the model's prior on the
same template with content-free input ("N/A"), as in Zhao et al., "Calibrate Before Use" (ICML 2021):

    p_cal = (p / p0) / (p / p0 + (1 − p) / (1 − p0))

p_cal = 0.5 exactly when the content moves the model no more than "N/A" does. Raw p, prior p0 and
p_cal are all recorded with the decision; ``judge_calibration=False`` uses raw p.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memsif.errors import LLMError
from memsif.llm import LLM
from memsif.prompts import Prompt

_PRIORS: dict[tuple[int, str, str], float] = {}
_PRIORS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Verdict:
    """One judged prompt: calibrated probability of "yes", the raw one and the prior used."""

    prob: float
    raw: float
    prior: float | None


def calibrate(p: float, p0: float) -> float:
    """Contextual calibration of P(yes) ``p`` against the content-free prior ``p0`` (both in [0,1])."""
    p0 = min(max(p0, 1e-3), 1 - 1e-3)
    p = min(max(p, 1e-6), 1 - 1e-6)
    yes, no = p / p0, (1 - p) / (1 - p0)
    return yes / (yes + no)


class YesNoJudge:
    """Scores prompts of one task with ``llm``; ``content_free`` builds that task's N/A prompt."""

    def __init__(self, llm: LLM | None, content_free: Callable[[], Prompt], calibrated: bool = True) -> None:
        self.llm = llm
        self.content_free = content_free
        self.calibrated = calibrated
        self.calls = 0
        self.seconds = 0.0

    def prior(self) -> float:
        """The model's P(yes) on the content-free prompt, computed once per model and prompt version."""
        probe = self.content_free()
        key = (id(self.llm), getattr(self.llm, "name", ""), probe.version)
        with _PRIORS_LOCK:
            if key not in _PRIORS:
                _PRIORS[key] = float(self._raw([probe])[0])
            return _PRIORS[key]

    def _raw(self, prompts: Sequence[Prompt]) -> list[float]:
        if self.llm is None:
            raise LLMError("no LLM configured for the judge")
        start = time.perf_counter()
        values = self.llm.yes_probability(prompts)
        self.seconds += time.perf_counter() - start
        self.calls += len(prompts)
        if len(values) != len(prompts):
            raise LLMError(f"judge returned {len(values)} scores for {len(prompts)} prompts")
        for v in values:
            if not 0.0 <= v <= 1.0:
                raise LLMError(f"judge probability out of range: {v}")
        return [float(v) for v in values]

    def score(self, prompts: Sequence[Prompt]) -> list[Verdict]:
        """Verdicts in prompt order.

        Raises:
            LLMError: the model failed or returned something that is not a probability.
        """
        if not prompts:
            return []
        prior = self.prior() if self.calibrated else None
        raws = self._raw(prompts)
        return [Verdict(calibrate(r, prior) if prior is not None else r, r, prior) for r in raws]
