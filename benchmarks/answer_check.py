"""The answer check before the answer: does the context state what is asked? Measured on the answerable
LoCoMo questions and the never-discussed ones of each dev conversation, thresholds fitted on two
conversations and tested on the third.

Run (``--memory`` once per conversation, an export made by ``python -m memsif export``): every question
is asked as the engine asks it, with the check asked and *never* refusing (its threshold is applied
afterwards, so one run gives every threshold), the answer generated, and each wording of
``memsif.prompts.answer_check.WORDINGS`` scored over the same cached prefix. One JSON line per question.

Report (``--report ROWS``): per wording the AUC of P(yes) (answerable against never discussed, among the
questions the relevance rules let through); per held-out conversation the threshold fitted on the other
two (the highest at which at most ``--max-refused`` of their answerable questions are refused), and on
the held-out one: never-discussed answered (invented), answerable refused, token F1 with refused answers
scored 0 against all answered (paired bootstrap over questions), and the time the check adds to an answer
(``--timed`` questions per conversation answered over the same context from a cold cache without and
with the check before it, alternating which goes first; a ratio within one run).

    PYTHONPATH=. python benchmarks/answer_check.py --memory conv-26=assets/example-memory-conv-26.json.gz \
        --memory conv-30=E30 --memory conv-47=E47 --out rows.jsonl
    PYTHONPATH=. python benchmarks/answer_check.py --report rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memsif import query
from memsif.answercheck import check_context
from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.eval.judges import roc_auc
from memsif.eval.metrics import paired_bootstrap, token_f1
from memsif.prompts import Prompt, answer, answer_check
from memsif.transfer import import_namespace, read_export

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
NEVER = ROOT / "benchmarks" / "data" / "never-discussed.jsonl"


def _refuses(answer: str) -> bool:
    """Whether a generated answer is itself a refusal ("not mentioned", "I don't know", …)."""
    from memsif.answercheck import declined

    return declined(answer) or "nothing in this memory" in answer.lower()


def latency(engine: MemSIF, question: str, context: str, first_with: bool) -> dict:
    """Seconds of one answer over ``context`` without and with the check before it, each from a cache
    that holds nothing of the prompt (a short unrelated prompt is scored first)."""
    llm, cfg = engine.llm, engine.config
    seconds = {}
    for with_check in ((True, False) if first_with else (False, True)):
        llm.yes_probability([Prompt("flush", "flush/0", "Is this a test?")])
        start = time.perf_counter()
        if with_check:
            check_context(llm, question, context, None, 0.5)
        llm.generate(answer.build(question, context), max_new_tokens=cfg.answer_max_tokens,
                     temperature=cfg.answer_temperature, stop=answer.STOP)
        seconds["with" if with_check else "without"] = time.perf_counter() - start
    return seconds


def run(memories: dict[str, str], data: str, out: Path, limit: int | None = None, timed: int = 0) -> None:
    """Ask every answerable and never-discussed question of each memory; one row per question to ``out``."""
    samples = {s.sample_id: s for s in load_locomo(data, list(memories))}
    never = [json.loads(line) for line in NEVER.read_text().splitlines() if line.strip()]
    scratch = tempfile.mkdtemp(prefix="memsif-answer-check-")
    query.answer_check_threshold = lambda mode, llm: 0.0  # every P recorded, none refused: thresholds come after
    try:
        engine = MemSIF(MemSIFConfig.from_env(data_dir=scratch, answer_check="model"))
        llm = engine.llm
        with out.open("w") as sink:
            for sample_id, path in memories.items():
                import_namespace(engine.store, engine.embedder, read_export(path), sample_id)
                questions = [("answerable", q.qid, q.category, q.question, q.gold, q.evidence_ids)
                             for q in samples[sample_id].questions]
                questions += [("never discussed", f"{sample_id}/never{k}", "never", r["question"], None, [])
                              for k, r in enumerate(r for r in never if r["sample_id"] == sample_id)]
                if limit:  # a smoke run: the first questions of each set
                    questions = [q for kind in ("answerable", "never discussed")
                                 for q in [q for q in questions if q[0] == kind][:limit]]
                done = 0  # questions timed without and with the check
                for kind, qid, category, question, gold, evidence in questions:
                    a = engine.ask(question, namespace=sample_id)
                    row = {"sample": sample_id, "set": kind, "qid": qid, "category": category, "question": question,
                           "gold": gold, "answer": a.answer, "nothing_relevant": a.nothing_relevant,
                           "p": {answer_check.VERSION: a.answer_check_prob}, "seconds": a.seconds,
                           "stages": a.seconds_by_stage, "context_tokens": a.context_tokens,
                           "evidence_in_context": bool(set(evidence) & set(a.context_source_ids)),
                           "declined": _refuses(a.answer)}
                    if not a.nothing_relevant:
                        for version in answer_check.WORDINGS:
                            if version != answer_check.VERSION:
                                prompt = answer_check.build(question, a.context, None, version)
                                row["p"][version] = round(llm.yes_probability([prompt])[0], 4)
                    if gold is not None:
                        row["f1"] = token_f1(a.answer, str(gold))
                    if done < timed and not a.nothing_relevant and kind == "answerable":
                        row["latency"] = latency(engine, question, a.context, first_with=done % 2 == 0)
                        done += 1
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def fitted_threshold(rows: Sequence[dict], version: str, max_refused: float) -> float:
    """The highest threshold at which at most ``max_refused`` of ``rows``' answerable questions would
    be refused (by the relevance rules or by the check)."""
    answerable = [r for r in rows if r["set"] == "answerable"]
    ruled = sum(r["nothing_relevant"] for r in answerable)
    probs = sorted(r["p"][version] for r in answerable if not r["nothing_relevant"])
    best = 0.0
    for t in [0.0, *probs]:
        refused = ruled + sum(p < t for p in probs)
        if refused <= max_refused * len(answerable):
            best = t
    return best


def outcome(rows: Sequence[dict], version: str, t: float) -> dict:
    """On ``rows`` at threshold ``t``: invented, refused answerable, F1 with and without the check."""
    def refused(r: dict) -> bool:
        return r["nothing_relevant"] or (r["p"].get(version) is not None and r["p"][version] < t)

    never = [r for r in rows if r["set"] == "never discussed"]
    answerable = [r for r in rows if r["set"] == "answerable"]
    invented = sum(not refused(r) and not r["declined"] for r in never)
    f1_without = [r["f1"] for r in answerable]
    f1_with = [0.0 if refused(r) else r["f1"] for r in answerable]
    timed = [r["latency"] for r in rows if "latency" in r]
    without = sum(x["without"] for x in timed)
    return {"threshold": t, "never": len(never), "invented": invented, "answerable": len(answerable),
            "refused": sum(refused(r) for r in answerable), "f1_with": float(np.mean(f1_with)),
            "f1_without": float(np.mean(f1_without)), "f1_pairs": (f1_with, f1_without),
            "added": sum(x["with"] for x in timed) / without - 1 if without else float("nan"), "timed": len(timed)}


def report(path: Path, max_refused: float) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    samples = list(dict.fromkeys(r["sample"] for r in rows))
    versions = list(dict.fromkeys(v for r in rows for v in r["p"]))
    print(f"{len(rows)} questions of {', '.join(samples)}; thresholds fitted on the other conversations "
          f"(refused answerable ≤ {max_refused:.0%}), applied to the held-out one\n")
    for version in versions:
        scored = [r for r in rows if not r["nothing_relevant"] and r["p"].get(version) is not None]
        labels = [int(r["set"] == "answerable") for r in scored]
        auc = roc_auc([r["p"][version] for r in scored], labels) if 0 < sum(labels) < len(labels) else float("nan")
        print(f"### {version}: {answer_check.WORDINGS.get(version, '')!r}; AUC answerable vs never discussed "
              f"{auc:.3f} ({len(scored)} questions past the relevance rules)\n")
        print("| held out | threshold | never discussed answered (invented) | answerable refused | "
              "F1 with the check | F1 without | answer time added by the check (questions timed) |")
        print("|---|---|---|---|---|---|---|")
        pooled: list[dict] = []
        for held in samples:
            t = fitted_threshold([r for r in rows if r["sample"] != held], version, max_refused)
            mine = [r for r in rows if r["sample"] == held]
            o = outcome(mine, version, t)
            pooled.append(o)
            print(f"| {held} | {t:.2f} | {o['invented']}/{o['never']} ({o['invented'] / max(o['never'], 1):.0%}) | "
                  f"{o['refused']}/{o['answerable']} ({o['refused'] / max(o['answerable'], 1):.1%}) | "
                  f"{o['f1_with']:.1%} | {o['f1_without']:.1%} | {o['added']:+.1%} ({o['timed']}) |")
        inv, nev = sum(o["invented"] for o in pooled), sum(o["never"] for o in pooled)
        ref, ans = sum(o["refused"] for o in pooled), sum(o["answerable"] for o in pooled)
        with_all = [x for o in pooled for x in o["f1_pairs"][0]]
        without_all = [x for o in pooled for x in o["f1_pairs"][1]]
        diff = paired_bootstrap(with_all, without_all, [str(i) for i in range(len(with_all))])
        every = outcome(rows, version, 0.0)
        print(f"| all | – | {inv}/{nev} ({inv / max(nev, 1):.0%}) | {ref}/{ans} ({ref / max(ans, 1):.1%}) | "
              f"{np.mean(with_all):.1%} | {np.mean(without_all):.1%} | {every['added']:+.1%} ({every['timed']}) |\n")
        print(f"F1 with − without the check: {diff['diff']:+.2%} [{diff['ci_low']:+.2%}, {diff['ci_high']:+.2%}] "
              "(paired bootstrap over questions)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", action="append", default=[], help="SAMPLE=EXPORT_FILE")
    parser.add_argument("--data", default=str(DEV))
    parser.add_argument("--out", help="rows (JSON lines) of a run")
    parser.add_argument("--report", help="rows of a run to report")
    parser.add_argument("--max-refused", type=float, default=0.02)
    parser.add_argument("--limit", type=int, help="the first N questions of each set (a smoke run)")
    parser.add_argument("--timed", type=int, default=15, help="answerable questions per conversation whose answer "
                        "is timed without and with the check, alternating which goes first")
    args = parser.parse_args()
    if args.report:
        report(Path(args.report), args.max_refused)
        return
    if not args.memory or not args.out:
        parser.error("a run needs --memory (once per conversation) and --out")
    run(dict(item.split("=", 1) for item in args.memory), args.data, Path(args.out), args.limit, args.timed)


if __name__ == "__main__":
    main()
