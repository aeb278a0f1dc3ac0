"""The sufficiency gate against always tracing back (§3.5), from eval runs' question rows.

Each argument is ``LABEL=RUN`` (a run folder of ``python -m memsif eval``, its ``questions.jsonl`` or
``.jsonl.gz``), given in pairs: the gate asked (``MEMSIF_SUFFICIENCY_GATE=model``), then always trace
back (``never``), on the same questions. Prints one table row per run (questions, gate asked,
facts-only answers, evidence recall by provenance and strict, token F1 where answers were generated,
seconds per question) and, per pair, the paired difference of F1 on the questions where the two
answered from different contexts, with the 95 % interval of a paired bootstrap over those questions
(``eval.metrics.paired_bootstrap``).

    PYTHONPATH=. python benchmarks/quality/gate_table.py "1.5B gate=RUN_A" "1.5B trace back=RUN_B"
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from memsif.eval.cli import _read_rows
from memsif.eval.metrics import paired_bootstrap


def _rows(run: str) -> dict[str, dict]:
    path = Path(run)
    return {r["qid"]: r for r in _read_rows(path / "questions.jsonl" if path.is_dir() else path)}


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
        a, b = [gate[q]["f1"] for q in scored], [back[q]["f1"] for q in scored]
        # one group, stratified: the questions themselves are resampled (one conversation)
        ci = paired_bootstrap(a, b, ["all"] * len(scored), stratified=True)
        better = sum(x > y for x, y in zip(a, b, strict=True))
        worse = sum(x < y for x, y in zip(a, b, strict=True))
        print(f"\n{gate_label} − {back_label}, F1 on the {len(scored)} questions answered from other contexts: "
              f"{100 * ci['diff']:+.1f} points [{100 * ci['ci_low']:+.1f}, {100 * ci['ci_high']:+.1f}]; "
              f"better on {better}, worse on {worse}")


if __name__ == "__main__":
    main()
