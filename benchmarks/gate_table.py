"""The sufficiency gate against always tracing back (§3.5; issue 28), from eval runs' question rows.

Each argument is ``LABEL=RUN`` (a run folder of ``python -m memsif eval``, its ``questions.jsonl`` or
``.jsonl.gz``), given in pairs: the gate asked (``MEMSIF_SUFFICIENCY_GATE=model``), then always trace
back (``never``), on the same questions. Prints one table row per run (questions, gate asked,
facts-only answers, evidence recall by provenance and strict, token F1 where answers were generated,
seconds per question) and, per pair, the paired difference of F1 on the questions where the two
answered from different contexts, with a 95 % bootstrap interval over those questions.

    PYTHONPATH=. python benchmarks/gate_table.py "1.5B gate=RUN_A" "1.5B trace back=RUN_B"
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from pathlib import Path

import numpy as np


def _rows(run: str) -> dict[str, dict]:
    path = Path(run)
    if path.is_dir():
        path = next(p for p in (path / "questions.jsonl", path / "questions.jsonl.gz") if p.exists())
    text = gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()
    return {r["qid"]: r for r in map(json.loads, filter(None, text.splitlines()))}


def _mean(values: list) -> str:
    kept = [v for v in values if v is not None]
    return f"{100 * statistics.mean(kept):.1f}" if kept else "–"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="LABEL=RUN, in pairs: gate asked, then always trace back")
    args = parser.parse_args()
    runs = [(label, _rows(run)) for label, _, run in (a.partition("=") for a in args.runs)]
    print("| run | questions | gate asked | facts-only | recall (ids) | strict recall | F1 | "
          "s / question (mean, p50) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, rows in runs:
        values = list(rows.values())
        facts_only = sum(not r["sys_traced_back"] for r in values)
        seconds = [r["seconds"] for r in values]
        print(f"| {label} | {len(values)} | {sum(r['sys_sufficiency_prob'] is not None for r in values)} | "
              f"{facts_only} ({100 * facts_only / len(values):.0f} %) | {_mean([r['recall_ids'] for r in values])} | "
              f"{_mean([r['recall_strict'] for r in values])} | {_mean([r.get('f1') for r in values])} | "
              f"{statistics.mean(seconds):.1f}, {statistics.median(seconds):.1f} |")
    for (gate_label, gate), (back_label, back) in zip(runs[::2], runs[1::2], strict=False):
        differ = [q for q in gate if q in back and gate[q]["sys_traced_back"] != back[q]["sys_traced_back"]]
        scored = [q for q in differ if gate[q].get("f1") is not None and back[q].get("f1") is not None]
        if not scored:
            print(f"\n{gate_label} / {back_label}: {len(differ)} questions answered from other contexts, no F1")
            continue
        d = np.array([gate[q]["f1"] - back[q]["f1"] for q in scored])
        rng = np.random.default_rng(0)
        lo, hi = np.percentile([d[rng.integers(0, len(d), len(d))].mean() for _ in range(10_000)], [2.5, 97.5])
        print(f"\n{gate_label} − {back_label}, F1 on the {len(scored)} questions answered from other contexts: "
              f"{100 * d.mean():+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}]; better on {(d > 0).sum()}, "
              f"worse on {(d < 0).sum()}")


if __name__ == "__main__":
    main()
