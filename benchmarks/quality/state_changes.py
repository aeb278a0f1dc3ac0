"""Does the model tell a change of a person's state from two statements that both stay true? (§3.3)

The labels (``benchmarks/quality/data/state-changes-conv*.jsonl``, written from the turns before any code
read them) hold, per dev conversation, state changes (SUPERSEDE: the earlier statement stops being true;
UPDATE: the later one says how the same thing stands now) and NOT_CHANGE pairs (both stay true: another
occurrence, a detail, another thing of the same kind). Each pair is scored three ways, needing no model but
for the last:

- the cosine of the two statements (the embedder of the engine, MiniLM), and of their value-masked claims;
- the days between them;
- P(yes) of each wording of ``memsif.prompts.core_change.QUESTIONS`` with the packaged 1.5B.

Besides the labelled NOT_CHANGE pairs, each label's earlier statement is paired with the later statement of
another label of the same person about another attribute ("other thing", an easy negative: what a candidate
filter mostly removes). Printed: ROC AUC of each score for change vs NOT_CHANGE and vs every negative, per
conversation and pooled, and for the chosen wording the threshold fitted on two conversations (the highest
Youden J) applied to the third.

    PYTHONPATH=. python benchmarks/quality/state_changes.py pairs \
        --out benchmarks/results/dev/state-changes/pairs.json

``memory`` reads built memories (``python -m memsif export`` files, one per dev conversation) and says, per
labelled pair, whether a stored fact holds each end (a fact, current or superseded, citing one of the end's
messages), whether the earlier one was a candidate of the later one's operation (its attribute key or
statement close enough: the recall of the true predecessor), and whether the change was followed (the earlier
fact superseded or updated by a fact citing the later end's messages, and that one current); a NOT_CHANGE
pair followed is a false change. Also: the operations by kind, CoreFacts per 400 messages, and the UPDATE /
MERGE / SUPERSEDE operations written out for labelling (``--sample``):

    PYTHONPATH=. python benchmarks/quality/state_changes.py memory --memory conv-26=M26.json.gz \
        --memory conv-30=M30.json.gz --memory conv-47=M47.json.gz --out RESULT.json [--sample OPS.jsonl]

``refused`` says, for a memory's REJECT candidates labelled supported / durable by hand
(``corefact-refused-conv26.jsonl``, labelled blind to the reasons), how many true durable facts each check
turned away:

    PYTHONPATH=. python benchmarks/quality/state_changes.py refused --memory M26.json.gz \
        --labels benchmarks/quality/data/corefact-refused-conv26.jsonl

``questions`` asks each change's state-at-end question of those memories (the engine's answer, packaged
1.5B) and prints token F1 against the label's answer, with the answers for a reading by hand.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.embed import SentenceTransformerEmbedder
from memsif.eval.data import load_locomo
from memsif.eval.judges import roc_auc
from memsif.facts.values import mask
from memsif.llm import load_llm
from memsif.matching import cosine
from memsif.prompts import core_change

DATA = Path(__file__).parent / "data"
LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo_dev.json"
SAMPLES = ("conv-26", "conv-30", "conv-47")
CHANGE_KINDS = ("SUPERSEDE", "UPDATE")


def labels(sample: str) -> list[dict]:
    """The labelled pairs of one dev conversation."""
    path = DATA / f"state-changes-{sample.replace('-', '')}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pairs_of(sample: str, times: dict[str, datetime]) -> list[dict]:
    """Labelled pairs plus one "other thing" negative per label: (who, earlier, later, days, kind)."""
    rows = []
    marks = labels(sample)
    for lab in marks:
        rows.append(_pair(sample, lab["id"], lab["person"], lab["earlier"], lab["later"], lab["kind"], times))
    for k, lab in enumerate(marks):  # the next label of the same person about another attribute, later said
        for other in marks[k + 1:] + marks[:k]:
            if (other["person"] == lab["person"] and other["attribute"] != lab["attribute"]
                    and _when(other["later"], times) > _when(lab["earlier"], times)):
                rows.append(_pair(sample, f"{lab['id']}x{other['id']}", lab["person"], lab["earlier"],
                                  other["later"], "OTHER", times))
                break
    return rows


def _when(end: dict, times: dict[str, datetime]) -> datetime:
    return max(times[m] for m in end["messages"])


def _pair(sample: str, pid: str, who: str, earlier: dict, later: dict, kind: str,
          times: dict[str, datetime]) -> dict:
    t0, t1 = _when(earlier, times), _when(later, times)
    return {"sample": sample, "id": pid, "who": who, "kind": kind, "earlier": earlier["statement"],
            "later": later["statement"], "earlier_time": t0.isoformat(), "later_time": t1.isoformat(),
            "days": (t1 - t0).days}


def score(rows: list[dict], questions: list[str], model: str | None) -> None:
    """Fill each row's cosines and, per wording, P(yes) (in place)."""
    embedder = SentenceTransformerEmbedder()
    for row in rows:
        a, b, ma, mb = embedder.embed_documents([row["earlier"], row["later"], mask(row["earlier"]),
                                                 mask(row["later"])])
        row["cosine"], row["masked_cosine"] = round(cosine(a, b), 4), round(cosine(ma, mb), 4)
    if not questions:
        return
    llm = load_llm(MemSIFConfig.from_env(**({"llm_model": model} if model else {})))
    start = time.perf_counter()
    for row in rows:
        prompts = [core_change.build(row["who"], row["earlier"], datetime.fromisoformat(row["earlier_time"]),
                                     row["later"], datetime.fromisoformat(row["later_time"]), q) for q in questions]
        row["p_yes"] = {q: round(p, 4) for q, p in zip(questions, llm.yes_probability(prompts), strict=True)}
    print(f"{len(rows) * len(questions)} questions in {time.perf_counter() - start:.0f} s ({llm.name})")


