"""CoreFact operation choice (§3.3): Add, Update, Merge or Supersede, scored as one-letter options."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memsif.prompts import Prompt
from memsif.records import CoreFact, FactOp

NAME = "core_operation"
VERSION = "core_operation/1"
SYSTEM = "You maintain a memory of facts. Answer with one letter."
LETTERS = "ABCDEFG"


def _date(fact_time: datetime | None) -> str:
    return f"{fact_time.day} {fact_time:%B %Y}" if fact_time else "unknown date"


def build(new: CoreFact, known: Sequence[CoreFact], no_merge: Sequence[int] = ()
          ) -> tuple[Prompt, list[tuple[str, FactOp, int | None]]]:
    """Prompt and its options: (letter, operation, index into ``known`` or None for Add). Known facts
    whose index is in ``no_merge`` (a value differs from the new fact) get no Merge option."""
    options: list[tuple[str, FactOp, int | None]] = [("A", FactOp.ADD, None)]
    lines = ["A) it is new information: add it"]
    for k, _fact in enumerate(known, start=1):
        for op, wording in ((FactOp.UPDATE, f"it adds detail to fact {k}: update fact {k}"),
                            (FactOp.MERGE, f"it says the same as fact {k}: merge them"),
                            (FactOp.SUPERSEDE, f"it contradicts fact {k}, which is now outdated: replace fact {k}")):
            if op == FactOp.MERGE and k - 1 in no_merge:
                continue
            letter = LETTERS[len(options)]
            options.append((letter, op, k - 1))
            lines.append(f"{letter}) {wording}")
    facts = "\n".join(f"{k}. [{f.type}] {f.subject}: {f.statement} ({_date(f.event_time)})"
                      for k, f in enumerate(known, start=1))
    text = (f"Known facts:\n{facts}\n\nNew fact ({_date(new.event_time)}): [{new.type}] {new.subject}: "
            f"{new.statement}\n\nWhat should be done with the new fact?\n" + "\n".join(lines))
    return Prompt(NAME, VERSION, text, system=SYSTEM, input_ids=tuple(f.id for f in known)), options
