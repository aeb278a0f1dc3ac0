"""transformers against llama.cpp for one model on the three kinds of call the engine makes.

Each back-end runs in its own process (load time and peak memory are its own), on the same prompts
built from conv-26: 20 segment judge prompts (seconds per call; P(yes) compared between back-ends),
one CoreFact extraction prompt with the JSON schema (seconds, tokens written, whether it parses),
and one answer prompt with a context of ``--answer-tokens`` (seconds to the first streamed piece and
to the end, tokens written).

    PYTHONPATH=. python benchmarks/speed/backends_side_by_side.py [--model packaged:qwen2.5-coder-1.5b-instruct]
        [--backends transformers,llamacpp] [--answer-tokens 800]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one(model: str, backend: str, answer_tokens: int) -> dict:
    from memsif.config import MemSIFConfig
    from memsif.eval.data import load_locomo
    from memsif.llm import generate_streamed, load_llm
    from memsif.llm.structured import parse_json_reply
    from memsif.prompts import answer, core_extract, segment_judge
    from memsif.records import parse_schema
    from memsif.timeparse import day_text

    messages = load_locomo(str(ROOT / "assets" / "locomo-conv-26.json"))[0].messages
    start = time.perf_counter()
    llm = load_llm(MemSIFConfig.from_env(llm_model=model, llm_backend=backend))
    load_s = time.perf_counter() - start
    judges = [segment_judge.build(messages[i - 3:i], messages[i]) for i in range(3, 203, 10)]
    start = time.perf_counter()
    probs = [llm.yes_probability([p])[0] for p in judges]
    judge_s = (time.perf_counter() - start) / len(judges)
    schema = parse_schema("")
    model_json = core_extract.response_schema(schema)
    batch = messages[40:48]
    prompt = core_extract.build([(day_text(m.time), m.speaker, m.text) for m in batch], schema)
    start = time.perf_counter()
    gen = llm.generate(prompt, max_new_tokens=240, temperature=0.0, json_schema=model_json.model_json_schema())
    extract_s = time.perf_counter() - start
    try:
        parses = bool(parse_json_reply(gen.text, model_json))
    except Exception:  # the figure is whether it parses
        parses = False
    lines, used = [], 0
    for m in messages:
        line = f"- {m.speaker}: {m.text}"
        used += llm.count_tokens(line)
        if used > answer_tokens:
            break
        lines.append(line)
    ask = answer.build("What did Caroline research?", "\n".join(lines))
    first: list[float] = []
    start = time.perf_counter()
    out = generate_streamed(llm, ask, lambda piece: first or first.append(time.perf_counter() - start),
                            max_new_tokens=64, temperature=0.0, stop=answer.STOP)
    answer_s = time.perf_counter() - start
    return {"backend": backend, "model": llm.name, "load_s": round(load_s, 1), "judge_s_per_call": round(judge_s, 3),
            "judge_probs": [round(p, 4) for p in probs], "extract_s": round(extract_s, 2),
            "extract_tokens_out": gen.tokens_out, "extract_parses": parses,
            "extract_s_per_token": round(extract_s / max(gen.tokens_out, 1), 3),
            "answer_prompt_tokens": llm.count_tokens(ask.text),
            "answer_first_s": round(first[0] if first else answer_s, 2),
            "answer_s": round(answer_s, 2), "answer_tokens_out": out.tokens_out, "answer": out.text.strip()[:80],
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="packaged:qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--backends", default="transformers,llamacpp")
    parser.add_argument("--answer-tokens", type=int, default=800)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.model, args.one, args.answer_tokens)))
        return
    rows = []
    env = {**os.environ, "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}
    for backend in args.backends.split(","):
        done = subprocess.run([sys.executable, __file__, "--one", backend, "--model", args.model,
                               "--answer-tokens", str(args.answer_tokens)], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{backend} failed:\n{done.stderr[-2000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    ref = rows[0]["judge_probs"]
    print("| back-end | load s | judge s / call | max \\|ΔP(yes)\\| vs first | extraction s (tokens, s/token, parses) "
          "| answer prompt tokens | first piece s | answer s (tokens) | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        delta = max(abs(a - b) for a, b in zip(ref, r["judge_probs"], strict=True))
        print(f"| {r['backend']} | {r['load_s']} | {r['judge_s_per_call']:.2f} | {delta:.3f} | {r['extract_s']:.1f} "
              f"({r['extract_tokens_out']}, {r['extract_s_per_token']:.3f}, {r['extract_parses']}) "
              f"| {r['answer_prompt_tokens']} | {r['answer_first_s']:.1f} | {r['answer_s']:.1f} "
              f"({r['answer_tokens_out']}) "
              f"| {r['peak_rss_mb']:,} |")
    print("\nanswers: " + " / ".join(f"{r['backend']}: {r['answer']!r}" for r in rows))


if __name__ == "__main__":
    main()
