"""Seconds from the start of a CoreFact extraction to each written batch: when a reader (the page, ``facts``,
MCP) first sees CoreFacts, and when the last of the batches is written.

Runs the extraction of the first ``--batches`` batches of the shipped conv-26 example's messages (its stored
segments, read from the start) with the configured LLM and ``--parallel`` batches to a group, and prints one
JSON line with the times. Compare two checkouts on the same host by running each one's copy in turn.

    PYTHONPATH=. python benchmarks/speed/first_facts.py [--batches 9] [--parallel 8]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

import numpy as np

from memsif.backends import load_embedder
from memsif.config import MemSIFConfig
from memsif.facts.core import CoreFactBuilder, FactState, build_core_facts, operation_trusted, unread_batches
from memsif.facts.verify import verifier_threshold
from memsif.llm import load_llm
from memsif.llm.base import for_job
from memsif.llm.profiles import profile_of
from memsif.records import parse_schema
from memsif.transfer import read_export

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=9)
    parser.add_argument("--parallel", type=int, default=MemSIFConfig().facts.fact_parallel)
    args = parser.parse_args()
    data = read_export(ROOT / "assets" / "example-memory-conv-26.json.gz")
    messages = {e.message.id: e.message for e in data.messages}
    vectors = {e.message.id: np.asarray(e.vector, dtype=np.float32) for e in data.messages}
    segments = [s.model_copy(update={"facts_extracted_upto": 0}) for s in data.segments]
    batches = unread_batches(segments, messages, MemSIFConfig().facts.fact_batch_messages)[:args.batches]
    config = MemSIFConfig()
    llm = for_job(load_llm(config), "facts")
    builder = CoreFactBuilder(llm, load_embedder(config.model.embedder_model, None), parse_schema(""),
                              ask_operation=operation_trusted("auto", llm, profile_of(llm.name)), messages=messages,
                              verify_min_p=verifier_threshold("auto", llm, profile_of(llm.name)))
    segment_of = {m: s.id for s in segments for m in s.message_ids}
    start = time.perf_counter()
    written = [round(time.perf_counter() - start, 1)
               for _ in build_core_facts(builder, FactState.of([]), "bench", batches, segment_of, {}, vectors,
                                         args.parallel)]
    host = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True, text=True).stdout
    print(json.dumps({"model": llm.name, "batches": len(batches), "parallel": args.parallel,
                      "batch_written_at_s": written, "host": host.split(":")[-1].strip()}))


if __name__ == "__main__":
    main()
