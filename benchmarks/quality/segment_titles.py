"""Benchmark: titles of the Topical Segments of built memories, as the engine writes them (§3.2).

Walks each memory's segments in order with the namespace's vocabulary as it was when each closed
(``interaction.link.Vocabulary``), writes each title with the configured LLM (``interaction.titles``;
the model-free title with ``--no-llm``), and keeps one JSON line per segment: the lines, their source,
what was refused, seconds. The trajectory benchmark (``trajectory_construction.py``) reads them.

    PYTHONPATH=. python benchmarks/quality/segment_titles.py --memory conv-26=EXPORT.json [--memory ...] \
        --out TITLES.jsonl [--no-llm]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.interaction import link
from memsif.interaction.titles import TitleWriter
from memsif.transfer import read_export


class Recorder:
    """The LLM, keeping the text of its last generation (the title's lines are re-checked from it)."""

    def __init__(self, llm) -> None:
        self.inner, self.name, self.last = llm, llm.name, None

    def generate(self, prompt, **kwargs):
        gen = self.inner.generate(prompt, **kwargs)
        self.last = gen.text
        return gen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", action="append", required=True, help="SAMPLE=EXPORT_FILE")
    parser.add_argument("--out", required=True, help="JSONL of titles (segments already in it are kept)")
    parser.add_argument("--no-llm", action="store_true", help="model-free titles only")
    args = parser.parse_args()
    out = Path(args.out)
    done = {(r["sample"], r["segment"]): r for r in map(json.loads, out.read_text().splitlines())} \
        if out.exists() else {}
    llm = None
    if not args.no_llm:
        from memsif.engine import MemSIF
        eng = MemSIF(MemSIFConfig.from_env(data_dir=tempfile.mkdtemp()))
        eng.load_models()
        llm = eng.llm
    raw = Recorder(llm) if llm is not None else None
    writer = TitleWriter(raw)
    for spec in args.memory:
        sample, path = spec.split("=", 1)
        data = read_export(path)
        by_id = {m.message.id: m for m in data.messages}
        vocabulary = link.Vocabulary()
        total = 0.0
        for seg in sorted(data.segments, key=lambda s: s.index):
            stored = [by_id[i] for i in seg.message_ids]
            messages = [m.message for m in stored]
            vocabulary.read(seg.id, len(messages), lambda ms=messages: (m.text for m in ms))
            if (sample, seg.id) in done:
                continue
            start = time.perf_counter()
            title = writer.title(messages, [frozenset(m.entities) for m in stored], vocabulary.idf)
            total += time.perf_counter() - start
            done[sample, seg.id] = {"sample": sample, "segment": seg.id, **title.model_dump(mode="json"),
                                    "raw": raw.last if raw is not None else None}
            out.write_text("".join(json.dumps(r) + "\n" for r in done.values()))
            print(f"{sample} {seg.id} {title.source:9s} {title.seconds:5.1f}s {title.text}", flush=True)
        print(f"{sample}: {len(data.segments)} segments, {total:.1f} s of titles", flush=True)


if __name__ == "__main__":
    main()
