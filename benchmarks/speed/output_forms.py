"""Tokens the model writes per CoreFact candidate in the extraction's JSON reply against a compact line form
(``subject | about | type | statement | sources``), over every candidate a memory's operation log holds:
what a compact output form would save of extraction writing, which costs one decode step per token, forced
or not. Counted with the packaged 1.5B's tokenizer; no generation runs.

    PYTHONPATH=. python benchmarks/speed/output_forms.py [--memory assets/example-memory-conv-26.json.gz]
"""

from __future__ import annotations

import argparse
import json

from llama_cpp import Llama

from memsif.config import MemSIFConfig
from memsif.inspector.common import EXAMPLE_MEMORY
from memsif.llm.packaged import packaged_gguf
from memsif.records import CoreFact, FactOp
from memsif.transfer import read_export


def forms(fact: CoreFact, sources: list[int]) -> tuple[str, str]:
    """The candidate as one item of the JSON reply (with the separator before the next) and as one line."""
    item = json.dumps({"subject": fact.subject, "about": fact.attribute, "type": fact.type,
                       "statement": fact.statement, "sources": sources}) + ", "
    line = f"{fact.subject} | {fact.attribute} | {fact.type} | {fact.statement} | {','.join(map(str, sources))}\n"
    return item, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", default=str(EXAMPLE_MEMORY), help="a memory export (.json.gz)")
    args = parser.parse_args()
    config = MemSIFConfig.from_env()
    folder, name = packaged_gguf(config.model.llm_model, config.store.resolved_cache_dir)
    vocab = Llama(model_path=str(folder / name), vocab_only=True, verbose=False)
    count = lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=False))  # noqa: E731
    memory = read_export(args.memory)
    position = {m.message.id: k for k, m in enumerate(memory.messages)}
    written = [op.candidate or op.after[0] for op in memory.fact_ops
               if op.op in (FactOp.ADD, FactOp.REJECT, FactOp.MERGE, FactOp.UPDATE, FactOp.SUPERSEDE)
               and (op.candidate or op.after)]
    as_json = as_lines = 0
    for fact in written:  # sources numbered within a batch of 8, as the prompt numbers them
        item, line = forms(fact, [1 + position[s] % 8 for s in fact.source_message_ids if s in position][:3] or [1])
        as_json, as_lines = as_json + count(item), as_lines + count(line)
    n = max(1, len(written))
    print(f"{len(written)} candidates: {as_json / n:.1f} tokens each as JSON, {as_lines / n:.1f} as a line "
          f"({as_lines / max(1, as_json):.2f} of JSON)")


if __name__ == "__main__":
    main()
