"""Several prompts decoded together on one llama.cpp context, one sequence each (CoreFact extraction's
waves of ``fact_parallel`` batches).

On a CPU a decoding step of a small model is bound by reading its weights, not by arithmetic: one step
that carries a token of each of eight sequences costs little more than a step that carries one token
(``benchmarks/speed/llamacpp_parallel.py`` measures the ratio on the host it runs on). The prompts' common
prefix (the extraction's instructions, fact types and worked example) is evaluated once for every
sequence and kept for the next wave; each prompt's own rest is evaluated in shared batches; then every
unfinished sequence gets one token per step, greedily, under its own JSON grammar mask. Where the grammar
allows one continuation alone (``{"facts": [{"subject": "`` after ``{``, ``", "about": "`` after a
subject), those tokens are written without asking the model and evaluated in the next step beside the
others' (``JsonMask.forced``): about a third of an extraction reply's tokens take no step of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memsif.errors import LLMError
from memsif.llm.base import common_length
from memsif.llm.structured import JsonMask

#: Tokens one ``llama_decode`` call carries (prompt chunks and decoding steps alike).
BATCH_TOKENS = 512
#: Context cells per sequence: the longest extraction prompt (~1,100 tokens) and its reply fit.
CELLS_PER_SEQUENCE = 1536

#: A reply's grammar (None: free text).
Mask = JsonMask | None


class ParallelContext:
    """A llama.cpp context over a loaded model (``model``: llama-cpp-python's ``_LlamaModel``) that holds
    ``sequences`` sequences with a unified KV cache (their common prefix is stored once).

    Raises:
        LLMError: llama.cpp could not make the context.
    """

    def __init__(self, lib: Any, model: Any, threads: int, sequences: int) -> None:
        self._lib, self.sequences = lib, sequences
        params = lib.llama_context_default_params()
        params.n_ctx = sequences * CELLS_PER_SEQUENCE
        params.n_batch = params.n_ubatch = BATCH_TOKENS
        params.n_seq_max = sequences
        params.kv_unified = True
        params.n_threads = params.n_threads_batch = threads
        self._ctx = lib.llama_init_from_model(model.model, params)
        if not self._ctx:
            raise LLMError(f"llama.cpp could not make a context of {sequences} sequences")
        self._vocab = lib.llama_model_get_vocab(model.model)
        self._n_vocab = lib.llama_vocab_n_tokens(self._vocab)
        self._batch = lib.llama_batch_init(BATCH_TOKENS, 0, sequences)
        self._prefix: list[int] = []  # the common prefix the cache holds for every sequence
        #: Write the tokens a grammar forces without a step of their own (off only to measure what it saves).
        self.fast_forward = True

    def close(self) -> None:
        """Free the context and its batch (the process's end frees them too, so no finaliser runs this)."""
        if self._ctx:
            self._lib.llama_batch_free(self._batch)
            self._lib.llama_free(self._ctx)
            self._ctx = None

    def generate(self, prompts: Sequence[list[int]], max_new_tokens: int, masks: Sequence[Mask],
                 pause: Callable[[], None]) -> list[list[int]]:
        """The greedy reply tokens of each prompt (token ids, BOS included where the model adds one), at
        most ``max_new_tokens`` each, ended at an end-of-generation token (not returned); ``masks[i]`` keeps
        prompt i's reply inside its grammar. ``pause`` runs between two ``llama_decode`` calls (a
        cancelled job raises there; an urgent call may run).

        Raises:
            LLMError: the prompts do not fit the context (``CELLS_PER_SEQUENCE`` each), or llama.cpp failed.
        """
        if not 0 < len(prompts) <= self.sequences:
            raise LLMError(f"{len(prompts)} prompts for a context of {self.sequences} sequences")
        prefix = common_prefix(prompts)[:min(len(p) for p in prompts) - 1]  # each prompt keeps a token of its own
        need = len(prefix) + sum(len(p) - len(prefix) + max_new_tokens for p in prompts)
        if need > self.sequences * CELLS_PER_SEQUENCE:
            raise LLMError(f"{len(prompts)} prompts need {need} context cells, more than "
                           f"{self.sequences * CELLS_PER_SEQUENCE}")
        kept = common_length([self._prefix, prefix]) if self._prefix and prefix else 0
        memory = self._lib.llama_get_memory(self._ctx)
        if kept == 0:
            self._lib.llama_memory_clear(memory, True)
        else:  # the previous wave's own tokens and replies go; the prefix they share stays
            self._lib.llama_memory_seq_rm(memory, -1, kept, -1)
        everyone = list(range(self.sequences))
        for start in range(kept, len(prefix), BATCH_TOKENS):  # the shared prefix: one cell per token for all
            pause()
            self._decode([(t, start + i, everyone, False) for i, t in enumerate(prefix[start:start + BATCH_TOKENS])])
        self._prefix = list(prefix)
        rests = [(t, i, [s], False) for s, p in enumerate(prompts) for i, t in enumerate(p[:-1]) if i >= len(prefix)]
        for start in range(0, len(rests), BATCH_TOKENS):  # each prompt's own tokens but its last, in shared batches
            pause()
            self._decode(rests[start:start + BATCH_TOKENS])
        return self._reply(prompts, max_new_tokens, masks, pause)

    def _reply(self, prompts: Sequence[list[int]], max_new_tokens: int, masks: Sequence[Mask],
               pause: Callable[[], None]) -> list[list[int]]:
        """Decode every sequence until each has ended, from each prompt's last token: a step (one
        ``llama_decode``) carries each live sequence's new tokens, the one picked and those its grammar
        forces after it; logits are read from each sequence's last row only."""
        step = [(p[-1], len(p) - 1, [s], True) for s, p in enumerate(prompts)]
        replies: list[list[int]] = [[] for _ in prompts]
        while step:
            pause()
            self._decode(step)
            rows, step = step, []
            for k, (_, _, (s,), wants) in enumerate(rows):
                if not wants:
                    continue
                token = self._pick(k, masks[s])
                if self._lib.llama_vocab_is_eog(self._vocab, token):
                    continue
                new = [token]
                mask = masks[s]
                if mask is not None:
                    mask.advance(new)
                if mask is not None and self.fast_forward:
                    room = min(max_new_tokens - len(replies[s]) - 1, BATCH_TOKENS // self.sequences - 1)
                    forced = mask.forced()[:max(0, room)]  # the step stays within one batch
                    mask.advance(forced)
                    new += forced
                start = len(prompts[s]) + len(replies[s])
                replies[s] += new
                if len(replies[s]) < max_new_tokens:
                    step += [(t, start + i, [s], i == len(new) - 1) for i, t in enumerate(new)]
        return replies

    def _pick(self, index: int, mask: Mask) -> int:
        """The greedy token at batch output ``index``, inside ``mask``'s grammar."""
        pointer = self._lib.llama_get_logits_ith(self._ctx, index)
        logits = np.ctypeslib.as_array(pointer, shape=(self._n_vocab,)).astype(np.float32)
        if mask is not None:
            logits = mask.apply(logits)
        return int(np.argmax(logits))

    def _decode(self, rows: list[tuple[int, int, list[int], bool]]) -> None:
        """One ``llama_decode`` of ``rows`` (token, position, sequence ids, wants logits).

        Raises:
            LLMError: llama.cpp refused the batch.
        """
        batch = self._batch
        for k, (token, pos, seqs, wants) in enumerate(rows):
            batch.token[k], batch.pos[k], batch.n_seq_id[k] = token, pos, len(seqs)
            for j, seq in enumerate(seqs):
                batch.seq_id[k][j] = seq
            batch.logits[k] = int(wants)
        batch.n_tokens = len(rows)
        code = self._lib.llama_decode(self._ctx, batch)
        if code != 0:
            self._prefix = []
            raise LLMError(f"llama.cpp could not decode a batch of {len(rows)} tokens (code {code})")


def common_prefix(prompts: Sequence[list[int]]) -> list[int]:
    """The longest run of tokens every prompt begins with."""
    return prompts[0][:common_length(prompts)]
