"""The model's two questions about a CoreFact candidate, on the labelled stored facts of the three dev
conversations: *who did it* (``speaker_prompt``, a choice among the speakers' names and "someone else", scored from the
names' probabilities, the names offered in both orders and the subject's probability averaged) and *worth
remembering* (``worth_prompt``, P(yes)); with the claim rules (``memsif.facts.claims``, no model) beside
them. Neither question is asked by the engine: measured here, neither helped (results.md, "CoreFacts").

Run: one JSON line per labelled fact (``--out``). Report (``--report``): per question the AUC against
the labels (who did it: supported against speaker swapped, and against every unsupported fact; worth:
"empty" against the rest), then per held-out conversation the facts kept by the claim rules and the
model's questions at thresholds fitted on the other two (the highest at which at most ``--max-lost`` of
their supported facts are refused) and the share of those kept that are supported.

    PYTHONPATH=. python benchmarks/quality/fact_questions.py --out rows.jsonl
    PYTHONPATH=. python benchmarks/quality/fact_questions.py --report rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path

from claim_checks import LABELS, label_class, labelled

from memsif.config import MemSIFConfig
from memsif.eval.data import load_locomo
from memsif.eval.judges import roc_auc
from memsif.eval.metrics import wilson
from memsif.facts.claims import check_claims, empty_remark
from memsif.llm import load_llm
from memsif.prompts import Prompt, clip
from memsif.records import Message, spoken_text

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"

#: Characters of each cited message shown to the speaker choice.
MESSAGE_CHARS = 400


def speaker_prompt(predicate: str, sources: Sequence[Message], speakers: Sequence[str]) -> tuple[Prompt, list[str]]:
    """The cited messages (photo captions left out), then "Who <predicate>?" with the speakers' first names
    and "someone else" as the answers; the prompt and the labels scored (first names, "someone")."""
    names = [s.split()[0] for s in speakers]
    lines = "\n".join(f"{m.speaker}: {clip(spoken_text(m.text), MESSAGE_CHARS)}" for m in sources)
    text = (f"{lines}\n\nAccording to these messages, who {predicate.rstrip('.!')}? "
            f"Answer {', '.join([*names, 'someone else'])}.")
    prompt = Prompt("fact_speaker", "fact_speaker/1", text, system="Answer with one name.",
                    input_ids=tuple(m.id for m in sources))
    return prompt, [*names, "someone"]


def worth_prompt(subject: str, statement: str) -> Prompt:
    """Would a friend still want to know it a month later, or is it a passing remark? Yes/no."""
    text = (f"Note about {subject}: {statement}\n\nIs this a concrete fact about {subject} (an event, plan, "
            "possession, preference, job or relationship) worth remembering a month from now, rather than a "
            "passing remark, thanks or mood?")
    return Prompt("fact_worth", "fact_worth/1", text)


def predicate(subject: str, statement: str) -> str | None:
    """``statement`` less its leading subject ("Jon started a studio." → "started a studio."), or None
    when it does not start with the subject as the doer (a possessive, another person)."""
    for name in (subject, subject.split()[0]):
        match = re.match(rf"{re.escape(name)}\s+(?!'s\b)(.+)$", statement)
        if match:
            return match.group(1)
    return None


def run(out: Path) -> None:
    llm = load_llm(MemSIFConfig.from_env())
    samples = {s.sample_id: s for s in load_locomo(DEV, list(LABELS))}
    with out.open("w") as sink:
        for conv in LABELS:
            messages = {m.id: m for m in samples[conv].messages}
            speakers = sorted({m.speaker for m in messages.values()})
            for row in labelled(conv):
                cited = [messages[i] for i in row["sources"] if i in messages]
                rules = [c.rule for c in check_claims(row["subject"], row["statement"], cited, speakers)
                         if not c.passed]
                if empty_remark(row["subject"], row["statement"], speakers):
                    rules.append("empty")
                record = {"conv": conv, "fact_id": row["fact_id"], "label": label_class(row), "rules": rules,
                          "p_worth": llm.yes_probability([worth_prompt(row["subject"], row["statement"])])[0]}
                said = predicate(row["subject"], row["statement"])
                if said and row["subject"] in speakers:
                    # both orders of the names, averaged: the 1.5B favours the first name it is offered
                    for order, key in ((speakers, "p_speaker"), (speakers[::-1], "p_speaker_reversed")):
                        prompt, labels = speaker_prompt(said, cited, order)
                        probs = llm.choice_probabilities(prompt, labels)
                        record[key] = dict(zip(labels, probs, strict=True))
                    first = row["subject"].split()[0]
                    record["p_subject"] = (record["p_speaker"][first] + record["p_speaker_reversed"][first]) / 2
                sink.write(json.dumps(record) + "\n")
                sink.flush()


def fit(rows: Sequence[dict], key: str, max_lost: float) -> float:
    """The highest threshold on ``key`` at which at most ``max_lost`` of ``rows``' supported facts fall below."""
    ok = sorted(r[key] for r in rows if r["label"] == "supported" and key in r)
    best = 0.0
    for t in [0.0, *ok]:
        if sum(p < t for p in ok) <= max_lost * len(ok):
            best = t
    return best


