"""llama.cpp back-end (llama-cpp-python) for GGUF files on CPU, the one ``MEMSIF_LLM_BACKEND=auto``
picks for them: the packaged 1.5B loads in ~1 s (transformers: 85 s, 8.9 GB) and decodes ~5× faster
on 2 cores (README, "Models"). ``MEMSIF_LLM_BACKEND=llamacpp`` forces it.

Scored decisions evaluate the prompt once and read the last token's logits; the KV cache of the
longest common prefix with the previous prompt is reused (judge prompts share their template).

CoreFact extraction runs in a llama.cpp context of its own, made on its first call over the same
memory-mapped weights: the CoreFact step calls the back-end's ``for_job("facts")`` handle
(``FactsHandle``). Between two of its tokens it lets a waiting chat answer or build call run on the
shared context, then goes on with its KV cache untouched: on one context a chat answer had to wait out
the extraction call under way (5–25 s each with the 1.5B) and then cost the extraction its cached
prompt prefix.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from memsif.config import MemSIFConfig
from memsif.errors import BackendUnavailable, LLMError
from memsif.llm.base import (
    NO_WORDS,
    YES_WORDS,
    Generation,
    Runtime,
    announce_reading,
    common_length,
    first_tokens,
    label_shares,
    render,
)
from memsif.llm.llamacpp_cpu import INSTALL_COMMAND, CpuLibrary, choose_cpu_library, probe_failure
from memsif.llm.llamacpp_parallel import Mask, ParallelContext
from memsif.llm.packaged import is_packaged, packaged_gguf, packaged_model
from memsif.llm.structured import JsonMask
from memsif.locks import FairLock, check_cancelled
from memsif.prompts import Prompt

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_types import ChatCompletionRequestMessage
    from llguidance import LLTokenizer

#: Prompt tokens the extraction's context evaluates between two chances to let a more urgent call in
#: (~0.9 s with the 1.5B on 2 cores). The chunk does not change the prompt's speed: 1,000 tokens took
#: 14.2, 14.1, 14.7 and 13.0 s in chunks of 1,000, 256, 128 and 64.
PREFILL_CHUNK = 64
#: A prompt read on the shared context with at least this many new tokens updates the measured prompt
#: speed (``prompt_tokens_per_s``, the mean of the last measure and the one before it).
RATE_MIN_TOKENS = 64


class Grammars:
    """What keeps a llama.cpp model's reply inside a JSON schema: llguidance's token masks (its view of the
    vocabulary made on the first JSON reply, ~3 s), else llama.cpp's own grammar sampling where llguidance is
    not installed (~30 % slower a token here)."""

    def __init__(self, llama: Any, lib: Any) -> None:
        self._llama, self._lib = llama, lib
        self._tokenizer: LLTokenizer | None = None

    def mask(self, json_schema: dict[str, Any], n_prompt: int) -> JsonMask | None:
        """llguidance's mask of a reply that follows ``n_prompt`` prompt tokens; None without llguidance.

        Raises:
            LLMError: the schema cannot be compiled into a grammar.
        """
        try:
            from llguidance.llamacpp import lltokenizer_from_vocab
        except ImportError:
            return None
        if self._tokenizer is None:
            with warnings.catch_warnings():  # it calls a deprecated llama.cpp accessor once per token
                warnings.simplefilter("ignore", DeprecationWarning)
                self._tokenizer = lltokenizer_from_vocab(self._llama._model.vocab)
        return JsonMask(self._tokenizer, json_schema, n_prompt)

    def completion_arguments(self, json_schema: dict[str, Any], n_prompt: int) -> dict[str, Any]:
        """create_completion's arguments that hold its reply to ``json_schema``: the mask as a logits
        processor, else a llama.cpp grammar."""
        mask = self.mask(json_schema, n_prompt)
        if mask is None:
            from llama_cpp.llama_grammar import LlamaGrammar

            return {"grammar": LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)}
        return {"logits_processor": self._lib.LogitsProcessorList([mask])}


class LlamaCppLLM:
    """A GGUF model run by llama.cpp: one context for chat answers and builds, one for CoreFact
    extraction (module docstring; one for everything with ``facts_context=False``). ``pauses`` counts
    how often an extraction let a more urgent call run between two of its steps (prompt chunks, tokens)."""

    def __init__(self, model_path: str, name: str, n_ctx: int = 4096, n_threads: int | None = None,
                 facts_context: bool = True) -> None:
        try:
            import llama_cpp
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError as exc:
            raise BackendUnavailable(f"llama-cpp-python is not installed ({exc}).", INSTALL_COMMAND) from exc
        self._lib = llama_cpp
        try:
            self.cpu = choose_cpu_library()
        except (OSError, FileNotFoundError) as exc:
            raise LLMError(f"llama.cpp has no CPU library for this machine ({exc}).") from exc
        measured = _probe(model_path, cpu=self.cpu)
        # llama-cpp-python decodes on half the cores by default; on 2 cores every core decodes 1.4x
        # faster (0.051 → 0.036 s a token for the packaged 1.5B); prompt evaluation already uses all.
        self._path, self._n_ctx, self._threads = model_path, n_ctx, n_threads or len(os.sched_getaffinity(0))
        self._llm = self._new_context()
        self._facts_llm: Any = None if facts_context else self._llm
        self._facts_made = threading.Lock()
        self.pauses = 0
        self.prompt_tokens_per_s: float | None = measured  # the probe's, until this process reads a prompt
        self.name = name
        self.runtime = Runtime("llama.cpp", self.cpu.describe())
        self.context_window = n_ctx
        template = self._llm.metadata.get("tokenizer.chat_template")
        self._format = Jinja2ChatFormatter(template, eos_token=self.detokenize([self._llm.token_eos()]),
                                           bos_token=self.detokenize([self._llm.token_bos()])) if template else None
        self._yes = self._first_tokens(YES_WORDS)
        self._no = self._first_tokens(NO_WORDS)
        self._lock = FairLock()
        self.grammars = Grammars(self._llm, self._lib)
        self._parallel: ParallelContext | None = None  # waves decoded together (``decode_wave``)

    @classmethod
    def from_config(cls, config: MemSIFConfig) -> LlamaCppLLM:
        model = config.model
        if is_packaged(model.llm_model):
            folder, gguf_file = packaged_gguf(model.llm_model, config.store.resolved_cache_dir)
            path = str(folder / gguf_file)
            name = packaged_model(model.llm_model).name.replace(", packaged)", ", packaged, llama.cpp)")
        else:
            path = name = model.llm_model if not model.llm_gguf_file else f"{model.llm_model}/{model.llm_gguf_file}"
        return cls(path, name, n_threads=model.llm_threads or None, facts_context=model.llm_facts_context)

    def _new_context(self) -> Llama:
        """A llama.cpp context over the model file (the weights are memory-mapped, so a second context
        shares them and adds its KV cache and compute buffers).

        Raises:
            LLMError: llama.cpp could not load the file.
        """
        try:
            return self._lib.Llama(model_path=self._path, n_ctx=self._n_ctx, n_threads=self._threads,
                                   n_threads_batch=self._threads, logits_all=False, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"llama.cpp could not load {self._path} ({exc}).") from exc

    def for_job(self, kind: str) -> LlamaCppLLM | FactsHandle:
        """The handle a job of ``kind`` calls: CoreFact extraction's ("facts") runs on its own context
        (``FactsHandle``); every other job on the shared one (this back-end)."""
        return FactsHandle(self) if kind == "facts" else self

    def facts_context(self) -> Any:
        """CoreFact extraction's own context, made on its first call (the shared one with
        ``facts_context=False``)."""
        with self._facts_made:
            if self._facts_llm is None:
                self._facts_llm = self._new_context()
        return self._facts_llm

    def _between_tokens(self, llm: Any) -> Any:
        """create_completion's stopping criteria for a generation on ``llm``: ``_pause_point`` per
        sampled token (a cancelled job stops with JobCancelled instead of finishing a reply nobody will
        store; the extraction lets a more urgent caller in). Never stops generation otherwise."""
        def point(_input_ids: np.ndarray, _logits: np.ndarray) -> bool:
            self._pause_point(llm)
            return False
        return self._lib.StoppingCriteriaList([point])

    def _pause_point(self, llm: Any) -> None:
        """Between two steps of a call on ``llm``: JobCancelled when its job was cancelled; on the
        extraction's own context, a more urgent caller waiting gets the model first."""
        check_cancelled()
        if llm is not self._llm and self._lock.yield_to_urgent():
            self.pauses += 1

    def _first_tokens(self, words: Sequence[str]) -> list[int]:
        return first_tokens(lambda text: self._llm.tokenize(text.encode(), add_bos=False, special=False), words)

    def _render(self, prompt: Prompt) -> str:
        fmt = self._format
        return render(prompt, None if fmt is None else
                      lambda messages: fmt(messages=cast("list[ChatCompletionRequestMessage]", messages)).prompt)

    def _prefill(self, llm: Any, tokens: list[int]) -> None:
        """Leave ``tokens`` evaluated in context ``llm``: the prefix it already holds is kept (at least
        the last token is evaluated again, for fresh logits), the rest is evaluated; on the extraction's
        context in chunks of ``PREFILL_CHUNK`` with a chance for a more urgent call between two chunks
        (``_pause_point``).

        Raises:
            LLMError: the prompt does not fit the context window.
        """
        if len(tokens) >= llm.n_ctx():
            raise LLMError(f"prompt of {len(tokens)} tokens does not fit the context of {llm.n_ctx()}")
        common = min(common_length([llm.input_ids[: llm.n_tokens], tokens]), len(tokens) - 1)
        llm.n_tokens = common
        announce_reading(len(tokens) - common, self.prompt_tokens_per_s)
        step = len(tokens) if llm is self._llm else PREFILL_CHUNK
        started = time.perf_counter()
        for start in range(common, len(tokens), step):
            if start > common:
                self._pause_point(llm)
            llm.eval(tokens[start:start + step])
        if llm is self._llm and len(tokens) - common >= RATE_MIN_TOKENS:  # no pauses in it: the host's speed
            rate = (len(tokens) - common) / max(time.perf_counter() - started, 1e-6)
            last = self.prompt_tokens_per_s
            self.prompt_tokens_per_s = rate if last is None else (last + rate) / 2

    def _probs(self, llm: Any, prompt: Prompt) -> np.ndarray:
        """Evaluate ``prompt`` on context ``llm`` (``_prefill``); the softmax of the last position's logits
        (n_vocab,)."""
        self._prefill(llm, self._llm.tokenize(self._render(prompt).encode(), add_bos=False, special=True))
        ptr = self._lib.llama_get_logits_ith(llm.ctx, -1)
        logits: np.ndarray = np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)
        probs: np.ndarray = np.exp(logits - logits.max())
        probs /= probs.sum()
        return probs

    def yes_probability(self, prompts: Sequence[Prompt], context: Any = None) -> list[float]:
        """P(yes) of each prompt, on ``context`` (a job's own, ``for_job``; default the shared one)."""
        llm: Any = context or self._llm
        with self._lock:
            each = (self._probs(llm, prompt) for prompt in prompts)
            return [label_shares([p[self._yes].sum(), p[self._no].sum()], ("yes", "no"), self.name)[0] for p in each]

    def choice_probabilities(self, prompt: Prompt, labels: Sequence[str], context: Any = None) -> list[float]:
        ids = [self._first_tokens([label]) for label in labels]
        llm: Any = context or self._llm
        with self._lock:
            probs = self._probs(llm, prompt)
        return label_shares([probs[i].sum() for i in ids], labels, self.name)

    def generate(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                 json_schema: dict[str, Any] | None = None, stop: Sequence[str] = (),
                 context: Any = None) -> Generation:
        """With ``json_schema``, every sampled token keeps the reply inside the schema (llguidance's
        token masks; llama.cpp's own grammar sampling where llguidance is not installed, ~30 % slower
        per token here). The key/value cache of the prefix this prompt shares with the previous one
        is reused (fixed instructions before the varying part are computed once)."""
        text = self._render(prompt)
        tokens = self._prompt_tokens(text)
        kwargs = self.grammars.completion_arguments(json_schema, len(tokens)) if json_schema is not None else {}
        llm: Any = context or self._llm
        with self._lock:  # create_completion finds the prompt evaluated and samples at once
            self._prefill(llm, tokens)
            result = llm.create_completion(text, max_tokens=max_new_tokens, temperature=temperature, seed=0,
                                           stop=list(stop) or None, **kwargs,
                                           stopping_criteria=self._between_tokens(llm))
        usage = result.get("usage", {})
        return Generation(result["choices"][0]["text"], int(usage.get("prompt_tokens", 0)),
                          int(usage.get("completion_tokens", 0)))

    def _prompt_tokens(self, text: str) -> list[int]:
        """The tokens create_completion makes of ``text`` (the model's BOS where its vocabulary adds one)."""
        return self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def prompt_tokens(self, prompt: Prompt) -> list[int]:
        """The tokens of ``prompt`` as the model reads it (its chat template; BOS where the vocabulary adds one)."""
        return self._prompt_tokens(self._render(prompt))

    def detokenize(self, tokens: Sequence[int]) -> str:
        """The text of ``tokens`` (bytes that are no whole UTF-8 character dropped)."""
        return str(self._llm.detokenize(list(tokens)).decode("utf-8", "ignore"))

    def decode_wave(self, prompts: Sequence[list[int]], masks: Sequence[Mask], max_new_tokens: int) -> list[list[int]]:
        """Greedy reply tokens of several prompts decoded together on a context of their own
        (``llamacpp_parallel.ParallelContext``, made on the first wave, widened for a wider one), each held by
        its mask; between two steps a more urgent call may run on the shared context.

        Raises:
            LLMError: the prompts do not fit the context, or llama.cpp failed.
            JobCancelled: the job was cancelled meanwhile.
        """
        with self._lock:
            if self._parallel is None or self._parallel.sequences < len(prompts):
                if self._parallel is not None:
                    self._parallel.close()
                self._parallel = ParallelContext(self._lib, self._llm._model, self._threads, max(len(prompts), 8))
            context = self._parallel
            return context.generate(prompts, max_new_tokens, masks, lambda: self._pause_point(context))

    def generate_stream(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                        stop: Sequence[str] = (), context: Any = None) -> Iterator[str | Generation]:
        """``generate`` piece by piece (``memsif.llm.generate_streamed``): each new text piece as it is
        sampled, then one ``Generation`` with the whole text and its token counts."""
        llm: Any = context or self._llm
        text = self._render(prompt)
        tokens = self._prompt_tokens(text)
        with self._lock:
            self._prefill(llm, tokens)
            pieces: list[str] = []
            for chunk in llm.create_completion(text, max_tokens=max_new_tokens, temperature=temperature, seed=0,
                                               stop=list(stop) or None, stream=True,
                                               stopping_criteria=self._between_tokens(llm)):
                piece = chunk["choices"][0]["text"]
                if piece:
                    pieces.append(piece)
                    yield piece
        yield Generation("".join(pieces), len(tokens), len(pieces))

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode(), add_bos=False, special=False))


