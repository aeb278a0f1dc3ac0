"""Where CoreFact extraction spends its seconds: the shipped example's Structured Interaction Memory
(conv-26, 419 messages) with its CoreFacts taken out, extracted again with the default settings in a
fresh process, every llama.cpp call timed by prompt kind, its prompt reading (tokens not in the
key/value cache) apart from its generation.

    PYTHONPATH=. python benchmarks/speed/extraction_profile.py --out FILE.json

Run it on an idle machine and keep ``lscpu`` beside the result.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from benchmarks.speed.profile_build import BY_KIND, install
from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.inspector.common import EXAMPLE_MEMORY
from memsif.transfer import read_export


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    install()  # every llama.cpp call timed by its prompt kind, as profile_build.py times a whole build
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
              "by_kind": {k: {n: round(v, 1) for n, v in c.items()} for k, c in BY_KIND.items()}}
    print(json.dumps(result, indent=1))
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
