"""The claim rules and the empty-remark rule (``memsif.facts.claims``), with the grounding gate as it is now
(``memsif.facts.grounding``: the facts were stored by an earlier gate), on the labelled stored CoreFacts of
the three dev conversations: what they refuse, by the class the labeller gave, per conversation.

The labelled facts (``benchmarks/quality/data/corefact-verified-*.jsonl``; conv-47's dates-settled file replaces
the facts it relabels) are stored facts of default builds, labelled by hand before any of these rules
existed. The rules have no fitted constant; each conversation is reported on its own. No model runs.

    PYTHONPATH=. python benchmarks/quality/claim_checks.py [--show]
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from pathlib import Path

from memsif.eval.data import load_locomo
from memsif.eval.metrics import wilson
from memsif.facts import grounding
from memsif.facts.claims import available, check_claims, empty_remark

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
LABELS = {"conv-26": ["corefact-verified-conv26.jsonl"], "conv-30": ["corefact-verified-conv30.jsonl"],
          "conv-47": ["corefact-verified-conv47.jsonl", "corefact-verified-conv47-dates-settled.jsonl"]}


def labelled(conv: str) -> list[dict]:
    """The labelled facts of ``conv``, later files replacing earlier labels of the same fact."""
    by_id: dict[str, dict] = {}
    for name in LABELS[conv]:
        for line in (ROOT / "benchmarks" / "quality" / "data" / name).read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                by_id[row["fact_id"]] = row
    return list(by_id.values())


def label_class(row: dict) -> str:
    return "supported" if row["supported"] else row["why_not"].split(":")[0].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", action="store_true", help="print every refused fact with its reason")
    args = parser.parse_args()
    samples = {s.sample_id: s for s in load_locomo(DEV, list(LABELS))}
    print("| conversation | labelled | supported | refused: supported | refused: unsupported (by class) | "
          "kept | kept supported (95 % interval) |")
    print("|---|---|---|---|---|---|---|")
    totals = collections.Counter()
    seconds = 0.0
    if not available():
        parser.error("spaCy's en_core_web_sm is not installed (requirements.txt)")
    for conv in LABELS:
        messages = {m.id: m for m in samples[conv].messages}
        speakers = sorted({m.speaker for m in messages.values()})
        refused_by: collections.Counter[str] = collections.Counter()
        classes: collections.Counter[str] = collections.Counter()
        kept = kept_ok = n_ok = 0
        for row in labelled(conv):
            cited = [messages[i] for i in row["sources"] if i in messages]
            start = time.perf_counter()
            checks = check_claims(row["subject"], row["statement"], cited, speakers)
            empty = empty_remark(row["subject"], row["statement"], speakers)
            seconds += time.perf_counter() - start
            reasons = [f"{c.rule}: {c.reason} ({c.claim!r})" for c in checks if not c.passed]
            if not (gate := grounding.check(row["subject"], row["statement"], cited, speakers)).passed:
                reasons.append(f"gate: {gate.reason}")
            if empty:
                reasons.append(f"empty: {empty}")
            n_ok += row["supported"]
            if reasons:
                refused_by["supported" if row["supported"] else "unsupported"] += 1
                if not row["supported"]:
                    classes[label_class(row)] += 1
                if args.show:
                    print(f"  {'SUPPORTED' if row['supported'] else label_class(row).upper()} {conv} "
                          f"{row['fact_id']} {row['statement']!r}: {'; '.join(reasons)}")
            else:
                kept += 1
                kept_ok += row["supported"]
        n = len(labelled(conv))
        low, high = wilson(kept_ok, kept)
        by_class = ", ".join(f"{k} {v}" for k, v in classes.most_common())
        print(f"| {conv} | {n} | {n_ok} | {refused_by['supported']} | {refused_by['unsupported']} ({by_class}) | "
              f"{kept} | {kept_ok} ({kept_ok / max(kept, 1):.0%}; {low:.0%}–{high:.0%}) |")
        totals.update({"n": n, "ok": n_ok, "kept": kept, "kept_ok": kept_ok, "ref_ok": refused_by["supported"],
                       "ref_bad": refused_by["unsupported"]})
    low, high = wilson(totals["kept_ok"], totals["kept"])
    print(f"| all | {totals['n']} | {totals['ok']} | {totals['ref_ok']} | {totals['ref_bad']} | {totals['kept']} | "
          f"{totals['kept_ok']} ({totals['kept_ok'] / max(totals['kept'], 1):.0%}; {low:.0%}–{high:.0%}) |")
    print(f"\nThe rules took {seconds / totals['n'] * 1000:.0f} ms a fact ({totals['n']} facts, the parser loaded "
          "before the first).")


if __name__ == "__main__":
    main()