class FactsHandle:
    """``LlamaCppLLM.for_job("facts")``: the back-end as CoreFact extraction calls it. Its calls run on the
    extraction's own context (over the same weights), and between two of their tokens or prompt chunks a
    chat answer or a build call runs on the shared one; everything else is the back-end's."""

    def __init__(self, backend: LlamaCppLLM) -> None:
        self.backend, self.name = backend, backend.name

    def __getattr__(self, name: str) -> Any:  # runtime, context_window, pauses, …
        return getattr(self.backend, name)

    def yes_probability(self, prompts: Sequence[Prompt]) -> list[float]:
        return self.backend.yes_probability(prompts, context=self.backend.facts_context())

    def choice_probabilities(self, prompt: Prompt, labels: Sequence[str]) -> list[float]:
        return self.backend.choice_probabilities(prompt, labels, context=self.backend.facts_context())

    def generate(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                 json_schema: dict[str, Any] | None = None, stop: Sequence[str] = ()) -> Generation:
        return self.backend.generate(prompt, max_new_tokens, temperature, json_schema, stop,
                                     context=self.backend.facts_context())

    def generate_batch(self, prompts: Sequence[Prompt], max_new_tokens: int = 512, temperature: float = 0.1,
                       json_schema: dict[str, Any] | None = None) -> list[Generation]:
        """Greedy replies to several prompts decoded together (``memsif.llm.generate_many`` calls it for a wave
        of extraction batches or segment titles), one sequence each on a context of their own
        (``llamacpp_parallel.ParallelContext``, made on the first wave): a step that decodes a token of every
        prompt costs about what one prompt's step costs, and their common prefix is read once. The same
        replies as ``generate`` at temperature 0 but for rounding in the batched arithmetic.

        Raises:
            LLMError: ``temperature`` is not 0, llguidance is not installed (JSON replies need its masks here),
                the prompts do not fit the context, or llama.cpp failed; ``generate_many`` then generates them
                one by one.
        """
        if temperature > 0:
            raise LLMError("llama.cpp decodes prompts together only greedily (temperature 0)")
        llm = self.backend
        tokens = [llm.prompt_tokens(p) for p in prompts]
        masks = [llm.grammars.mask(json_schema, len(seq)) if json_schema is not None else None for seq in tokens]
        if json_schema is not None and any(mask is None for mask in masks):
            raise LLMError("a JSON reply decoded in parallel needs llguidance (pip install llguidance)")
        replies = llm.decode_wave(tokens, masks, max_new_tokens)
        return [Generation(llm.detokenize(reply), len(seq), len(reply))
                for seq, reply in zip(tokens, replies, strict=True)]

    def generate_stream(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                        stop: Sequence[str] = ()) -> Iterator[str | Generation]:
        return self.backend.generate_stream(prompt, max_new_tokens, temperature, stop,
                                            context=self.backend.facts_context())

    def count_tokens(self, text: str) -> int:
        return self.backend.count_tokens(text)


