"""transformers back-end: the packaged SmolLM2 GGUF by default, any hub id or local path otherwise.

Loading a GGUF through transformers de-quantises it, tensor by tensor, to float32 (small files) or
straight to bfloat16 (files of ``BF16_GGUF_BYTES`` and more, e.g. the packaged 1.5B: never a float32
copy of the whole model); the result is saved once under ``<cache_dir>/transformers/`` as safetensors
and loaded from there afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memsif.config import MemSIFConfig
from memsif.errors import LLMError, LLMOutputError
from memsif.llm.base import NO_WORDS, YES_WORDS, Generation, Runtime, common_length, first_tokens, label_shares, render
from memsif.llm.packaged import is_packaged, packaged_gguf, packaged_model
from memsif.locks import FairLock, check_cancelled
from memsif.prompts import Prompt

if TYPE_CHECKING:
    import torch
    from torch import Tensor
    from transformers import DynamicCache, PreTrainedModel, PreTrainedTokenizerBase, TextIteratorStreamer
    from transformers.cache_utils import DynamicLayer

    from memsif.llm.structured import JsonSchemaLogits

log = logging.getLogger(__name__)


def _answer_token_ids(tokenizer: PreTrainedTokenizerBase, words: Sequence[str]) -> list[int]:
    return first_tokens(lambda text: tokenizer.encode(text, add_special_tokens=False), words)


class TransformersLLM:
    """A causal LM run by transformers/torch on CPU or GPU."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, name: str,
                 device: str = "cpu") -> None:
        import torch

        self._torch = torch
        self._model = model.eval()  # type: ignore[no-untyped-call]  # transformers leaves PreTrainedModel.eval unannotated
        self._tok = tokenizer
        if self._tok.pad_token_id is None:
            self._tok.pad_token = self._tok.eos_token
        self._tok.padding_side = "left"
        self.name = name
        self._device = device
        dtype = str(getattr(model, "dtype", "")).replace("torch.", "")
        self.runtime = Runtime("transformers", f"{dtype} on {device}" if dtype else device)
        self._yes = _answer_token_ids(tokenizer, YES_WORDS)
        self._no = _answer_token_ids(tokenizer, NO_WORDS)
        self._lock = FairLock()
        self._json: JsonSchemaLogits | None = None
        self._kv_ids: list[int] = []  # the stored prompt prefix of scored calls and its key/value tensors
        self._kv: list[tuple[Tensor, Tensor]] = []
        #: tokens the model attends to (prompt + answer)
        self.context_window = int(getattr(model.config, "max_position_embeddings", 0) or 4096)

    @classmethod
    def from_config(cls, config: MemSIFConfig) -> TransformersLLM:
        """Load the configured model; GGUF files are de-quantised once and cached.

        Raises:
            LLMError: the model or its GGUF file cannot be found or read.
        """
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # MemSIF reports its own progress
        if config.model.llm_threads:
            torch.set_num_threads(config.model.llm_threads)
        device = config.model.llm_device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if is_packaged(config.model.llm_model):
            folder, gguf_file = packaged_gguf(config.model.llm_model, config.store.resolved_cache_dir)
            source, name = str(folder), packaged_model(config.model.llm_model).name
        else:
            source, gguf_file, name = config.model.llm_model, config.model.llm_gguf_file, config.model.llm_model
        loaded_in = None  # a dtype settled before loading (large GGUF files), else chosen after
        try:
            if gguf_file:
                loaded_in = gguf_dtype(config.model.llm_dtype, device, Path(source) / gguf_file)
                dtype_name = str(loaded_in or torch.float32).replace("torch.", "")
                cached = _gguf_cache_dir(config.store.resolved_cache_dir, source, gguf_file, dtype_name)
                if not (cached / "config.json").exists():
                    log.info("De-quantising %s/%s to %s once (cached in %s)", source, gguf_file, dtype_name, cached)
                    model = AutoModelForCausalLM.from_pretrained(source, gguf_file=gguf_file,
                                                                 dtype=loaded_in or torch.float32)
                    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=gguf_file)
                    _save_atomically(model, tokenizer, cached)
                else:
                    model = AutoModelForCausalLM.from_pretrained(cached, dtype=loaded_in or torch.float32)
                    tokenizer = AutoTokenizer.from_pretrained(cached)
            else:
                load_dtype = torch.float32 if device == "cpu" else "auto"
                model = AutoModelForCausalLM.from_pretrained(source, dtype=load_dtype)
                tokenizer = AutoTokenizer.from_pretrained(source)
        except (OSError, ValueError) as exc:
            raise LLMError(f"Could not load LLM {source!r} ({exc}). Set MEMSIF_LLM_MODEL to a local folder "
                           "or a hub id reachable from here, or use MEMSIF_LLM_BACKEND=openai.") from exc
        if loaded_in is None:  # the dtype is chosen now: measured (auto on CPU) or the setting's
            dtype = (measured_cpu_dtype(model, config.store.resolved_cache_dir, name)
                     if config.model.llm_dtype == "auto" and device == "cpu"
                     else _resolve_dtype(config.model.llm_dtype, device))
            if dtype is not None:
                model = model.to(dtype)  # type: ignore[arg-type]  # @wraps(nn.Module.to) hides the binding of self
        return cls(model.to(device), tokenizer, name, device)  # type: ignore[arg-type]  # as above

    def _render(self, prompt: Prompt) -> str:
        return render(prompt, self._chat if getattr(self._tok, "chat_template", None) else None)

    def _chat(self, messages: list[dict[str, str]]) -> str:
        return cast(str, self._tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def _last_token_probs(self, prompts: Sequence[Prompt]) -> Tensor:
        """(n, vocab) softmax of the next-token logits after each rendered prompt.

        Scored decisions are mostly prompt tokens, so tokens are computed once where they can be: the
        longest prefix the prompts share with each other (a trajectory judge's new segment before its
        K candidates) is run once and its key/value cache repeated across the batch, and the prefix a
        call shares with the previous call's (the template's opening) is taken from the stored cache.
        The rest of each prompt runs as one right-padded batch. Same logits as one full forward pass
        per prompt, up to float rounding (test ``test_prefix_reuse_gives_the_full_pass_probabilities``).
        """
        from transformers import DynamicCache

        torch = self._torch
        rows = [self._tok(self._render(p), add_special_tokens=False)["input_ids"] for p in prompts]
        with self._lock, torch.inference_mode():
            shortest = min(len(r) for r in rows)
            reuse = min(common_length([self._kv_ids, *rows]), shortest - 1)
            cache = DynamicCache()  # the first ``reuse`` tokens of the stored prefix
            for layer, (keys, values) in enumerate(self._kv if reuse > 0 else []):
                cache.update(keys[:, :, :reuse].clone(), values[:, :, :reuse].clone(), layer)
            start = reuse
            if len(rows) > 1:
                shared = min(common_length(rows), shortest - 1)
                if shared > reuse:
                    ids = torch.tensor([rows[0][reuse:shared]], device=self._device)
                    self._model(input_ids=ids, cache=cache, use_cache=True,
                                position_ids=torch.arange(reuse, shared, device=self._device)[None], logits_to_keep=1)
                    start = shared
                self._store_cache(rows[0][:start], cache)
                cache.batch_repeat_interleave(len(rows))
            tails = [r[start:] for r in rows]
            width = max(len(t) for t in tails)
            pad = self._tok.pad_token_id
            ids = torch.tensor([t + [pad] * (width - len(t)) for t in tails], device=self._device)
            mask = torch.tensor([[1] * (start + len(t)) + [0] * (width - len(t)) for t in tails], device=self._device)
            positions = torch.arange(start, start + width, device=self._device).expand(len(rows), -1)
            last = torch.tensor([len(t) - 1 for t in tails], device=self._device)
            keep = torch.unique(last)
            out = self._model(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache,
                              use_cache=True, logits_to_keep=keep)
            if len(rows) == 1:
                self._store_cache(rows[0], out.cache)
            logits = out.logits[torch.arange(len(rows)), torch.searchsorted(keep, last)]
            return cast("Tensor", torch.softmax(logits.float(), dim=-1))

    def _store_cache(self, ids: Sequence[int], cache: DynamicCache) -> None:
        """Keep ``cache`` (batch of one, covering ``ids``) for the next scored call's shared prefix."""
        self._kv_ids = list(ids)
        layers = cast("list[DynamicLayer]", cache.layers)
        self._kv = [(cast("Tensor", layer.keys), cast("Tensor", layer.values)) for layer in layers] if ids else []

    def yes_probability(self, prompts: Sequence[Prompt]) -> list[float]:
        if not prompts:
            return []
        if not self._yes or not self._no:
            raise LLMOutputError(f"{self.name}: its tokenizer has no single token for yes/no.")
        probs = self._last_token_probs(prompts)
        return [label_shares([y, n], ("yes", "no"), self.name)[0]
                for y, n in zip(probs[:, self._yes].sum(-1).tolist(), probs[:, self._no].sum(-1).tolist(), strict=True)]

    def choice_probabilities(self, prompt: Prompt, labels: Sequence[str]) -> list[float]:
        ids = [_answer_token_ids(self._tok, [label]) for label in labels]
        if any(not i for i in ids):
            raise LLMOutputError(f"{self.name}: some labels have no token: {labels}")
        probs = self._last_token_probs([prompt])[0]
        return label_shares([float(probs[i].sum()) for i in ids], labels, self.name)

    def generate(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                 json_schema: dict[str, Any] | None = None, stop: Sequence[str] = ()) -> Generation:
        """Free text, or with ``json_schema`` only tokens that keep the reply valid JSON of that schema;
        generation also ends at any of the ``stop`` strings."""
        return self._generate([prompt], max_new_tokens, temperature, json_schema, stop)[0]

    def generate_stream(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                        stop: Sequence[str] = ()) -> Iterator[str | Generation]:
        """``generate`` piece by piece (``memsif.llm.generate_streamed``): text pieces as transformers'
        streamer decodes them, then one ``Generation`` with the whole text and its token counts."""
        import threading

        from transformers import TextIteratorStreamer

        streamer = TextIteratorStreamer(self._tok, skip_prompt=True, skip_special_tokens=True)
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["result"] = self._generate([prompt], max_new_tokens, temperature, None, stop, streamer)
            except Exception as exc:  # handed to the caller below
                box["error"] = exc
                streamer.end()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        yield from filter(None, streamer)
        worker.join()
        if "error" in box:
            raise box["error"]
        yield box["result"][0]

    def generate_batch(self, prompts: Sequence[Prompt], max_new_tokens: int = 512, temperature: float = 0.1,
                       json_schema: dict[str, Any] | None = None) -> list[Generation]:
        """``generate`` for several prompts as one left-padded batch (``memsif.llm.generate_many``):
        on CPU the per-token cost of a small model is mostly fixed overhead, so four prompts decode in
        about 1.4× the time of one."""
        return self._generate(list(prompts), max_new_tokens, temperature, json_schema, ())

    def _generate(self, prompts: list[Prompt], max_new_tokens: int, temperature: float,
                  json_schema: dict[str, Any] | None, stop: Sequence[str],
                  streamer: TextIteratorStreamer | None = None) -> list[Generation]:
        torch = self._torch
        texts = [self._render(p) for p in prompts]
        with self._lock, torch.inference_mode():
            batch = self._tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self._device)
            width = int(batch["input_ids"].shape[1])
            kwargs: dict[str, Any] = {"do_sample": temperature > 0, "streamer": streamer}
            if temperature > 0:
                kwargs["temperature"] = temperature
            from transformers import LogitsProcessorList, StoppingCriteriaList

            if json_schema is not None:
                if self._json is None:
                    from memsif.llm.structured import JsonSchemaLogits

                    self._json = JsonSchemaLogits(self._tok)
                kwargs["logits_processor"] = LogitsProcessorList([self._json.processor(json_schema, width)])
            if stop:
                kwargs.update(stop_strings=list(stop), tokenizer=self._tok)
            criteria: list[_YieldToInteractive | _LoopStop] = [_YieldToInteractive(self._lock)]
            if json_schema is None and len(prompts) == 1:
                criteria.append(_LoopStop(width))
            kwargs["stopping_criteria"] = StoppingCriteriaList(criteria)
            out = self._model.generate(**batch, max_new_tokens=max_new_tokens,
                                       pad_token_id=self._tok.pad_token_id, **kwargs)
        results = []
        for row in range(len(prompts)):
            n_in = int(batch["attention_mask"][row].sum())
            new_tokens = out[row, width:]
            n_out = int((new_tokens != self._tok.pad_token_id).sum()) if len(prompts) > 1 else int(new_tokens.shape[0])
            # A reply cut mid-character (stop rule, token cap) would end in U+FFFD; drop that fragment.
            text = cast(str, self._tok.decode(new_tokens, skip_special_tokens=True)).rstrip("\ufffd")
            results.append(Generation(text, n_in, n_out))
        return results

    def count_tokens(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False))


