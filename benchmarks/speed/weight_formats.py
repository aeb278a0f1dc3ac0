"""Prompt and decode speed of the packaged 1.5B in other weight formats, per llama.cpp CPU library.

llama.cpp repacks some quantisations into interleaved kernels for the CPU it runs on, so a format can be
faster here than the packaged Q4_K_M. Each format is converted once from the packaged Q4_K_M with
llama.cpp's own quantize (``allow_requantize``: the result carries Q4_K_M's error plus its own), cached
beside the assembled GGUF under ``formats/``, and timed in a fresh process per (format, CPU library):
load seconds (repacking included), a 600-token prompt read on an empty cache (the second of two reads),
and 32 decode steps (median). Speed only: a format's quality (judge AUC, answer F1, labelled facts)
is measured separately before it could become a default.

    PYTHONPATH=. python benchmarks/speed/weight_formats.py --out results.jsonl [--formats Q4_K_M,Q4_0,IQ4_NL,Q8_0]
        [--libraries zen4,skylakex,haswell]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.llm.packaged import packaged_gguf

#: llama.cpp's file types (``llama_cpp.LLAMA_FTYPE_MOSTLY_*``).
FTYPES = {"Q4_0": 2, "Q8_0": 7, "IQ4_NL": 25, "Q4_K_M": 15}

_TIMING = r"""
import json, sys, time, llama_cpp
path, threads = sys.argv[1], int(sys.argv[2])
start = time.perf_counter()
llm = llama_cpp.Llama(model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False)
load = time.perf_counter() - start
text = ("Caroline: I went to an LGBTQ support group yesterday and it was so powerful. "
        "Melanie: That sounds amazing! I painted a lake sunrise last year. ") * 20
tokens = llm.tokenize(text.encode(), add_bos=True)[:600]
reads = []
for _ in range(2):
    llm.reset()
    start = time.perf_counter()
    llm.eval(tokens)
    reads.append(time.perf_counter() - start)
steps, token = [], llm.tokenize(b" the", add_bos=False)[0]  # one forward step costs the same for any token
for _ in range(32):
    start = time.perf_counter()
    llm.eval([token])
    steps.append(time.perf_counter() - start)
print(json.dumps({"load_s": round(load, 2), "prompt_tokens": len(tokens), "prompt_s": round(reads[1], 2),
                  "prompt_tokens_per_s": round(len(tokens) / reads[1], 1),
                  "decode_s_per_token": round(sorted(steps)[len(steps) // 2], 4)}))
"""


def convert(source: Path, fmt: str) -> Path:
    """``source`` (the packaged Q4_K_M GGUF) in ``fmt``, converted once into ``formats/`` beside it."""
    if fmt == "Q4_K_M":
        return source
    target = source.parent / "formats" / f"{source.stem.removesuffix('-q4_k_m')}-{fmt.lower()}.gguf"
    if target.exists():
        return target
    import llama_cpp

    target.parent.mkdir(parents=True, exist_ok=True)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize, params.nthread = FTYPES[fmt], True, os.cpu_count() or 1
    partial = target.with_suffix(".partial")
    started = time.perf_counter()
    if llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), params) != 0:
        raise SystemExit(f"llama.cpp could not convert {source} to {fmt}")
    partial.rename(target)
    print(f"converted to {fmt} in {time.perf_counter() - started:.0f} s: {target}", file=sys.stderr)
    return target


def timed(path: Path, library: Path) -> dict:
    """One fresh process on ``library``: the figures of ``_TIMING``."""
    env = {**os.environ, "GGML_BACKEND_PATH": str(library)}
    done = subprocess.run([sys.executable, "-c", _TIMING, str(path), str(len(os.sched_getaffinity(0)))],
                          capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="JSON lines, one per (format, library)")
    parser.add_argument("--formats", default="Q4_K_M,Q4_0,IQ4_NL,Q8_0")
    parser.add_argument("--libraries", default="zen4,skylakex,haswell", help="llama.cpp CPU libraries to load")
    args = parser.parse_args()
    import llama_cpp

    libs = Path(llama_cpp.__file__).parent / "lib"
    cfg = MemSIFConfig.from_env()
    folder, name = packaged_gguf(cfg.llm_model, cfg.resolved_cache_dir)
    source = Path(folder) / name
    with open(args.out, "a") as fh:
        for fmt in args.formats.split(","):
            path = convert(source, fmt)
            for lib in args.libraries.split(","):
                row = {"format": fmt, "library": lib, "file_mb": round(path.stat().st_size / 2**20),
                       **timed(path, libs / f"libggml-cpu-{lib}.so")}
                print(json.dumps(row), flush=True)
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
