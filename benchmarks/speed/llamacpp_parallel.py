"""CoreFact extraction one batch after another against a wave of batches decoded together on llama.cpp
(``FactsHandle.generate_batch``), on the same extraction prompts, in one run on one host.

The prompts are conv-26's first ``--batches`` extraction batches (``core_extract.build``, 8 messages each).
Prints the seconds of each way, their ratio, the tokens written, and how many replies are the same text
(greedy both ways; batched arithmetic may round differently) and read as the same facts.

    PYTHONPATH=. python benchmarks/speed/llamacpp_parallel.py [--batches 8] [--out FILE.json]
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
    start = time.perf_counter()
    one = [llm.generate(p, max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0, json_schema=grammar) for p in prompts]
    one_s = time.perf_counter() - start
    start = time.perf_counter()
    wave = llm.generate_batch(prompts, max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0, json_schema=grammar)
    wave_s = time.perf_counter() - start

    def facts(text: str) -> list[str]:
        try:
            return [f.statement for f in parse_json_reply(text, reply_model).facts]
        except Exception as exc:  # the figure is whether both read the same
            return [f"unreadable: {exc}"]

    result = {"model": llm.name, "batches": len(prompts), "one_by_one_s": round(one_s, 1),
              "together_s": round(wave_s, 1), "ratio": round(wave_s / one_s, 3),
              "written_one_by_one": sum(g.tokens_out for g in one), "written_together": sum(g.tokens_out for g in wave),
              "same_text": sum(a.text == b.text for a, b in zip(one, wave, strict=True)),
              "same_facts": sum(facts(a.text) == facts(b.text) for a, b in zip(one, wave, strict=True)),
              "cpu": platform.processor() or subprocess.run(["lscpu"], capture_output=True, text=True).stdout[:400],
              "measured": time.strftime("%Y-%m-%d %H:%M")}
    print(json.dumps(result, indent=1))
    for a, b in zip(one, wave, strict=True):
        if a.text != b.text:
            print("one by one:", a.text[:300], "\ntogether:  ", b.text[:300], "\n")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
