"""Profile of memory construction with the default models: where the seconds of a
Structured Interaction Memory build and of CoreFact extraction batches go.

Structured Interaction Memory (the first ``--messages`` of conv-26): embedding, key entities, judge
calls (the LLM's forward passes), and everything else (φ, profiles, store writes, sentence index).
CoreFact extraction (``--batches`` batches): per batch the prompt tokens and generated tokens, the
model's forward passes split into the prompt's (prefill) and the per-token ones (decode), the JSON
schema mask (lm-format-enforcer's logits processor), and the rest of ``generate`` and of the step
(tokenising, the grounding gate, consolidation, store writes). Prints a markdown table.

    python benchmarks/speed/profile_build.py [--messages 419] [--batches 4]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.io import load_transcripts

ROOT = Path(__file__).resolve().parents[2]
SECONDS: dict[str, float] = defaultdict(float)
COUNTS: dict[str, int] = defaultdict(int)


def timed(obj, name: str, label: str) -> None:
    """Replace ``obj.name`` by a wrapper adding its wall time to SECONDS[label]."""
    inner = getattr(obj, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - start
            COUNTS[label] += 1
    setattr(obj, name, wrapper)


@contextmanager
def stage(label: str):
    start = time.perf_counter()
    yield
    SECONDS[label] += time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=419)
    ap.add_argument("--batches", type=int, default=8)
    args = ap.parse_args()
    transcript = load_transcripts(ROOT / "assets" / "locomo-conv-26.json")[0]
    with tempfile.TemporaryDirectory() as data_dir:
        engine = MemSIF(MemSIFConfig.from_env(data_dir=data_dir))
        load = time.perf_counter()
        engine.load_models()
        print(f"model load {time.perf_counter() - load:.1f} s; LLM {engine.llm.name}, "
              f"dtype {next(engine.llm._model.parameters()).dtype}")
        llm, model = engine.llm, engine.llm._model
        timed(engine.embedder, "embed_documents", "embedding")
        timed(engine.entity_extractor, "extract", "key entities (spaCy)")
        timed(llm, "yes_probability", "judge calls (forward passes)")

        with stage("SIM build, total"):
            report = engine.ingest(transcript.messages[:args.messages], namespace="p", core_facts=False)
        sim = dict(SECONDS)
        sim_counts = dict(COUNTS)
        SECONDS.clear()
        COUNTS.clear()

        # CoreFact extraction: time forward passes (prefill = first call of a generation) and the mask
        forward_calls: list[tuple[int, float]] = []
        state = {"start": 0.0}
        model.register_forward_pre_hook(lambda m, a, kw: state.update(start=time.perf_counter()), with_kwargs=True)

        def after(module, a, kw, out):
            ids = kw.get("input_ids") if kw.get("input_ids") is not None else (a[0] if a else None)
            forward_calls.append((int(ids.shape[1]) if ids is not None else 0, time.perf_counter() - state["start"]))
        model.register_forward_hook(after, with_kwargs=True)
        from memsif.llm import structured
        original = structured.JsonSchemaLogits.processor

        def processor(self, schema, prompt_length):
            proc = original(self, schema, prompt_length)

            def call(input_ids, scores):
                start = time.perf_counter()
                try:
                    return proc(input_ids, scores)
                finally:
                    SECONDS["JSON schema mask (lm-format-enforcer)"] += time.perf_counter() - start
                    COUNTS["JSON schema mask (lm-format-enforcer)"] += 1
            return call
        structured.JsonSchemaLogits.processor = processor
        timed(llm, "generate", "generate, total")
        timed(llm, "generate_batch", "generate, total")
        batches_messages = engine.config.fact_batch_messages * args.batches
        # extract over the first batches only: a memory of just those messages
        engine.delete_namespace("f")
        engine.ingest(transcript.messages[:batches_messages], namespace="f", core_facts=False)
        SECONDS.clear()
        COUNTS.clear()
        forward_calls.clear()
        with stage("CoreFact extraction, total"):
            facts = engine.build_core_facts("f")
        engine.close()

    prefill = [t for n, t in forward_calls if n > 1]
    decode = [t for n, t in forward_calls if n <= 1]
    prompt_tokens = [n for n, _ in forward_calls if n > 1]
    print(f"\nStructured Interaction Memory, {report.messages} messages → {report.segments} segments, "
          f"{report.trajectories} trajectories\n")
    print("| part | seconds | share | calls |\n|---|---|---|---|")
    total = sim["SIM build, total"]
    parts = {k: v for k, v in sim.items() if k != "SIM build, total"}
    for k, v in parts.items():
        print(f"| {k} | {v:.1f} | {v / total:.0%} | {sim_counts.get(k, '')} |")
    rest = total - sum(parts.values())
    print(f"| the rest (φ, profiles, sentence index, store) | {rest:.1f} | {rest / total:.0%} | |")
    print(f"| **total** | **{total:.1f}** | | |")
    total = SECONDS["CoreFact extraction, total"]
    gen = SECONDS["generate, total"]
    mask = SECONDS["JSON schema mask (lm-format-enforcer)"]
    n = facts.fact_llm_calls or 1
    print(f"\nCoreFact extraction, {n} batches, fact_parallel {engine.config.fact_parallel} "
          f"({facts.fact_ops}); {len(prefill)} prompt forwards of {sum(prompt_tokens) / max(len(prefill), 1):.0f} "
          f"tokens, {len(decode)} decode steps\n")
    print("| part | seconds | share | per batch | per decode step |\n|---|---|---|---|---|")
    rows = [("prompt forward (prefill; also the operation choices)", sum(prefill)),
            ("per-token forward (decode)", sum(decode)),
            ("JSON schema mask (lm-format-enforcer)", mask),
            ("rest of generate (sampling, stopping, Python)", gen - sum(prefill) - sum(decode) - mask),
            ("outside generate (prompt, gate, consolidation, store)", total - gen)]
    for label, v in rows:
        print(f"| {label} | {v:.1f} | {v / total:.0%} | {v / n:.2f} | "
              f"{1000 * v / max(len(decode), 1):.0f} ms |")
    print(f"| **total** | **{total:.1f}** | | {total / n:.2f} | |")


if __name__ == "__main__":
    main()
