"""The second extraction pass, measured on a built memory: CoreFacts built again from scratch over an
export's Topical Segments and Event Trajectories (its own facts left out) with the default settings and
the second pass on. Per pass: the facts it stored, per 400 messages, the operations it logged, and the
seconds it took (extraction and consolidation, timed in the same run, so the ratio holds on any host).

Writes ``OUT/facts.jsonl`` (each current fact with its pass and its cited messages, dated, with
``"supported": null`` for a labeller: ``benchmarks/quality/corefact_stored.py --labels`` reads it once
labelled), ``OUT/log.jsonl`` (every operation) and ``OUT/summary.json``; prints the summary.

    PYTHONPATH=. python benchmarks/quality/second_pass.py conv-30.json.gz --out results/conv-30 [--batches 16]

Once ``facts.jsonl`` is labelled (each fact by hand, the pass hidden from the labeller): per pass, the facts
stored, per 400 messages, and supported (Wilson 95 % interval); and the same after the model-free checks as
they are now (the grounding gate and the claim rules, replayed on the stored facts: a run made before a
rule existed is scored as the rule would have left it):

    PYTHONPATH=. python benchmarks/quality/second_pass.py --report results/conv-30 LABELLED.jsonl [...]
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.eval.metrics import wilson
from memsif.facts import grounding
from memsif.facts.claims import check_claims, empty_remark
from memsif.facts.core import CoreFactBuilder, FactState, build_core_facts, operation_trusted, unread_batches
from memsif.facts.verify import verifier_threshold
from memsif.llm.profiles import profile_of
from memsif.records import Message, parse_schema
from memsif.timeparse import day_text
from memsif.transfer import read_export

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"


def report(folder: Path, label_files: list[str]) -> None:
    """The per-pass table of a labelled run (module docstring)."""
    summary = json.loads((folder / "summary.json").read_text())
    labels = {}
    for name in label_files:
        for line in Path(name).read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                labels[(row["subject"], row["statement"], tuple(sorted(row["sources"])))] = row
    facts = [json.loads(line) for line in (folder / "facts.jsonl").read_text().splitlines() if line.strip()]
    (sample,) = [s for s in load_locomo(DEV) if summary["namespace"].endswith(s.sample_id)]
    messages = {m.id: m for m in sample.messages}
    speakers = sorted({m.speaker for m in sample.messages})
    rows = []
    for fact in facts:
        label = labels.get((fact["subject"], fact["statement"], tuple(sorted(fact["sources"]))))
        if label is None:
            raise SystemExit(f"{fact['fact_id']} ({fact['statement']!r}) has no label in {label_files}")
        rows.append((fact, bool(label["supported"]), _refused_now(fact, messages, speakers)))
    n = summary["messages_read"]
    timed = (f"seconds {summary['seconds']} (with the second pass {summary['time_ratio_with_second_pass']}x the first "
             "pass alone)" if summary["seconds"] else "not timed by pass")
    print(f"{summary['namespace']}: {n} messages; {timed}\n")
    print("| facts | stored | per 400 messages | supported (95 % interval) | after today's model-free checks: kept, "
          "per 400, supported (95 % interval) |")
    print("|---|---|---|---|---|")
    for name, wanted in (("first pass", {1}), ("second pass", {2}), ("both passes", {1, 2})):
        part = [r for r in rows if r[0]["pass"] in wanted]
        kept = [r for r in part if not r[2]]
        print(f"| {name} | {len(part)} | {400 * len(part) / n:.1f} | {_share(sum(r[1] for r in part), len(part))} | "
              f"{len(kept)}, {400 * len(kept) / n:.1f}, {_share(sum(r[1] for r in kept), len(kept))} |")
    for fact, supported, refused in rows:
        if refused:
            print(f"  refused now ({'supported' if supported else 'unsupported'}): {fact['statement']!r}: {refused}")


def _share(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k} ({k / max(n, 1):.0%}; {low:.0%}–{high:.0%})"


def _refused_now(fact: dict, messages: dict[str, Message], speakers: list[str]) -> str:
    """Why the grounding gate or the claim rules as they are now refuse ``fact`` ("" when they keep it)."""
    cited = [messages[i] for i in fact["sources"]]
    gate = grounding.check(fact["subject"], fact["statement"], cited, speakers)
    reasons = [] if gate.passed else [gate.reason]
    reasons += [c.reason for c in check_claims(fact["subject"], fact["statement"], cited, speakers) if not c.passed]
    if empty := empty_remark(fact["subject"], fact["statement"], speakers):
        reasons.append(empty)
    return "; ".join(reasons)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("export", nargs="?", help="a memory export (python -m memsif export) whose structure is read")
    parser.add_argument("--out", help="folder for facts.jsonl, log.jsonl and summary.json")
    parser.add_argument("--batches", type=int, help="only the first N extraction batches (default: all)")
    parser.add_argument("--built", action="store_true", help="the export was built with the second pass on "
                        "(MEMSIF_FACT_SECOND_PASS=1): write its facts and passes as they are, without timing")
    parser.add_argument("--report", nargs="+", metavar="FOLDER LABELS", help="a run's folder and its label files")
    args = parser.parse_args()
    if args.report:
        report(Path(args.report[0]), args.report[1:])
        return
    if not (args.export and args.out):
        parser.error("give an export and --out, or --report")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = read_export(args.export)
    messages = {e.message.id: e.message for e in data.messages}
    if args.built:
        facts = [e.fact for e in data.facts if e.fact.status == "current"]
        summary = write(out, data.namespace, messages, facts, data.fact_ops, len(messages))
    else:
        summary = build(data, messages, out, args.batches)
    print(json.dumps({"export": Path(args.export).name, **summary}, indent=1))


def build(data, messages: dict[str, Message], out: Path, batches_wanted: int | None) -> dict:
    """CoreFacts built again over ``data``'s structure with the second pass on, each pass timed."""
    cfg = MemSIFConfig.from_env(data_dir=tempfile.mkdtemp(prefix="memsif-second-pass-"))
    eng = MemSIF(cfg)
    eng.load_models()
    llm, embedder = eng.llm, eng.embedder
    vectors = {e.message.id: np.asarray(e.vector, dtype=np.float32) for e in data.messages}
    segments = [s.model_copy(update={"facts_extracted_upto": 0}) for s in sorted(data.segments, key=lambda s: s.index)]
    segment_of = {mid: s.id for s in segments for mid in s.message_ids}
    trajectory_of = {s.id: s.trajectory_id for s in segments}
    batches = unread_batches(segments, messages, cfg.fact_batch_messages)[:batches_wanted]
    builder = CoreFactBuilder(llm, embedder, parse_schema(cfg.core_schema),
                              ask_operation=operation_trusted(cfg.fact_operation, llm, profile_of(llm.name)),
                              messages=messages,
                              verify_min_p=verifier_threshold(cfg.fact_verification, llm, profile_of(llm.name)),
                              second_pass=True)
    state = FactState.of([])
    seconds: collections.Counter[int] = collections.Counter()
    ops, again = [], 0
    started = last = time.perf_counter()
    for done in build_core_facts(builder, state, data.namespace, batches, segment_of, trajectory_of, vectors,
                                 cfg.fact_parallel):
        now = time.perf_counter()
        seconds[2 if done.second_pass else 1] += now - last  # a pass's extraction runs before its first yield
        last = now
        ops += done.operations
        again += done.second_pass
        print(f"batch {done.index + 1}/{done.total}{' (second pass)' if done.second_pass else ''}: "
              f"{collections.Counter(op.op.value for op in done.operations)}", flush=True)
    wall = time.perf_counter() - started
    read = len({m.id for b in batches for m in b.messages})
    return write(out, data.namespace, messages, state.current(), ops, read, {
        "batches": len(batches), "llm": llm.name, "host": platform.processor() or platform.machine(),
        "second_pass_batches": again,
        "seconds": {"pass 1": round(seconds[1], 1), "pass 2": round(seconds[2], 1), "all": round(wall, 1)},
        "time_ratio_with_second_pass": round(wall / seconds[1], 3) if seconds[1] else None,
        "llm_calls": builder.llm_calls})


