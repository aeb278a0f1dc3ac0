"""How well the configured model's yes/no verification separates supported from unsupported CoreFacts.

Reads labelled facts (``benchmarks/data/corefact-stored-*.jsonl`` and the labelled Qwen candidates of
``corefact-candidates.jsonl``: subject, statement, cited message ids, ``supported`` by hand), asks the
model the verification question of ``memsif.prompts.fact_verify`` for each (one scored forward pass,
P(yes)), and prints per file the ROC AUC, the seconds per fact, and precision / kept share at a few
thresholds. ``--out`` keeps the per-fact scores (JSON lines) for fitting the threshold elsewhere.

    PYTHONPATH=. python benchmarks/fact_verifier.py --out scores.jsonl
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.eval.data import load_locomo
from memsif.eval.judges import roc_auc
from memsif.llm import load_llm
from memsif.prompts import fact_verify

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
LABELS = {
    "conv-26 stored (a)": ("conv-26", ROOT / "benchmarks/data/corefact-stored-conv26.jsonl"),
    "conv-26 stored (b)": ("conv-26", ROOT / "benchmarks/data/corefact-stored-conv26-rest.jsonl"),
    "conv-30 stored": ("conv-30", ROOT / "benchmarks/data/corefact-stored-conv30.jsonl"),
    "conv-47 stored": ("conv-47", ROOT / "benchmarks/data/corefact-stored-conv47.jsonl"),
}


def _own_words(subject, statement, sources):
    from memsif.prompts import Prompt, clip
    from memsif.timeparse import annotate_relative_dates, day_text
    own = [m for m in sources if m.speaker == subject] or list(sources)
    lines = "\n".join(f"({day_text(m.time)}) {clip(annotate_relative_dates(m.text, m.time)[0], 400)}" for m in own)
    who = own[0].speaker
    text = f"{who} wrote:\n{lines}\n\nClaim: {statement}\n\nDoes what {who} wrote state every detail of the claim?"
    return Prompt("fact_verify", "own-words", text)


def _exact(subject, statement, sources):
    from memsif.prompts import Prompt, clip
    from memsif.timeparse import annotate_relative_dates, day_text
    lines = "\n".join(f"{m.speaker} ({day_text(m.time)}): {clip(annotate_relative_dates(m.text, m.time)[0], 400)}"
                      for m in sources)
    text = (f"Messages:\n{lines}\n\nClaim about {subject}: {statement}\n\n"
            f"Is every detail of the claim stated in the messages, about {subject} and not someone else?")
    return Prompt("fact_verify", "exact", text)


def _specific(subject, statement, sources):
    from memsif.prompts import Prompt
    text = (f"Statement: {statement}\n\nIs this a specific fact about {subject} (something they did, have, are, "
            "plan or like), not a feeling, a compliment, thanks or a vague remark?")
    return Prompt("fact_verify", "specific", text)


VARIANTS = {"specific": _specific, "product": fact_verify.build, "own-words": _own_words, "exact": _exact}


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEV))
    parser.add_argument("--out", help="write one JSON line per fact with its P(yes)")
    parser.add_argument("--variant", default="product", choices=sorted(VARIANTS))
    parser.add_argument("--limit", type=int, default=0, help="at most this many facts per file (0: all)")
    args = parser.parse_args()
    samples = {s.sample_id: {m.id: m for m in s.messages} for s in load_locomo(args.data)}
    llm = load_llm(MemSIFConfig.from_env())
    out = open(args.out, "w") if args.out else None
    print(f"model {llm.name}; prompt {fact_verify.VERSION}")
    print(subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True, text=True).stdout.strip())
    print("| labels | n | supported | AUC | s/fact | precision kept (p≥0.5) | kept |")
    print("|---|---|---|---|---|---|---|")
    for label, (sample, path) in LABELS.items():
        if not path.exists():
            continue
        rows = rows_of(path)[: args.limit or None]
        messages = samples[sample]
        prompts = [VARIANTS[args.variant](r["subject"], r["statement"], [messages[i] for i in r["sources"]])
                   for r in rows]
        start = time.perf_counter()
        scores = llm.yes_probability(prompts)
        seconds = (time.perf_counter() - start) / max(len(rows), 1)
        gold = [bool(r["supported"]) for r in rows]
        kept = [g for g, s in zip(gold, scores, strict=True) if s >= 0.5]
        auc = roc_auc(scores, [int(g) for g in gold])
        print(f"| {label} | {len(rows)} | {sum(gold)} | {auc:.3f} | {seconds:.2f} | "
              f"{(sum(kept) / len(kept) if kept else float('nan')):.2f} | {len(kept)} |", flush=True)
        if out:
            for r, s in zip(rows, scores, strict=True):
                out.write(json.dumps({"labels": label, "fact_id": r.get("fact_id"), "statement": r["statement"],
                                      "supported": r["supported"], "why_not": r.get("why_not", ""),
                                      "p_yes": round(s, 4)}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
