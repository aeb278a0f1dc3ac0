"""What was measured about each model, in one place: which of the method's optional LLM steps it is
trusted with, and the decision points of its judges.

The engine asks a model only what it was measured to do well enough (README, "Models"). A model is
looked up once, by its name (``LLM.name``): the first profile whose ``match`` is a case-insensitive
substring of it; a model no profile matches gets ``UNMEASURED`` (the core steps only: the segment judge
at the paper's rule, extraction, answers). Every figure behind a profile is in ``docs/results.md``
with its command.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from memsif.errors import ConfigError


@dataclass(frozen=True)
class ModelProfile:
    """What one model was measured to do (dev conversations; ``docs/results.md``).

    Attributes:
        match: a case-insensitive substring of the model's name ("" matches nothing: ``UNMEASURED``).
        at_chance: its yes/no judgements are near chance: a demo model whose answers carry a warning and
            whose sufficiency verdict is never asked (``eval judge-check``: separation 0.54).
        decision_points: judge prompt name → the raw P(yes) at which its verdicts separate labelled pairs
            best (balanced-accuracy optimum), the p0 of ``judge_calibration="auto"``.
        verify_min_p: the P(yes) at or above which it verifies a CoreFact against its cited messages
            (``fact_verification="auto"``), or None: not measured to verify.
        answer_check_min_p: the P(yes) that an answer context states what is asked below which its answer
            is refused as not in memory (``answer_check="auto"``), or None: not measured for the check.
        change_min_p: the P(yes) at or above which its answer to the change question (``core_change``) makes a
            new CoreFact supersede or update an earlier one, fitted on labelled pairs, or None: not measured.
        changes_facts: the changes it makes at ``change_min_p`` in whole memories were labelled right often
            enough to be made by default (``fact_change="auto"``; "model" asks it at ``change_min_p`` anyway).
        chooses_operation: it picks Add / Update / Merge / Supersede better than always-Add
            (``fact_operation="auto"``).
        judges_sufficiency: its "facts are sufficient" verdict was measured not to lose answer F1 or
            evidence recall (``sufficiency_gate="auto"``).
        links_trajectories: its trajectory judge links labelled threads at link precision ≥ 0.75
            (``trajectory_link="auto"``).
    """

    match: str
    at_chance: bool = False
    decision_points: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    verify_min_p: float | None = None
    answer_check_min_p: float | None = None
    change_min_p: float | None = None
    changes_facts: bool = False
    chooses_operation: bool = False
    judges_sufficiency: bool = False
    links_trajectories: bool = False

    def decision_point(self, task: str) -> float | None:
        """The measured decision point of judge prompt ``task`` ("segment_judge", …), or None."""
        return self.decision_points.get(task)


#: A model nothing was measured on: trusted with no optional step.
UNMEASURED = ModelProfile(match="")

#: The measured models. Qwen2.5-Coder-1.5B (the default): segment judge AUC 0.86 with p0 0.83,
#: trajectory judge p0 0.63 (``benchmarks/quality/model_steps.py``); verification at P(yes) ≥ 0.65 (fitted on
#: 137 labelled facts of conv-26 and conv-30, tested on conv-47: ``benchmarks/quality/fact_verifier.py``); the
#: operation letter chosen right 4 of 15 times (``benchmarks/quality/fact_operations.py``); asked about sufficiency
#: it lost 7.9 points of answer F1 on the questions it sent facts-only (``benchmarks/quality/gate_table.py``); its
#: trajectory joins were 8–22 % precise (``benchmarks/quality/trajectory_decision.py``); a change of a person's
#: state at mean P(yes) ≥ 0.6 of the change question (the lowest threshold at which the labelled pairs of two
#: dev conversations are ≥ 75 % changes: 0.595–0.60 on each fold; ``benchmarks/quality/state_changes.py``), but
#: not by default: in whole memories of the three dev conversations 1 of its 18 changes was right (its P(yes) on
#: the extractor's statements lay between 0.39 and 0.65, whatever the pair).
#: SmolLM2-135M: at chance on every judgement (segment AUC 0.55, judge-check separation 0.54).
PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile(match="Qwen2.5-Coder-1.5B-Instruct",
                 decision_points=MappingProxyType({"segment_judge": 0.83, "trajectory_judge": 0.63}),
                 verify_min_p=0.65, change_min_p=0.6),
    ModelProfile(match="SmolLM2-135M", at_chance=True),
)


def profile_of(name: str | None, profiles: tuple[ModelProfile, ...] | None = None) -> ModelProfile:
    """The profile of the model called ``name`` (``LLM.name``): the first of ``profiles`` (default
    ``PROFILES``) whose ``match`` it contains (case-insensitive), else ``UNMEASURED``."""
    lowered = (name or "").lower()
    return next((p for p in (PROFILES if profiles is None else profiles) if p.match and p.match.lower() in lowered),
                UNMEASURED)


def step_threshold(mode: str, name: str | None, measured: float | None, unmeasured: float) -> float | None:
    """The threshold an optional scored step uses under its setting ``mode`` for the model called ``name``:
    "auto" the model's ``measured`` threshold (None: the step is not asked), "model" that or ``unmeasured``,
    "off" None."""
    if mode == "off" or name is None:
        return None
    if measured is not None:
        return measured
    return unmeasured if mode == "model" else None


def configured_profile(override: str, name: str | None) -> ModelProfile:
    """The profile the engine uses for the model called ``name``, resolved once when the model loads
    (``memsif.backends.Backends.profile``): the measured profile whose ``match`` is ``override`` (setting
    ``llm_profile``, e.g. a renamed copy of a measured model; "unmeasured": none), else ``profile_of(name)``.

    Raises:
        ConfigError: ``override`` names no measured profile.
    """
    if not override:
        return profile_of(name)
    if override.lower() == "unmeasured":
        return UNMEASURED
    named = [p for p in PROFILES if p.match.lower() == override.lower()]
    if not named:
        raise ConfigError(f"llm_profile {override!r} names no measured model; use one of "
                          f"{', '.join(repr(p.match) for p in PROFILES)}, 'unmeasured', or leave it empty.")
    return named[0]
