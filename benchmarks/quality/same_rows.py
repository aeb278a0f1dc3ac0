"""Whether two evaluation runs gave the same rows: every question of one run against the same question (system,
sample, question id) of the other, every field compared but the timings. A change that should not move any
figure (a refactor) is checked this way on the same memory.

    PYTHONPATH=. python benchmarks/quality/same_rows.py BEFORE/questions.jsonl AFTER/questions.jsonl

Prints the rows compared, the rows only one run has, and each field that differs with how many rows differ in
it; exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

#: fields that measure time, not what was retrieved or answered
TIMINGS = ("seconds", "sys_first_token_s")


def rows(path: Path) -> dict[tuple[str, str, str], dict]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            out[(row["system"], row["sample_id"], str(row["qid"]))] = row
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    before, after = rows(args.before), rows(args.after)
    shared = sorted(set(before) & set(after))
    differing: Counter[str] = Counter()
    for key in shared:
        for name in (set(before[key]) | set(after[key])) - set(TIMINGS):
            differing[name] += before[key].get(name) != after[key].get(name)
    changed = {name: n for name, n in differing.items() if n}
    print(f"{len(shared)} rows compared; only in before: {len(set(before) - set(after))}, only in after: "
          f"{len(set(after) - set(before))}")
    print("fields that differ: " + (", ".join(f"{k} ({n} rows)" for k, n in sorted(changed.items())) or "none"))
    return int(bool(changed) or set(before) != set(after))


if __name__ == "__main__":
    sys.exit(main())
