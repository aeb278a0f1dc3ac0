"""Scored yes/no judges with calibration.

A judge is one forward pass comparing P(yes) and P(no) of the first answer token. Models are biased
towards one answer whatever the content (SmolLM2-135M gives P(yes) ≈ 0.1 to nearly every boundary
question; Qwen2.5-Coder-1.5B gives P(yes) ≈ 0.8 to messages of *another* conversation), so the
probability is calibrated against a reference point p0 of that model on that task:

    p_cal = (p / p0) / (p / p0 + (1 − p) / (1 − p0))            (Zhao et al., ICML 2021)

p_cal = 0.5 exactly when p = p0, so the verdict threshold (0.5) falls at p0. ``judge_calibration``:

- "auto" (default): p0 = the model's *measured decision point* for the task (``ModelProfile.decision_points``:
  the P(yes) that separates labelled continue / other-topic pairs best), raw p for models not measured;
- "content-free": p0 = the model's P(yes) on the same template with "N/A" content (Zhao et al.);
- "off": raw p.

Raw p, p0 and p_cal are all recorded with the decision.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memsif.errors import LLMError
from memsif.llm import LLM
from memsif.llm.profiles import UNMEASURED, ModelProfile
from memsif.prompts import Prompt

CALIBRATIONS = ("auto", "content-free", "off")

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
    """Scores prompts of one task with ``llm``; ``content_free`` builds that task's N/A prompt;
    ``calibration`` is one of ``CALIBRATIONS`` (True / False: the old "content-free" / "off"); ``profile``
    holds the model's measured decision points ("auto")."""

    def __init__(self, llm: LLM | None, content_free: Callable[[], Prompt], calibration: str | bool = "auto",
                 profile: ModelProfile = UNMEASURED) -> None:
        self.llm, self.profile = llm, profile
        self.content_free = content_free
        self.calibration = {True: "content-free", False: "off"}.get(calibration, calibration)  # type: ignore[arg-type]
        self.calls = 0
        self.seconds = 0.0

    def reference_point(self) -> float | None:
        """p0 of the calibration (see the module text), or None for raw probabilities."""
        if self.calibration == "off":
            return None
        if self.calibration == "auto":
            # the raw P(yes) at which this model's verdicts on the task separate labelled pairs best
            # (balanced-accuracy optimum on the dev conversations; ``benchmarks/quality/model_steps.py``)
            return self.profile.decision_point(self.content_free().name)
        return self.prior()

    def prior(self) -> float:
        """The model's P(yes) on the content-free prompt, computed once per model and prompt version."""
        probe = self.content_free()
        key = (id(self.llm), self.llm.name if self.llm is not None else "", probe.version)
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
        if (bad := next((v for v in values if not 0.0 <= v <= 1.0), None)) is not None:
            raise LLMError(f"judge probability out of range: {bad}")
        return [float(v) for v in values]

    def score(self, prompts: Sequence[Prompt]) -> list[Verdict]:
        """Verdicts in prompt order.

        Raises:
            LLMError: the model failed or returned something that is not a probability.
        """
        if not prompts:
            return []
        prior = self.reference_point()
        raws = self._raw(prompts)
        return [Verdict(calibrate(r, prior) if prior is not None else r, r, prior) for r in raws]