def youden(scores: list[float], positive: list[int]) -> float:
    """The threshold with the highest TPR − FPR on these scores."""
    best, best_j = 0.5, -1.0
    pos, neg = sum(positive), len(positive) - sum(positive)
    for t in sorted(set(scores)):
        tp = sum(s >= t and y for s, y in zip(scores, positive, strict=True))
        fp = sum(s >= t and not y for s, y in zip(scores, positive, strict=True))
        if (j := tp / pos - fp / neg) > best_j:
            best, best_j = t, j
    return best


def table(rows: list[dict], measures: list[str]) -> dict:
    """AUC of each measure, change vs NOT_CHANGE and vs every negative, per conversation and pooled."""
    out: dict = {}
    for name in measures:
        out[name] = {}
        for sample in (*SAMPLES, "pooled"):
            part = [r for r in rows if sample in ("pooled", r["sample"])]
            value = [_value(r, name) for r in part]
            change = [int(r["kind"] in CHANGE_KINDS) for r in part]
            hard = [(v, y) for v, y, r in zip(value, change, part, strict=True) if r["kind"] != "OTHER"]
            out[name][sample] = {"vs_not_change": round(roc_auc(*zip(*hard, strict=True)), 3),
                                 "vs_all": round(roc_auc(value, change), 3)}
    return out


def _value(row: dict, name: str) -> float:
    return float(row["p_yes"][name]) if name in row.get("p_yes", {}) else float(row[name])


def held_out(rows: list[dict], name: str) -> dict:
    """The threshold on ``name`` fitted on two conversations (Youden J over all their pairs), applied to the third:
    precision and recall of "change" there."""
    out = {}
    for test in SAMPLES:
        fit = [r for r in rows if r["sample"] != test]
        threshold = youden([_value(r, name) for r in fit], [int(r["kind"] in CHANGE_KINDS) for r in fit])
        part = [r for r in rows if r["sample"] == test]
        said = [r for r in part if _value(r, name) >= threshold]
        true = [r for r in said if r["kind"] in CHANGE_KINDS]
        changes = sum(r["kind"] in CHANGE_KINDS for r in part)
        out[test] = {"threshold": round(threshold, 4), "said_change": len(said), "right": len(true),
                     "precision": round(len(true) / len(said), 3) if said else None,
                     "recall": round(len(true) / changes, 3) if changes else None}
    return out


def _ends(facts: list, end: dict) -> list:
    """The stored facts (any status) that cite one of a labelled end's messages."""
    wanted = set(end["messages"])
    return [f for f in facts if wanted & set(f.source_message_ids)]


