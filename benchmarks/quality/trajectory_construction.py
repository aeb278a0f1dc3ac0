"""Benchmark: Event Trajectory constructions replayed on built memories, scored on the labelled threads (§3.2).

Each construction walks a memory's Topical Segments in order, as the engine does, and puts each one
into an earlier trajectory or a new one:

- ``phi-rule``: the Top-K earlier segments by φ and the fitted logistic link model over φ, rare-word
  overlap, entity Jaccard and days apart (``link.RULE``, the construction before titles and the gate).
- ``gate+cosine``: the trajectories that pass the gate (``interaction.joinable``: a person and a rare or
  title word in common, within a window), the best by the cosine of the segment's and the
  trajectory's pooled embeddings, joined when it reaches a threshold.
- ``gate+title-cosine``: the same, by the best cosine between a title line of the segment and one of
  the trajectory with the same person.
- ``gate+choice``: one comparative model decision over the gated trajectories (their titles lettered
  A, B, … and "none of these"; ``prompts.trajectory_choice``), each option's probability averaged
  over two orders; joined when the best beats "none" by a margin.

Thresholds and margins are fitted leave one conversation out: the value that shares the most thread
pairs on the two other conversations while the link precision of each stays ≥ 0.75 (also at 0.60).
Scores per held-out conversation: the share of the multi-session thread pairs (two segments of one
labelled thread in different sessions) that share a trajectory, the same for gold-evidence pairs (two
segments holding gold evidence of one question, in different sessions), link precision of the joins
against the thread labels, the largest trajectory's share of segments, model calls and seconds per
segment. The gate's effect: the share of true candidates (a trajectory holding a segment of the new
segment's thread) among the Top-K by φ and among the gated.

    PYTHONPATH=. python benchmarks/quality/trajectory_construction.py --memory conv-26=E26 --memory conv-30=E30 \
        --memory conv-47=E47 --titles TITLES.jsonl [--choices CACHE.jsonl] [--llm] [--out RESULT.md]

``--titles``: ``benchmarks/quality/segment_titles.py`` output. ``--choices``: the model's option probabilities,
kept and reused (a replay asks only what no earlier replay asked); ``--llm`` loads the configured model
to ask what the cache lacks (without it, a construction that needs an uncached choice is skipped).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trajectory_decision import DEV, THREADS, Seg, gold_pairs, load_segments

from memsif.config import MemSIFConfig
from memsif.eval.judges import roc_auc
from memsif.interaction import joinable, link
from memsif.interaction.titles import title_subjects
from memsif.matching import SemanticMapping, phi
from memsif.prompts import trajectory_choice

PRECISIONS = (0.75, 0.60)
#: How a segment's threads are read from its messages' labels: "majority" (the thread of ≥ 30 % of its
#: messages, at most one) or a minimum of messages (a segment holds every thread that labels at least
#: that many of its messages, or its only message): set by ``--threads-held``.
MULTI: int = 0


def held_threads(labels: Sequence[str | None], at_least: int) -> frozenset[str]:
    """The threads that label at least ``at_least`` of a segment's messages (any, for a one-message segment)."""
    counts = Counter(t for t in labels if t is not None)
    need = 1 if len(labels) == 1 else at_least
    return frozenset(t for t, n in counts.items() if n >= need)


@dataclass
class Conversation:
    name: str
    segs: list[Seg]
    titles: dict[str, list[str]]
    gold: set[tuple[str, str]]
    sides: list[joinable.Side] = field(default_factory=list)
    idf_at: list[Callable[[str], float]] = field(default_factory=list)  # the vocabulary as S_i closes
    title_vectors: dict[str, np.ndarray] = field(default_factory=dict)

    threads: dict[str, frozenset[str]] = field(default_factory=dict)  # segment id → the threads it holds

    #: segment id → (speaker, unit vector) of each of its messages that says something
    message_vectors: dict[str, list[tuple[str, np.ndarray]]] = field(default_factory=dict)
    _match: dict[tuple[int, int], float] = field(default_factory=dict)

    def message_match(self, i: int, k: int) -> float:
        """The best cosine between a message of segment i and one of segment k by the same speaker."""
        if (i, k) not in self._match:
            a, b = self.message_vectors[self.segs[i].id], self.message_vectors[self.segs[k].id]
            self._match[i, k] = max((float(va @ vb) for sa, va in a for sb, vb in b if sa == sb), default=0.0)
        return self._match[i, k]

    def thread_pairs(self) -> set[tuple[str, str]]:
        return {(a.id, b.id) for k, b in enumerate(self.segs) for a in self.segs[:k]
                if self.threads[a.id] & self.threads[b.id] and not (a.sessions & b.sessions)}


