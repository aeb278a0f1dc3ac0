"""Chat answers while CoreFacts are being extracted, on the packaged default model (llama.cpp).

Builds the Structured Interaction Memory of ``tests/data/garden-chat.txt`` without CoreFacts, asks two
questions alone, then starts its CoreFact extraction in a thread and asks them again 8 s into it.
Runs twice, each in a fresh process: with CoreFact extraction in a llama.cpp context of its own
(``MEMSIF_LLM_FACTS_CONTEXT=1``, the default) and with one shared context (``=0``). Prints per mode the
answer seconds (alone, during), the extraction's seconds, the CoreFacts written, how often the
extraction paused for a more urgent call, and the peak RSS (``ru_maxrss``: weights mapped by two
contexts count twice there, although they share pages). Time it on an idle machine.

With ``--memory EXPORT`` it asks instead over a real memory (e.g. the shipped example), whose answer
contexts are full (~600 tokens): the export is imported without its CoreFacts, so its extraction runs from
the first batch, and ``--questions`` questions are asked alone, then during the extraction (which is
stopped after them). Each answer gives its first-word seconds, the seconds it waited for the model
(``locks.waited``), and the CPU seconds the extraction's thread spent meanwhile outside the model
(embedding, entities, llguidance's masks), which the answer's own prefill then shares two cores with.

    PYTHONPATH=. python benchmarks/speed/chat_during_extraction.py [--out FILE.json]
    PYTHONPATH=. python benchmarks/speed/chat_during_extraction.py --memory assets/example-memory-conv-26.json.gz \
        [--questions 4] [--out FILE.json]
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


#: Questions asked over ``--memory`` (conv-26, the shipped example's conversation; LoCoMo's wording).
MEMORY_QUESTIONS = ("When did Caroline go to the LGBTQ support group?", "What is Caroline's identity?",
                    "When did Melanie paint a sunrise?", "What fields would Caroline be likely to pursue in her "
                    "education?", "When did Melanie run a charity race?", "What do Melanie's kids like?")


def _thread_cpu(native_id: int | None) -> float:
    """CPU seconds (user + system) of this process's thread ``native_id`` so far; 0.0 when not found."""
    import psutil

    return next((t.user_time + t.system_time for t in psutil.Process().threads() if t.id == native_id), 0.0)


def memory_mode(path: Path, n: int) -> dict:
    """The figures over a real memory: ``n`` questions alone, then during its CoreFact extraction."""
    from memsif.config import MemSIFConfig
    from memsif.engine import MemSIF
    from memsif.locks import cancel
    from memsif.transfer import read_export

    export = read_export(path)
    segments = [s.model_copy(update={"facts_extracted_upto": 0}) for s in export.segments]
    bare = export.model_copy(update={"facts": [], "fact_ops": [], "segments": segments, "clusters": [],
                                     "active_facts": []})
    questions = MEMORY_QUESTIONS[:n]
    with tempfile.TemporaryDirectory(prefix="memsif-chat-extraction-") as data:
        eng = MemSIF(MemSIFConfig.from_env(data_dir=data))
        eng.load_models()
        ns = eng.import_namespace(bare, "m")

        def ask(question: str, worker: dict | None = None) -> dict:
            cpu = _thread_cpu(worker.get("tid")) if worker else 0.0
            a = eng.ask(question, namespace=ns, accumulate=False)
            row = {"question": question, "first_word_s": round(a.first_token_seconds or a.seconds, 1),
                   "seconds": round(a.seconds, 1), "context_tokens": a.context_tokens,
                   "stages_s": {k: round(v, 1) for k, v in a.seconds_by_stage.items()}}
            if worker:
                row["extraction_cpu_s_meanwhile"] = round(_thread_cpu(worker.get("tid")) - cpu, 1)
            return row

        alone = [ask(q) for q in questions]
        worker: dict = {}

        def extract() -> None:
            worker["tid"] = threading.get_native_id()
            try:
                eng.build_core_facts(ns)
            except Exception as exc:  # the stop below ends it with JobCancelled
                worker["ended"] = type(exc).__name__

        thread = threading.Thread(target=extract)
        thread.start()
        time.sleep(20)  # into its first batch
        pauses = getattr(eng.llm, "pauses", 0)
        during = [ask(q, worker) for q in questions]
        cancel(ns, "measured")
        thread.join()
        return {"memory": str(path), "facts_context": eng.config.llm_facts_context, "alone": alone,
                "during_extraction": during, "extraction_ended": worker.get("ended", "finished"),
                "pauses": getattr(eng.llm, "pauses", 0) - pauses}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="also write the figures to this JSON file")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: measure this process's mode
    ap.add_argument("--memory", type=Path, help="a namespace export to ask over (its CoreFacts are extracted anew)")
    ap.add_argument("--questions", type=int, default=4, help="questions asked alone and during (--memory)")
    args = ap.parse_args()
    if args.memory:
        text = json.dumps(memory_mode(args.memory, args.questions), indent=2)
        print(text)
        if args.out:
            args.out.write_text(text + "\n")
        return
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
