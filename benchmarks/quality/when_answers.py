"""The "When …?" period rule (``memsif.answer.when``) applied to the stored answers of an evaluation run,
measured without a model: the same answers, with and without the rule, on the same contexts.

Reads one or more runs' ``questions.jsonl(.gz)`` (MemSIF rows keep the model's answer and its context,
``sys_context``; a row written with the rule on keeps the model's own words in ``sys_model_answer``). Prints per
conversation how many answers the rule changed, how many gained and lost token F1 (LoCoMo's, per category),
and the F1 over all questions with and without it, with a paired bootstrap interval over questions
resampled within each conversation (``memsif.eval.metrics.paired_bootstrap``). With ``--judge`` the
configured LLM (``MEMSIF_LLM_MODEL``, the run's judge by default) judges each changed answer again with the
run's judge prompt (``memsif.eval.runner.judge_rows``); unchanged answers keep their run's verdict, and the
judge accuracy with and without the rule is printed the same way.

    PYTHONPATH=. python benchmarks/quality/when_answers.py RUN/questions.jsonl.gz [RUN2/…] [--show] [--judge]
        [--out result.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

from memsif.answer.when import resolved_period
from memsif.config import MemSIFConfig
from memsif.eval.metrics import locomo_f1, paired_bootstrap
from memsif.eval.results import QuestionResult
from memsif.eval.runner import judge_rows
from memsif.llm import LLM, load_llm


def read_rows(paths: list[Path]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            rows += [r for r in map(json.loads, filter(str.strip, fh)) if r.get("system") == "memsif"]
    if rows and not all("sys_context" in r for r in rows):
        raise SystemExit("these MemSIF rows keep no answer context (sys_context); run the evaluation again")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="questions.jsonl(.gz) of evaluation runs")
    parser.add_argument("--show", action="store_true", help="print every answer the rule changes")
    parser.add_argument("--judge", action="store_true", help="judge the changed answers again with the LLM")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = read_rows(args.runs)
    judge: LLM | None = load_llm(MemSIFConfig.from_env()) if args.judge else None
    without, with_rule, groups = [], [], []
    judged_without, judged_with = [], []
    per: dict[str, dict[str, int]] = {}
    for r in rows:
        model = str(r.get("sys_model_answer") or r.get("answer") or "")
        gold, category, conv = str(r["gold"]), r["category"], r["qid"].split("/")[0]
        period = resolved_period(r["question"], model, r.get("sys_context") or "")
        before = locomo_f1(model, gold, category)
        after = locomo_f1(period.answer, gold, category) if period else before
        without.append(before)
        with_rule.append(after)
        groups.append(conv)
        judged_without.append(float(bool(r.get("llm_correct"))))
        judged_with.append(judged_without[-1])
        if period and judge is not None:
            again = QuestionResult.model_validate({**r, "answer": period.answer, "llm_correct": None})
            judge_rows([again], judge, again=True)
            judged_with[-1] = float(bool(again.llm_correct))
        counts = per.setdefault(conv, {"questions": 0, "changed": 0, "gained": 0, "lost": 0})
        counts["questions"] += 1
        if period:
            counts["changed"] += 1
            counts["gained"] += after > before
            counts["lost"] += after < before
            if args.show:
                print(f"{r['qid']} {before:.2f} -> {after:.2f} | {r['question']} | gold: {gold} | "
                      f"{model} -> {period.answer} ({period.rule})")
    interval = paired_bootstrap(with_rule, without, groups, stratified=True)
    result = {"conversations": per, "questions": len(rows),
              "f1_without": round(sum(without) / len(rows), 4), "f1_with": round(sum(with_rule) / len(rows), 4),
              "paired": {k: round(v, 4) for k, v in interval.items()}}
    print("| conversation | questions | answers changed | F1 gained | F1 lost |\n|---|---|---|---|---|")
    for conv, c in per.items():
        print(f"| {conv} | {c['questions']} | {c['changed']} | {c['gained']} | {c['lost']} |")
    print(f"\ntoken F1 {100 * result['f1_without']:.1f} % -> {100 * result['f1_with']:.1f} %, paired "
          f"{100 * interval['diff']:+.2f} [{100 * interval['ci_low']:+.2f}, {100 * interval['ci_high']:+.2f}]")
    if judge is not None:
        verdicts = paired_bootstrap(judged_with, judged_without, groups, stratified=True)
        result["judge"] = {"without": round(sum(judged_without) / len(rows), 4),
                           "with": round(sum(judged_with) / len(rows), 4), "model": judge.name,
                           "paired": {k: round(v, 4) for k, v in verdicts.items()}}
        print(f"judge {100 * result['judge']['without']:.1f} % -> {100 * result['judge']['with']:.1f} %, paired "
              f"{100 * verdicts['diff']:+.1f} [{100 * verdicts['ci_low']:+.1f}, {100 * verdicts['ci_high']:+.1f}]")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