def prepare(name: str, export: str, titles: dict, embed: Callable[[list[str]], np.ndarray]) -> Conversation:
    threads = {}
    for line in (THREADS / f"threads-{name.replace('-', '')}.jsonl").read_text().splitlines():
        t = json.loads(line)
        threads |= {m: t["thread"] for m in t["messages"]}
    segs = load_segments(export, threads)
    conv = Conversation(name, segs, {s.id: titles.get((name, s.id), []) for s in segs}, gold_pairs(name, segs, DEV))
    for s in segs:
        conv.threads[s.id] = held_threads([threads.get(m.id) for m in s.messages], MULTI) if MULTI else \
            frozenset({s.thread} - {None})
    from memsif.transfer import read_export
    stored = {m.message.id: m for m in read_export(export).messages}
    for s in segs:
        vs = []
        for m in s.messages:
            if len(link.content_stems([m.text])) >= 3:  # a message that says something
                v = np.asarray(stored[m.id].vector, dtype=np.float32)
                vs.append((m.speaker, v / np.linalg.norm(v)))
        conv.message_vectors[s.id] = vs
    vocabulary = link.Vocabulary()
    for s in segs:
        vocabulary.read(s.id, len(s.messages), lambda s=s: (m.text for m in s.messages))
        frozen = dict(vocabulary._df), len(vocabulary._stems)  # the IDF as this segment closes
        conv.idf_at.append(lambda stem, f=frozen: math.log((f[1] + 1) / (f[0].get(stem, 0) + 0.5)))
        conv.sides.append(joinable.title_side(conv.titles[s.id], (m.text for m in s.messages), s.messages[0].time,
                                          s.messages[-1].time))
    lines = sorted({line for v in conv.titles.values() for line in v})
    matters = [line.split(":", 1)[-1] for line in lines]
    conv.title_vectors = dict(zip(lines, embed(matters), strict=True)) if lines else {}
    return conv


@dataclass
class Outcome:
    label: dict[str, str]
    joins: list[tuple[str, str]]
    candidates: list[dict]  # one per offered candidate: score, true, labelled
    calls: int = 0
    seconds: float = 0.0


class Chooser:
    """Option probabilities of the comparative choice, cached by prompt text."""

    def __init__(self, path: str | None, llm=None) -> None:
        self.path = Path(path) if path else None
        self.cache: dict[str, list[float]] = {}
        self.seconds: dict[str, float] = {}
        if self.path and self.path.exists():
            for line in self.path.read_text().splitlines():
                r = json.loads(line)
                self.cache[r["prompt"]] = r["probs"]
                self.seconds[r["prompt"]] = r["seconds"]
        self.llm = llm

    def probs(self, prompt) -> tuple[list[float], float]:
        if prompt.text not in self.cache:
            if self.llm is None:
                raise KeyError("uncached choice")
            start = time.perf_counter()
            p = self.llm.choice_probabilities(prompt, trajectory_choice.labels(_n_options(prompt.text)))
            self.cache[prompt.text], self.seconds[prompt.text] = p, time.perf_counter() - start
            if self.path:
                with self.path.open("a") as f:
                    row = {"prompt": prompt.text, "probs": p, "seconds": self.seconds[prompt.text]}
                    f.write(json.dumps(row) + "\n")
        return self.cache[prompt.text], self.seconds[prompt.text]


def _n_options(text: str) -> int:
    block = text.split("Earlier threads:\n", 1)[1].split("\n\n", 1)[0]
    return len(block.splitlines())


