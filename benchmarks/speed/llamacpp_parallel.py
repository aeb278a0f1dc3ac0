"""CoreFact extraction two ways on the same extraction prompts, in one run on one host: by default one batch
after another against a wave of batches decoded together on llama.cpp (``FactsHandle.generate_batch``);
with ``--compare fast-forward`` a wave with every reply token a step of the model against the same wave
where the tokens the grammar forces are written without a step (``ParallelContext.fast_forward``); with
``--compare width`` two waves of half the batches against one wave of them all.

The prompts are conv-26's first ``--batches`` extraction batches (``core_extract.build``, 8 messages each).
Prints the seconds of each way, their ratio, the tokens written, and how many replies are the same text
(greedy both ways; batched arithmetic may round differently) and read as the same facts.

    PYTHONPATH=. python benchmarks/speed/llamacpp_parallel.py [--batches 8] [--compare fast-forward|width]
        [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    from memsif.config import MemSIFConfig
    from memsif.eval.data import load_locomo
    from memsif.facts.core import EXTRACT_MAX_TOKENS
    from memsif.llm import load_llm
    from memsif.llm.structured import parse_json_reply
    from memsif.prompts import core_extract
    from memsif.records import parse_schema
    from memsif.timeparse import annotate_relative_dates, day_text

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--compare", choices=("one-by-one", "fast-forward", "width"), default="one-by-one")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    messages = load_locomo(str(ROOT / "assets" / "locomo-conv-26.json"))[0].messages
    schema = parse_schema("")
    prompts = [core_extract.build([(day_text(m.time), m.speaker, annotate_relative_dates(m.text, m.time)[0])
                                   for m in messages[k * 8:(k + 1) * 8]], schema) for k in range(args.batches)]
    llm = load_llm(MemSIFConfig.from_env()).for_job("facts")
    reply_model = core_extract.response_schema(schema)
    grammar = core_extract.grammar(reply_model)
    llm.generate(prompts[0], max_new_tokens=8, temperature=0.0, json_schema=grammar)  # contexts made, warm
    llm.generate_batch(prompts[:2], max_new_tokens=8, temperature=0.0, json_schema=grammar)
    if args.compare == "one-by-one":
        start = time.perf_counter()
        one = [llm.generate(p, max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0, json_schema=grammar)
               for p in prompts]
        one_s = time.perf_counter() - start
    elif args.compare == "width":
        llm.generate_batch(prompts, max_new_tokens=8, temperature=0.0, json_schema=grammar)  # a context this wide
        half = len(prompts) // 2
        start = time.perf_counter()
        one = [*llm.generate_batch(prompts[:half], max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0,
                                   json_schema=grammar),
               *llm.generate_batch(prompts[half:], max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0,
                                   json_schema=grammar)]
        one_s = time.perf_counter() - start
    else:
        llm.generate_batch(prompts, max_new_tokens=8, temperature=0.0, json_schema=grammar)  # a context this wide
        llm.backend._parallel.fast_forward = False  # every token a step: what the wave cost before
        start = time.perf_counter()
        one = llm.generate_batch(prompts, max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0, json_schema=grammar)
        one_s = time.perf_counter() - start
        llm.backend._parallel.fast_forward = True
    start = time.perf_counter()
    wave = llm.generate_batch(prompts, max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0, json_schema=grammar)
    wave_s = time.perf_counter() - start

    def facts(text: str) -> list[str]:
        try:
            return [f.statement for f in parse_json_reply(text, reply_model).facts]
        except Exception as exc:  # the figure is whether both read the same
            return [f"unreadable: {exc}"]

    first, second = {"one-by-one": ("one_by_one", "together"), "fast-forward": ("every_token", "fast_forward"),
                     "width": ("two_half_waves", "one_wave")}[args.compare]
    result = {"model": llm.name, "batches": len(prompts), "compare": args.compare, f"{first}_s": round(one_s, 1),
              f"{second}_s": round(wave_s, 1), "ratio": round(wave_s / one_s, 3),
              f"written_{first}": sum(g.tokens_out for g in one), f"written_{second}": sum(g.tokens_out for g in wave),
              "same_text": sum(a.text == b.text for a, b in zip(one, wave, strict=True)),
              "same_facts": sum(facts(a.text) == facts(b.text) for a, b in zip(one, wave, strict=True)),
              "cpu": platform.processor() or subprocess.run(["lscpu"], capture_output=True, text=True).stdout[:400],
              "measured": time.strftime("%Y-%m-%d %H:%M")}
    print(json.dumps(result, indent=1))
    for a, b in zip(one, wave, strict=True):
        if a.text != b.text:
            print(f"{first}:", a.text[:300], f"\n{second}:", b.text[:300], "\n")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
