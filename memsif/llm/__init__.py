"""LLM back-ends behind one small protocol (``memsif.llm.base``), and the one that a config names.

Decisions that pick among a few options are *scored*, not generated: ``yes_probability`` runs one
forward pass and compares the probabilities of the answer tokens (DESIGN.md, "Structured output").
"""

from __future__ import annotations

import importlib.util
import logging
import threading

from memsif.config import PACKAGED_LLM, MemSIFConfig
from memsif.errors import LLMError
from memsif.llm.base import (
    LLM,
    NO_WORDS,
    YES_WORDS,
    Generation,
    context_window,
    generate_many,
    generate_streamed,
)
from memsif.llm.packaged import is_packaged, packaged_gguf

__all__ = ["LLM", "NO_WORDS", "YES_WORDS", "Generation", "context_window", "generate_many", "generate_streamed",
           "load_llm", "resolved_backend"]

log = logging.getLogger(__name__)

_CACHE: dict[tuple, LLM] = {}
_CACHE_LOCK = threading.Lock()


def resolved_backend(config: MemSIFConfig) -> str:
    """The back-end ``llm_backend`` names; "auto" is llama.cpp for GGUF files (the packaged models, a
    ``*.gguf`` path, or ``llm_gguf_file``) when llama-cpp-python is installed, else transformers.
    Measured on 2 CPU cores with Qwen2.5-Coder-1.5B-Instruct: the same prompt speed as transformers in
    bfloat16, 5× its decoding speed and a third of its memory (README, "Models")."""
    if config.llm_backend != "auto":
        return config.llm_backend
    gguf = is_packaged(config.llm_model) or bool(config.llm_gguf_file) or config.llm_model.endswith(".gguf")
    if gguf and importlib.util.find_spec("llama_cpp") is not None:
        return "llamacpp"
    return "transformers"


def load_llm(config: MemSIFConfig) -> LLM:
    """The configured back-end, loaded once per process and shared (thread-safe). Under
    ``llm_backend=auto`` a llama.cpp build that cannot run on this CPU falls back to transformers
    (logged).

    Raises:
        LLMError: the model cannot be loaded; the message says which setting to change.
    """
    key = config.llm_key
    with _CACHE_LOCK:
        if key not in _CACHE:
            backend = resolved_backend(config)
            if backend == "llamacpp":
                from memsif.llm.llamacpp_backend import LlamaCppLLM

                try:
                    _CACHE[key] = LlamaCppLLM.from_config(config)
                except LLMError as exc:
                    if config.llm_backend != "auto":
                        raise
                    log.warning("llama.cpp cannot run here (%s); using transformers instead", exc)
                    backend = "transformers"
            if backend == "transformers":
                from memsif.llm.transformers_backend import TransformersLLM

                _CACHE[key] = TransformersLLM.from_config(config)
            elif backend == "openai":
                from memsif.llm.openai_backend import OpenAICompatibleLLM

                _CACHE[key] = OpenAICompatibleLLM.from_config(config)
        return _CACHE[key]


__all__ = ["LLM", "NO_WORDS", "PACKAGED_LLM", "YES_WORDS", "Generation", "generate_streamed", "load_llm",
           "packaged_gguf"]
