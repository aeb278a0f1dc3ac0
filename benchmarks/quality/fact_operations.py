"""Does the model choose the right CoreFact operation? (§3.3)

Each pair of ``benchmarks/quality/data/fact-operations.jsonl`` (labelled by hand before any model scored it)
is a known current fact and a newer candidate of the same subject and type, with the operation a
careful reader would apply: ADD, UPDATE, MERGE or SUPERSEDE. Each pair is consolidated by the
engine's own ``CoreFactBuilder.consolidate`` (real embedder, no grounding gate: the pairs have no
messages) twice: with the model asked whenever no rule decides (``fact_operation=model``), and
with rules only (``rules``: such candidates are added). Printed: accuracy of each, beside always
choosing ADD, and where the model was asked, the share of its choices per letter position.

    PYTHONPATH=. python benchmarks/quality/fact_operations.py --models packaged:qwen2.5-coder-1.5b-instruct \
        --out benchmarks/results/dev/fact-operations.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from datetime import datetime
from pathlib import Path

from memsif.config import PACKAGED_LLM, MemSIFConfig
from memsif.embed import SentenceTransformerEmbedder
from memsif.facts.core import Candidate, CoreFactBuilder, FactState
from memsif.llm import load_llm
from memsif.records import CoreFact, parse_schema

PAIRS = Path(__file__).parent / "data" / "fact-operations.jsonl"


def _fact(fid: str, subject: str, statement: str, day: str) -> CoreFact:
    when = datetime.fromisoformat(day)
    return CoreFact(id=fid, namespace="bench", subject=subject, type="Identity", statement=statement,
                    event_time=when, valid_from=when)


def consolidate(builder: CoreFactBuilder, embedder, pair: dict) -> tuple[str, str]:
    """The operation the engine applies to ``pair``'s candidate, and whether the model chose it."""
    known = _fact("F1", pair["subject"], pair["known"], pair["known_date"])
    new = _fact("", pair["subject"], pair["new"], pair["new_date"])
    known_vec, new_vec = embedder.embed_documents([known.statement, new.statement])
    state = FactState([known], {"F1": known_vec})
    op = builder.consolidate(state, Candidate(new, new_vec))
    return op.op.value, op.decided_by


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=PACKAGED_LLM, help="comma-separated model ids")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    embedder = SentenceTransformerEmbedder()
    always_add = sum(p["op"] == "ADD" for p in pairs) / len(pairs)
    report: dict = {"pairs": len(pairs), "labels": dict(Counter(p["op"] for p in pairs)),
                    "always_add_accuracy": round(always_add, 3), "models": {}}
    for model in args.models.split(","):
        llm = load_llm(MemSIFConfig.from_env(llm_model=model))
        rows = []
        for pair in pairs:
            asked = CoreFactBuilder(llm, embedder, parse_schema(""), ask_operation=True)
            rules = CoreFactBuilder(llm, embedder, parse_schema(""), ask_operation=False)
            model_op, model_rule = consolidate(asked, embedder, pair)
            rule_op, _ = consolidate(rules, embedder, pair)
            rows.append({"label": pair["op"], "model": model_op, "model_asked": model_rule == "llm",
                         "rules": rule_op, "new": pair["new"], "known": pair["known"]})
        asked_rows = [r for r in rows if r["model_asked"]]
        figures = {
            "name": getattr(llm, "name", model),
            "accuracy_model": round(sum(r["model"] == r["label"] for r in rows) / len(rows), 3),
            "accuracy_rules": round(sum(r["rules"] == r["label"] for r in rows) / len(rows), 3),
            "model_asked": len(asked_rows),
            "accuracy_where_asked": (round(sum(r["model"] == r["label"] for r in asked_rows) / len(asked_rows), 3)
                                     if asked_rows else None),
            "model_choices_where_asked": dict(Counter(r["model"] for r in asked_rows)),
            "rows": rows,
        }
        report["models"][model] = figures
        print(f"{figures['name']}: model {figures['accuracy_model']:.2f}, rules only {figures['accuracy_rules']:.2f}, "
              f"always ADD {always_add:.2f} ({len(pairs)} pairs; asked on {len(asked_rows)}: "
              f"{figures['accuracy_where_asked']}, choices {figures['model_choices_where_asked']})")
        close = getattr(llm, "close", None)
        if close:
            close()
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
