"""Prompt and decode speed of the packaged 1.5B under different llama.cpp builds, side by side.

Each build is an installed ``llama_cpp`` package in a folder of its own (``pip install --no-deps
--target DIR WHEEL``). For each build and CPU library: ``llamacpp_settings.measure`` (a 600-token
prompt evaluated at once, tokens/s; 20 single-token decode steps, s a token) on all cores, as MemSIF
runs them. Builds
are measured in turns (A B C, A B C, …) so that drift of the host hits all alike; the median of the
rounds is reported, with the host's CPU model and flags (``lscpu``) beside it. Run it on an idle
machine:

    PYTHONPATH=. python benchmarks/speed/llamacpp_builds.py --build native=/tmp/llb/native \\
        --build variants=/tmp/llb/variants --build variants:haswell=/tmp/llb/variants --rounds 3 \\
        --out benchmarks/results/llamacpp-builds-HOST.json

``NAME:LIBRARY=DIR`` forces one CPU library of a run-time-selected build (``GGML_BACKEND_PATH``);
without ``:LIBRARY`` MemSIF's own choice is used (``memsif.llm.llamacpp_cpu.choose_cpu_library``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, os, sys
from memsif.llm.llamacpp_cpu import choose_cpu_library, llama_cpp_lib_dir
library = sys.argv[2]
lib_dir = llama_cpp_lib_dir()
if library:
    os.environ["GGML_BACKEND_PATH"] = str(lib_dir / f"libggml-cpu-{library}.so")
chosen = choose_cpu_library(lib_dir)
sys.path.insert(0, sys.argv[3])
from llamacpp_settings import measure
threads = len(os.sched_getaffinity(0))
out = measure(sys.argv[1], {"n_threads": threads, "n_threads_batch": threads})
import llama_cpp
print(json.dumps({"library": chosen.name or chosen.kind, "llama_cpp": os.path.dirname(llama_cpp.__file__),
                  **{k: out[k] for k in ("load_s", "prompt_tokens_per_s", "decode_s_per_token")}}))
"""


def lscpu() -> dict[str, str]:
    """The host's CPU model and the flags that decide which code runs (AVX2, AVX-512 parts, AMX)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    flags = fields.get("Flags", "").split()
    wanted = [f for f in flags if f.startswith(("avx", "amx", "fma", "f16c"))]
    return {"model": fields.get("Model name", platform.processor()).strip(),
            "cpus": fields.get("CPU(s)", "").strip(), "flags": " ".join(wanted)}


def measure(model: str, folder: str, library: str) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{ROOT}"}
    env.pop("GGML_BACKEND_PATH", None)
    done = subprocess.run([sys.executable, "-c", CHILD, model, library, str(ROOT / "benchmarks" / "speed")],
                          capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        from memsif.llm.llamacpp_cpu import probe_failure

        return {"error": probe_failure(done.returncode, done.stderr, model)[0]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    from memsif.config import MemSIFConfig
    from memsif.llm.packaged import packaged_gguf

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", required=True, help="NAME[:LIBRARY]=DIR")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    config = MemSIFConfig.from_env()
    folder, gguf = packaged_gguf(config.llm_model, config.resolved_cache_dir)
    model = str(folder / gguf)
    builds = []
    for spec in args.build:
        name, _, path = spec.partition("=")
        library = name.partition(":")[2]
        builds.append((name, path, library))
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in builds}
    for k in range(args.rounds):
        for name, path, library in builds:
            runs[name].append(measure(model, path, library))
            print(f"round {k + 1} {name}: {runs[name][-1]}", file=sys.stderr)
    rows = []
    for name, measured in runs.items():
        ok = [m for m in measured if "error" in m] == []
        row = {"build": name, "library": measured[0].get("library"), "rounds": len(measured)}
        if ok:
            row.update(prompt_tokens_per_s=round(statistics.median(m["prompt_tokens_per_s"] for m in measured), 1),
                       decode_s_per_token=round(statistics.median(m["decode_s_per_token"] for m in measured), 4),
                       load_s=round(statistics.median(m["load_s"] for m in measured), 2),
                       runs=measured)
        else:
            row["error"] = next(m["error"] for m in measured if "error" in m)
        rows.append(row)
    result = {"date": time.strftime("%Y-%m-%d"), "host": lscpu(), "model": gguf,
              "command": "PYTHONPATH=. python benchmarks/speed/llamacpp_builds.py " + " ".join(sys.argv[1:]),
              "rows": rows}
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
