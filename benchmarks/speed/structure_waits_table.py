"""The structure's stated waits of ``waiting_times.py`` runs beside what a pace per message would have
stated at the same steps (the job's seconds per message since its first, times the messages left): one
Markdown row per run, then the totals.

    PYTHONPATH=. python benchmarks/speed/structure_waits_table.py \
        benchmarks/results/dev/waiting-times-judge-chars-2026-12-05/*.json

Steps counted as ``waiting_times.py`` counts them: those the page shows (the last reported within half a
second), from the 10th message on, with at least ``--min-left`` seconds left.
"""

from __future__ import annotations

import argparse
import json

from benchmarks.speed.waiting_times import FROM_UNIT, PAGE_REFRESH_S
from memsif.inspector.pace import STRUCTURE

WITHIN = 0.3


def errors(run: dict, min_left: float) -> tuple[list[float], list[float]]:
    """(stated, per-message) relative errors of the range's middle at the counted steps of ``run``."""
    steps = [s for s in run["steps"] if s["kind"] == STRUCTURE and s["low"] is not None]
    shown = [s for s, after in zip(steps, [*steps[1:], None], strict=True)
             if after is None or after["t"] - s["t"] >= PAGE_REFRESH_S]
    counted = [s for s in shown if s["done"] >= FROM_UNIT[STRUCTURE] and s["actual"] >= min_left]
    start, total = steps[0]["t"], steps[-1]["total"]
    stated = [abs((s["low"] + s["high"]) / 2 - s["actual"]) / s["actual"] for s in counted]
    per_message = [abs((s["t"] - start) / (s["done"] - 1) * (total - s["done"]) - s["actual"]) / s["actual"]
                   for s in counted]
    return stated, per_message


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="waiting_times.py output files")
    parser.add_argument("--min-left", type=float, default=10.0)
    args = parser.parse_args()
    print("| upload | structure took | judge calls | steps counted | per message: within ±30 % (largest) "
          "| stated: within ±30 % (largest) |\n|---|---|---|---|---|---|")
    totals = [0, 0, 0]
    for path in args.runs:
        with open(path, encoding="utf-8") as fh:
            run = json.load(fh)
        stated, per_message = errors(run, args.min_left)
        if not stated:
            continue
        first = run.get("first", 0)
        took = run["summary"][STRUCTURE]["seconds"]
        print(f"| {run['sample']}, messages {first + 1}–{first + run['messages']} | {took:.1f} s "
              f"| {run.get('judge_calls', '?')} | {len(stated)} "
              f"| {sum(e <= WITHIN for e in per_message)} ({max(per_message):.0%}) "
              f"| {sum(e <= WITHIN for e in stated)} ({max(stated):.0%}) |")
        totals = [totals[0] + len(stated), totals[1] + sum(e <= WITHIN for e in per_message),
                  totals[2] + sum(e <= WITHIN for e in stated)]
    print(f"| all | | | {totals[0]} | {totals[1]} ({totals[1] / max(totals[0], 1):.0%}) "
          f"| {totals[2]} ({totals[2] / max(totals[0], 1):.0%}) |")


if __name__ == "__main__":
    main()
