"""Stated against actual waiting times: a transcript built live with the default models, Structured
Interaction Memory, then CoreFacts and the model's segment titles, with the inspector's countdowns
(``memsif.inspector.pace``) fed the same progress the page gets. At every progress step it records the range
the page would state and, once the stage has ended, the time that was actually left; prints per stage the
share of steps whose range holds the actual time and, over the steps the page shows (the last of those
reported within half a second) from the 10th message, the 3rd CoreFact batch and the 3rd model title on,
with at least ``--min-left`` seconds left, the share within ±30 % and the largest and median error of the
range's middle.

    PYTHONPATH=. python benchmarks/speed/waiting_times.py --sample conv-30 --messages 100 --out FILE.json
    PYTHONPATH=. python benchmarks/speed/waiting_times.py --sample conv-47 --messages 500 --out FILE.json
    PYTHONPATH=. python benchmarks/speed/waiting_times.py --sample conv-47 --first 300 --messages 150 \
        --structure-only --min-left 10 --out FILE.json

The structure's countdown reads the build's workload (``memsif.interaction.forecast``) as the page does; the
output records the judge prompt characters the forecast expected and those sent.

The prior is the prebuilt example's provenance, as in the app; a fresh process (no measured pace).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.inspector.build import EXAMPLE_MEMORY
from memsif.inspector.pace import FACTS, STRUCTURE, TITLES, PaceBook
from memsif.records import Message
from memsif.transfer import read_export

STAGES = {"segments": STRUCTURE, "core facts": FACTS, "titles": TITLES}
#: Steps with less time left than this are left out of the relative errors (a few seconds off on the
#: last ten seconds is 100 %, and nobody plans around them); ``--min-left`` sets another.
MIN_LEFT_S = 60.0
#: The errors are counted from this unit on: the 10th message placed, the 3rd CoreFact batch written.
FROM_UNIT = {STRUCTURE: 10, FACTS: 3, TITLES: 3}
#: The page shows a job's state every half second: of the steps reported closer together (a group of
#: CoreFact batches is written at once), it shows the last.
PAGE_REFRESH_S = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/locomo/locomo_dev.json")
    parser.add_argument("--sample", default="conv-30")
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--first", type=int, default=0, help="the conversation's message to start from (default 0)")
    parser.add_argument("--structure-only", action="store_true",
                        help="build Structured Interaction Memory only (no CoreFacts): its waits in a minute")
    parser.add_argument("--out", required=True)
    parser.add_argument("--min-left", type=float, default=MIN_LEFT_S,
                        help="seconds left below which a step's error is not counted (default 60)")
    args = parser.parse_args()
    [sample] = load_locomo(args.data, [args.sample])
    messages: list[Message] = sample.messages[args.first:args.first + args.messages]
    eng = MemSIF(MemSIFConfig.from_env(data_dir=tempfile.mkdtemp(prefix="memsif-waits-")))
    book = PaceBook()
    book.set_prior(read_export(EXAMPLE_MEMORY).provenance, eng.config.fact_batch_messages)
    load_s = eng.load_models()
    countdowns = {STRUCTURE: book.countdown(STRUCTURE, work=lambda: eng.workload("waits")),
                  FACTS: book.countdown(FACTS, wave=eng.config.fact_parallel, first_wave=1),
                  TITLES: book.countdown(TITLES, wave=eng.config.fact_parallel)}
    steps: list[dict] = []

    expected = sent = 0

    def progress(done: int, total: int, stage: str) -> None:
        nonlocal expected, sent
        if (work := eng.workload("waits")) is not None:  # what the forecast expected, what was sent
            expected, sent = sum(work.expected), work.sent
        kind = STAGES.get(stage)
        if kind is None:  # the second pass: a count of its own
            return
        countdown = countdowns[kind]
        countdown.update(done, total)
        span = countdown.left()
        steps.append({"kind": kind, "done": done, "total": total, "t": time.monotonic(),
                      "low": span[0] if span else None, "high": span[1] if span else None,
                      "basis": countdown.basis()})

    start = time.monotonic()
    report = eng.ingest(messages, namespace="waits", progress=progress, core_facts=not args.structure_only)
    kinds = tuple(k for k in (STRUCTURE, FACTS, TITLES) if any(s["kind"] == k for s in steps))
    ends = {kind: max(s["t"] for s in steps if s["kind"] == kind) for kind in kinds}
    summary = {}
    for kind in kinds:
        rows = [s for s in steps if s["kind"] == kind and s["low"] is not None]
        for s in rows:
            s["actual"] = ends[kind] - s["t"]
        shown = [s for s, after in zip(rows, [*rows[1:], None], strict=True)
                 if after is None or after["t"] - s["t"] >= PAGE_REFRESH_S]
        late = [s for s in shown if s["done"] >= FROM_UNIT[kind] and s["actual"] >= args.min_left]
        errors = [abs((s["low"] + s["high"]) / 2 - s["actual"]) / s["actual"] for s in late]
        summary[kind] = {
            "units": rows[-1]["total"] if rows else 0, "seconds": round(ends[kind] - min(s["t"] for s in rows), 1)
            if rows else 0, "steps": len(rows),
            "range_holds_actual": round(sum(s["low"] <= s["actual"] <= s["high"] for s in rows) / max(len(rows), 1), 3),
            "from_unit": FROM_UNIT[kind], "min_left_s": args.min_left, "steps_counted": len(errors),
            "within_30_percent": round(sum(e <= 0.3 for e in errors) / len(errors), 3) if errors else None,
            "max_middle_error": round(max(errors), 3) if errors else None,
            "median_middle_error": round(sorted(errors)[len(errors) // 2], 3) if errors else None,
            "first_stated": [rows[0]["low"], rows[0]["high"], rows[0]["basis"]] if rows else None}
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    out = {"sample": args.sample, "first": args.first, "messages": len(messages), "model_load_s": round(load_s, 1),
           "wall_s": round(time.monotonic() - start, 1), "segments": report.segments, "summary": summary,
           "prior": book.prior, "steps": steps,
           "cpu": [line for line in lscpu.splitlines() if line.startswith(("Model name", "CPU(s)", "Flags"))],
           "judge_calls": report.judge_calls_segment, "judge_prompt_chars": {"expected": expected, "sent": sent},
           "command": f"PYTHONPATH=. python benchmarks/speed/waiting_times.py --sample {args.sample} "
                      f"--first {args.first} --messages {args.messages} --min-left {args.min_left:g}"
                      f"{' --structure-only' if args.structure_only else ''} --out {args.out}",
           "date": time.strftime("%Y-%m-%d")}
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps({k: v for k, v in out.items() if k != "steps"}, indent=1))


if __name__ == "__main__":
    main()