class _YieldToInteractive:
    """Never stops generation; between two tokens of a generation it lets waiting calls of a more
    urgent class use the model (a chat answer during a build; a build during CoreFact extraction;
    ``memsif.locks``), then continues.
    The generation's own state (KV cache, tokens so far) is local to it, so nothing is disturbed."""

    def __init__(self, lock: FairLock) -> None:
        self.lock = lock

    def __call__(self, input_ids: Tensor, scores: Tensor, **kwargs: Any) -> Tensor:
        import torch

        check_cancelled()  # a job whose memory was replaced stops mid-reply
        self.lock.yield_to_urgent()
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


class _LoopStop:
    """Ends free-text generation once the reply repeats itself: the last ``n``-token window already
    occurred earlier in the reply. Small models otherwise loop until the token cap (a 512-token
    answer costs ~30 s on 2 cores); the text up to the loop is kept."""

    def __init__(self, prompt_length: int, n: int = 8) -> None:
        self.prompt_length = prompt_length
        self.n = n

    def __call__(self, input_ids: Tensor, scores: Tensor, **kwargs: Any) -> Tensor:
        import torch

        n = self.n
        done = [len(row) > n and tuple(row[-n:]) in {tuple(row[i:i + n]) for i in range(len(row) - n)}
                for row in input_ids[:, self.prompt_length:].tolist()]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


