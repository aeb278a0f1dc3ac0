"""Prompt and decode speed of the packaged 1.5B under llama.cpp settings.

For each setting: a 600-token prompt evaluated at once (tokens/s), then 20 single-token decode steps
(s a token). With ``--requantize`` the same weights are also re-quantised to Q4_0 and Q8_0 into a
scratch folder (llama.cpp's quantiser; Q4_K_M → Q4_0 loses a little precision, so this is a speed
check, not a candidate default). Run it on an idle machine:

    PYTHONPATH=. python benchmarks/speed/llamacpp_settings.py [--requantize /tmp/q]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.llm.packaged import packaged_gguf

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = [
    {"n_threads": 1, "n_threads_batch": 1},
    {},  # llama-cpp-python's defaults: decode on half the cores, prompts on all
    {"n_threads": 2},
    {"n_threads": 2, "flash_attn": True},
    {"n_threads": 2, "n_ubatch": 128},
]


def measure(path: str, settings: dict) -> dict:
    import llama_cpp

    start = time.perf_counter()
    llm = llama_cpp.Llama(model_path=path, n_ctx=2048, verbose=False, **settings)
    load = time.perf_counter() - start
    tokens = llm.tokenize((ROOT / "README.md").read_text()[:20000].encode(), add_bos=False)[:600]
    llm.eval(tokens[:8])
    llm.n_tokens = 0
    start = time.perf_counter()
    llm.eval(tokens)
    prompt = time.perf_counter() - start
    start = time.perf_counter()
    for token in tokens[:20]:
        llm.eval([token])
    decode = (time.perf_counter() - start) / 20
    return {"model": os.path.basename(path), "settings": settings, "load_s": round(load, 2),
            "prompt_tokens_per_s": round(len(tokens) / prompt, 1), "decode_s_per_token": round(decode, 4)}


def requantize(src: str, folder: Path, name: str) -> str:
    import llama_cpp

    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / f"{name.lower()}.gguf"
    if not dst.exists():
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype, params.allow_requantize = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{name}"), True
        if llama_cpp.llama_model_quantize(src.encode(), str(dst).encode(), params) != 0:
            raise RuntimeError(f"llama.cpp could not quantise to {name}")
    return str(dst)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requantize", metavar="FOLDER", help="also time Q4_0 and Q8_0 copies written here")
    args = parser.parse_args()
    config = MemSIFConfig.from_env()
    folder, name = packaged_gguf(config.llm_model, config.resolved_cache_dir)
    path = str(folder / name)
    for settings in SETTINGS:
        print(json.dumps(measure(path, settings)))
    if args.requantize:
        for quant in ("Q4_0", "Q8_0"):
            print(json.dumps(measure(requantize(path, Path(args.requantize), quant), {"n_threads": 2})))


if __name__ == "__main__":
    main()
