"""How often an answer ignores the line of its own context that holds the answer, measured without an LLM.

Reads an evaluation run's ``questions.jsonl`` (MemSIF rows keep their answer context, ``sys_context``) and
splits each context into its fact lines (ranked, best first) and its excerpt lines (under their day
headers). A line **holds the gold** when it contains at least two thirds of the gold answer's words (LoCoMo's
normalisation, ``memsif.eval.metrics.normalize_answer``); the answer **ignores** such a line when it repeats
fewer than two thirds of the gold words the line holds. Each ignoring answer is also sorted by what it gave
instead: a refusal, the line's own date without its qualifier ("15 April 2022" for "the week before 15
April 2022"), a date that a day header of the context gives (and no other fact), a date that another
fact gives (and no day header), a date both give, words of another fact, or other.

Reported per run, with Wilson 95 % intervals: of the questions whose best (first) fact holds the gold, the
share whose answer ignores it; the same for any fact and for an excerpt line when no fact holds the gold;
and token F1 / judge accuracy on those questions. Two runs of the same questions are compared question by
question (the run and ``--after``): how many answers that ignored the line now follow it, and back.

    PYTHONPATH=. python benchmarks/quality/best_fact.py RUN/questions.jsonl [--after RUN2/questions.jsonl]
        [--label memsif@600] [--out result.json] [--show 10]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsif.answer.context import FACTS
from memsif.answer.retrieval import EXCERPTS
from memsif.eval.metrics import normalize_answer, wilson

#: A line holds the gold when it has at least this share of the gold answer's words.
HOLDS = 2 / 3
#: An answer follows a line when it repeats at least this share of the gold words the line holds ("15 April
#: 2022" for "the week before 15 April 2022" repeats 3 of 5: it does not).
FOLLOWS = 2 / 3
_DAY_HEADER = re.compile(r"^\d{1,2} [A-Z][a-z]+ \d{4}:$")
_DATE = re.compile(r"\b\d{1,2} (?:January|February|March|April|May|June|July|August|September|October|November|"
                   r"December) \d{4}\b|\b(?:19|20)\d{2}\b")
_REFUSAL = re.compile(r"\b(not (?:stated|mentioned|given|say)|don't know|no information|unknown|not in)\b", re.I)


@dataclass
class Context:
    """One answer context split into its parts (``memsif.answer.context.render_context``)."""

    facts: list[str] = field(default_factory=list)
    excerpts: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> Context:
        ctx, part = cls(), ""
        for line in text.splitlines():
            if line == FACTS:
                part = "facts"
            elif line == EXCERPTS:
                part = "excerpts"
            elif _DAY_HEADER.match(line):
                ctx.headers.append(line[:-1])
            elif line.startswith("- ") and part == "facts":
                ctx.facts.append(line[2:])
            elif line.startswith("- ") and part == "excerpts":
                ctx.excerpts.append(line[2:])
        return ctx


def words(text: str) -> set[str]:
    return set(normalize_answer(text).split())


def gold_share(line: str, gold: str) -> float:
    """The share of ``gold``'s words that ``line`` holds, in [0, 1]."""
    g = words(gold)
    return len(g & words(line)) / len(g) if g else 0.0


def follows(answer: str, line: str, gold: str) -> bool:
    """Whether ``answer`` repeats at least ``FOLLOWS`` of the gold words ``line`` holds."""
    held = words(gold) & words(line)
    return bool(held) and len(held & words(answer)) / len(held) >= FOLLOWS


def instead(answer: str, ctx: Context, line: str) -> str:
    """What an answer that ignores ``line`` gave instead."""
    if _REFUSAL.search(answer):
        return "a refusal"
    others = [f for f in ctx.facts if f != line]
    given = {d for d in _DATE.findall(answer) if not d.isdigit()}  # full dates ("15 April 2022")
    if given and given <= set(_DATE.findall(line)):
        return "the line's date without its qualifier"  # "15 April 2022" for "the week before 15 April 2022"
    dates = set(_DATE.findall(answer)) - set(_DATE.findall(line))
    in_headers = bool(dates & {d for h in ctx.headers for d in _DATE.findall(h)})
    in_facts = bool(dates & {d for f in others for d in _DATE.findall(f)})
    if in_headers or in_facts:
        return ("a date both a day header and another fact give" if in_headers and in_facts
                else "a day header's date" if in_headers else "another fact's date")
    if any(len(words(answer) & words(f) - words(line)) >= 2 for f in others):
        return "another fact's words"
    return "other"


