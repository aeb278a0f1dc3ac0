"""When does MemSIF say "nothing in this memory is about that", and when does it answer anyway?

For each dev conversation, imports its memory (an export made by ``python -m memsif export``) into a
scratch folder and asks three labelled sets as the engine asks any question:

- *answerable*: the conversation's own LoCoMo questions (categories 1–4); a refusal here is a loss;
- *never discussed*: ``benchmarks/quality/data/never-discussed.jsonl`` (hand-written, every specific word
  checked absent from the conversation); a refusal is right, an answer is invented;
- *other language*: ``benchmarks/quality/data/other-language.jsonl`` (real questions translated into Spanish,
  German, Portuguese or French; same gold answer and evidence): a refusal is a loss.

Prints per set the share refused by each rule (nothing retrieved, a name nothing retrieved mentions,
the cosine floor) and, for the answered ones, whether a gold evidence message reached the context.
With ``--generate`` the model answers what was not refused: a never-discussed question answered
with anything but a refusal ("not mentioned", "I don't know", …) counts as invented, and the
other-language answers get token F1 against the gold answer.

    PYTHONPATH=. python benchmarks/quality/not_in_memory.py --memory conv-26=assets/example-memory-conv-26.json.gz \
        --memory conv-30=conv30.json.gz --memory conv-47=conv47.json.gz [--generate] [--out result.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.eval.metrics import token_f1
from memsif.transfer import import_namespace, read_export

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
NEVER = ROOT / "benchmarks" / "quality" / "data" / "never-discussed.jsonl"
OTHER = ROOT / "benchmarks" / "quality" / "data" / "other-language.jsonl"
#: How the answers refuse (the engine's own refusal and the model's usual wordings).
REFUSAL = re.compile(r"don't know|do not know|not mentioned|no information|not (?:stated|specified|say|said|"
                     r"in (?:the|this) memory)|unknown|cannot be determined|no mention|nothing in this memory",
                     re.IGNORECASE)


def rule_of(answer) -> str:
    """Which rule refused, or "answered"."""
    if not answer.nothing_relevant:
        return "answered"
    if "nothing was retrieved" in answer.relevance_rule:
        return "nothing retrieved"
    if "the question names" in answer.relevance_rule:
        return "name not retrieved"
    if "what it asks about" in answer.relevance_rule:
        return "thing not retrieved"
    return "below the floor"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", action="append", required=True, help="SAMPLE=EXPORT_FILE")
    parser.add_argument("--data", default=str(DEV))
    parser.add_argument("--generate", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    memories = dict(item.split("=", 1) for item in args.memory)
    samples = {s.sample_id: s for s in load_locomo(args.data, list(memories))}
    never = [json.loads(line) for line in NEVER.read_text().splitlines() if line.strip()]
    other = [json.loads(line) for line in OTHER.read_text().splitlines() if line.strip()]
    scratch = tempfile.mkdtemp(prefix="memsif-notin-")
    rows = []
    try:
        engine = MemSIF(MemSIFConfig.from_env(data_dir=scratch))
        for sample_id, path in memories.items():
            import_namespace(engine.store, engine.embedder, read_export(path), sample_id)
            sets = {
                "answerable": [(q.question, q.gold, q.evidence_ids, "en") for q in samples[sample_id].questions],
                "never discussed": [(r["question"], None, [], "en") for r in never if r["sample_id"] == sample_id],
                "other language": [(r["question"], r["answer"], r["evidence"], r["language"])
                                   for r in other if r["sample_id"] == sample_id],
            }
            for kind, questions in sets.items():
                generate = args.generate and kind != "answerable"
                for question, gold, evidence, language in questions:
                    a = engine.ask(question, namespace=sample_id, generate=generate)
                    row = {"sample": sample_id, "set": kind, "question": question, "language": language,
                           "detected": a.language, "rule": rule_of(a), "relevance": a.relevance,
                           "evidence_in_context": bool(set(evidence) & set(a.context_source_ids)),
                           "answer": a.answer if generate else None,
                           "retrieved": " ".join([*(f.statement for f in a.facts_used),
                                                  *(e.statement for e in a.evidence_used)])}
                    if generate and gold is not None:
                        row["f1"] = token_f1(a.answer, str(gold))
                    if generate and kind == "never discussed":
                        row["invented"] = not a.nothing_relevant and not REFUSAL.search(a.answer)
                    rows.append(row)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    host = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True,
                          text=True).stdout.split(":")[-1]
    print(f"{datetime.now(UTC):%Y-%m-%d}, {host.strip()}; memories: {memories}")
    print("| set | questions | refused | nothing retrieved | name not retrieved | thing not retrieved | "
          "below the floor | gold evidence in context (answered) | invented | F1 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind in ("answerable", "never discussed", "other language"):
        mine = [r for r in rows if r["set"] == kind]
        if not mine:
            continue
        rules = collections.Counter(r["rule"] for r in mine)
        answered = [r for r in mine if r["rule"] == "answered"]
        refused = len(mine) - len(answered)
        found = sum(r["evidence_in_context"] for r in answered)
        invented = [r for r in mine if "invented" in r]
        f1 = [r["f1"] for r in mine if "f1" in r]
        made_up = f"{sum(r['invented'] for r in invented)}/{len(invented)}" if invented else "–"
        mean_f1 = f"{sum(f1) / len(f1):.3f}" if f1 else "–"
        print(f"| {kind} | {len(mine)} | {refused} ({refused / len(mine):.0%}) | {rules['nothing retrieved']} | "
              f"{rules['name not retrieved']} | {rules['thing not retrieved']} | {rules['below the floor']} | "
              f"{found}/{len(answered) if kind != 'never discussed' else 0} | {made_up} | {mean_f1} |")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
