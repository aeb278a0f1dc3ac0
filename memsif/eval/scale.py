"""``python -m memsif bench --scale``: how the cost of a memory grows with the history's length.

Synthetic histories of 1k, 2k, 5k and 10k messages are made by concatenating LoCoMo conversations
(each copy's dates shifted to start a week after the previous copy ends; ids prefixed by the copy).
Each size is built in a fresh process (so peak memory is per size) and reports: Structured
Interaction Memory build seconds, CoreFact seconds on a fixed sample of batches extrapolated to the
whole history (labelled so), retrieval p50 / p95 and answer p50 / p95 over a fixed set of questions,
the store's size on disk, and peak RSS. Then the fitted growth: the exponent b of seconds ≈ a·n^b
between sizes (b ≈ 1 is linear).
"""

from __future__ import annotations

import itertools
import json
import math
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

from memsif.config import MemSIFConfig
from memsif.eval.runner import markdown_table
from memsif.records import Decision, Message, SegmentDecision, TrajectoryDecision


def synthetic_history(n: int, paths: list[str]) -> tuple[list[Message], list[str]]:
    """The first ``n`` messages of LoCoMo conversations from ``paths`` repeated end to end, with
    shifted dates and ids prefixed by the copy ("c2.D3:7"); and their questions (category 1–4).

    Raises:
        MemSIFError: a file that is not LoCoMo.
    """
    from memsif.eval.data import load_locomo

    samples = [s for p in paths for s in load_locomo(p)]
    out: list[Message] = []
    questions: list[str] = [q.question for s in samples for q in s.questions]
    end = None
    copy = 0
    while len(out) < n:
        sample = samples[copy % len(samples)]
        times = [m.time for m in sample.messages if m.time]
        shift = timedelta(0) if end is None or not times else (end - min(times)) + timedelta(days=7)
        for m in sample.messages:
            if len(out) >= n:
                break
            when = m.time + shift if m.time else None
            out.append(m.model_copy(update={"id": f"c{copy}.{m.id}", "time": when,
                                            "session_id": f"c{copy}.{m.session_id}", "namespace": "scale"}))
        end = max((m.time for m in out if m.time), default=end)
        copy += 1
    return out, questions


