"""Benchmark: can each packaged model do the method's judgements, and at what cost?

For every model (each in its own process, so load time and peak memory are its own), on the dev
conversations: the segment judge's ROC AUC on labelled pairs (own session vs another conversation,
and the hand-labelled within-session shifts of ``benchmarks/quality/data/segment-shifts.jsonl``), its
accuracy at the verdict the engine applies (``judge_calibration=auto``); the trajectory judge's AUC
(multi-hop evidence in two sessions vs another conversation / the same conversation); seconds per
judge call; model load seconds; peak RSS. No LLM in any measure.

    PYTHONPATH=. python benchmarks/quality/model_steps.py [--models packaged:smollm2-135m-instruct,...]
        [--per-sample 20] [--backend auto] [--out benchmarks/results/dev/model-steps.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
SHIFTS = ROOT / "benchmarks" / "quality" / "data" / "segment-shifts.jsonl"
MODELS = "packaged:smollm2-135m-instruct,packaged:qwen2.5-coder-1.5b-instruct"


def one_model(model: str, backend: str, per_sample: int) -> dict:
    from memsif.config import MemSIFConfig
    from memsif.eval import judges
    from memsif.eval.data import load_locomo
    from memsif.llm import load_llm, resolved_backend
    from memsif.llm.profiles import profile_of
    from memsif.prompts import segment_judge, trajectory_judge

    config = MemSIFConfig.from_env(llm_model=model, llm_backend=backend)
    start = time.perf_counter()
    llm = load_llm(config)
    load_s = time.perf_counter() - start
    samples = load_locomo(DEV)
    seg = judges.segment_pairs(samples, per_sample, seed=0)
    shifts = judges.labelled_shift_pairs(samples, SHIFTS)
    traj = judges.trajectory_pairs(samples, per_sample // 2, seed=0)
    seg_r = judges.score(llm, "segment_judge", seg + shifts, "off", segment_judge.content_free)
    traj_r = judges.score(llm, "trajectory_judge", traj, "off", trajectory_judge.content_free)
    name = getattr(llm, "name", model)
    seg_point = profile_of(name).decision_point("segment_judge")
    traj_point = profile_of(name).decision_point("trajectory_judge")
    n_seg, n_traj = len(seg_r.prompts), len(traj_r.prompts)
    return {
        "model": name, "backend": resolved_backend(config), "load_s": round(load_s, 1),
        "segment_pairs": len(seg), "within_session_pairs": len(shifts), "trajectory_prompts": n_traj,
        "segment_auc_other_conversation": round(seg_r.auc("other conversation", "own session"), 3),
        "segment_auc_within_session": round(seg_r.auc("within session", "within session"), 3),
        "segment_decision_point": seg_point,
        "segment_accuracy_other_conversation": round(
            _accuracy(seg_r, seg_point, ("own session", "other conversation")), 3),
        "segment_accuracy_within_session": round(_accuracy(seg_r, seg_point, ("within session",)), 3),
        "trajectory_auc_other_conversation": round(traj_r.auc("other conversation"), 3),
        "trajectory_auc_same_conversation": round(traj_r.auc("same conversation, not evidence"), 3),
        "trajectory_decision_point": traj_point,
        "trajectory_accuracy": round(_accuracy(traj_r, traj_point, None), 3),
        "segment_s_per_call": round(seg_r.seconds / n_seg, 3),
        "segment_tokens_per_call": round(seg_r.prompt_tokens / n_seg),
        "trajectory_s_per_call": round(traj_r.seconds / n_traj, 3),
        "trajectory_tokens_per_call": round(traj_r.prompt_tokens / n_traj),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _accuracy(report, point: float | None, kinds: tuple[str, ...] | None) -> float:
    """Accuracy of the verdict the engine applies: raw P(yes) against the measured point, else 0.5."""
    threshold = 0.5 if point is None else point
    rows = [(s, p.label) for s, p in zip(report.scores, report.prompts, strict=True)
            if kinds is None or p.kind in kinds]
    return sum((s >= threshold) == bool(y) for s, y in rows) / len(rows)


def table(rows: list[dict]) -> str:
    head = ("| model (back-end) | segment AUC: own session vs other conversation | within session (hand-labelled) "
            "| verdict accuracy: other conversation / within session (at P) | trajectory AUC: other / same "
            "conversation | trajectory accuracy (at P) | s per judge call: segment / trajectory (tokens) "
            "| load s | peak RSS MB |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        point = r["segment_decision_point"] or 0.5
        tpoint = r["trajectory_decision_point"] or 0.5
        lines.append(
            f"| {r['model']} ({r['backend']}) | {r['segment_auc_other_conversation']:.2f} "
            f"({r['segment_pairs']} pairs) | {r['segment_auc_within_session']:.2f} ({r['within_session_pairs']}) "
            f"| {r['segment_accuracy_other_conversation']:.2f} / {r['segment_accuracy_within_session']:.2f} "
            f"(P ≥ {point:.2f}) | {r['trajectory_auc_other_conversation']:.2f} / "
            f"{r['trajectory_auc_same_conversation']:.2f} ({r['trajectory_prompts']} prompts) "
            f"| {r['trajectory_accuracy']:.2f} (P ≥ {tpoint:.2f}) | {r['segment_s_per_call']:.2f} / "
            f"{r['trajectory_s_per_call']:.2f} ({r['segment_tokens_per_call']} / {r['trajectory_tokens_per_call']}) "
            f"| {r['load_s']} | {r['peak_rss_mb']:,} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--per-sample", type=int, default=20, help="own-session positives per conversation")
    parser.add_argument("--out", help="also write the rows as JSON here")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # one model, in its own process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_model(args.one, args.backend, args.per_sample)))
        return
    rows = []
    env = {**os.environ, "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}
    for model in args.models.split(","):
        cmd = [sys.executable, __file__, "--one", model, "--backend", args.backend,
               "--per-sample", str(args.per_sample)]
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{model} failed:\n{done.stderr[-2000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{model}: done", file=sys.stderr)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