def option_text(conv: Conversation, members: Sequence[int], persons: Sequence[str], last: int = 3) -> str:
    """A trajectory as an option: the title lines of its last ``last`` segments, those about the shared
    persons first, newest first, without repeats."""
    lines: list[str] = []
    for k in reversed(members[-last:]):
        for line in conv.titles[conv.segs[k].id]:
            if line not in lines:
                lines.append(line)
    lines.sort(key=lambda line: line.split(":", 1)[0].strip().lower() not in persons)
    return "; ".join(lines[:4])


def choose(conv: Conversation, i: int, options: list[tuple[int, list[int], joinable.GateResult]],
           chooser: Chooser) -> tuple[list[float], float, int, float]:
    """Averaged option probabilities (one per trajectory, then none), calls, seconds."""
    texts = [option_text(conv, members, g.persons) for _, members, g in options]
    new = conv.titles[conv.segs[i].id]
    forward = trajectory_choice.build(new, [*texts, trajectory_choice.NONE])
    backward = trajectory_choice.build(new, [trajectory_choice.NONE, *reversed(texts)])
    p1, s1 = chooser.probs(forward)
    p2, s2 = chooser.probs(backward)
    p2 = [*reversed(p2[1:]), p2[0]]
    avg = [(a + b) / 2 for a, b in zip(p1, p2, strict=True)]
    return avg, avg[-1], 2, s1 + s2


def replay(conv: Conversation, how: str, threshold: float, chooser: Chooser | None, rule: joinable.GateRule,
           top_k: int = 3, max_share: float = 0.15, cfg: MemSIFConfig | None = None,
           mapping: SemanticMapping | None = None) -> Outcome:
    trajectories: list[list[int]] = []
    trajectory_sides: list[joinable.Side] = []  # each trajectory's side, updated as segments join
    of: dict[int, int] = {}
    out = Outcome({}, [], [])
    n = len(conv.segs)
    for i, seg in enumerate(conv.segs):
        idf = conv.idf_at[i]
        best: tuple[float, int] | None = None
        if how == "phi-rule":
            scored = []
            for j in range(i):
                p = phi(seg.vector, seg.entities, conv.segs[j].vector, conv.segs[j].entities,
                        cfg.alpha_trajectory, mapping)
                scored.append((p, j))
            scored.sort(key=lambda x: (-x[0].phi, x[1]))
            for p, j in scored[:top_k]:
                gap = (seg.messages[0].time - conv.segs[j].messages[-1].time).total_seconds() / 86400 \
                    if seg.messages[0].time and conv.segs[j].messages[-1].time else 0.0
                m = link.LinkMeasures(phi=p.phi, jaccard=p.jaccard, gap_days=abs(gap),
                                      rare=link.rare_overlap(conv.sides[i].stems, conv.sides[j].stems, idf))
                prob = link.RULE.probability(m)
                out.candidates.append(_cand(conv, i, [j], prob))
                if best is None or prob > best[0]:
                    best = (prob, of[j])
        else:
            gated = []
            for t, members in enumerate(trajectories):
                g = joinable.check(conv.sides[i], trajectory_sides[t], idf, i + 1, rule)
                if g.passed:
                    gated.append((t, members, g))
            gated.sort(key=lambda x: -sum(idf(s) for s in x[2].terms))
            gated = gated[:top_k]
            if gated and how == "gate+choice":
                probs, p_none, calls, secs = choose(conv, i, gated, chooser)
                out.calls += calls
                out.seconds += secs
                for (t, members, _), p in zip(gated, probs, strict=False):
                    out.candidates.append(_cand(conv, i, members, p - p_none))
                    if best is None or p - p_none > best[0]:
                        best = (p - p_none, t)
            else:
                for t, members, _ in gated:
                    if how == "gate+cosine":
                        vec = np.mean([conv.segs[k].vector for k in members], axis=0)
                        score = float(seg.vector @ vec / (np.linalg.norm(seg.vector) * np.linalg.norm(vec)))
                    elif how == "gate+message":
                        score = max(conv.message_match(i, k) for k in members)
                    elif how == "gate+cosine-max":
                        score = max(float(seg.vector @ conv.segs[k].vector / (np.linalg.norm(seg.vector) *
                                                                              np.linalg.norm(conv.segs[k].vector)))
                                    for k in members)
                    else:  # gate+title-cosine
                        score = max((float(conv.title_vectors[a] @ conv.title_vectors[b])
                                     for a in conv.titles[seg.id] for k in members for b in conv.titles[conv.segs[k].id]
                                     if title_subjects([a]) & title_subjects([b])), default=0.0)
                    out.candidates.append(_cand(conv, i, members, score))
                    if best is None or score > best[0]:
                        best = (score, t)
        if best is not None and best[0] >= threshold and len(trajectories[best[1]]) < max_share * n:
            t = best[1]
            out.joins.append((seg.id, conv.segs[trajectories[t][-1]].id))
            trajectories[t].append(i)
            trajectory_sides[t] = joinable.Side.union([trajectory_sides[t], conv.sides[i]])
        else:
            t = len(trajectories)
            trajectories.append([i])
            trajectory_sides.append(conv.sides[i])
        of[i] = t
        out.label[seg.id] = f"E{t + 1}"
    return out


