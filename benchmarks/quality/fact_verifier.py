"""How well the configured model's yes/no verification separates supported from unsupported CoreFacts,
and where its threshold lies.

Reads labelled stored facts (``benchmarks/quality/data/corefact-stored-*.jsonl``: subject, statement, cited
message ids, ``supported`` by hand), settles each statement's dates and runs the grounding gate as the
engine does now (``memsif.facts.dates``, ``memsif.facts.grounding``), and asks the model the
verification question (``--variant``; "product" is ``memsif.prompts.fact_verify``) for every fact, as
one scored forward pass each (P(yes)). Prints per file the ROC AUC of P(yes) over all facts and over
those the gate passes, the seconds per fact, and per conversation the precision and the number kept at
each pair (P(yes) threshold, word-overlap threshold) over the gate's survivors: the thresholds of
``memsif.facts.verify`` are read off this grid on two conversations and tested on the third.
A fact whose date the rules rewrote and whose only fault was its date ("date wrong") counts as
supported among the survivors. ``--out`` keeps the per-fact scores (JSON lines).

    PYTHONPATH=. python benchmarks/quality/fact_verifier.py [--variant product] [--out scores.jsonl]
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
from memsif.facts import grounding
from memsif.facts.core import EXAMPLE_WORDS
from memsif.facts.dates import settle_dates
from memsif.llm import load_llm
from memsif.prompts import Prompt, clip, core_extract, fact_verify
from memsif.timeparse import annotate_relative_dates, day_text

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
LABELS = {
    "conv-26 stored (a)": ("conv-26", ROOT / "benchmarks/quality/data/corefact-stored-conv26.jsonl"),
    "conv-26 stored (b)": ("conv-26", ROOT / "benchmarks/quality/data/corefact-stored-conv26-rest.jsonl"),
    "conv-30 stored": ("conv-30", ROOT / "benchmarks/quality/data/corefact-stored-conv30.jsonl"),
}
MIN_P = (0.4, 0.5, 0.6, 0.65, 0.7, 0.75)
MIN_OVERLAP = (0.5, 0.6, 0.7, 0.8)


def _both_speakers(subject, statement, sources):
    """Every cited message with its speaker; "true of the subject?" (the first wording tried)."""
    lines = "\n".join(f"{m.speaker} ({day_text(m.time)}): {clip(annotate_relative_dates(m.text, m.time)[0], 400)}"
                      for m in sources)
    return Prompt("fact_verify", "both-speakers", f"Messages:\n{lines}\n\nStatement: {statement}\n\n"
                  f"Do these messages say that this statement is true of {subject}?")


def _exact(subject, statement, sources):
    """Every cited message; "every detail, about the subject and not someone else?"."""
    lines = "\n".join(f"{m.speaker} ({day_text(m.time)}): {clip(annotate_relative_dates(m.text, m.time)[0], 400)}"
                      for m in sources)
    return Prompt("fact_verify", "exact", f"Messages:\n{lines}\n\nClaim about {subject}: {statement}\n\n"
                  f"Is every detail of the claim stated in the messages, about {subject} and not someone else?")


def _specific(subject, statement, sources):
    """The statement alone: a specific fact, not a feeling, compliment or thanks?"""
    return Prompt("fact_verify", "specific", f"Statement: {statement}\n\nIs this a specific fact about {subject} "
                  "(something they did, have, are, plan or like), not a feeling, a compliment, thanks or a vague "
                  "remark?")


VARIANTS = {"product": fact_verify.build, "both-speakers": _both_speakers, "exact": _exact, "specific": _specific}


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEV))
    parser.add_argument("--variant", default="product", choices=sorted(VARIANTS))
    parser.add_argument("--out", help="write one JSON line per fact with its P(yes)")
    args = parser.parse_args()
    samples = {s.sample_id: s for s in load_locomo(args.data)}
    llm = load_llm(MemSIFConfig.from_env())
    out = open(args.out, "w") if args.out else None
    host = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True, text=True).stdout
    print(f"model {llm.name}; prompt {args.variant} ({fact_verify.VERSION} for product); {host.strip()}")
    print("| labels | n | supported | AUC | passed the gate | supported | AUC on those | s/fact |")
    print("|---|---|---|---|---|---|---|---|")
    survivors: dict[str, list[tuple[bool, float, float]]] = {}
    for label, (sample, path) in LABELS.items():
        if not path.exists():
            continue
        rows = rows_of(path)
        messages = {m.id: m for m in samples[sample].messages}
        speakers = sorted({m.speaker for m in samples[sample].messages})
        prompts = [VARIANTS[args.variant](r["subject"], r["statement"], [messages[i] for i in r["sources"]])
                   for r in rows]
        start = time.perf_counter()
        scores = llm.yes_probability(prompts)
        seconds = (time.perf_counter() - start) / max(len(rows), 1)
        gold = [bool(r["supported"]) for r in rows]
        kept = []
        for r, p in zip(rows, scores, strict=True):
            cited = [messages[i] for i in r["sources"]]
            statement, note = settle_dates(r["statement"], cited)
            verdict = grounding.check(r["subject"], statement, cited, speakers,
                                      max_statement_chars=core_extract.STATEMENT_MAX_CHARS, example_words=EXAMPLE_WORDS)
            supported = bool(r["supported"]) or (bool(note) and r.get("why_not", "").startswith("date wrong"))
            if verdict.passed:
                kept.append((supported, p, verdict.scores["overlap"]))
            if out:
                out.write(json.dumps({"labels": label, "fact_id": r.get("fact_id"), "statement": r["statement"],
                                      "supported": r["supported"], "why_not": r.get("why_not", ""),
                                      "passed_gate": verdict.passed, "p_yes": round(p, 4)}) + "\n")
        survivors.setdefault(sample, []).extend(kept)
        auc = roc_auc(scores, [int(g) for g in gold])
        kept_auc = roc_auc([p for _, p, _ in kept], [int(s) for s, _, _ in kept])
        print(f"| {label} | {len(rows)} | {sum(gold)} | {auc:.3f} | {len(kept)} | {sum(s for s, _, _ in kept)} | "
              f"{kept_auc:.3f} | {seconds:.2f} |", flush=True)
    for sample, kept in survivors.items():
        print(f"\n{sample}, the gate's {len(kept)} survivors: kept / precision at (P(yes) ≥ row, overlap ≥ column)")
        print("| P(yes) | " + " | ".join(f"overlap ≥ {o}" for o in MIN_OVERLAP) + " |")
        print("|---|" + "---|" * len(MIN_OVERLAP))
        for min_p in MIN_P:
            cells = []
            for min_overlap in MIN_OVERLAP:
                chosen = [s for s, p, o in kept if p >= min_p and o >= min_overlap]
                cells.append(f"{len(chosen)} / {sum(chosen) / len(chosen):.2f}" if chosen else "0 / –")
            print(f"| {min_p} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
