"""Benchmark: Structured Interaction Memory on real LoCoMo conversations with the default models.

Each conversation is ingested in a fresh process (so peak memory is per conversation) into a
throw-away data folder; prints one row per conversation and the φ distribution. Figures, not
pass/fail.

    python benchmarks/retrieval/structure.py [--data ../shared/data/locomo/locomo_dev.json] [--samples conv-26,...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"


def run(cmd: list[str], env: dict[str, str]) -> dict:
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--samples", default="conv-26,conv-30,conv-47")
    args = parser.parse_args()
    env = {**os.environ, "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}
    samples = args.samples.split(",")
    with tempfile.TemporaryDirectory() as data_dir:
        print(f"backend={env.get('MEMSIF_LLM_BACKEND', 'transformers')} data={args.data}")
        print("| sample | messages | segments | trajectories | judge share (segment) | trajectory judge calls "
              "| ingest s | msgs/s | model load s | peak MiB |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for sample in samples:
            r = run([sys.executable, "-m", "memsif", "ingest", args.data, "--sample", sample, "--data-dir",
                     data_dir, "--json", "--no-progress", "--no-facts"], env)
            print(f"| {sample} | {r['messages']} | {r['segments']} | {r['trajectories']} | "
                  f"{r['judge_share_segment']:.1%} | {r['judge_calls_trajectory']} | {r['seconds']:.1f} | "
                  f"{r['messages'] / r['seconds']:.1f} | {r['model_load_seconds']:.1f} | {r['peak_rss_mb']:.0f} |")
        ns_args = [a for s in samples for a in ("--namespace", s)]
        dist = run([sys.executable, "-m", "memsif", "calibrate", *ns_args, "--data-dir", data_dir, "--json"], env)
        print(f"\nφ(u_t, S_i) over all boundary decisions (n = {dist['n']}, embedder {dist['embedder']}):")
        print(f"  cosine percentiles: {dist['cosine']}; mean Jaccard {dist['jaccard_mean']}")
        for kind, m in dist["mappings"].items():
            print(f"  s_sem {kind} {m['range']}: φ {m['phi']}; split rule {m['split_rule']:.1%}, "
                  f"judge {m['judge']:.1%}, merge rule {m['merge_rule']:.1%}")


if __name__ == "__main__":
    main()
