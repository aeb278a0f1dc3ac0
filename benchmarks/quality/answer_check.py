"""The answer check before the answer: does the context state what is asked? Measured on the answerable
LoCoMo questions and the never-discussed ones of each dev conversation, thresholds fitted on two
conversations and tested on the third.

Run (``--memory`` once per conversation, an export made by ``python -m memsif export``): every question
is asked as the engine asks it, with the check asked and *never* refusing (its threshold is applied
afterwards, so one run gives every threshold), the answer generated, and each wording of
``memsif.prompts.answer_check.WORDINGS`` scored over the same cached prefix. One JSON line per question.

Report (``--report ROWS``): per wording the AUC of P(yes) (answerable against never discussed, among the
questions the relevance rules let through); per held-out conversation the threshold fitted on the other
two (the highest at which the check refuses at most ``--max-refused`` of their answerable questions beyond
those the relevance rules refuse), and on
the held-out one: never-discussed answered (invented), answerable refused, token F1 with refused answers
scored 0 against all answered (paired bootstrap over questions), and the time the check adds to an answer
(``--timed`` questions per conversation answered over the same context from a cold cache without and
with the check before it, alternating which goes first; a ratio within one run).

    PYTHONPATH=. python benchmarks/quality/answer_check.py --memory conv-26=assets/example-memory-conv-26.json.gz \
        --memory conv-30=E30 --memory conv-47=E47 --out rows.jsonl
    PYTHONPATH=. python benchmarks/quality/answer_check.py --report rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memsif.answer import query
from memsif.answer.check import check_context
from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.eval.judges import roc_auc
from memsif.eval.metrics import paired_bootstrap, token_f1
from memsif.prompts import Prompt, answer, answer_check
from memsif.transfer import import_namespace, read_export

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
NEVER = ROOT / "benchmarks" / "quality" / "data" / "never-discussed.jsonl"


def _refuses(answer: str) -> bool:
    """Whether a generated answer is itself a refusal ("not mentioned", "I don't know", …)."""
    from memsif.answer.check import declined

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
                           "declined": _refuses(a.answer), "unsupported": a.unsupported_mentions}
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


def add_mentions(memories: dict[str, str], data: str, rows_path: Path) -> None:
    """Rows of a run made before rows kept the answer's unsupported mentions: the same questions asked again
    in the same order with ``generate=False`` (so the same ActiveFacts accumulate and each context is the
    one the answer was written from), and each row's answer checked against it
    (``memsif.answer.check.unsupported_mentions``). Rewrites ``rows_path``."""
    from memsif.answer.check import unsupported_mentions

    rows = [json.loads(line) for line in rows_path.read_text().splitlines() if line.strip()]
    scratch = tempfile.mkdtemp(prefix="memsif-answer-check-")
    try:
        engine = MemSIF(MemSIFConfig.from_env(data_dir=scratch, answer_check="off"))
        for sample_id, path in memories.items():
            import_namespace(engine.store, engine.embedder, read_export(path), sample_id)
            for row in (r for r in rows if r["sample"] == sample_id):
                a = engine.ask(row["question"], namespace=sample_id, generate=False)
                row["unsupported"] = [] if a.nothing_relevant else unsupported_mentions(row["answer"], a.context)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rows_path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def mentions_rule(r: dict) -> bool:
    """The answer names a name, number or date its context does not hold (``unsupported_mentions``)."""
    return bool(r.get("unsupported")) and not r["declined"]


def never(r: dict) -> bool:
    return False


def fitted_threshold(rows: Sequence[dict], version: str, max_refused: float, also: Callable[[dict], bool]) -> float:
    """The highest threshold at which the check refuses at most ``max_refused`` of ``rows``' answerable
    questions beyond those the relevance rules and ``also`` already refuse."""
    answerable = [r for r in rows if r["set"] == "answerable"]
    probs = sorted(r["p"][version] for r in answerable if not r["nothing_relevant"] and not also(r))
    best = 0.0
    for t in [0.0, *probs]:
        if sum(p < t for p in probs) <= max_refused * len(answerable):
            best = t
    return best


def outcome(rows: Sequence[dict], refused: Callable[[dict], bool]) -> dict:
    """On ``rows`` with ``refused`` deciding each question: invented, refused answerable, F1 with and without."""
    never_rows = [r for r in rows if r["set"] == "never discussed"]
    answerable = [r for r in rows if r["set"] == "answerable"]
    f1_without = [r["f1"] for r in answerable]
    f1_with = [0.0 if refused(r) else r["f1"] for r in answerable]
    timed = [r["latency"] for r in rows if "latency" in r]
    without = sum(x["without"] for x in timed)
    return {"never": len(never_rows), "invented": sum(not refused(r) and not r["declined"] for r in never_rows),
            "answerable": len(answerable), "refused": sum(refused(r) for r in answerable),
            "f1_with": float(np.mean(f1_with)), "f1_without": float(np.mean(f1_without)),
            "f1_pairs": (f1_with, f1_without),
            "added": sum(x["with"] for x in timed) / without - 1 if without else float("nan"), "timed": len(timed)}


def _refuser(version: str | None, t: float, also: Callable[[dict], bool]) -> Callable[[dict], bool]:
    def refused(r: dict) -> bool:
        below = version is not None and r["p"].get(version) is not None and r["p"][version] < t
        return r["nothing_relevant"] or also(r) or below
    return refused


def _table(rows: Sequence[dict], samples: Sequence[str], version: str | None, also: Callable[[dict], bool],
           max_refused: float) -> None:
    print("| held out | threshold | never discussed answered (invented) | answerable refused | "
          "F1 with the check | F1 without | answer time added by the check (questions timed) |")
    print("|---|---|---|---|---|---|---|")
    pooled: list[dict] = []
    for held in samples:
        rest = [r for r in rows if r["sample"] != held]
        t = fitted_threshold(rest, version, max_refused, also) if version else 0.0
        o = outcome([r for r in rows if r["sample"] == held], _refuser(version, t, also))
        pooled.append(o)
        print(f"| {held} | {t:.2f} | {o['invented']}/{o['never']} ({o['invented'] / max(o['never'], 1):.0%}) | "
              f"{o['refused']}/{o['answerable']} ({o['refused'] / max(o['answerable'], 1):.1%}) | "
              f"{o['f1_with']:.1%} | {o['f1_without']:.1%} | {o['added']:+.1%} ({o['timed']}) |")
    inv, nev = sum(o["invented"] for o in pooled), sum(o["never"] for o in pooled)
    ref, ans = sum(o["refused"] for o in pooled), sum(o["answerable"] for o in pooled)
    with_all = [x for o in pooled for x in o["f1_pairs"][0]]
    without_all = [x for o in pooled for x in o["f1_pairs"][1]]
    diff = paired_bootstrap(with_all, without_all, [str(i) for i in range(len(with_all))])
    every = outcome(rows, never)
    print(f"| all | – | {inv}/{nev} ({inv / max(nev, 1):.0%}) | {ref}/{ans} ({ref / max(ans, 1):.1%}) | "
          f"{np.mean(with_all):.1%} | {np.mean(without_all):.1%} | {every['added']:+.1%} ({every['timed']}) |\n")
    print(f"F1 with − without: {diff['diff']:+.2%} [{diff['ci_low']:+.2%}, {diff['ci_high']:+.2%}] "
          "(paired bootstrap over questions)\n")


def report(path: Path, max_refused: float) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    samples = list(dict.fromkeys(r["sample"] for r in rows))
    versions = list(dict.fromkeys(v for r in rows for v in r["p"]))
    print(f"{len(rows)} questions of {', '.join(samples)}; thresholds fitted on the other conversations "
          f"(the check refusing at most {max_refused:.0%} of their answerable questions beyond the rules), "
          "applied to the held-out one\n")
    for version in versions:
        scored = [r for r in rows if not r["nothing_relevant"] and r["p"].get(version) is not None]
        labels = [int(r["set"] == "answerable") for r in scored]
        auc = roc_auc([r["p"][version] for r in scored], labels) if 0 < sum(labels) < len(labels) else float("nan")
        print(f"### {version}: {answer_check.WORDINGS.get(version, '')!r}; AUC answerable vs never discussed "
              f"{auc:.3f} ({len(scored)} questions past the relevance rules)\n")
        _table(rows, samples, version, never, max_refused)
    if any("unsupported" in r for r in rows):
        print("### The mention rule: an answer naming a name, number or date its context lacks is refused\n")
        _table(rows, samples, None, mentions_rule, max_refused)
        for version in versions:
            print(f"### The mention rule, then {version} (threshold fitted with the rule's refusals counted)\n")
            _table(rows, samples, version, mentions_rule, max_refused)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", action="append", default=[], help="SAMPLE=EXPORT_FILE")
    parser.add_argument("--data", default=str(DEV))
    parser.add_argument("--out", help="rows (JSON lines) of a run")
    parser.add_argument("--report", help="rows of a run to report")
    parser.add_argument("--max-refused", type=float, default=0.01,
                        help="share of answerable questions the check may refuse beyond the rules, when fitted")
    parser.add_argument("--limit", type=int, help="the first N questions of each set (a smoke run)")
    parser.add_argument("--add-mentions", help="rows of an older run: add each answer's unsupported mentions "
                        "(the questions asked again without answers, same --memory list)")
    parser.add_argument("--timed", type=int, default=15, help="answerable questions per conversation whose answer "
                        "is timed without and with the check, alternating which goes first")
    args = parser.parse_args()
    if args.report:
        report(Path(args.report), args.max_refused)
        return
    if args.add_mentions:
        add_mentions(dict(item.split("=", 1) for item in args.memory), args.data, Path(args.add_mentions))
        return
    if not args.memory or not args.out:
        parser.error("a run needs --memory (once per conversation) and --out")
    run(dict(item.split("=", 1) for item in args.memory), args.data, Path(args.out), args.limit, args.timed)


if __name__ == "__main__":
    main()
