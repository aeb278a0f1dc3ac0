"""Build the inspector's prebuilt example memory: the bundled LoCoMo conversation conv-26 with the
default models (Structured Interaction Memory, CoreFacts, and the candidate clusters and ActiveFacts
the conversation's own questions leave), exported with how it was built (model, date, seconds) for
the page's first visit (``memsif.inspector.build.EXAMPLE_MEMORY``).

    PYTHONPATH=. python benchmarks/build_example.py [--out assets/example-memory-conv-26.json.gz]
    PYTHONPATH=. python benchmarks/build_example.py --resume assets/example-memory-conv-26.json.gz
    PYTHONPATH=. python benchmarks/build_example.py --relink assets/example-memory-conv-26.json.gz
    PYTHONPATH=. python benchmarks/build_example.py --upgrade assets/example-memory-conv-26.json.gz

Questions are the conversation's own (not adversarial), in file order: at least ``--questions``, then
more until an ActiveFact is promoted (up to ``--max-questions``). ``--resume`` imports an export made
by this script and only asks further questions (its build figures are kept). ``--relink`` imports one
whose model and settings match but for the Event Trajectory pair scorer, decides its trajectories again
(``MemSIF.relink``, what a build would now do after its structure step) and writes it back, saying so
in its provenance; nothing else in it changes. ``--upgrade`` runs ``python -m memsif upgrade``'s steps on one
(no model call) and says what they changed in its provenance. About 17 minutes on 2
CPU cores from scratch; prints the figures it stores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import UTC, datetime

import memsif
from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.inspector.build import EXAMPLE, EXAMPLE_MEMORY, EXAMPLE_QUESTIONS
from memsif.io import as_memories, load_transcripts
from memsif.transfer import content_fingerprint, read_export, same_content, write_export


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(EXAMPLE_MEMORY))
    parser.add_argument("--data-dir", help="memory folder for the build (default: a temporary one)")
    parser.add_argument("--questions", type=int, default=EXAMPLE_QUESTIONS,
                        help="ask at least this many of the conversation's own questions (they leave clusters)")
    parser.add_argument("--max-questions", type=int, default=24,
                        help="ask more, in file order, until an ActiveFact is promoted or this many were asked")
    parser.add_argument("--resume", help="an export made by this script: import it and only ask further questions")
    parser.add_argument("--relink", help="an export made by this script: decide its Event Trajectories again")
    parser.add_argument("--upgrade", help="an export made by this script: run `memsif upgrade`'s steps on it")
    args = parser.parse_args()
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="memsif-example-")
    eng = MemSIF(MemSIFConfig.from_env(data_dir=data_dir))
    load_s = eng.load_models()
    (transcript,) = as_memories(load_transcripts(EXAMPLE))
    ns = transcript.sample_id
    if args.relink:
        relink(eng, ns, args.relink, args.out)
        return
    if args.upgrade:
        upgrade(eng, ns, args.upgrade, args.out)
        return
    if args.resume:
        previous = read_export(args.resume)
        eng.import_namespace(previous, ns)
        provenance = previous.provenance
        if not same_content(provenance, eng.config):
            raise SystemExit(f"{args.resume} was built with {provenance.get('model')} and other settings than this "
                             f"engine's ({eng.llm.name}); build it again without --resume")
    else:
        t0 = time.perf_counter()
        report = eng.ingest_transcript(transcript, ns, core_facts=False)
        structure_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        facts = eng.build_core_facts(ns)
        provenance = {
            "model": eng.llm.name, "llm_model": eng.config.llm_model, "embedder": eng.embedder.name,
            "content": content_fingerprint(eng.config),
            "memsif": memsif.__version__, "built": datetime.now(UTC).strftime("%Y-%m-%d"),
            "machine": f"{os.cpu_count()} CPU cores ({platform.machine()})", "model_load_seconds": round(load_s, 1),
            "structure_seconds": round(structure_s), "core_facts_seconds": round(time.perf_counter() - t0),
            "titles_seconds": round(facts.seconds_by_stage.get("titles", 0.0)),
            "messages": report.total_messages, "segments": report.segments, "trajectories": report.trajectories,
            "core_facts": len(eng.facts(ns)), "fact_errors": facts.fact_errors, "questions": [],
            "command": "PYTHONPATH=. python benchmarks/build_example.py"}
    asked = provenance["questions"]
    own = [q["question"] for q in transcript.extra.get("qa", []) if q.get("category") != 5 and q.get("question")]
    for question in own[len(asked):args.max_questions]:
        if len(asked) >= args.questions and eng.active_facts(ns):
            break
        t0 = time.perf_counter()
        answer = eng.ask(question, namespace=ns)
        asked.append({"question": question, "answer": answer.answer, "seconds": round(time.perf_counter() - t0, 1)})
        print(f"asked {question!r}: {answer.answer!r} ({asked[-1]['seconds']} s)")
    provenance["active_facts"] = len(eng.active_facts(ns))
    provenance["clusters"] = len(eng.clusters(ns))
    path = write_export(eng.export_namespace(ns, decimals=4, provenance=provenance), args.out)
    eng.close()
    print(json.dumps(provenance, indent=1))
    print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB)")


def relink(eng: MemSIF, ns: str, source: str, out: str) -> None:
    """The example export ``source`` with its Event Trajectories decided again, written to ``out``."""
    previous = read_export(source)
    provenance = dict(previous.provenance)
    now = content_fingerprint(eng.config)
    if {k: v for k, v in provenance.get("content", {}).items() if k != "trajectory_scorer"} != \
            {k: v for k, v in now.items() if k != "trajectory_scorer"}:
        raise SystemExit(f"{source} was built with other models or settings than this engine's; build it again")
    eng.import_namespace(previous, ns)
    result = eng.relink(ns)
    provenance["content"] = now
    provenance["trajectories"] = len(result.groups)
    provenance["relinked"] = {"on": datetime.now(UTC).strftime("%Y-%m-%d"), "scorer": result.scorer.version,
                              "seconds": round(result.seconds, 2), "linked": result.linked,
                              "command": "PYTHONPATH=. python benchmarks/build_example.py --relink " + source}
    path = write_export(eng.export_namespace(ns, decimals=4, provenance=provenance), out)
    eng.close()
    print(result.summary())
    print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB)")


def upgrade(eng: MemSIF, ns: str, source: str, out: str) -> None:
    """The example export ``source`` brought up to date by ``python -m memsif upgrade``'s steps (what a
    person's older store gets; no model call), written to ``out`` with what changed in its provenance."""
    previous = read_export(source)
    if not same_content(previous.provenance, eng.config):
        raise SystemExit(f"{source} was built with other models or settings than this engine's; build it again")
    eng.import_namespace(previous, ns)
    changed = {step: n for step, n in eng.upgrade(ns).items() if n}
    provenance = {**previous.provenance, "upgraded": {
        "on": datetime.now(UTC).strftime("%Y-%m-%d"), "steps": changed,
        "command": "PYTHONPATH=. python benchmarks/build_example.py --upgrade " + source}}
    path = write_export(eng.export_namespace(ns, decimals=4, provenance=provenance), out)
    eng.close()
    print(json.dumps(changed))
    print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