def gold_of(row: dict[str, Any]) -> str:
    gold = str(row["gold"])
    return gold.split(";")[0] if row["category"] == "Kno" else gold


def classify(row: dict[str, Any]) -> dict[str, Any]:
    """The row's holding lines and whether its answer follows them."""
    ctx, gold, answer = Context.parse(row.get("sys_context") or ""), gold_of(row), str(row.get("answer") or "")
    out: dict[str, Any] = {"qid": row["qid"], "category": row["category"], "f1": row.get("f1"),
                           "correct": row.get("llm_correct"), "answer": answer, "gold": gold,
                           "question": row["question"]}
    best = ctx.facts[0] if ctx.facts else ""
    out["best_fact_holds"] = bool(best) and gold_share(best, gold) >= HOLDS
    fact = next((f for f in ctx.facts if gold_share(f, gold) >= HOLDS), None)
    out["fact_holds"] = fact is not None
    excerpt = None if fact else next((e for e in ctx.excerpts if gold_share(e, gold) >= HOLDS), None)
    out["excerpt_holds"] = excerpt is not None
    line = best if out["best_fact_holds"] else (fact or excerpt)
    out["line"] = line
    out["follows"] = follows(answer, line, gold) if line else None
    out["instead"] = instead(answer, ctx, line) if line and not out["follows"] else None
    return out


def read_rows(path: Path, label: str | None) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    rows = [r for r in rows if r.get("system") == "memsif" and (label is None or r.get("label") == label)]
    if rows and not any("sys_context" in r for r in rows):
        raise SystemExit(f"{path}: its MemSIF rows keep no answer context (sys_context); run the evaluation again")
    return rows


def _share(k: int, n: int) -> dict[str, Any]:
    low, high = wilson(k, n) if n else (None, None)
    return {"k": k, "n": n, "share": round(k / n, 3) if n else None,
            "ci": [round(low, 3), round(high, 3)] if n else None}


def summary(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The shares ignored per kind of holding line, what was given instead, and F1/judge on those questions."""
    def scores(group: list[dict[str, Any]]) -> dict[str, Any]:
        f1 = [g["f1"] for g in group if g["f1"] is not None]
        judged = [g["correct"] for g in group if g["correct"] is not None]
        return {"f1": round(sum(f1) / len(f1), 3) if f1 else None,
                "judge": round(sum(judged) / len(judged), 3) if judged else None}

    out: dict[str, Any] = {"questions": len(items), **scores(items)}
    for kind in ("best_fact_holds", "fact_holds", "excerpt_holds"):
        group = [i for i in items if i[kind]]
        ignored = [i for i in group if not i["follows"]]
        out[kind] = {"ignored": _share(len(ignored), len(group)), **scores(group),
                     "instead": dict(Counter(i["instead"] or "?" for i in ignored))}
    return out


def paired(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    """Question by question: of the questions whose context holds the gold in a line in both runs, how many
    answers moved from ignoring it to following it, and back."""
    b = {i["qid"]: i for i in before if i["line"]}
    a = {i["qid"]: i for i in after if i["line"]}
    both = sorted(set(a) & set(b))
    now = sum(1 for q in both if not b[q]["follows"] and a[q]["follows"])
    lost = sum(1 for q in both if b[q]["follows"] and not a[q]["follows"])
    return {"questions": len(both), "ignored_then_followed": now, "followed_then_ignored": lost}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="questions.jsonl(.gz) of a run")
    parser.add_argument("--after", type=Path, help="questions.jsonl(.gz) of a second run of the same questions")
    parser.add_argument("--label", help="only rows of this label (e.g. memsif@600)")
    parser.add_argument("--show", type=int, default=0, help="print N answers that ignore their best fact")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    runs = {"before": [classify(r) for r in read_rows(args.before, args.label)]}
    if args.after:
        runs["after"] = [classify(r) for r in read_rows(args.after, args.label)]
    result: dict[str, Any] = {name: {"all": summary(items),
                                     **{s: summary([i for i in items if i["qid"].startswith(s + "/")])
                                        for s in sorted({i["qid"].split("/")[0] for i in items})}}
                              for name, items in runs.items()}
    if args.after:
        result["paired"] = paired(runs["before"], runs["after"])
    print(json.dumps(result, indent=1))
    for item in [i for i in runs["before"] if i["best_fact_holds"] and not i["follows"]][:args.show]:
        print(f"\n{item['qid']} {item['question']}\n  gold: {item['gold']}\n  best fact: {item['line']}\n"
              f"  answer: {item['answer']} ({item['instead']})")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