def current_rules(rows: Sequence[dict]) -> None:
    """Each row's ``rules`` as the claim rules of this checkout decide (no model: they may have changed
    since the rows were written)."""
    samples = {s.sample_id: s for s in load_locomo(DEV, list(LABELS))}
    for conv in LABELS:
        messages = {m.id: m for m in samples[conv].messages}
        speakers = sorted({m.speaker for m in messages.values()})
        facts = {r["fact_id"]: r for r in labelled(conv)}
        for row in (r for r in rows if r["conv"] == conv):
            fact = facts[row["fact_id"]]
            cited = [messages[i] for i in fact["sources"] if i in messages]
            row["rules"] = [c.rule for c in check_claims(fact["subject"], fact["statement"], cited, speakers)
                            if not c.passed] + (["empty"] if empty_remark(fact["subject"], fact["statement"],
                                                                         speakers) else [])


def report(path: Path, max_lost: float) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    current_rules(rows)
    asked = [r for r in rows if "p_subject" in r]
    for name, pos, neg in (("who did it: supported vs speaker swapped", "supported", "speaker swapped"),
                           ("who did it: supported vs unsupported", "supported", None)):
        mine = [r for r in asked if r["label"] == pos or (r["label"] == neg if neg else r["label"] != pos)]
        print(f"{name}: AUC {roc_auc([r['p_subject'] for r in mine], [int(r['label'] == pos) for r in mine]):.3f} "
              f"({len(mine)} facts whose subject is the doer)")
    argmax_ok = sum(r["p_subject"] >= 0.5 for r in asked if r["label"] == "supported")
    print(f"who did it: the subject has P ≥ 0.5 (mean of both name orders) for {argmax_ok} of "
          f"{sum(r['label'] == 'supported' for r in asked)} supported facts")
    worth = [r["p_worth"] for r in rows]
    print(f"worth remembering: AUC the rest vs empty "
          f"{roc_auc(worth, [int(r['label'] != 'empty') for r in rows]):.3f}; supported vs unsupported "
          f"{roc_auc(worth, [int(r['label'] == 'supported') for r in rows]):.3f}\n")
    print(f"Kept after each check (thresholds fitted on the other two conversations, ≤ {max_lost:.0%} of their "
          "supported facts lost per question):\n")
    print("| held out | labelled | supported | claim rules: kept (supported) | + who did it ≥ t: kept (supported) | "
          "+ worth ≥ t: kept (supported, 95 % interval) |")
    print("|---|---|---|---|---|---|")
    for held in LABELS:
        rest = [r for r in rows if r["conv"] != held]
        t_who = fit([r for r in rest if not r["rules"]], "p_subject", max_lost)
        t_worth = fit([r for r in rest if not r["rules"]], "p_worth", max_lost)
        mine = [r for r in rows if r["conv"] == held]
        stages = [[r for r in mine if not r["rules"]]]
        stages.append([r for r in stages[-1] if r.get("p_subject", 1.0) >= t_who])
        stages.append([r for r in stages[-1] if r["p_worth"] >= t_worth])
        cells = []
        for k, kept in enumerate(stages):
            ok = sum(r["label"] == "supported" for r in kept)
            low, high = wilson(ok, len(kept))
            extra = f", {low:.0%}–{high:.0%}" if k == 2 else ""
            cells.append(f"{len(kept)} ({ok}, {ok / max(len(kept), 1):.0%}{extra})")
        print(f"| {held} (t_who {t_who:.2f}, t_worth {t_worth:.2f}) | {len(mine)} | "
              f"{sum(r['label'] == 'supported' for r in mine)} | {' | '.join(cells)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out")
    parser.add_argument("--report")
    parser.add_argument("--max-lost", type=float, default=0.05)
    args = parser.parse_args()
    if args.report:
        report(Path(args.report), args.max_lost)
    elif args.out:
        run(Path(args.out))
    else:
        parser.error("--out (a run) or --report (its rows)")


if __name__ == "__main__":
    main()