#: Above this many parameters the dtype is chosen by the CPU's flags: measuring would copy the model.
MEASURE_DTYPE_MAX_PARAMS = 1_000_000_000


def _cpu_name() -> str:
    import platform

    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _time_forward(model: PreTrainedModel, steps: int = 3, prompt_tokens: int = 192, decode_tokens: int = 8) -> float:
    """Seconds of the fastest of ``steps`` runs of a prompt forward plus single-token decode steps
    (what a judge call and a generation do), after one warm-up run."""
    import torch

    ids = torch.randint(100, 1000, (1, prompt_tokens))
    best = float("inf")
    with torch.inference_mode():
        for k in range(steps + 1):
            start = time.perf_counter()
            out = model(input_ids=ids, use_cache=True)
            for _ in range(decode_tokens):
                out = model(input_ids=ids[:, -1:], cache=out.cache, use_cache=True)
            if k:  # the first run warms up
                best = min(best, time.perf_counter() - start)
    return best


def measured_cpu_dtype(model: PreTrainedModel, cache_root: Path, name: str,
                       timer: Callable[[PreTrainedModel], float] = _time_forward) -> torch.dtype:
    """float32 or bfloat16, whichever runs ``model`` faster on this CPU (``llm_dtype=auto``): a prompt
    forward and eight decode steps timed in both (on a bfloat16 copy, so the float32 weights stay
    exact). The choice is cached in ``cache_root/dtype-choice.json`` per CPU model, torch version and
    model; models over 1B parameters fall back to the CPU flags (AVX512-BF16 or AMX → bfloat16).
    Returns a torch dtype."""
    import copy

    import torch

    key = f"{_cpu_name()}|torch {torch.__version__}|{name}"
    cache = cache_root / "dtype-choice.json"
    try:
        known: dict[str, Any] = json.loads(cache.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return cast("torch.dtype", getattr(torch, known[key]["dtype"]))
    if sum(p.numel() for p in model.parameters()) > MEASURE_DTYPE_MAX_PARAMS:
        return cast("torch.dtype", _resolve_dtype("auto", "cpu"))  # "auto" on CPU always names a dtype
    fp32 = timer(model)
    bf16 = timer(copy.deepcopy(model).to(torch.bfloat16))  # type: ignore[arg-type]  # @wraps(nn.Module.to) hides the binding of self
    chosen = "bfloat16" if bf16 < fp32 else "float32"
    log.info("llm_dtype auto on %s: float32 %.3f s, bfloat16 %.3f s per probe → %s", key, fp32, bf16, chosen)
    known[key] = {"dtype": chosen, "float32_s": round(fp32, 4), "bfloat16_s": round(bf16, 4)}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(known, indent=1))
        tmp.replace(cache)
    except OSError as exc:  # a read-only cache costs a measurement next time, nothing else
        log.warning("could not cache the dtype choice in %s: %s", cache, exc)
    return cast("torch.dtype", getattr(torch, chosen))


