"""Other runtimes for the packaged SmolLM2-135M against the transformers back-end.

The same 75 judge prompts (30 segment judge prompts, 15 trajectory judge batches of 3, built from
conv-26 messages) and one long answer prompt go through:

- transformers in the dtype ``llm_dtype=auto`` chose (the default back-end) and in float32 (the
  reference for the judge probabilities);
- llama.cpp (``MEMSIF_LLM_BACKEND=llamacpp``, the installed llama-cpp-python build, Q4_1 GGUF);
- CTranslate2 int8 / bfloat16 (only when ``ctranslate2`` is installed; it is not a dependency:
  ``pip install ctranslate2==4.8.5``), converted from the de-quantised weights.

Prints per runtime: seconds for the judge prompts, the largest and mean |P(yes) − float32 P(yes)|, how
many verdicts flip at 0.5, seconds for the answer prompt's prefill (one generated token) and for 16
generated tokens.

    PYTHONPATH=. python benchmarks/speed/runtime_alternatives.py
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from memsif.config import MemSIFConfig
from memsif.eval.data import load_locomo
from memsif.llm import load_llm
from memsif.prompts import answer, segment_judge, trajectory_judge

ROOT = Path(__file__).resolve().parents[2]


def prompts():
    """Judge prompt groups (as the builders send them) and one answer prompt."""
    random.seed(0)
    msgs = load_locomo(str(ROOT / "assets" / "locomo-conv-26.json"))[0].messages
    groups = [[segment_judge.build(msgs[i - 3:i], msgs[i])] for i in random.sample(range(3, len(msgs)), 30)]
    for i in random.sample(range(20, len(msgs) - 2), 15):
        groups.append([trajectory_judge.build(msgs[j:j + 2], msgs[i:i + 2]) for j in random.sample(range(i - 2), 3)])
    context = "\n".join(f"[{m.time}] {m.speaker}: {m.text}" for m in msgs[:60])
    return groups, answer.build("When did Caroline go to the LGBTQ support group?", context)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def measure(name, yes, generate, groups, answer_prompt, reference):
    yes(groups[0])  # warm-up
    probs, judge_s = timed(lambda: np.array([p for g in groups for p in yes(g)]))
    _, prefill_s = timed(lambda: generate(answer_prompt, 1))
    _, answer_s = timed(lambda: generate(answer_prompt, 16))
    row = {"runtime": name, "judge_s": round(judge_s, 2), "prefill_s": round(prefill_s, 2),
           "answer16_s": round(answer_s, 2)}
    if reference is not None:
        diff = np.abs(probs - reference)
        row |= {"max_abs_dp": round(float(diff.max()), 3), "mean_abs_dp": round(float(diff.mean()), 3),
                "flips_at_0.5": int(((probs >= 0.5) != (reference >= 0.5)).sum())}
    print(json.dumps(row), flush=True)
    return probs


def main() -> None:
    import torch

    groups, answer_prompt = prompts()
    llm = load_llm(MemSIFConfig.from_env())
    tok = llm._tok
    print(f"answer prompt: {llm.count_tokens(llm._render(answer_prompt))} tokens", flush=True)

    def generate(p, n):
        return llm.generate(p, max_new_tokens=n, temperature=0.0)

    def set_dtype(dtype):
        llm._model.to(dtype)
        llm._kv_ids, llm._kv = [], []  # the stored prefix cache is in the other dtype

    default_dtype = llm._model.dtype
    set_dtype(torch.float32)
    reference = measure("transformers float32", llm.yes_probability, generate, groups, answer_prompt, None)
    set_dtype(default_dtype)
    measure(f"transformers {str(default_dtype).removeprefix('torch.')} (default)", llm.yes_probability, generate,
            groups, answer_prompt, reference)

    cpp = load_llm(MemSIFConfig.from_env().replace(llm_backend="llamacpp"))
    measure("llama.cpp Q4_1", cpp.yes_probability,
            lambda p, n: cpp.generate(p, max_new_tokens=n, temperature=0.0), groups, answer_prompt, reference)

    try:
        import ctranslate2
    except ImportError:
        print("ctranslate2 not installed: skipped", flush=True)
        return

    def tokens(p):
        return tok.convert_ids_to_tokens(tok(llm._render(p), add_special_tokens=False)["input_ids"])

    with tempfile.TemporaryDirectory() as tmp:
        for quantization in ("int8", "bfloat16"):
            out = Path(tmp) / quantization
            ctranslate2.converters.TransformersConverter(llm._model.config._name_or_path).convert(
                str(out), quantization=quantization)
            try:
                gen = ctranslate2.Generator(str(out), device="cpu", compute_type=quantization, intra_threads=2)
            except ValueError as exc:  # e.g. no efficient bfloat16 kernels for this CPU
                print(json.dumps({"runtime": f"CTranslate2 {quantization}", "error": str(exc)}), flush=True)
                continue

            def yes(ps, gen=gen):
                result = []
                for p in ps:
                    step = gen.generate_batch([tokens(p)], max_length=1, include_prompt_in_result=False,
                                              return_logits_vocab=True)
                    logits = np.array(step[0].logits[0], dtype=np.float64).reshape(-1)
                    probs = np.exp(logits - logits.max())
                    y, n = probs[llm._yes].sum(), probs[llm._no].sum()
                    result.append(y / (y + n))
                return result

            measure(f"CTranslate2 {quantization}", yes,
                    lambda p, n, gen=gen: gen.generate_batch([tokens(p)], max_length=n, include_prompt_in_result=False),
                    groups, answer_prompt, reference)


if __name__ == "__main__":
    main()
