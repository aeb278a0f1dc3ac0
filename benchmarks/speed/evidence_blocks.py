"""Can an answer's evidence be read once and reused? Each block of the answer context (a day's
excerpts, or one line) is encoded on its own after the shared head (chat template, instructions,
"Memory:"), its key/value cache shifted into place (llama.cpp's ``llama_memory_seq_add``), and only
the question is read per answer: the prompt-cache / block-attention scheme, which would let a memory's
evidence be paid once. Compared, per question, with today's one-pass prompt: the greedy answer, its
token F1 against the gold answer, and the seconds of each read.

    PYTHONPATH=. python benchmarks/speed/evidence_blocks.py --blocks day --questions 20 --out FILE.jsonl

``--blocks day``: a day's header with its lines is one block (the context's text unchanged);
``line``: every line (headers too) is a block. The memory is the shipped example (conv-26).
Both reads run in one context with two sequences (``n_seq_max=2``, one unified KV cache); greedy
decoding, so the two answers differ only by how the context was read.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time

import numpy as np

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.eval.metrics import token_f1
from memsif.inspector.common import EXAMPLE_MEMORY
from memsif.prompts import answer as answer_prompt
from memsif.transfer import read_export

DAY = re.compile(r"^\d+ \w+ \d{4}:\n$")
BATCH = 512


class Reader:
    """The packaged model's llama.cpp context, re-made with two sequences over one KV cache."""

    def __init__(self, backend) -> None:
        import llama_cpp
        from llama_cpp import _internals

        self.lib, self.llm = llama_cpp, backend._llm
        params = self.llm.context_params
        params.n_seq_max, params.kv_unified = 2, True
        self.llm._ctx = _internals.LlamaContext(model=self.llm._model, params=params, verbose=False)
        self.ctx = self.llm._ctx.ctx
        self.mem = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(BATCH, 0, 1)

    def tokens(self, text: str, bos: bool = False) -> list[int]:
        return self.llm.tokenize(text.encode(), add_bos=bos, special=True)

    def decode(self, tokens: list[int], pos0: int, seq: int) -> None:
        for k in range(0, len(tokens), BATCH):
            part = tokens[k:k + BATCH]
            self.batch.n_tokens = len(part)
            for i, t in enumerate(part):
                self.batch.token[i], self.batch.pos[i] = t, pos0 + k + i
                self.batch.n_seq_id[i], self.batch.seq_id[i][0] = 1, seq
                self.batch.logits[i] = int(i == len(part) - 1)
            if self.lib.llama_decode(self.ctx, self.batch) != 0:
                raise RuntimeError("llama_decode failed")

    def greedy(self, n_prompt: int, max_new: int = 60) -> str:
        out: list[int] = []
        for _ in range(max_new):
            logits = np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx, -1), shape=(self.llm.n_vocab(),))
            token = int(np.argmax(logits))
            if self.lib.llama_vocab_is_eog(self.llm._model.vocab, token):
                break
            out.append(token)
            if "\n" in self.llm.detokenize(out).decode("utf-8", "ignore"):
                break
            self.decode([token], n_prompt + len(out) - 1, 0)
        return self.llm.detokenize(out).decode("utf-8", "ignore").split("\n")[0].strip()

    def one_pass(self, text: str) -> tuple[str, float]:
        self.lib.llama_memory_clear(self.mem, True)
        tokens = self.tokens(text, bos=True)
        start = time.perf_counter()
        self.decode(tokens, 0, 0)
        return self.greedy(len(tokens)), time.perf_counter() - start

    def blockwise(self, head: str, blocks: list[str], tail: str) -> tuple[str, float, float]:
        """Head in sequence 0; each block read in sequence 1 over a copy of the head, then shifted to its
        place and handed to sequence 0; then the tail. Returns the answer, the blocks' seconds and the
        tail's (what an answer would pay with every block cached)."""
        lib, mem = self.lib, self.mem
        lib.llama_memory_clear(mem, True)
        h = self.tokens(head, bos=True)
        self.decode(h, 0, 0)
        pos, block_s = len(h), 0.0
        for block in blocks:
            bt = self.tokens(block)
            lib.llama_memory_seq_cp(mem, 0, 1, 0, len(h))
            start = time.perf_counter()
            self.decode(bt, len(h), 1)
            block_s += time.perf_counter() - start
            lib.llama_memory_seq_rm(mem, 1, 0, len(h))
            lib.llama_memory_seq_add(mem, 1, len(h), len(h) + len(bt), pos - len(h))
            lib.llama_memory_seq_cp(mem, 1, 0, -1, -1)
            lib.llama_memory_seq_rm(mem, 1, -1, -1)
            pos += len(bt)
        tt = self.tokens(tail)
        start = time.perf_counter()
        self.decode(tt, pos, 0)
        tail_s = time.perf_counter() - start
        return self.greedy(pos + len(tt)), block_s, tail_s


def split_blocks(body: str, mode: str) -> list[str]:
    """The context's lines (each with its line break, the last without) grouped into blocks."""
    lines = [line + "\n" for line in body.split("\n")]
    lines[-1] = lines[-1][:-1]
    blocks: list[str] = []
    for line in lines:
        if not blocks or mode == "line" or DAY.match(line):
            blocks.append(line)
        else:
            blocks[-1] += line
    return blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", choices=("day", "line"), default="day")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    eng = MemSIF(MemSIFConfig.from_env(data_dir=tempfile.mkdtemp(prefix="memsif-blocks-")))
    ns = eng.import_namespace(read_export(EXAMPLE_MEMORY), "example")
    eng.load_models()
    reader = Reader(eng.llm)
    [sample] = load_locomo("../shared/data/locomo/locomo_dev.json", ["conv-26"])
    questions = sample.questions[::max(1, len(sample.questions) // args.questions)][:args.questions]
    rows = []
    with open(args.out, "w") as out:
        for q in questions:
            found = eng.ask(q.question, namespace=ns, question_date=q.question_date, generate=False)
            text = eng.llm._render(answer_prompt.build(q.question, found.context, q.question_date))
            i = text.index("Memory:\n") + len("Memory:\n")
            j = i + len(found.context)
            whole, whole_s = reader.one_pass(text)
            blocked, block_s, tail_s = reader.blockwise(text[:i], split_blocks(text[i:j], args.blocks), text[j:])
            row = {"question": q.question, "category": q.category, "gold": q.gold, "one_pass": whole,
                   "blocks": blocked, "same": whole == blocked, "f1_one_pass": token_f1(whole, q.gold),
                   "f1_blocks": token_f1(blocked, q.gold), "one_pass_s": round(whole_s, 2),
                   "blocks_s": round(block_s, 2), "question_only_s": round(tail_s, 2)}
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
    mean = lambda key: statistics.mean(r[key] for r in rows)  # noqa: E731
    print(f"{len(rows)} questions, --blocks {args.blocks}: same answer {sum(r['same'] for r in rows)}; "
          f"token F1 one pass {mean('f1_one_pass'):.3f}, blockwise {mean('f1_blocks'):.3f}; "
          f"dates (Temp) right: one pass {sum(r['f1_one_pass'] > 0.5 for r in rows if r['category'] == 'Temp')}, "
          f"blockwise {sum(r['f1_blocks'] > 0.5 for r in rows if r['category'] == 'Temp')} "
          f"of {sum(r['category'] == 'Temp' for r in rows)}; seconds one pass {mean('one_pass_s'):.2f}, "
          f"question only {mean('question_only_s'):.2f}")


if __name__ == "__main__":
    main()