def as_built(conv: Conversation) -> Outcome:
    """The trajectories the memory stored (each segment joined the trajectory of its earlier members)."""
    label = {s.id: s.built or s.id for s in conv.segs}
    seen: dict[str, str] = {}
    joins = []
    for s in conv.segs:
        if label[s.id] in seen:
            joins.append((s.id, seen[label[s.id]]))
        seen[label[s.id]] = s.id
    return Outcome(label, joins, [])


def choice_curve(conv: Conversation, export: str) -> list[str]:
    """The engine's own comparative choices (a memory built with ``MEMSIF_TRAJECTORY_LINK=choice``):
    each decision's best option against its labels — AUC of the margin over "none of these", and the
    precision and number of decisions at each margin (the first join of each segment, as asked)."""
    from memsif.records import TrajectoryDecision
    from memsif.transfer import read_export
    data = read_export(export)
    members = {t.id: t.segment_ids for t in data.trajectories}
    rows = []
    for d in data.decisions:
        if not isinstance(d, TrajectoryDecision) or d.none_prob is None or not d.candidates:
            continue
        best = max(d.candidates, key=lambda c: c.choice_prob or 0.0)
        before = [i for i in members.get(best.trajectory_id, []) if int(i[1:]) < int(d.segment_id[1:])]
        theirs = frozenset().union(*(conv.threads.get(i, frozenset()) for i in before))
        own = conv.threads.get(d.segment_id, frozenset())
        if own or theirs:
            rows.append((best.link_prob or 0.0, bool(own & theirs), len(d.candidates)))
    y = [int(r[1]) for r in rows]
    auc = roc_auc([r[0] for r in rows], y) if len(set(y)) == 2 else float("nan")
    out = [f"{conv.name}: {len(rows)} labelled choices over {sum(r[2] for r in rows)} gated options; best option "
           f"right {sum(y)} times ({sum(y) / max(1, len(y)):.0%}); AUC of the margin {auc:.2f}"]
    for m in (-0.2, -0.1, 0.0, 0.05, 0.1, 0.15, 0.2, 0.3):
        kept = [r for r in rows if r[0] >= m]
        out.append(f"  margin ≥ {m:+.2f}: {len(kept)} joins, precision "
                   f"{sum(r[1] for r in kept) / len(kept):.0%}" if kept else f"  margin ≥ {m:+.2f}: no join")
    return out


def _cand(conv: Conversation, i: int, members: Sequence[int], score: float) -> dict:
    own = conv.threads[conv.segs[i].id]
    threads = frozenset().union(*(conv.threads[conv.segs[k].id] for k in members))
    return {"score": score, "true": bool(own & threads), "labelled": bool(own) or bool(threads)}


