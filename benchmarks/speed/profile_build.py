"""Where a full memory build's seconds go: one LoCoMo conversation ingested from its transcript with the
default settings in a fresh process and data folder (Structured Interaction Memory, CoreFacts, the model's
segment titles), every llama.cpp call timed by the prompt that made it, its prompt reading (tokens not in
the key/value cache) apart from the rest (generation), and every CoreFact extraction batch with what it
kept.

Stages: segment judge, trajectory judge, titles, extraction reading, extraction writing, verification,
changes (``core_change`` / ``core_operation``), and the model-free rest (embedding, key entities, φ, the
grounding gate, store writes). Batch kinds: a batch that kept a CoreFact, one whose candidates were all
refused, one with no candidate. A wave of batches decoded together (``FactsHandle.generate_batch``) is
timed as a whole, its reading (the prompts) apart from its writing (the decoding steps); each batch of it is
given a share of the reading by the tokens it alone read and of the writing by the tokens it wrote.
Writes ``profile.json`` and ``lscpu.txt`` to ``--out`` and prints the two tables as markdown.

    PYTHONPATH=. python benchmarks/speed/profile_build.py --data ../shared/data/locomo/locomo_dev.json \
        --sample conv-26 --out runs/profile-conv-26

Run it on an idle machine: its seconds are the host's (``lscpu.txt``); compare two builds as ratios
measured on the same host.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.facts import core
from memsif.llm.llamacpp_backend import FactsHandle, LlamaCppLLM
from memsif.llm.llamacpp_parallel import ParallelContext, common_prefix
from memsif.records import FactOp, Message

#: seconds, tokens and calls per prompt kind, and per extraction batch (its key) per prompt kind
BY_KIND: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
BY_BATCH: dict[str, dict[str, collections.Counter[str]]] = collections.defaultdict(
    lambda: collections.defaultdict(collections.Counter))
_CALL = threading.local()
BATCH_OF: dict[str, str] = {}  # message id -> the key of the extraction batch that read it
KEPT = {FactOp.ADD.value, FactOp.UPDATE.value, FactOp.MERGE.value, FactOp.SUPERSEDE.value}
STAGES = (("segment judge", ("segment_judge",)), ("trajectory judge", ("trajectory_judge", "trajectory_choice")),
          ("titles", ("segment_title",)), ("extraction reading", ("core_extract:read",)),
          ("extraction writing", ("core_extract:write",)),
          ("second pass", ("core_extract+again:read", "core_extract+again:write")),
          ("verification", ("fact_verify",)), ("changes", ("core_change", "core_operation")))


def _kind(prompt: Any) -> str:
    first = prompt[0] if isinstance(prompt, list) else prompt
    return first.name + ("+again" if "again" in (first.version or "") else "")


def _count(field: str, value: float) -> None:
    kind = getattr(_CALL, "kind", "other")
    BY_KIND[kind][field] += value
    if (batch := getattr(_CALL, "batch", None)) is not None:
        BY_BATCH[batch][kind][field] += value


def _timed_prefill(original: Callable[..., None]) -> Callable[..., None]:
    def prefill(self: LlamaCppLLM, llm: Any, tokens: list[int]) -> None:
        cached = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], tokens, strict=False):
            if a != b:
                break
            cached += 1
        start = time.perf_counter()
        original(self, llm, tokens)
        _count("read_s", time.perf_counter() - start)
        _count("read_tokens", len(tokens) - min(cached, len(tokens) - 1))
        _count("prompt_tokens", len(tokens))
    return prefill


def _timed_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def call(self: LlamaCppLLM, prompt: Any, *args: Any, **kwargs: Any) -> Any:
        _CALL.kind = _kind(prompt)
        start = time.perf_counter()
        try:
            result = original(self, prompt, *args, **kwargs)
        finally:
            _count("s", time.perf_counter() - start)
            _count("calls", 1)
        _count("generated_tokens", getattr(result, "tokens_out", 0))
        _CALL.kind = "other"
        return result
    return call


def _timed_reply(original: Callable[..., Any]) -> Callable[..., Any]:
    def reply(self: ParallelContext, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            _CALL.write_s = time.perf_counter() - start
    return reply


def _timed_wave(original: Callable[..., Any]) -> Callable[..., Any]:
    """``FactsHandle.generate_batch`` counted under its prompts' kind: its writing is ``ParallelContext._reply``'s
    seconds, its reading the rest; shared among the wave's batches (``_CALL.wave``) by the tokens each read
    alone and wrote."""
    def wave(self: FactsHandle, prompts: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        _CALL.kind, _CALL.write_s = _kind(list(prompts)), 0.0
        tokens = [self.backend.prompt_tokens(p) for p in prompts]
        shared = common_prefix(tokens)[:min(len(t) for t in tokens) - 1]
        held = self._parallel._prefix if self._parallel is not None else []
        new_shared = len(shared) - (len(common_prefix([held, shared])) if held and shared else 0)
        start = time.perf_counter()
        result = original(self, prompts, *args, **kwargs)
        total, write_s = time.perf_counter() - start, _CALL.write_s
        own = [len(t) - len(shared) for t in tokens]
        written = [g.tokens_out for g in result]
        keys = getattr(_CALL, "wave", None) or [None] * len(prompts)
        for key, read, wrote in zip(keys, own, written, strict=True):
            _CALL.batch = key
            _count("read_s", (total - write_s) * read / max(sum(own), 1))
            _count("s", (total - write_s) * read / max(sum(own), 1) + write_s * wrote / max(sum(written), 1))
            _count("read_tokens", read + new_shared / len(prompts))
            _count("prompt_tokens", read + len(shared))
            _count("generated_tokens", wrote)
            _count("calls", 1)
        _CALL.batch, _CALL.kind = None, "other"
        return result
    return wave


def _batch_key(messages: Sequence[Message]) -> str:
    return f"{messages[0].id}…{messages[-1].id} ({len(messages)})"


def install() -> None:
    """Wrap the back-end's calls and the CoreFact steps so each call is counted under its prompt kind and
    the extraction batch it served."""
    LlamaCppLLM._prefill = _timed_prefill(LlamaCppLLM._prefill)  # type: ignore[method-assign]
    for name in ("generate", "yes_probability", "choice_probabilities"):
        setattr(LlamaCppLLM, name, _timed_call(getattr(LlamaCppLLM, name)))
    FactsHandle.generate_batch = _timed_wave(FactsHandle.generate_batch)  # type: ignore[method-assign]
    ParallelContext._reply = _timed_reply(ParallelContext._reply)  # type: ignore[method-assign]
    extract_many, consolidate = core.FactExtractor.extract_many, core.FactConsolidator.consolidate

    def profiled_extract_many(self: Any, namespace: str, batches: Sequence[Sequence[Message]], *args: Any,
                              **kwargs: Any) -> Any:
        keys = [_batch_key(b) for b in batches]
        BATCH_OF.update((m.id, key) for b, key in zip(batches, keys, strict=True) for m in b)
        generate_many = core.generate_many

        def counted(llm: Any, prompts: Sequence[Any], **kw: Any) -> list[Any]:
            if len(prompts) > 1 and hasattr(llm, "generate_batch"):  # a wave decoded together: ``_timed_wave``
                _CALL.wave = keys
                try:
                    return generate_many(llm, prompts, **kw)
                finally:
                    _CALL.wave = None
            out = []
            for key, prompt in zip(keys, prompts, strict=True):
                _CALL.batch = key
                out.extend(generate_many(llm, [prompt], **kw))
            _CALL.batch = None
            return out
        core.generate_many = counted  # type: ignore[assignment]
        try:
            return extract_many(self, namespace, batches, *args, **kwargs)
        finally:
            core.generate_many = generate_many

    def profiled_consolidate(self: Any, state: Any, cand: Any) -> Any:
        _CALL.batch = BATCH_OF.get(next(iter(cand.fact.source_message_ids), ""))
        start = time.perf_counter()
        try:
            return consolidate(self, state, cand)
        finally:
            if _CALL.batch is not None:
                BY_BATCH[_CALL.batch]["consolidation"]["s"] += time.perf_counter() - start
            _CALL.batch = None
    core.FactExtractor.extract_many = profiled_extract_many  # type: ignore[method-assign]
    core.FactConsolidator.consolidate = profiled_consolidate  # type: ignore[method-assign]


def _split(kinds: dict[str, collections.Counter[str]]) -> dict[str, dict[str, float]]:
    """Extraction calls split into reading (prefill) and writing (the rest of the call)."""
    out: dict[str, dict[str, float]] = {}
    for kind, c in kinds.items():
        if kind.startswith("core_extract"):
            out[f"{kind}:read"] = {"s": c["read_s"], "tokens": c["read_tokens"], "calls": c["calls"]}
            out[f"{kind}:write"] = {"s": c["s"] - c["read_s"], "tokens": c["generated_tokens"], "calls": c["calls"]}
        else:
            out[kind] = {"s": c["s"], "tokens": c["read_tokens"], "calls": c["calls"]}
    return out


def stage_rows(total_s: float) -> list[dict[str, Any]]:
    """One row per stage: seconds, share of the build, calls, tokens read (written, for extraction writing)."""
    split = _split(BY_KIND)
    rows = []
    for stage, kinds in STAGES:
        parts = [split[k] for k in kinds if k in split]
        rows.append({"stage": stage, "s": sum(p["s"] for p in parts), "calls": max((p["calls"] for p in parts),
                     default=0), "tokens": sum(p["tokens"] for p in parts)})
    model_s = sum(r["s"] for r in rows) + sum(v["s"] for k, v in split.items()
                                              if not any(k in kinds for _, kinds in STAGES))
    rows.append({"stage": "model-free rest", "s": total_s - model_s, "calls": 0, "tokens": 0})
    for row in rows:
        row["share"] = row["s"] / total_s if total_s else 0.0
    return rows


def per_batch(ops: Sequence[Any]) -> list[dict[str, Any]]:
    """One row per extraction batch: its key, kind, messages, candidates, kept, and the seconds of its
    extraction (reading, writing) and of its consolidation (verification, changes, the rest)."""
    outcome: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for op in ops:
        if op.batch:
            outcome[op.batch][op.op.value] += 1
    rows = []
    for key, calls in BY_BATCH.items():
        done = outcome.get(key, collections.Counter())
        kept = sum(done[o] for o in KEPT)
        row: dict[str, Any] = {"batch": key, "kind": "kept a CoreFact" if kept else (
            "all candidates refused" if done[FactOp.REJECT.value] else "no candidate"),
            "messages": int(key.rsplit("(", 1)[1].rstrip(")")), "candidates": kept + done[FactOp.REJECT.value],
            "kept": kept, "reading_s": 0.0, "writing_s": 0.0, "written_tokens": 0, "consolidation_s": 0.0}
        for name, c in calls.items():
            if name.startswith("core_extract"):
                row["reading_s"] += c["read_s"]
                row["writing_s"] += c["s"] - c["read_s"]
                row["written_tokens"] += c["generated_tokens"]
            else:
                row["consolidation_s"] += c["s"]  # consolidation's own seconds include its model calls
        rows.append(row)
    return rows


def batch_rows(batches: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``per_batch``'s rows summed per batch kind, with the number of batches."""
    kinds: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for row in batches:
        kinds[row["kind"]]["batches"] += 1
        kinds[row["kind"]].update({k: v for k, v in row.items() if k not in ("batch", "kind")})
    return [{"kind": kind, **{k: round(v, 1) for k, v in c.items()}} for kind, c in sorted(kinds.items())]