def _resolve_dtype(setting: str, device: str) -> torch.dtype | None:
    """torch dtype for ``llm_dtype``; None keeps what was loaded."""
    import torch

    if setting == "auto":
        if device != "cpu":
            return None
        fast_bf16 = any(getattr(torch.cpu, probe, lambda: False)()
                        for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"))
        return torch.bfloat16 if fast_bf16 else torch.float32
    if setting not in ("float32", "bfloat16", "float16"):
        raise LLMError(f"llm_dtype must be auto, float32, bfloat16 or float16, not {setting!r}.")
    return cast("torch.dtype", getattr(torch, setting))


#: GGUF files at least this large (bytes; a 4-bit file of ~1B parameters) are de-quantised straight
#: to bfloat16 under ``llm_dtype=auto`` on CPU: in float32 the packaged 1.5B held 10.4 GB resident
#: (float32 weights, then a bfloat16 copy of them); in bfloat16 it never holds more than the bfloat16 model.
BF16_GGUF_BYTES = 500_000_000


def gguf_dtype(setting: str, device: str, path: Path) -> torch.dtype | None:
    """The torch dtype to de-quantise the GGUF file ``path`` into, or None to load it in float32 and
    choose after (``measured_cpu_dtype``): the ``llm_dtype`` setting when it names one; under "auto"
    on CPU, bfloat16 for files of ``BF16_GGUF_BYTES`` and more.

    Raises:
        LLMError: an unknown ``llm_dtype``.
    """
    import torch

    if setting != "auto":
        return _resolve_dtype(setting, device)
    if device == "cpu" and path.exists() and path.stat().st_size >= BF16_GGUF_BYTES:
        return torch.bfloat16
    return None


def _gguf_cache_dir(cache_root: Path, source: str, gguf_file: str, dtype: str = "float32") -> Path:
    """Folder of the de-quantised copy of ``source/gguf_file`` in ``dtype`` (keyed by path and size)."""
    path = Path(source) / gguf_file
    stamp = f"{source}|{gguf_file}|{path.stat().st_size if path.exists() else ''}"
    digest = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    suffix = "" if dtype == "float32" else f"-{dtype}"
    return cache_root / "transformers" / f"{Path(gguf_file).stem}-{digest}{suffix}"


def _save_atomically(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, target: Path) -> None:
    """Write to a temporary sibling and rename, so a crash never leaves a half-written cache."""
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    # The weights are already de-quantised to float32; drop the GGUF marks that make
    # transformers refuse to serialise them.
    model.hf_quantizer = None  # type: ignore[assignment]  # undeclared on PreTrainedModel: typed by nn.Module.__getattr__
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, target)
    except OSError as exc:
        if (target / "config.json").exists():  # another process wrote the same cache first
            return
        log.warning("Could not cache de-quantised model in %s (%s); it will be rebuilt next time.", target, exc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