def measure(conv: Conversation, out: Outcome) -> dict:
    pairs = conv.thread_pairs()
    shared = sum(1 for a, b in pairs if out.label[a] == out.label[b])
    gold = sum(1 for a, b in conv.gold if out.label[a] == out.label[b])
    # a join is right when the segment and the trajectory's segment it was compared with share a thread
    # label, or (for a trajectory) the segment's thread is among its members' threads
    members = defaultdict(set)
    for s in conv.segs:
        members[out.label[s.id]].add(s.id)
    position = {s.id: k for k, s in enumerate(conv.segs)}
    labelled = right = 0
    for later, _ in out.joins:
        before = [x for x in members[out.label[later]] if position[x] < position[later]]
        threads = frozenset().union(*(conv.threads[x] for x in before))
        if not conv.threads[later] and not threads:
            continue
        labelled += 1
        right += bool(conv.threads[later] & threads)
    sizes = Counter(out.label.values())
    return {"pairs": len(pairs), "shared": shared, "coverage": shared / len(pairs) if pairs else 0.0,
            "gold": len(conv.gold), "gold_shared": gold, "gold_coverage": gold / len(conv.gold) if conv.gold else 0.0,
            "joins": len(out.joins), "labelled": labelled, "right": right,
            "precision": right / labelled if labelled else float("nan"),
            "largest": max(sizes.values()) / len(conv.segs), "multi": sum(1 for v in sizes.values() if v > 1),
            "calls_per_segment": out.calls / len(conv.segs), "seconds_per_segment": out.seconds / len(conv.segs)}


