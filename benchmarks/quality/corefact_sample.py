"""Candidate CoreFacts of the configured model, before the grounding gate, for labelling by hand.

Runs the engine's extraction step (``CoreFactBuilder.extract``: the core_extract prompt, the JSON
schema, source range checks and the provenance repair) on consecutive batches of a LoCoMo
conversation, ``fact_batch_messages`` each, starting at ``--start``, and prints one JSON line per
candidate with ``"supported": null``. Nothing is stored and the gate is not run: label each line by
reading its cited messages, then add the labelled lines to ``benchmarks/quality/data/corefact-candidates.jsonl``
and run ``benchmarks/quality/grounding_gate.py`` (gate precision and recall per origin).

    PYTHONPATH=. python benchmarks/quality/corefact_sample.py --sample conv-26 --batches 14 [--start 0] \
        > candidates.jsonl
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.facts.core import CoreFactBuilder
from memsif.records import parse_schema

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEV))
    parser.add_argument("--sample", default="conv-26")
    parser.add_argument("--batches", type=int, default=14)
    parser.add_argument("--start", type=int, default=0, help="index of the first message")
    args = parser.parse_args()
    [sample] = load_locomo(args.data, [args.sample])
    scratch = tempfile.mkdtemp(prefix="memsif-sample-")  # nothing is stored; the engine still wants a folder
    engine = MemSIF(MemSIFConfig.from_env(core_facts=True, data_dir=scratch))
    engine.load_models()
    builder = CoreFactBuilder(engine.llm, engine.embedder, parse_schema(engine.config.core_schema))
    size = engine.config.fact_batch_messages
    origin = f"{engine.llm.name}, consecutive batches of {size} from message {args.start} (before the gate)"
    for k in range(args.batches):
        batch = sample.messages[args.start + k * size: args.start + (k + 1) * size]
        if not batch:
            break
        candidates, ops = builder.extract(sample.sample_id, batch, {m.id: "S?" for m in batch},
                                          {"S?": None})
        for op in ops:
            if op.error:
                print(f"batch {k}: {op.error}", file=sys.stderr)
        for cand in candidates:
            f = cand.fact
            print(json.dumps({"origin": origin, "subject": f.subject, "type": f.type, "statement": f.statement,
                              "sources": f.source_message_ids, "supported": None, "sample": sample.sample_id,
                              "note": cand.provenance_note}, ensure_ascii=False), flush=True)
    engine.close()
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
