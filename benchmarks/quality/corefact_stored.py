"""The CoreFacts a memory stores, for labelling by hand, and the share supported once labelled.

Without ``--labels``: reads an export (``python -m memsif export``) and prints one JSON line per
current CoreFact with its cited messages (dated, as the extraction saw them) and ``"supported": null``;
the verification is left out, so a labeller judges the fact against its sources only. Label each line
(``supported`` true/false, ``why_not`` starting with its class: invented detail, date wrong, speaker
swapped, empty, caption taken as act, cut, copied example, wrong language, other).

With ``--labels FILE ...``: prints per file the facts labelled, the share supported with its Wilson
95 % interval, the classes of the unsupported ones, and stored facts per 400 messages when ``--export``
gives the memory they come from.

    PYTHONPATH=. python benchmarks/quality/corefact_stored.py --export conv47.json.gz > to-label.jsonl
    PYTHONPATH=. python benchmarks/quality/corefact_stored.py \
        --labels benchmarks/quality/data/corefact-verified-conv47.jsonl
    PYTHONPATH=. python benchmarks/quality/corefact_stored.py --build conv47.json.gz corefact-verified-conv47.jsonl \
        corefact-verified-conv47-dates-settled.jsonl --build conv26.json.gz corefact-verified-conv26.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from memsif.eval.metrics import wilson
from memsif.timeparse import day_text
from memsif.transfer import read_export


def dump(export: str) -> None:
    data = read_export(export)
    messages = {e.message.id: e.message for e in data.messages}
    for fact in (e.fact for e in data.facts):
        if fact.status != "current":
            continue
        sources = {i: f"[{day_text(messages[i].time)}] {messages[i].speaker}: {messages[i].text}"
                   for i in fact.source_message_ids if i in messages}
        print(json.dumps({"fact_id": fact.id, "type": fact.type, "subject": fact.subject,
                          "statement": fact.statement, "sources": sources, "supported": None, "why_not": ""}))


def report(paths: list[str], export: str | None) -> None:
    all_rows = []
    for path in paths:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        all_rows += rows
        k = sum(bool(r["supported"]) for r in rows)
        low, high = wilson(k, len(rows))
        classes = collections.Counter(r["why_not"].split(":")[0] for r in rows if not r["supported"])
        print(f"{path}: {len(rows)} labelled, {k} supported = {k / len(rows):.0%} "
              f"(95 % interval {low:.0%}–{high:.0%}); unsupported by class: {dict(classes)}")
    if len(paths) > 1:
        k = sum(bool(r["supported"]) for r in all_rows)
        low, high = wilson(k, len(all_rows))
        print(f"all: {len(all_rows)} labelled, {k} supported = {k / len(all_rows):.0%} (95 % interval "
              f"{low:.0%}–{high:.0%})")
    if export:
        data = read_export(export)
        current = sum(1 for e in data.facts if e.fact.status == "current")
        print(f"{export}: {current} current CoreFacts for {len(data.messages)} messages = "
              f"{400 * current / len(data.messages):.0f} per 400 messages")


def builds(specs: list[list[str]]) -> None:
    """Per build (an export and the label files that cover it, later files first to answer): its current
    CoreFacts matched to their labels by statement and sources, the supported share, per 400 messages;
    then all builds together."""
    total_k = total_n = 0
    for export, *paths in specs:
        labels = {}
        for path in paths:
            for line in Path(path).read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    labels[row["statement"], tuple(sorted(row["sources"]))] = row
        data = read_export(export)
        current = [e.fact for e in data.facts if e.fact.status == "current"]
        found = [labels.get((f.statement, tuple(sorted(f.source_message_ids)))) for f in current]
        rows = [r for r in found if r is not None]
        k = sum(bool(r["supported"]) for r in rows)
        low, high = wilson(k, len(rows))
        classes = collections.Counter(r["why_not"].split(":")[0] for r in rows if not r["supported"])
        print(f"{export}: {len(current)} current CoreFacts for {len(data.messages)} messages = "
              f"{400 * len(current) / len(data.messages):.0f} per 400; {len(rows)} labelled, {k} supported = "
              f"{k / max(len(rows), 1):.0%} (95 % interval {low:.0%}–{high:.0%}); unsupported by class: "
              f"{dict(classes)}" + (f"; {len(current) - len(rows)} not labelled" if len(rows) < len(current) else ""))
        total_k, total_n = total_k + k, total_n + len(rows)
    low, high = wilson(total_k, total_n)
    print(f"all builds: {total_n} labelled, {total_k} supported = {total_k / max(total_n, 1):.0%} "
          f"(95 % interval {low:.0%}–{high:.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export")
    parser.add_argument("--labels", nargs="+")
    parser.add_argument("--build", nargs="+", action="append", metavar="EXPORT LABELS",
                        help="an export and the label files covering its facts (later files answer first)")
    args = parser.parse_args()
    if args.build:
        builds(args.build)
    elif args.labels:
        report(args.labels, args.export)
    elif args.export:
        dump(args.export)
    else:
        parser.error("give --export, --labels, or both")


if __name__ == "__main__":
    main()