def fit(convs: Sequence[Conversation], how: str, grid: Sequence[float], precision: float, run) -> float | None:
    """The threshold sharing the most thread pairs on ``convs`` with each one's link precision ≥ ``precision``."""
    best, best_t = -1.0, None
    for t in grid:
        ms = [measure(c, run(c, t)) for c in convs]
        if all(m["labelled"] == 0 or m["precision"] >= precision for m in ms):
            share = float(np.mean([m["coverage"] for m in ms]))
            if share > best:
                best, best_t = share, t
    return best_t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", action="append", required=True, help="SAMPLE=EXPORT_FILE")
    parser.add_argument("--titles", required=True)
    parser.add_argument("--choices", help="JSONL cache of the choice's option probabilities")
    parser.add_argument("--llm", action="store_true", help="ask the configured model what the cache lacks")
    parser.add_argument("--rare-share", type=float, default=0.1)
    parser.add_argument("--window", type=float, default=None, help="the gate's window in days (default none)")
    parser.add_argument("--constructions", default="phi-rule,gate+cosine,gate+title-cosine,gate+choice")
    parser.add_argument("--threads-held", type=int, default=0, help="a segment holds each thread labelling at least "
                        "this many of its messages (0: only the thread of ≥ 30 %% of them, as trajectory_decision.py)")
    parser.add_argument("--curve", action="append", default=[], help="a construction whose precision–coverage "
                        "curve to print for each conversation (no fitting: every threshold of its grid)")
    parser.add_argument("--choices-built", action="append", default=[],
                        help="SAMPLE=EXPORT of a memory built with MEMSIF_TRAJECTORY_LINK=choice: its decisions' curve")
    parser.add_argument("--out")
    args = parser.parse_args()
    global MULTI
    MULTI = args.threads_held
    cfg = MemSIFConfig.from_env(data_dir=tempfile.mkdtemp())
    mapping = SemanticMapping.for_embedder("all-MiniLM-L6-v2", cfg.sem_mapping)
    from memsif.embed import SentenceTransformerEmbedder
    embedder = SentenceTransformerEmbedder()
    titles = {}
    for line in Path(args.titles).read_text().splitlines():
        r = json.loads(line)
        titles[r["sample"], r["segment"]] = r["lines"]
    convs = [prepare(*spec.split("=", 1), titles, embedder.embed_documents) for spec in args.memory]
    llm = None
    if args.llm:
        from memsif.engine import MemSIF
        eng = MemSIF(cfg)
        eng.load_models()
        llm = eng.llm
    chooser = Chooser(args.choices, llm)
    rule = joinable.GateRule(rare_share=args.rare_share, max_gap_days=args.window)
    grids = {"phi-rule": np.arange(0.05, 0.96, 0.025), "gate+cosine": np.arange(0.3, 0.96, 0.02),
             "gate+cosine-max": np.arange(0.3, 0.96, 0.02), "gate+message": np.arange(0.3, 0.96, 0.02),
             "gate+title-cosine": np.arange(0.3, 0.96, 0.02), "gate+choice": np.arange(0.1, 0.51, 0.1)}
    held_by = (f"every thread labelling ≥ {MULTI} of its messages" if MULTI
               else "the thread of ≥ 30 % of its messages")
    lines = [f"Threads of a segment: {held_by}.",
             f"Gate: rare = held by ≤ {args.rare_share:.0%} of the segments so far; window "
             f"{'none' if args.window is None else f'{args.window:g} days'}.", "",
             "| construction | held out | AUC (labelled candidates) | true share of candidates | threshold (75 %) | "
             "thread pairs shared | gold pairs shared | joins (labelled right) | link precision | largest | "
             "multi | coverage at 60 % | calls / segment | s / segment |", "|" + "---|" * 14]
    for how in args.constructions.split(","):
        if how == "as-built":  # the memory's own trajectories, as its settings made them
            for held in convs:
                m = measure(held, as_built(held))
                lines.append(f"| as built | {held.name} | – | – | – | {m['shared']}/{m['pairs']} "
                             f"({m['coverage']:.0%}) | "
                             f"{m['gold_shared']}/{m['gold']} ({m['gold_coverage']:.0%}) | {m['joins']} "
                             f"({m['right']}/{m['labelled']}) | {m['precision']:.0%} | {m['largest']:.0%} | "
                             f"{m['multi']} | – | – | – |")
                print(lines[-1], flush=True)
            continue

        def run(c, t, how=how):
            return replay(c, how, float(t), chooser, rule, cfg=cfg, mapping=mapping)
        for held in convs:
            train = [c for c in convs if c is not held]
            try:
                t75 = fit(train, how, grids[how], 0.75, run)
                t60 = fit(train, how, grids[how], 0.60, run)
                out = run(held, t75 if t75 is not None else 99.0)
                m = measure(held, out)
                m60 = measure(held, run(held, t60 if t60 is not None else 99.0))
            except KeyError:
                lines.append(f"| {how} | {held.name} | (choices not cached: run with --llm) |" + " |" * 11)
                continue
            labelled = [c for c in out.candidates if c["labelled"]]
            auc = roc_auc([c["score"] for c in labelled], [int(c["true"]) for c in labelled]) \
                if len({c["true"] for c in labelled}) == 2 else float("nan")
            share = sum(c["true"] for c in labelled) / len(labelled) if labelled else float("nan")
            lines.append(
                f"| {how} | {held.name} | {auc:.2f} | {share:.0%} ({len(labelled)}) | "
                f"{'—' if t75 is None else f'{t75:.2f}'} | {m['shared']}/{m['pairs']} ({m['coverage']:.0%}) | "
                f"{m['gold_shared']}/{m['gold']} ({m['gold_coverage']:.0%}) | "
                f"{m['joins']} ({m['right']}/{m['labelled']}) | "
                f"{m['precision']:.0%} | {m['largest']:.0%} | {m['multi']} | {m60['coverage']:.0%} "
                f"({m60['precision']:.0%}) | {m['calls_per_segment']:.2f} | {m['seconds_per_segment']:.2f} |")
            print(lines[-1], flush=True)
    for how in args.curve:  # each conversation's precision–coverage curve, threshold by threshold
        lines += ["", f"Precision–coverage curve of {how} (threshold: thread pairs shared, link precision, joins):", ""]
        for conv in convs:
            points = []
            for t in grids[how]:
                m = measure(conv, replay(conv, how, float(t), chooser, rule, cfg=cfg, mapping=mapping))
                if m["joins"]:
                    points.append(f"{t:.2f}: {m['coverage']:.0%} at {m['precision']:.0%} ({m['joins']})")
            lines.append(f"- {conv.name}: " + "; ".join(points))
        print("\n".join(lines[-len(convs) - 3:]), flush=True)
    by_name = {c.name: c for c in convs}
    for spec in args.choices_built:
        sample, path = spec.split("=", 1)
        lines += ["", *choice_curve(by_name[sample], path)]
        print("\n".join(lines[-9:]), flush=True)
    report = "\n".join(lines)
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n")


if __name__ == "__main__":
    main()