def measure_one(n: int, paths: list[str], fact_batches: int, questions: int, config: MemSIFConfig) -> dict:
    """Build one size in this process under ``config`` (its data folder replaced by a temporary one) and
    return its figures."""
    from memsif.engine import MemSIF
    from memsif.llm import described

    messages, qs = synthetic_history(n, paths)
    data_dir = Path(tempfile.mkdtemp(prefix="memsif-scale-"))
    try:
        engine = MemSIF(config.replace(data_dir=str(data_dir)))
        batch_messages = engine.config.facts.fact_batch_messages
        engine.load_models()
        start = time.perf_counter()
        report = engine.ingest(messages, namespace="scale", core_facts=False)
        sim_s = time.perf_counter() - start
        parts = sim_parts(report.seconds_by_stage, engine.decisions("scale"))
        # CoreFacts on a fixed sample: the first ``fact_batches`` batches' messages in a namespace of
        # their own (extracting the whole history would take longer than the build); only the
        # extraction pass is timed, and scaled by the number of batches the whole history has.
        sample_messages = fact_batches * batch_messages
        engine.ingest(messages[:sample_messages], namespace="scale-facts", core_facts=False)
        start = time.perf_counter()
        engine.build_core_facts("scale-facts")
        facts_s = time.perf_counter() - start
        per_batch = facts_s / fact_batches  # batches fill to fact_batch_messages across segments
        retrieval, answer = [], []
        for q in qs[:questions]:
            t = time.perf_counter()
            engine.ask(q, namespace="scale", generate=False)
            retrieval.append(time.perf_counter() - t)
            t = time.perf_counter()
            engine.ask(q, namespace="scale")
            answer.append(time.perf_counter() - t)
        engine.close()
        return {"llm": described(engine.llm), "messages": len(messages), "segments": report.segments,
                "trajectories": report.trajectories,
                "sim_s": round(sim_s, 1), "sim_parts_s": parts,
                "judge_calls_segment": report.judge_calls_segment,
                "judge_calls_trajectory": report.judge_calls_trajectory, "core_facts_sample_s": round(facts_s, 1),
                "core_facts_per_batch_s": round(per_batch, 2),
                "core_facts_extrapolated_s": round(per_batch * math.ceil(len(messages) / batch_messages), 1),
                **{f"{name}_p{q}_s": round(float(np.percentile(seconds, q)), 2)
                   for name, seconds in (("retrieval", retrieval), ("answer", answer)) for q in (50, 95)},
                "store_mb": round(sum(f.stat().st_size for f in data_dir.rglob("*") if f.is_file()) / 2**20, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


#: The parts of a Structured Interaction Memory build, in the order of the report's columns.
SIM_PARTS = ("embed_and_entities", "segment_judge", "trajectory_decisions", "structure_rest", "sentences",
             "store", "load_state")


def sim_parts(seconds_by_stage: dict[str, float], decisions: list[Decision]) -> dict[str, float]:
    """Seconds of a build by part: the ingest's stages, with its "structure" stage split into the
    segment judge's calls, the trajectory decisions (Top-K φ scoring and the judge) and the rest
    (φ against the current segment, profiles)."""
    segment_judge = sum(d.seconds or 0.0 for d in decisions if isinstance(d, SegmentDecision))
    trajectory = sum(d.seconds or 0.0 for d in decisions if isinstance(d, TrajectoryDecision))
    parts = {"segment_judge": segment_judge, "trajectory_decisions": trajectory,
             "structure_rest": seconds_by_stage.get("structure", 0.0) - segment_judge - trajectory}
    parts |= {k: seconds_by_stage.get(k, 0.0) for k in SIM_PARTS if k not in parts}
    return {k: round(parts[k], 1) for k in SIM_PARTS}


def growth(rows: list[dict], key: str) -> list[str]:
    """Exponent b of ``key`` ≈ a·n^b between consecutive sizes, as text ("1.02")."""
    return [f"{math.log(b[key] / a[key]) / math.log(b['messages'] / a['messages']):.2f}" if a[key] > 0 and b[key] > 0
            else "–" for a, b in itertools.pairwise(rows)]


def run(sizes: list[int], paths: list[str], fact_batches: int, questions: int, model: str | None = None) -> str:
    """Every size in its own process (with ``model``, else the configured LLM); returns the markdown report."""
    rows = []
    for n in sizes:
        cmd = [sys.executable, "-m", "memsif", *(["--model", model] if model else []), "bench", "--scale-one", str(n),
               "--fact-batches", str(fact_batches),
               "--questions", str(questions), "--json", *[a for p in paths for a in ("--scale-data", p)]]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"size {n} failed:\n{done.stderr[-2000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"size {n}: {rows[-1]}", file=sys.stderr)
    return report(rows, fact_batches)


def report(rows: list[dict], fact_batches: int) -> str:
    """The markdown table of ``measure_one`` rows, with growth exponents between consecutive sizes."""
    lines = markdown_table(
        ["messages", "segments", "trajectories", "SIM build s", "CoreFacts s (extrapolated: s per batch of a "
         f"{fact_batches}-batch sample × batches)", "retrieval p50 / p95 s", "answer p50 / p95 s", "store MB",
         "peak RSS MB"],
        ([r["messages"], r["segments"], r["trajectories"], r["sim_s"], r["core_facts_extrapolated_s"],
          f"{r['retrieval_p50_s']} / {r['retrieval_p95_s']}", f"{r['answer_p50_s']} / {r['answer_p95_s']}",
          r["store_mb"], r["peak_rss_mb"]] for r in rows))
    steps = [f"{a['messages']}→{b['messages']}" for a, b in itertools.pairwise(rows)]
    if len(rows) > 1:
        cols = [growth(rows, k) for k in ("sim_s", "retrieval_p50_s", "store_mb", "peak_rss_mb")]
        lines += ["", "Growth exponent b (cost ≈ a·n^b) between consecutive sizes; 1 = linear:", "",
                  *markdown_table(["between", "SIM build", "retrieval p50", "store", "peak RSS"],
                                  zip(steps, *cols, strict=True))]
    if all("sim_parts_s" in r for r in rows):
        table = []
        for r in rows:
            cells = [str(r["sim_parts_s"][k]) for k in SIM_PARTS]
            cells[1] += f" ({r['judge_calls_segment']})"
            cells[2] += f" ({r['judge_calls_trajectory']})"
            table.append([r["messages"], *cells])
        lines += ["", "SIM build by part, seconds (judge calls in brackets; `structure_rest`: φ against the current "
                  "segment and the running profiles):", "", *markdown_table(["messages", *SIM_PARTS], table)]
        if len(rows) > 1:
            cols = [growth([{"messages": r["messages"], "s": r["sim_parts_s"][k]} for r in rows], "s")
                    for k in SIM_PARTS]
            lines += ["", *markdown_table(["between", *SIM_PARTS], zip(steps, *cols, strict=True))]
    return "\n".join(lines)