def followed(lab: dict, facts: list, ops: list) -> dict:
    """One labelled pair against a built memory: both ends stored, the earlier a candidate of the later's
    operation, and the change followed (see the module docstring)."""
    by_id = {f.id: f for f in facts}
    early, late = _ends(facts, lab["earlier"]), _ends(facts, lab["later"])
    late_ids = {f.id for f in late}
    early_ids = {f.id for f in early}
    changed = False
    for op in ops:  # an UPDATE / MERGE / SUPERSEDE of an earlier-end fact by a later-end fact
        if op.op in ("UPDATE", "MERGE", "SUPERSEDE") and op.before and op.before[0].id in early_ids:
            newest = op.after[-1]
            if set(newest.source_message_ids) & set(lab["later"]["messages"]):
                final = by_id.get(newest.id)
                changed = changed or (final is not None and final.status == "current")
    considered = set()
    for op in ops:
        if op.op in ("ADD", "UPDATE", "MERGE", "SUPERSEDE") and op.after and op.after[-1].id in late_ids:
            considered |= set(op.scores.similar) | set(op.scores.key_cosine) | set(op.scores.change)
    return {"id": lab["id"], "kind": lab["kind"], "earlier_stored": bool(early), "later_stored": bool(late),
            "both_stored": bool(early and late), "candidate": bool(early_ids & considered), "followed": changed}


def memory_figures(sample: str, path: str) -> tuple[dict, list]:
    """The figures of one built memory against its labels, and its UPDATE / MERGE / SUPERSEDE operations."""
    from memsif.transfer import read_export

    memory = read_export(path)
    facts = [f.fact for f in memory.facts]
    ops = memory.fact_ops
    rows = [followed(lab, facts, ops) for lab in labels(sample)]
    change = [r for r in rows if r["kind"] in CHANGE_KINDS]
    both = [r for r in change if r["both_stored"]]
    kinds: dict[str, int] = {}
    for op in ops:
        kinds[op.op] = kinds.get(op.op, 0) + 1
    figures = {
        "messages": len(memory.messages), "facts_current": sum(f.status == "current" for f in facts),
        "facts_stored": len(facts), "per_400_messages": round(400 * len(facts) / len(memory.messages), 1),
        "operations": kinds, "changes": len(change), "both_stored": len(both),
        "candidate_recall": f"{sum(r['candidate'] for r in both)}/{len(both)}",
        "followed": sum(r["followed"] for r in change),
        "not_change_followed": sum(r["followed"] for r in rows if r["kind"] == "NOT_CHANGE"), "rows": rows}
    changes = [{"sample": sample, "seq": op.seq, "op": op.op, "decided_by": op.decided_by,
                "earlier": op.before[0].statement, "earlier_subject": op.before[0].subject,
                "later": op.after[-1].statement, "reason": op.reason} for op in ops
               if op.op in ("UPDATE", "MERGE", "SUPERSEDE") and op.before and op.after]
    return figures, changes


def state_answers(memories: dict[str, str], data_dir: str) -> list[dict]:
    """Each labelled change's state-at-end question asked of its conversation's built memory (an export,
    imported into ``data_dir``), answered by the engine with the default settings; token F1 against the label."""
    from memsif.engine import MemSIF
    from memsif.eval.metrics import token_f1
    from memsif.transfer import read_export

    engine = MemSIF(MemSIFConfig.from_env(data_dir=data_dir))
    rows = []
    for sample, path in memories.items():
        namespace = engine.import_namespace(read_export(path), f"state-{sample}")
        for lab in labels(sample):
            if lab["kind"] not in CHANGE_KINDS or not lab["question"]:
                continue
            answer = engine.ask(lab["question"], namespace=namespace, accumulate=False)
            core = [f for f in answer.facts_used if f.kind == "core"]
            rows.append({"sample": sample, "id": lab["id"], "question": lab["question"], "gold": lab["answer"],
                         "end_state": lab["end_state"], "answer": answer.answer,
                         "f1": round(token_f1(answer.answer, lab["answer"]), 3),
                         "facts": [f"{f.id}: {f.statement}" for f in core[:3]]})
            print(f"{sample} {lab['id']} F1 {rows[-1]['f1']:.2f} | {lab['question']} → {answer.answer[:100]!r} "
                  f"(gold {lab['answer']!r})", flush=True)
    return rows


def refusal_kind(reason: str) -> str:
    """Which check refused a candidate, from its REJECT reason."""
    kinds = (("not verified", "verification"), ("refused by the claim", "claim rules"),
             ("whom its supporting", "gate: names the other speaker"), ("content words", "gate: word overlap"),
             ("another speaker", "gate: another speaker's words"), ("is by or about", "gate: another speaker's words"),
             ("cut off", "gate: cut off"), ("not in its sources", "gate: values or names not in its sources"))
    return next((kind for mark, kind in kinds if mark in reason), "gate: other")


