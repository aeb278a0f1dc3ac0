"""Ask LoCoMo questions of a namespace that was already ingested; print answers, sufficiency verdicts,
tokens and seconds per query. Figures, not pass/fail (the full evaluation is ``python -m memsif eval``).

    python -m memsif ingest assets/locomo-conv-26.json --data-dir DIR
    python benchmarks/quality/questions.py --data-dir DIR --data assets/locomo-conv-26.json --sample conv-26 --n 10
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.io import load_transcripts

CATEGORIES = {1: "M-hop", 2: "Temp", 3: "Kno", 4: "S-hop"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="assets/locomo-conv-26.json")
    parser.add_argument("--sample", default="conv-26")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    [tr] = load_transcripts(args.data, sample=args.sample)
    qa = [q for q in tr.extra["qa"] if q.get("category") in CATEGORIES]
    random.Random(args.seed).shuffle(qa)
    engine = MemSIF(MemSIFConfig.from_env(data_dir=args.data_dir))
    print(f"models loaded in {engine.load_models():.1f} s")
    seconds, tokens = [], []
    for q in qa[: args.n]:
        r = engine.ask(q["question"], namespace=args.sample)
        seconds.append(r.seconds)
        tokens.append(r.tokens_in + r.tokens_out)
        p = "n/a" if r.sufficiency_prob is None else f"{r.sufficiency_prob:.2f}"
        print(json.dumps({"category": CATEGORIES[q["category"]], "question": q["question"],
                          "gold": str(q["answer"]), "answer": r.answer, "sufficient": r.sufficient,
                          "sufficiency_prob": p, "traced_back": r.traced_back,
                          "facts": len(r.facts_used), "evidence": len(r.evidence_used),
                          "tokens": r.tokens_in + r.tokens_out, "seconds": round(r.seconds, 2)}))
    cuts = statistics.quantiles(seconds, n=20) if len(seconds) > 1 else seconds * 19
    print(f"seconds per query: median {statistics.median(seconds):.2f}, p95 {cuts[18]:.2f}; "
          f"tokens per query: mean {statistics.mean(tokens):.0f}")


if __name__ == "__main__":
    main()
