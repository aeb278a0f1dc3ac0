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
import json
from pathlib import Path
from typing import Any

from benchmarks.quality.best_fact import read_rows
from memsif.answer.when import resolved_period
from memsif.config import MemSIFConfig
from memsif.eval.metrics import locomo_f1, paired_bootstrap
from memsif.eval.results import QuestionResult
from memsif.eval.runner import judge_rows
from memsif.llm import LLM, load_llm


def paired_line(name: str, with_rule: list[float], without: list[float], groups: list[str]) -> dict[str, Any]:
    """Mean of each and their paired difference (questions resampled within each conversation), printed as one
    line in percent; returned rounded."""
    interval = paired_bootstrap(with_rule, without, groups, stratified=True)
    n = len(groups)
    print(f"{name} {100 * sum(without) / n:.1f} % -> {100 * sum(with_rule) / n:.1f} %, paired "
          f"{100 * interval['diff']:+.2f} [{100 * interval['ci_low']:+.2f}, {100 * interval['ci_high']:+.2f}]")
    return {"without": round(sum(without) / n, 4), "with": round(sum(with_rule) / n, 4),
            "paired": {k: round(v, 4) for k, v in interval.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="questions.jsonl(.gz) of evaluation runs")
    parser.add_argument("--show", action="store_true", help="print every answer the rule changes")
    parser.add_argument("--judge", action="store_true", help="judge the changed answers again with the LLM")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = [row for path in args.runs for row in read_rows(path, None)]
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
    result: dict[str, Any] = {"conversations": per, "questions": len(rows)}
    print("| conversation | questions | answers changed | F1 gained | F1 lost |\n|---|---|---|---|---|")
    for conv, c in per.items():
        print(f"| {conv} | {c['questions']} | {c['changed']} | {c['gained']} | {c['lost']} |")
    f1 = paired_line("\ntoken F1", with_rule, without, groups)
    result.update({"f1_without": f1["without"], "f1_with": f1["with"], "paired": f1["paired"]})
    if judge is not None:
        result["judge"] = {**paired_line("judge", judged_with, judged_without, groups), "model": judge.name}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