def _markdown(stages: list[dict[str, Any]], batches: list[dict[str, Any]], total_s: float) -> str:
    lines = [f"Build: {total_s:.0f} s", "", "| stage | seconds | share | calls | tokens |", "|---|---|---|---|---|"]
    lines += [f"| {r['stage']} | {r['s']:.0f} | {100 * r['share']:.0f} % | {r['calls']} | {r['tokens']:.0f} |"
              for r in stages]
    lines += ["", "| batch kind | batches | messages | candidates | kept | reading s | writing s | written tokens "
              "| consolidation s |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['kind']} | {r.get('batches', 0):.0f} | {r.get('messages', 0):.0f} | {r.get('candidates', 0):.0f} "
              f"| {r.get('kept', 0):.0f} | {r.get('reading_s', 0):.0f} | {r.get('writing_s', 0):.0f} "
              f"| {r.get('written_tokens', 0):.0f} | {r.get('consolidation_s', 0):.0f} |" for r in batches]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a LoCoMo JSON file")
    parser.add_argument("--sample", required=True, help="its conversation, e.g. conv-26")
    parser.add_argument("--out", required=True, help="a folder for profile.json and lscpu.txt")
    parser.add_argument("--messages", type=int, default=0, help="only the first N messages (default: all)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lscpu.txt").write_text(subprocess.run(["lscpu"], capture_output=True, text=True).stdout)
    messages = load_locomo(args.data, [args.sample])[0].messages
    messages = messages[:args.messages] if args.messages else messages
    install()
    eng = MemSIF(MemSIFConfig.from_env(data_dir=tempfile.mkdtemp(prefix="memsif-profile-")))
    eng.load_models()
    start = time.perf_counter()
    report = eng.ingest(messages, namespace="profile")
    total = time.perf_counter() - start
    each = per_batch(eng.store.fact_ops("profile"))
    stages, batches = stage_rows(total), batch_rows(each)
    result = {"sample": args.sample, "messages": len(messages), "seconds": round(total, 1),
              "core_facts": len(eng.facts("profile")), "seconds_by_stage": report.seconds_by_stage,
              "stages": stages, "batch_kinds": batches, "batches": each,
              "by_prompt": {k: {n: round(v, 2) for n, v in c.items()} for k, c in BY_KIND.items()},
              "measured": time.strftime("%Y-%m-%d %H:%M"), "llm": eng.llm.name}
    (out / "profile.json").write_text(json.dumps(result, indent=1, default=str))
    print(_markdown(stages, batches, total))


if __name__ == "__main__":
    main()
