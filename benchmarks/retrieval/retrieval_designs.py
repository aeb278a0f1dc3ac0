"""Evidence recall of retrieval designs on built memories, without answer generation.

Each design is a set of MemSIF settings (``MemSIFConfig`` fields) applied to the same built memory;
the table shows evidence recall by provenance, strict (answer-bearing sentences) and by text, Total
and on the NCE subset (TED ≥ 0.3), on the questions that took the aggregation path
(``Answer.aggregation``), the mean context tokens and seconds per question. ActiveFacts
are off (no state changes between designs); CoreFacts as the design says.

    python -m memsif eval locomo --data ../shared/data/locomo/locomo_dev.json --system memsif \\
        --retrieval-only --limit 1 --data-dir D      # builds the memories once
    python benchmarks/retrieval/retrieval_designs.py --data ../shared/data/locomo/locomo_dev.json --data-dir D

With ``--rows FILE`` every question's recall is appended to FILE (JSON lines: design, budget,
sample, question id); ``--report FILE …`` then prints each design against the flat design
("flat sentences (hybrid)", Hybrid RAG's own context on this store) per conversation with the
paired 95 % interval (bootstrap over questions), and, for designs named ``NAME=VALUE`` (a grid of
one setting), the value chosen on the other conversations and its held-out difference
(leave-one-conversation-out). Memories in several folders: one ``--rows`` run per folder.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo, load_longmemeval
from memsif.eval.metrics import evidence_recall, paired_bootstrap, strict_recall, ted

FLAT = "flat sentences (hybrid)"
DESIGNS: dict[str, dict] = {
    FLAT: {"use_segments": False, "use_trajectories": False, "use_core_facts": False, "flat_share": 0.0},
    "+ segments": {"use_trajectories": False, "use_core_facts": False},
    "+ trajectories (no segments)": {"use_segments": False, "use_core_facts": False},
    "+ segments + trajectories": {"use_core_facts": False},
    "full (with CoreFacts)": {},
}


def run(engine: MemSIF, samples, namespace_of, overrides: dict, budget: int) -> dict:
    return summarise(question_rows(engine, samples, namespace_of, overrides, budget))


def question_rows(engine: MemSIF, samples, namespace_of, overrides: dict, budget: int) -> list[dict]:
    """One row per question with gold evidence: its recall (provenance "ids", "strict", "text"),
    NCE flag, context tokens and seconds, under ``overrides`` at ``budget`` tokens."""
    eng = engine.with_config(engine.config.replace(use_active_facts=False, context_tokens=budget, **overrides))
    rows = []
    for sample in samples:
        texts = {m.id: m.text for m in sample.messages}
        position = {m.id: k for k, m in enumerate(sample.messages)}
        for q in sample.questions:
            if not q.evidence_ids:
                continue
            t = time.perf_counter()
            ans = eng.ask(q.question, namespace=namespace_of(sample), generate=False)
            seconds = time.perf_counter() - t
            text, ids = evidence_recall(q.evidence_ids, texts, ans.context, ans.context_source_ids)
            strict = strict_recall(q.evidence_ids, texts, q.gold, ans.context)
            spread = ted([position[e] for e in q.evidence_ids if e in position], len(sample.messages))
            rows.append({"sample": sample.sample_id, "qid": q.qid, "text": text, "ids": ids, "strict": strict,
                         "nce": spread is not None and spread >= 0.3, "tokens": ans.context_tokens,
                         "seconds": seconds, "category": q.category, "aggregation": ans.aggregation})
    return rows


def summarise(rows: list[dict]) -> dict:
    """Mean recall of question rows: Total, NCE and aggregation questions; tokens and seconds."""
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


def _diff(rows: list[dict], flat: dict[str, dict], measure: str, nce: bool = False) -> str:
    """The mean of ``rows`` − the flat design's on the same questions, with its paired 95 % interval
    (questions resampled within each conversation)."""
    rows = [r for r in rows if r["qid"] in flat and (r["nce"] or not nce)]
    if not rows:
        return "–"
    b = paired_bootstrap([r[measure] for r in rows], [flat[r["qid"]][measure] for r in rows],
                         [r["sample"] for r in rows], stratified=True, resamples=2000)
    return f"{100 * b['diff']:+.1f} [{100 * b['ci_low']:+.1f}, {100 * b['ci_high']:+.1f}]"


def _mean_diff(rows: list[dict], flat: dict[str, dict], measure: str) -> float:
    rows = [r for r in rows if r["qid"] in flat]
    return float(np.mean([r[measure] - flat[r["qid"]][measure] for r in rows])) if rows else float("-inf")


def report(paths: list[str], measure: str = "ids") -> None:
    """Each design − the flat design per conversation (paired intervals), then the grids' held-out
    choice (module docstring)."""
    by: dict[tuple[int, str], dict[str, dict]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    r = json.loads(line)
                    by.setdefault((r["budget"], r["design"]), {})[r["qid"]] = r
    for budget in sorted({b for b, _ in by}):
        flat = by.get((budget, FLAT))
        if not flat:
            print(f"\n(no \"{FLAT}\" rows at {budget} tokens: nothing to compare with)")
            continue
        samples = sorted({r["sample"] for r in flat.values()})
        print(f"\n### {budget} tokens: recall ({measure}) − the flat design's, percentage points [95 % interval]\n")
        print("| design | " + " | ".join(samples) + " | all | NCE |")
        print("|---|" + "---|" * (len(samples) + 2))
        print(f"| {FLAT} (recall, %) | " + " | ".join(
            f"{100 * np.mean([r[measure] for r in flat.values() if r['sample'] == s]):.1f}" for s in samples)
            + f" | {100 * np.mean([r[measure] for r in flat.values()]):.1f} | "
            f"{100 * np.mean([r[measure] for r in flat.values() if r['nce']]):.1f} |")
        designs = [d for b, d in by if b == budget and d != FLAT]
        for d in designs:
            rows = list(by[(budget, d)].values())
            print(f"| {d} | " + " | ".join(_diff([r for r in rows if r["sample"] == s], flat, measure)
                                            for s in samples)
                  + f" | {_diff(rows, flat, measure)} | {_diff(rows, flat, measure, nce=True)} |")
        grids: dict[str, list[str]] = {}
        for d in designs:
            if "=" in d:
                grids.setdefault(d.split("=")[0], []).append(d)
        for name, grid in grids.items():
            print(f"\nLeave one conversation out, {name} chosen on the other conversations ({measure}):\n")
            print("| held out | chosen | held-out difference [95 % interval] |\n|---|---|---|")
            for held in samples:
                chosen = max(grid, key=lambda d: _mean_diff(
                    [r for r in by[(budget, d)].values() if r["sample"] != held], flat, measure))
                rows = [r for r in by[(budget, chosen)].values() if r["sample"] == held]
                print(f"| {held} | {chosen} | {_diff(rows, flat, measure)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data")
    parser.add_argument("--dataset", default="locomo", choices=("locomo", "longmemeval"))
    parser.add_argument("--data-dir", help="the memory folder the eval built")
    parser.add_argument("--tag", default="eval", help="the eval's namespace tag (default: eval)")
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--design", action="append", help="NAME=JSON overrides (repeat); default: the table's designs")
    parser.add_argument("--samples", help="comma-separated sample ids (default: all)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rows", help="append every question's recall to this JSON-lines file")
    parser.add_argument("--report", nargs="+", metavar="ROWS", help="report rows files (no memory is opened)")
    parser.add_argument("--measure", default="ids", choices=("ids", "strict", "text"), help="for --report")
    args = parser.parse_args()
    if args.report:
        report(args.report, args.measure)
        return
    if not args.data or not args.data_dir:
        parser.error("--data and --data-dir are needed to measure (only --report reads rows files)")
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
        rows = question_rows(engine, samples, lambda s: f"{args.tag}-{args.dataset}-{s.sample_id}", overrides,
                             args.budget)
        if args.rows:
            with open(args.rows, "a", encoding="utf-8") as fh:
                fh.writelines(json.dumps({"design": name, "budget": args.budget, **row}) + "\n" for row in rows)
        r = summarise(rows)
        if args.json:
            print(json.dumps({"design": name, **r}))
        print(f"| {name} | {r['ids']:.3f} | {r['nce_ids']:.3f} | {r['strict']:.3f} | {r['nce_strict']:.3f} | "
              f"{r['text']:.3f} | {r['nce_text']:.3f} | {_fmt(r['agg_ids'])} | {_fmt(r['agg_strict'])} | "
              f"{r['tokens']:.0f} | {r['p50_s']:.2f} | {r['p95_s']:.2f} |", flush=True)
    engine.close()


if __name__ == "__main__":
    main()
