"""Where CoreFact extraction spends its seconds: the shipped example's Structured Interaction Memory
(conv-26, 419 messages) with its CoreFacts taken out, extracted again with the default settings in a
fresh process, every llama.cpp call timed by prompt kind, its prompt reading (tokens not in the
key/value cache) apart from its generation.

    PYTHONPATH=. python benchmarks/speed/extraction_profile.py --out FILE.json

Run it on an idle machine and keep ``lscpu`` beside the result.
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.inspector.common import EXAMPLE_MEMORY
from memsif.llm.llamacpp_backend import LlamaCppLLM
from memsif.transfer import read_export

STATS: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
_CALL = threading.local()


def _timed_prefill(original: Callable[..., None]) -> Callable[..., None]:
    def prefill(self: LlamaCppLLM, llm: Any, tokens: list[int]) -> None:
        cached = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], tokens, strict=False):
            if a != b:
                break
            cached += 1
        start = time.perf_counter()
        original(self, llm, tokens)
        stats = STATS[getattr(_CALL, "kind", "other")]
        stats["read_s"] += time.perf_counter() - start
        stats["read_tokens"] += len(tokens) - min(cached, len(tokens) - 1)
        stats["prompt_tokens"] += len(tokens)
    return prefill


def _timed_call(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def call(self: LlamaCppLLM, prompt: Any, *args: Any, **kwargs: Any) -> Any:
        first = prompt[0] if isinstance(prompt, list) else prompt
        _CALL.kind = kind = f"{name} {first.name}"
        start = time.perf_counter()
        result = original(self, prompt, *args, **kwargs)
        STATS[kind]["s"] += time.perf_counter() - start
        STATS[kind]["calls"] += 1
        STATS[kind]["generated_tokens"] += getattr(result, "tokens_out", 0)
        return result
    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    LlamaCppLLM._prefill = _timed_prefill(LlamaCppLLM._prefill)  # type: ignore[method-assign]
    for name in ("generate", "yes_probability", "choice_probabilities"):
        setattr(LlamaCppLLM, name, _timed_call(name, getattr(LlamaCppLLM, name)))
    example = read_export(EXAMPLE_MEMORY)
    unread = [s.model_copy(update={"facts_extracted_upto": 0}) for s in example.segments]
    example = example.model_copy(update={"facts": [], "fact_ops": [], "clusters": [], "active_facts": [],
                                         "segments": unread})
    eng = MemSIF(MemSIFConfig.from_env(data_dir=tempfile.mkdtemp(prefix="memsif-extraction-")))
    namespace = eng.import_namespace(example, "example")
    eng.load_models()
    start = time.perf_counter()
    eng.build_core_facts(namespace)
    total = time.perf_counter() - start
    result = {"messages": len(example.messages), "seconds": round(total, 1), "facts": len(eng.facts(namespace)),
              "by_kind": {k: {n: round(v, 1) for n, v in c.items()} for k, c in STATS.items()}}
    print(json.dumps(result, indent=1))
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
