"""The backbone LLM (§4.1: one model for every step) behind one small protocol (``memsif.llm.base``),
and the one that a config names: the segment and trajectory judges (§3.2), CoreFact extraction and
verification (§3.3), the sufficiency gate and the answer (§3.5).

Back-ends: ``llamacpp_backend`` (GGUF, the default; ``llamacpp_cpu`` picks its CPU library),
``transformers_backend``, ``openai_backend`` (any OpenAI-compatible server); ``structured`` holds the
constrained decoding they share, ``packaged`` the models that PyPI packages carry, ``profiles`` what was
measured of each model. Decisions that pick among a few options are *scored*, not generated:
``yes_probability`` runs one forward pass and compares the probabilities of the answer tokens
(docs/models.md, "The judges' decision points").
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

from memsif.config import PACKAGED_LLM, MemSIFConfig
from memsif.errors import BackendUnavailable, LLMError
from memsif.llm.base import (
    LLM,
    NO_WORDS,
    YES_WORDS,
    Generation,
    Reading,
    Runtime,
    announce_reading,
    context_window,
    generate_many,
    generate_streamed,
    reading_reported,
    runtime_of,
)
from memsif.llm.packaged import is_packaged, packaged_gguf

log = logging.getLogger(__name__)

_CACHE: dict[tuple[object, ...], LLM] = {}

#: What the transformers stand-in costs against llama.cpp for the packaged 1.5B (README, "Models":
#: ``benchmarks/speed/app_memory.py`` peaks, a decoding step 0.21 s against 0.05 s).
FALLBACK_COST = ("about 4.3 GB of memory instead of 2.9 GB (5.5 GB the first time, while the GGUF is "
                 "de-quantised), and each generated token about 4× slower (CoreFacts and answers take that "
                 "much longer).")
_CACHE_LOCK = threading.Lock()


def resolved_backend(config: MemSIFConfig) -> str:
    """The back-end ``llm_backend`` names; "auto" is llama.cpp for GGUF files (the packaged models, a
    ``*.gguf`` path, or ``llm_gguf_file``), else transformers. Measured on 2 CPU cores with
    Qwen2.5-Coder-1.5B-Instruct: the same prompt speed as transformers in bfloat16, 5× its decoding
    speed and a third of its memory (README, "Models"). What actually runs is ``runtime_of(load_llm(…))``:
    ``load_llm`` falls back to transformers where llama.cpp cannot run, and says so."""
    model = config.model
    if model.llm_backend != "auto":
        return model.llm_backend
    gguf = is_packaged(model.llm_model) or bool(model.llm_gguf_file) or model.llm_model.endswith(".gguf")
    return "llamacpp" if gguf else "transformers"


def _reason_and_fix(exc: LLMError) -> dict[str, str]:
    """``reason`` and ``fix`` of a back-end that cannot run: its own (``BackendUnavailable``), else the
    error's text and the llama.cpp rebuild command."""
    if isinstance(exc, BackendUnavailable):
        return {"reason": exc.reason, "fix": exc.fix}
    from memsif.llm.llamacpp_cpu import rebuild_command

    return {"reason": str(exc), "fix": rebuild_command()}


def described(llm: LLM) -> dict[str, str]:
    """The model's name and what runs it (``Runtime.as_dict``), for ``--json`` outputs."""
    return {"name": llm.name, **runtime_of(llm).as_dict()}


def load_llm(config: MemSIFConfig) -> LLM:
    """The configured back-end, loaded once per process and shared (thread-safe). Under
    ``llm_backend=auto``, where llama.cpp cannot run (not installed, or its probe failed) the model runs
    on transformers instead and its ``runtime`` says so: why, what it costs, the command that fixes it
    (the page and every ``--json`` output show it).

    Raises:
        LLMError: the model cannot be loaded; the message says which setting to change.
    """
    key = config.llm_key
    with _CACHE_LOCK:
        if key not in _CACHE:
            backend = resolved_backend(config)
            fallback: LLMError | None = None
            if backend == "llamacpp":
                from memsif.llm.llamacpp_backend import LlamaCppLLM

                try:
                    _CACHE[key] = LlamaCppLLM.from_config(config)
                except LLMError as exc:
                    if config.model.llm_backend != "auto":
                        raise
                    log.warning("llama.cpp cannot run here; using transformers instead. %s", exc)
                    fallback = exc
                    backend = "transformers"
            if backend == "transformers":
                from memsif.llm.transformers_backend import TransformersLLM

                llm = TransformersLLM.from_config(config)
                if fallback is not None:
                    llm.runtime = replace(llm.runtime, fallback_from="llama.cpp", cost=FALLBACK_COST,
                                          **_reason_and_fix(fallback))
                _CACHE[key] = llm
            elif backend == "openai":
                from memsif.llm.openai_backend import OpenAICompatibleLLM

                _CACHE[key] = OpenAICompatibleLLM.from_config(config)
        return _CACHE[key]


__all__ = ["FALLBACK_COST", "LLM", "NO_WORDS", "PACKAGED_LLM", "YES_WORDS", "Generation", "Reading", "Runtime",
           "announce_reading", "context_window", "described", "generate_many", "generate_streamed", "load_llm",
           "packaged_gguf", "reading_reported", "resolved_backend", "runtime_of"]
