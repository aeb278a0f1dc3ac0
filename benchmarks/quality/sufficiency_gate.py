"""How often is the sufficiency gate right? (§3.5)

For each answered question of a ``memsif`` eval run (its ``questions.jsonl``), the facts the answer
context held (``sys_fact_ids``) are looked up in the run's memory folder. A question is labelled
*facts suffice* when every gold evidence turn is among those facts' source turns (by provenance, as
evidence recall counts it; no LLM). The gate's verdict (``sys_sufficient``, P ≥ threshold) is compared
with that label; for questions without facts the gate was not asked.

    PYTHONPATH=. python benchmarks/quality/sufficiency_gate.py RUN/questions.jsonl --data-dir MEMORY_FOLDER
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("questions", help="questions.jsonl of a memsif eval run")
    parser.add_argument("--data-dir", required=True, help="the run's memory folder (its --data-dir)")
    parser.add_argument("--prefix", default="eval-locomo-",
                        help="namespace prefix: the run's --tag, '-', the dataset, '-'")
    args = parser.parse_args()
    rows = [json.loads(line) for line in Path(args.questions).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["system"] == "memsif" and r["ablation"] == "none"]
    engine = MemSIF(MemSIFConfig.from_env(data_dir=args.data_dir))
    sources: dict[str, dict[str, set[str]]] = {}
    for sample in sorted({r["sample_id"] for r in rows}):
        base = f"{args.prefix}{sample}"
        facts = {f.id: set(f.source_message_ids) for f in engine.facts(base, history=True)}
        facts |= {a.id: set(a.source_message_ids) for a in engine.active_facts(f"{base}-none")}
        sources[sample] = facts
    asked = [r for r in rows if r.get("sys_sufficiency_prob") is not None]
    counts = {"tp": 0, "fp": 0, "tn": 0, "fn": 0}
    for r in asked:
        held = set().union(*(sources[r["sample_id"]].get(f, set()) for f in r.get("sys_fact_ids") or []))
        suffice = bool(r["evidence_ids"]) and set(r["evidence_ids"]) <= held
        counts[("t" if suffice == r["sys_sufficient"] else "f") + ("p" if r["sys_sufficient"] else "n")] += 1
    n = len(asked)
    print(f"questions {len(rows)}; gate asked {n} (the others had no facts); facts-only answers "
          f"{counts['tp'] + counts['fp']}")
    if n:
        print(f"accuracy {(counts['tp'] + counts['tn']) / n:.2f}; facts suffice for {counts['tp'] + counts['fn']}; "
              f"said sufficient when they did not: {counts['fp']}; traced back when they did: {counts['fn']}")
    engine.close()


if __name__ == "__main__":
    main()
