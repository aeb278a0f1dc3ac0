"""How close the default LLM's forward passes run to this CPU's matrix-multiply ceiling.

The judge calls of a memory build and the answer's prompt are prompt tokens through SmolLM2-135M:
about 2 × (non-embedding parameters) multiply-adds per token plus attention. This script measures

1. the ceiling: torch's large square matrix products on this CPU in bfloat16 and float32 (GFLOP/s,
   the best a dense forward pass can do here with this runtime);
2. the model: seconds and GFLOP/s for a judge-sized batch (3 prompts of ~150 tokens, as the
   trajectory judge sends) and for one answer prompt of ~1,550 tokens (the 1,500-token context of
   the quality target), in the dtype ``llm_dtype=auto`` chose;
3. the floors they imply: the seconds those prompts would take at the ceiling.

    PYTHONPATH=. python benchmarks/speed/compute_floor.py [--answer-tokens 1550] [--judge-tokens 150]

Run it on an idle machine; it prints a markdown table.
"""

from __future__ import annotations

import argparse
import time

import torch

from memsif.config import MemSIFConfig
from memsif.llm import load_llm


def best_of(fn, repeats: int = 5) -> float:
    """The fastest of ``repeats`` timed calls of ``fn`` (after one warm-up), in seconds."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def matmul_gflops(dtype, n: int = 2048) -> float:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    return 2 * n**3 / best_of(lambda: a @ b) / 1e9


def forward_flops(config, tokens: int) -> float:
    """Multiply-adds ×2 of one forward pass over ``tokens`` prompt tokens (causal attention), with the
    output projection at the last position only (what scored calls and the first generated token need)."""
    d, layers, inter = config.hidden_size, config.num_hidden_layers, config.intermediate_size
    kv = d * config.num_key_value_heads // config.num_attention_heads
    per_layer = 2 * d * d + 2 * d * kv + 3 * d * inter  # q, o; k, v; gate, up, down
    dense = 2 * per_layer * layers * tokens
    attention = 2 * 2 * layers * d * tokens * (tokens + 1) / 2  # QK^T and AV over the causal triangle
    head = 2 * d * config.vocab_size
    return dense + attention + head


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answer-tokens", type=int, default=1550)
    parser.add_argument("--judge-tokens", type=int, default=150)
    args = parser.parse_args()
    torch.manual_seed(0)
    llm = load_llm(MemSIFConfig.from_env())
    model = llm._model
    cfg = model.config
    dtype = next(model.parameters()).dtype
    ceiling = {"bfloat16": matmul_gflops(torch.bfloat16), "float32": matmul_gflops(torch.float32)}
    vocab = cfg.vocab_size

    def run(batch: int, tokens: int) -> float:
        ids = torch.randint(100, vocab - 100, (batch, tokens))
        with torch.inference_mode():
            return best_of(lambda: model(input_ids=ids, logits_to_keep=1), repeats=3)

    rows = []
    for label, batch, tokens in (("trajectory judge batch", 3, args.judge_tokens),
                                 ("segment judge prompt", 1, args.judge_tokens),
                                 ("answer prompt", 1, args.answer_tokens)):
        seconds = run(batch, tokens)
        flops = batch * forward_flops(cfg, tokens)
        at_ceiling = flops / (ceiling[str(dtype).removeprefix("torch.")] * 1e9)
        rows.append((label, f"{batch} × {tokens}", seconds, flops / seconds / 1e9, at_ceiling))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, model in {dtype}")
    print()
    print("| ceiling (2048² matrix product) | GFLOP/s |")
    print("|---|---|")
    for name, value in ceiling.items():
        print(f"| {name} | {value:.0f} |")
    print()
    print("| forward pass | tokens | seconds | GFLOP/s | share of the ceiling | seconds at the ceiling |")
    print("|---|---|---|---|---|---|")
    for label, shape, seconds, gflops, floor in rows:
        share = floor / seconds
        print(f"| {label} | {shape} | {seconds:.3f} | {gflops:.0f} | {share:.0%} | {floor:.3f} |")


if __name__ == "__main__":
    main()
