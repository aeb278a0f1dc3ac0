"""Where the model's verification of CoreFact candidates should stand on the candidates the extractor writes
now, fitted on two dev conversations and tested on the third (§3.3; ``memsif.facts.verify``).

Reads built memories (``python -m memsif export`` files) and candidate labels made blind to each candidate's
fate (``benchmarks/quality/data/corefact-candidates-conv*.jsonl`` and ``corefact-refused-conv26.jsonl``:
subject, statement, ``supported`` and ``durable`` by hand, joined by subject and statement). The candidates
that reached the verification are the stored facts with a verification and the REJECTs whose reason is the
verification; each carries the model's P(yes) and its word overlap. For each pair (P(yes) threshold, overlap
threshold) of a grid it counts per conversation the candidates kept, how many are supported, and how many
are supported and durable. The fitted pair is the one that keeps the most candidates of the two training
conversations while ≥ ``--precision`` of them are supported; it is then applied to the third. The memory's
other facts (stored without a verification: a person's words, a model not asked) count as kept, labelled
where the labels hold them.

    PYTHONPATH=. python benchmarks/quality/verification_refit.py \
        --memory conv-26=M26.json.gz --memory conv-30=M30.json.gz --memory conv-47=M47.json.gz \
        [--precision 0.9] [--out RESULT.json]
"""

from __future__ import annotations

import argparse
import glob
import json
from datetime import datetime
from pathlib import Path

DATA = Path(__file__).parent / "data"
MIN_P = (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7)
MIN_OVERLAP = (0.4, 0.5, 0.6, 0.7)


def candidate_labels() -> dict[tuple[str, str], dict]:
    """Every labelled candidate, by (subject, statement)."""
    marks = {}
    paths = [*sorted(glob.glob(str(DATA / "corefact-candidates-conv*.jsonl"))),
             str(DATA / "corefact-refused-conv26.jsonl")]
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                marks[(row["subject"], row["statement"])] = row
    return marks


def verified_candidates(path: str, marks: dict) -> tuple[list[dict], list[dict], int]:
    """The candidates of the memory at ``path`` that the verification decided (P(yes), overlap, labels), the
    stored facts it did not decide (labels), and the memory's message count."""
    from memsif.transfer import read_export

    memory = read_export(path)
    decided, others = [], []
    for entry in memory.facts:
        fact = entry.fact
        mark = marks.get((fact.subject, fact.statement))
        check = fact.verification
        row = {"statement": fact.statement, "label": mark}
        if check is not None and check.p_yes is not None:
            decided.append({**row, "p_yes": check.p_yes, "overlap": check.word_overlap})
        else:
            others.append(row)
    for op in memory.fact_ops:
        if op.op == "REJECT" and op.candidate is not None and "not verified" in op.reason:
            v = op.scores.verification
            if v.get("p_yes") is not None:
                decided.append({"statement": op.candidate.statement, "p_yes": v["p_yes"],
                                "overlap": v.get("word_overlap", 0.0),
                                "label": marks.get((op.candidate.subject, op.candidate.statement))})
    return decided, others, len(memory.messages)


def counts(rows: list[dict], min_p: float, min_overlap: float) -> dict:
    """Kept, labelled, supported, durable and both among ``rows`` at a threshold pair."""
    kept = [r for r in rows if r["p_yes"] >= min_p and r["overlap"] >= min_overlap]
    return _tally(kept)


def _tally(kept: list[dict]) -> dict:
    labelled = [r["label"] for r in kept if r["label"] is not None]
    return {"kept": len(kept), "labelled": len(labelled), "supported": sum(m["supported"] for m in labelled),
            "durable": sum(m["durable"] for m in labelled),
            "supported_durable": sum(m["supported"] and m["durable"] for m in labelled)}


def precision(c: dict) -> float:
    return c["supported"] / c["labelled"] if c["labelled"] else 0.0


def fit(train: list[list[dict]], floor: float) -> tuple[float, float] | None:
    """The grid pair keeping the most training candidates at ≥ ``floor`` supported (pooled); None if none."""
    best, key = None, (-1, 0.0)
    for p in MIN_P:
        for o in MIN_OVERLAP:
            pooled = [counts(rows, p, o) for rows in train]
            total = {k: sum(c[k] for c in pooled) for k in pooled[0]}
            if precision(total) >= floor and (total["kept"], -p) > key:
                best, key = (p, o), (total["kept"], -p)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", action="append", required=True, help="SAMPLE=EXPORT.json.gz")
    parser.add_argument("--precision", type=float, default=0.9, help="share supported the fit must keep")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    marks = candidate_labels()
    memories = dict(pair.split("=", 1) for pair in args.memory)
    data = {s: verified_candidates(path, marks) for s, path in memories.items()}
    report: dict = {"date": datetime.now().isoformat(timespec="minutes"), "memories": memories,
                    "precision_floor": args.precision, "grid": {}, "held_out": {}}
    for sample, (decided, others, n) in data.items():
        grid = {f"{p}/{o}": counts(decided, p, o) for p in MIN_P for o in MIN_OVERLAP}
        report["grid"][sample] = {"messages": n, "decided": len(decided),
                                  "decided_labelled": sum(r["label"] is not None for r in decided),
                                  "not_decided": _tally(others), "cells": grid}
        print(f"{sample}: {len(decided)} candidates decided by the verification "
              f"({report['grid'][sample]['decided_labelled']} labelled), {len(others)} stored facts not decided by it")
        print("| P(yes) | " + " | ".join(f"overlap ≥ {o}" for o in MIN_OVERLAP) + " |")
        for p in MIN_P:
            cells = [grid[f"{p}/{o}"] for o in MIN_OVERLAP]
            print(f"| {p} | " + " | ".join(f"{c['kept']} / {precision(c):.2f}" for c in cells) + " |")
    for test in data:
        pair = fit([data[s][0] for s in data if s != test], args.precision)
        decided, others, n = data[test]
        if pair is None:
            report["held_out"][test] = None
            print(f"held out {test}: no grid pair reaches {args.precision:.0%} on the others")
            continue
        kept = counts(decided, *pair)
        total = {k: kept[k] + _tally(others)[k] for k in kept}
        report["held_out"][test] = {"min_p": pair[0], "min_overlap": pair[1], "decided_kept": kept,
                                    "stored": total, "per_400_messages": round(400 * total["kept"] / n, 1)}
        print(f"held out {test}: fitted P(yes) ≥ {pair[0]}, overlap ≥ {pair[1]} → {total['kept']} stored "
              f"({400 * total['kept'] / n:.1f} per 400 messages), {total['supported']}/{total['labelled']} "
              f"labelled supported, {total['labelled'] - total['durable']} not durable")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
