"""Seconds to an answer's first token, and what the prompt holds: 20 fixed dev questions (every k-th
of conv-26's scored questions) asked one after the other of the shipped example memory, in a fresh
process with the default models, the way a person chats. Per question: the first token, the prompt's
tokens, those the back-end had to read (not in its key/value cache), the context's facts and
evidence tokens, and the stages' seconds; then the median and the shares.

    PYTHONPATH=. python benchmarks/speed/first_token.py --out FILE.json

Run it on an idle machine (prompt reading takes both cores) and keep ``lscpu`` beside the result.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.inspector.common import EXAMPLE_MEMORY
from memsif.llm import Reading, reading_reported
from memsif.transfer import read_export

QUESTIONS = 20


def fixed_questions(path: str = "../shared/data/locomo/locomo_dev.json", n: int = QUESTIONS) -> list:
    """Every k-th scored question of conv-26 (k = questions // n), the first ``n`` of them."""
    [sample] = load_locomo(path, ["conv-26"])
    return sample.questions[::max(1, len(sample.questions) // n)][:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    eng = MemSIF(MemSIFConfig.from_env(data_dir=tempfile.mkdtemp(prefix="memsif-first-token-")))
    namespace = eng.import_namespace(read_export(EXAMPLE_MEMORY), "example")
    load_s = eng.load_models()
    rows = []
    for q in fixed_questions():
        read: list[Reading] = []
        with reading_reported(read.append):
            answer = eng.ask(q.question, namespace=namespace, question_date=q.question_date)
        facts = "\n".join(f"- {f.subject}: {f.statement}" for f in answer.facts_used)
        rows.append({"question": q.question, "answer": answer.answer,
                     "first_token_s": round(answer.first_token_seconds or 0.0, 3),
                     "prompt_tokens": answer.tokens_in, "read_tokens": sum(r.tokens for r in read),
                     "context_tokens": answer.context_tokens,
                     "facts_tokens": eng.llm.count_tokens(facts) if facts else 0,
                     "stages_s": {k: round(v, 3) for k, v in answer.seconds_by_stage.items()}})
        print(json.dumps(rows[-1]), flush=True)
    median = lambda key: statistics.median(r[key] for r in rows)  # noqa: E731
    summary = {"questions": len(rows), "first_token_p50_s": median("first_token_s"),
               "prompt_tokens_p50": median("prompt_tokens"), "read_tokens_p50": median("read_tokens"),
               "facts_tokens_p50": median("facts_tokens"), "context_tokens_p50": median("context_tokens"),
               "model_load_s": round(load_s, 1),
               "backend": getattr(getattr(eng.llm, "runtime", None), "detail", "")}
    print(json.dumps(summary))
    with open(args.out, "w") as out:
        json.dump({"summary": summary, "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
