"""What the ActiveFact track accumulates and promotes over one evaluation run, sentence by sentence.

Imports an export (``python -m memsif export``) into a scratch folder, asks the conversation's own
LoCoMo questions (categories 1–4, file order) without generating answers (the evidence of each answer
is accumulated as in a real run, §3.4), then writes every sentence of every candidate cluster's
statements as one JSON line (cluster id, promoted or not, the statement it belongs to) for labelling.
With ``--labels`` (the same lines with ``"kind"`` set by hand: statement, question, greeting, praise,
empty) it prints how many candidate and promoted statements hold a sentence of each kind.

    PYTHONPATH=. python benchmarks/quality/active_fact_statements.py --export assets/example-memory-conv-26.json.gz \
        --sample conv-26 --out sentences.jsonl [--labels benchmarks/quality/data/activefact-sentences-conv26.jsonl]
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import tempfile
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.lexical import split_sentences
from memsif.transfer import import_namespace, read_export

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", required=True)
    parser.add_argument("--sample", default="conv-26")
    parser.add_argument("--data", default=str(DEV))
    parser.add_argument("--out", required=True)
    parser.add_argument("--labels", help="labelled sentences (JSON lines with 'sentence' and 'kind')")
    parser.add_argument("--questions", type=int, default=0, help="at most this many questions (0: all)")
    args = parser.parse_args()
    [sample] = load_locomo(args.data, [args.sample])
    scratch = tempfile.mkdtemp(prefix="memsif-active-")
    try:
        engine = MemSIF(MemSIFConfig.from_env(data_dir=scratch))
        data = read_export(args.export)
        import_namespace(engine.store, engine.embedder, data, args.sample)
        questions = [q for q in sample.questions if q.category in ("S-hop", "M-hop", "Temp", "Kno")]
        for q in questions[: args.questions or None]:
            engine.ask(q.question, namespace=args.sample, generate=False)
        clusters = engine.store.clusters(args.sample)
        with open(args.out, "w") as out:
            for c in clusters:
                for statement in c.statements:
                    for sentence in split_sentences(statement):
                        out.write(json.dumps({"cluster": c.id, "promoted": bool(c.active_fact_id),
                                              "subject": c.subject, "statement": statement,
                                              "sentence": sentence.strip()}) + "\n")
        promoted = [a for a in engine.store.active_facts(args.sample)]
        print(f"{len(questions)} questions, {len(clusters)} clusters, "
              f"{sum(len(c.statements) for c in clusters)} statements, {len(promoted)} ActiveFacts promoted")
        if args.labels:
            labelled = {json.loads(line)["sentence"]: json.loads(line)["kind"]
                        for line in Path(args.labels).read_text().splitlines() if line.strip()}

            def kind_of(sentence: str) -> str:  # a kept part of a labelled sentence has its label
                return labelled.get(sentence) or next((k for s, k in labelled.items() if sentence in s), "unlabelled")

            for label, rows in (("candidate statements", [s for c in clusters for s in c.statements]),
                                ("promoted statements", [a.statement for a in promoted])):
                kinds = collections.Counter()
                for statement in rows:
                    found = {kind_of(s.strip()) for s in split_sentences(statement)}
                    kinds[" + ".join(sorted(found))] += 1
                print(f"{label}: {len(rows)}; by the kinds of their sentences: {dict(kinds)}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