_PROBE = """
import sys, time, llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, logits_all=False, verbose=False)
tokens = llm.tokenize(b"hello world " * 64, add_bos=True)
start = time.perf_counter()
llm.eval(tokens)
print(f"prompt_tokens_per_s {len(tokens) / (time.perf_counter() - start):.1f}")
"""
#: Seconds the probe's child may take to load the model and evaluate its prompt (the 1.5B: ~2 s idle).
PROBE_TIMEOUT_S = 120.0
_PROBED: dict[str, float | None] = {}


def _probe(model_path: str, timeout_s: float = PROBE_TIMEOUT_S, command: Sequence[str] | None = None,
           cpu: CpuLibrary | None = None) -> float | None:
    """Evaluate a short prompt (129 tokens) in a child process first: a llama.cpp build with CPU code this
    machine does not allow dies with a signal (SIGILL; SIGSEGV for AMX refused inside a VM), which no Python
    code can catch. Returns the prompt tokens a second the child measured (None when it did not say): the
    first estimate of a prompt's wait, before this process has read one. ``command`` replaces the child
    (tests use a fake one); ``cpu``: the CPU library it loads, named in the message.

    Raises:
        LLMError: the child was killed by a signal, exited with an error or ran past ``timeout_s``; the
            message names the signal, the likely cause and the rebuild command (``probe_failure``).
    """
    if model_path in _PROBED:
        return _PROBED[model_path]
    argv = list(command) if command is not None else [sys.executable, "-c", _PROBE, model_path]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        said = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        raise BackendUnavailable(*probe_failure(None, said, model_path, timeout_s, cpu)) from exc
    if result.returncode != 0:
        raise BackendUnavailable(*probe_failure(result.returncode, result.stderr, model_path, cpu=cpu))
    found = re.search(r"prompt_tokens_per_s ([0-9.]+)", result.stdout or "")
    _PROBED[model_path] = float(found[1]) if found and float(found[1]) > 0 else None
    return _PROBED[model_path]
