"""Chat answers while CoreFacts are being extracted, on the packaged default model (llama.cpp).

Builds the Structured Interaction Memory of ``tests/data/garden-chat.txt`` without CoreFacts, asks two
questions alone, then starts its CoreFact extraction in a thread and asks them again 8 s into it.
Runs twice, each in a fresh process: with CoreFact extraction in a llama.cpp context of its own
(``MEMSIF_LLM_FACTS_CONTEXT=1``, the default) and with one shared context (``=0``). Prints per mode the
answer seconds (alone, during), the extraction's seconds, the CoreFacts written, how often the
extraction paused for a more urgent call, and the peak RSS (``ru_maxrss``: weights mapped by two
contexts count twice there, although they share pages). Time it on an idle machine.

    PYTHONPATH=. python benchmarks/speed/chat_during_extraction.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPT = ROOT / "tests" / "data" / "garden-chat.txt"
QUESTIONS = ("Which tomato variety did Ana plant?", "When is Ben's flight to Lisbon?")


def one_mode() -> dict:
    """The figures of this process's mode (MEMSIF_LLM_FACTS_CONTEXT as set by the caller)."""
    from memsif.config import MemSIFConfig
    from memsif.engine import MemSIF
    from memsif.io.transcripts import load_transcripts

    with tempfile.TemporaryDirectory(prefix="memsif-chat-extraction-") as data:
        eng = MemSIF(MemSIFConfig.from_env(data_dir=data))
        eng.load_models()
        eng.ingest_transcript(load_transcripts(TRANSCRIPT)[0], "g", core_facts=False)

        def ask(question: str) -> dict:
            a = eng.ask(question, namespace="g")
            return {"question": question, "seconds": round(a.seconds, 1), "answer": a.answer}

        alone = [ask(q) for q in QUESTIONS]
        extraction: dict = {}

        def extract() -> None:
            start = time.perf_counter()
            eng.build_core_facts("g")
            extraction["seconds"] = round(time.perf_counter() - start, 1)

        worker = threading.Thread(target=extract)
        worker.start()
        time.sleep(8)
        during = [ask(q) for q in QUESTIONS]
        worker.join()
        return {"facts_context": eng.config.llm_facts_context, "alone": alone, "during_extraction": during,
                "extraction_s": extraction["seconds"], "core_facts": sorted(f.statement for f in eng.facts("g")),
                "pauses": getattr(eng.llm, "pauses", None),
                "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="also write the figures to this JSON file")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: measure this process's mode
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_mode()))
        return
    figures = []
    for flag in ("1", "0"):
        env = {**os.environ, "MEMSIF_LLM_FACTS_CONTEXT": flag, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, __file__, "--one"], env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"the run with MEMSIF_LLM_FACTS_CONTEXT={flag} failed:\n{done.stderr[-2000:]}")
        figures.append(json.loads(done.stdout.strip().splitlines()[-1]))
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