def refused(path: str, labels_path: str) -> dict:
    """Per check, the REJECT candidates of the memory at ``path`` and how many of them the labels call supported
    and durable (joined by subject and statement)."""
    from memsif.transfer import read_export

    marks = {(r["subject"], r["statement"]): r for r in map(json.loads, Path(labels_path).read_text().splitlines())}
    table: dict[str, list[int]] = {}
    for op in read_export(path).fact_ops:
        if op.op != "REJECT" or op.candidate is None:
            continue
        mark = marks.get((op.candidate.subject, op.candidate.statement))
        if mark is None:
            continue
        row = table.setdefault(refusal_kind(op.reason), [0, 0])
        row[0] += 1
        row[1] += int(mark["supported"] and mark["durable"])
    return {kind: {"refused": n, "supported_and_durable": true} for kind, (n, true) in table.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    pairs = sub.add_parser("pairs", help="score the labelled pairs")
    pairs.add_argument("--questions", default=",".join(core_change.QUESTIONS),
                       help="wordings of core_change.QUESTIONS to ask (comma-separated; empty: no model)")
    pairs.add_argument("--model", help="model id (default: the packaged 1.5B)")
    pairs.add_argument("--out", help="write the rows and figures as JSON here")
    mem = sub.add_parser("memory", help="the labels against built memories")
    mem.add_argument("--memory", action="append", required=True, help="SAMPLE=EXPORT.json.gz")
    mem.add_argument("--out", help="write the figures as JSON here")
    mem.add_argument("--sample", help="write the UPDATE / MERGE / SUPERSEDE operations here (JSONL) for labelling")
    asked = sub.add_parser("questions", help="the state-at-end questions asked of built memories")
    asked.add_argument("--memory", action="append", required=True, help="SAMPLE=EXPORT.json.gz")
    asked.add_argument("--data-dir", required=True, help="an empty folder to import the memories into")
    asked.add_argument("--out", help="write the answers and figures as JSON here")
    ref = sub.add_parser("refused", help="true durable facts each check turned away")
    ref.add_argument("--memory", required=True, help="an export")
    ref.add_argument("--labels", required=True, help="labelled REJECT candidates (JSONL)")
    args = parser.parse_args()
    if args.command == "refused":
        by_check = refused(args.memory, args.labels)
        for kind, row in sorted(by_check.items(), key=lambda item: -item[1]["refused"]):
            print(f"{kind}: {row['supported_and_durable']} of {row['refused']} refused were supported and durable")
        return
    if args.command == "questions":
        memories = dict(pair.split("=", 1) for pair in args.memory)
        rows = state_answers(memories, args.data_dir)
        mean = round(sum(r["f1"] for r in rows) / len(rows), 3) if rows else None
        print(f"{len(rows)} questions, mean token F1 {mean}")
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps({"date": datetime.now().isoformat(timespec="minutes"),
                                                  "memories": memories, "token_f1": mean, "rows": rows}, indent=1))
        return
    if args.command == "memory":
        report, written = {}, []
        for pair in args.memory:
            sample, path = pair.split("=", 1)
            report[sample], changes = memory_figures(sample, path)
            written += changes
            shown = {k: v for k, v in report[sample].items() if k != "rows"}
            print(sample, json.dumps(shown))
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps({"date": datetime.now().isoformat(timespec="minutes"),
                                                  "memories": dict(pair.split("=", 1) for pair in args.memory),
                                                  **report}, indent=1))
        if args.sample:
            Path(args.sample).write_text("".join(json.dumps(c) + "\n" for c in written))
        return
    samples = load_locomo(LOCOMO, list(SAMPLES))
    times = {s.sample_id: {m.id: m.time for m in s.messages if m.time} for s in samples}  # ids repeat across samples
    rows = [row for s in SAMPLES for row in pairs_of(s, times[s])]
    questions = [q for q in args.questions.split(",") if q]
    score(rows, questions, args.model)
    measures = ["cosine", "masked_cosine", "days", *questions]
    figures = {"pairs": {k: sum(r["kind"] == k for r in rows) for k in (*CHANGE_KINDS, "NOT_CHANGE", "OTHER")},
               "auc": table(rows, measures), "held_out": {q: held_out(rows, q) for q in ["cosine", *questions]}}
    print(json.dumps(figures["pairs"]))
    for name, per in figures["auc"].items():
        print(f"{name:22s} " + "  ".join(f"{s}: {v['vs_not_change']:.2f}/{v['vs_all']:.2f}" for s, v in per.items()))
    for name, per in figures["held_out"].items():
        print(f"held out {name}: " + "; ".join(f"{s} t={v['threshold']} P={v['precision']} R={v['recall']}"
                                              for s, v in per.items()))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"date": datetime.now().isoformat(timespec="minutes"), **figures,
                                              "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