def write(out: Path, namespace: str, messages: dict[str, Message], current: list, ops: list, read: int,
          extra: dict | None = None) -> dict:
    """``out``/facts.jsonl (each current fact with its pass, for labelling), log.jsonl and summary.json."""
    pass_of = {fid: op.extraction_pass or 1 for op in ops if op.op.value in ("ADD", "SUPERSEDE", "UPDATE")
               for fid in op.fact_ids}
    with (out / "facts.jsonl").open("w") as fh:
        for fact in current:
            sources = {i: f"[{day_text(messages[i].time)}] {messages[i].speaker}: {messages[i].text}"
                       for i in fact.source_message_ids}
            fh.write(json.dumps({"fact_id": fact.id, "pass": pass_of.get(fact.id, 1), "type": fact.type,
                                 "subject": fact.subject, "statement": fact.statement, "sources": sources,
                                 "supported": None, "why_not": ""}) + "\n")
    with (out / "log.jsonl").open("w") as fh:
        for op in ops:
            fh.write(op.model_dump_json() + "\n")
    stored = collections.Counter(pass_of.get(f.id, 1) for f in current)
    summary = {
        "namespace": namespace, "messages_read": read,
        "stored": {"pass 1": stored[1], "pass 2": stored[2], "all": len(current)},
        "per_400_messages": {"pass 1 only": round(400 * stored[1] / read, 1),
                             "both passes": round(400 * len(current) / read, 1)},
        "operations": {f"pass {p}": dict(collections.Counter(op.op.value for op in ops if op.extraction_pass == p))
                       for p in (1, 2)},
        "seconds": {}, "time_ratio_with_second_pass": None, **(extra or {})}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


if __name__ == "__main__":
    main()
