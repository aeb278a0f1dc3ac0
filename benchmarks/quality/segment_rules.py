"""Topical Segments of two builds of the same conversations side by side (e.g. before and after a change
of the segment rules): per conversation, the segments, those spanning two sessions, the single-message
ones, the judge's calls, the messages the session rule and the short-reply reading decided, and how many
messages where neither applies got the same outcome (continue or split) in both builds, in all and where
both builds asked the judge. Reads each folder's namespaces (an evaluation's ``--tag`` memories), no model.

    python benchmarks/quality/segment_rules.py --before DIR --after DIR [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.records import BoundaryRule, SegmentDecision, TopicalSegment


def builds(data_dir: str) -> dict[str, tuple[list[TopicalSegment], list[SegmentDecision], int]]:
    """Each namespace of ``data_dir`` that is not an ablation's copy: (segments, segment decisions, trajectories)."""
    engine = MemSIF(MemSIFConfig(data_dir=data_dir))
    try:
        out = {}
        for ns in engine.namespaces():
            if ns.rsplit("-", 1)[-1] in ("none", "ts", "et", "cf", "af"):  # the ablations' copies of a build
                continue
            decisions = [d for d in engine.decisions(ns, "segment") if isinstance(d, SegmentDecision)]
            out[ns.split("-", 1)[1] if "-" in ns else ns] = (engine.segments(ns), decisions,
                                                             len(engine.trajectories(ns)))
        return out
    finally:
        engine.close()


def counts(segments: list[TopicalSegment], decisions: list[SegmentDecision], trajectories: int) -> dict[str, int]:
    return {"segments": len(segments), "spanning two sessions": sum(len(s.session_ids) > 1 for s in segments),
            "single-message": sum(len(s.message_ids) == 1 for s in segments),
            "judge calls": sum(d.rule == BoundaryRule.JUDGE for d in decisions),
            "session rule": sum(d.rule == BoundaryRule.SESSION for d in decisions),
            "short replies read with their predecessor": sum(d.read_with is not None for d in decisions),
            "trajectories": trajectories}


def unchanged(before: list[SegmentDecision], after: list[SegmentDecision]) -> dict[str, list[int]]:
    """[same, compared] outcomes on the messages where no new rule applied in ``after``, in all and where
    both builds asked the judge."""
    earlier = {d.message_id: d for d in before}
    out = {"all": [0, 0], "judge in both": [0, 0]}
    for d in after:
        old = earlier.get(d.message_id)
        if old is None or BoundaryRule.FIRST in (d.rule, old.rule) or d.rule == BoundaryRule.SESSION or d.read_with:
            continue
        keys = ["all"] + (["judge in both"] if d.rule == old.rule == BoundaryRule.JUDGE else [])
        for key in keys:
            out[key][0] += d.continued == old.continued
            out[key][1] += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--out")
    args = parser.parse_args()
    before, after = builds(args.before), builds(args.after)
    rows = []
    for name in sorted(set(before) & set(after)):
        rows.append({"memory": name, "before": counts(*before[name]), "after": counts(*after[name]),
                     "same outcome where no new rule applied": unchanged(before[name][1], after[name][1])})
        print(json.dumps(rows[-1]))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
