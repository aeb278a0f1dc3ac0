"""Precision and recall of the CoreFact grounding gate on a labelled set of candidate facts.

The set (``benchmarks/quality/data/corefact-candidates.jsonl``) holds candidate facts, each labelled
*supported* (its cited messages say it, about its subject) or not, by reading the transcript:
for LoCoMo conv-26, the 70 the packaged SmolLM2-135M extracted in a build before the gate existed,
and 42 hand-written ones of the kind a stronger extractor writes (25 supported paraphrases, 17 with
one error each: wrong person, changed number/place/relative, invented detail, reversed polarity,
hypothetical taken as fact); the gate's rules were written while reading these. Held out: the first
45 candidates SmolLM2-135M extracted from conv-30, and the 42 candidates Qwen2.5-Coder-1.5B-Instruct
extracted from conv-26's first 112 messages (``benchmarks/quality/corefact_sample.py --batches 14``), each
labelled before the gate was run on them. The gate
runs as the engine runs it (packaged MiniLM embedder, the extraction schema's length limit).

    PYTHONPATH=. python benchmarks/quality/grounding_gate.py --data ../shared/data/locomo/locomo_dev.json \\
        [--out benchmarks/results/dev/grounding-gate.md]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.facts.grounding import check
from memsif.prompts.core_extract import STATEMENT_MAX_CHARS

CANDIDATES = Path(__file__).resolve().parent / "data" / "corefact-candidates.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="LoCoMo dev file holding the candidates' samples")
    parser.add_argument("--candidates", default=str(CANDIDATES))
    parser.add_argument("--out", help="also write the tables as Markdown here")
    args = parser.parse_args()

    rows = [json.loads(line) for line in Path(args.candidates).read_text().splitlines() if line.strip()]
    samples = {s.sample_id: s for s in load_locomo(args.data, sorted({r["sample"] for r in rows}))}
    embedder = MemSIF(MemSIFConfig.from_env()).embedder
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    mistakes = []
    for row in rows:
        sample = samples[row["sample"]]
        messages = {m.id: m for m in sample.messages}
        speakers = sorted({m.speaker for m in sample.messages})
        cited = [messages[i] for i in row["sources"]]
        vector = embedder.embed_documents([row["statement"]])[0]
        verdict = check(row["subject"], row["statement"], cited, speakers, vector,
                        embedder.embed_documents([m.text for m in cited]), max_statement_chars=STATEMENT_MAX_CHARS)
        cell = ("t" if verdict.passed == row["supported"] else "f") + ("p" if verdict.passed else "n")
        for group in (row["origin"], "all"):
            counts[group][cell] += 1
        if verdict.passed != row["supported"]:
            mistakes.append((row, verdict))

    lines = ["| candidates | n | supported | passed | precision | recall | false passes | false rejects |",
             "|---|---|---|---|---|---|---|---|"]
    for group, c in counts.items():
        n = sum(c.values())
        passed, supported = c["tp"] + c["fp"], c["tp"] + c["fn"]
        precision = f"{c['tp'] / passed:.2f}" if passed else "–"
        recall = f"{c['tp'] / supported:.2f}" if supported else "–"
        lines.append(f"| {group} | {n} | {supported} | {passed} | {precision} | {recall} | {c['fp']} | {c['fn']} |")
    lines += ["", "Mistakes:", ""]
    for row, verdict in mistakes:
        what = "passed, not supported" if verdict.passed else "rejected, supported"
        lines.append(f"- {what}: {row['subject']}: {row['statement']!r} ({', '.join(row['sources'])}"
                     f"{'; ' + row['error'] if row.get('error') else ''}) — {verdict.reason}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(f"# CoreFact grounding gate on labelled conv-26 candidates\n\n"
                                  "`PYTHONPATH=. python benchmarks/quality/grounding_gate.py "
                                  f"--data {args.data}`\n\n{text}\n")


if __name__ == "__main__":
    main()
