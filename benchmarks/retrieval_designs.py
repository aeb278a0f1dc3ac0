"""Evidence recall of retrieval designs on built memories, without answer generation.

Each design is a set of MemSIF settings (``MemSIFConfig`` fields) applied to the same built memory;
the table shows evidence recall by provenance, strict (answer-bearing sentences) and by text, Total
and on the NCE subset (TED ≥ 0.3), on the questions that took the aggregation path
(``Answer.aggregation``), the mean context tokens and seconds per question. ActiveFacts
are off (no state changes between designs); CoreFacts as the design says.

    python -m memsif eval locomo --data ../shared/data/locomo/locomo_dev.json --system memsif \\
        --retrieval-only --limit 1 --data-dir D      # builds the memories once
    python benchmarks/retrieval_designs.py --data ../shared/data/locomo/locomo_dev.json --data-dir D
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo, load_longmemeval
from memsif.eval.metrics import evidence_recall, strict_recall, ted

DESIGNS: dict[str, dict] = {
    "flat sentences (hybrid)": {"use_segments": False, "use_trajectories": False, "use_core_facts": False},
    "+ segments": {"use_trajectories": False, "use_core_facts": False},
    "+ trajectories (no segments)": {"use_segments": False, "use_core_facts": False},
    "+ segments + trajectories": {"use_core_facts": False},
    "full (with CoreFacts)": {},
}


def run(engine: MemSIF, samples, namespace_of, overrides: dict, budget: int) -> dict:
    eng = engine.with_config(engine.config.replace(use_active_facts=False, context_tokens=budget, **overrides))
    rows = []
    for sample in samples:
        texts = {m.id: m.text for m in sample.messages}
        position = {m.id: k for k, m in enumerate(sample.messages)}
        for q in sample.questions:
            if not q.evidence_ids:
                continue
            t = time.perf_counter()
            ans = eng.ask(q.question, namespace_of(sample), generate=False)
            seconds = time.perf_counter() - t
            text, ids = evidence_recall(q.evidence_ids, texts, ans.context, ans.context_source_ids)
            strict = strict_recall(q.evidence_ids, texts, q.gold, ans.context)
            spread = ted([position[e] for e in q.evidence_ids if e in position], len(sample.messages))
            rows.append({"text": text, "ids": ids, "strict": strict, "nce": spread is not None and spread >= 0.3,
                         "tokens": ans.context_tokens, "seconds": seconds, "category": q.category,
                         "aggregation": ans.aggregation})
    nce = [r for r in rows if r["nce"]]
    agg = [r for r in rows if r["aggregation"]]
    return {"n": len(rows), "n_nce": len(nce),
            "ids": float(np.mean([r["ids"] for r in rows])), "text": float(np.mean([r["text"] for r in rows])),
            "nce_ids": float(np.mean([r["ids"] for r in nce])) if nce else None,
            "nce_text": float(np.mean([r["text"] for r in nce])) if nce else None,
            "strict": float(np.mean([r["strict"] for r in rows])),
            "nce_strict": float(np.mean([r["strict"] for r in nce])) if nce else None,
            "n_agg": len(agg),
            "agg_ids": float(np.mean([r["ids"] for r in agg])) if agg else None,
            "agg_strict": float(np.mean([r["strict"] for r in agg])) if agg else None,
            "tokens": float(np.mean([r["tokens"] for r in rows])),
            "p50_s": float(np.percentile([r["seconds"] for r in rows], 50)),
            "p95_s": float(np.percentile([r["seconds"] for r in rows], 95))}


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True)
    parser.add_argument("--dataset", default="locomo", choices=("locomo", "longmemeval"))
    parser.add_argument("--data-dir", required=True, help="the memory folder the eval built")
    parser.add_argument("--tag", default="eval", help="the eval's namespace tag (default: eval)")
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--design", action="append", help="NAME=JSON overrides (repeat); default: the table's designs")
    parser.add_argument("--samples", help="comma-separated sample ids (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    designs = dict(DESIGNS)
    if args.design:
        designs = {}
        for spec in args.design:
            name, brace, overrides = spec.partition("={")
            designs[name] = json.loads(brace[1:] + overrides if brace else "{}")
    engine = MemSIF(MemSIFConfig.from_env(data_dir=args.data_dir))
    engine.load_models()
    samples = (load_locomo if args.dataset == "locomo" else load_longmemeval)(
        args.data, args.samples.split(",") if args.samples else None)
    print(f"| design (budget {args.budget}) | provenance Total | NCE | strict Total | NCE | text Total | NCE | "
          "aggregation provenance | strict | context tokens | p50 s | p95 s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, overrides in designs.items():
        r = run(engine, samples, lambda s: f"{args.tag}-{args.dataset}-{s.sample_id}", overrides, args.budget)
        if args.json:
            print(json.dumps({"design": name, **r}))
        print(f"| {name} | {r['ids']:.3f} | {r['nce_ids']:.3f} | {r['strict']:.3f} | {r['nce_strict']:.3f} | "
              f"{r['text']:.3f} | {r['nce_text']:.3f} | {_fmt(r['agg_ids'])} | {_fmt(r['agg_strict'])} | "
              f"{r['tokens']:.0f} | {r['p50_s']:.2f} | {r['p95_s']:.2f} |", flush=True)
    engine.close()


if __name__ == "__main__":
    main()
