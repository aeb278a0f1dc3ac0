"""Benchmark: which Event Trajectory decision can the packaged 1.5B make? (§3.2)

For every Topical Segment S_i of a built memory and each earlier segment S_j among its Top-K by φ
(Eq. 1 between the two segments' pooled embeddings and key entities), it records the measures a
decision could use — φ, cosine, rare-word overlap (IDF-weighted over the conversation's segments),
entity Jaccard, the days between them, and, with ``--judge``, the model's P(yes) under the judge
prompt (``trajectory_judge``: each side's most specific sentences) — then labels each pair from the
labelled threads (``benchmarks/quality/data/threads-*.jsonl``: same thread, or not) and from the gold
evidence of the conversation's questions.

It then replays sequential constructions (each segment joins the trajectory of its best-scoring
earlier candidate when the score passes a threshold, else opens one) and reports, per conversation:
(a) the share of multi-session gold-evidence segment pairs that share a trajectory, (b) link
precision of the joins against the thread labels, (c) the largest trajectory's share of segments.
Scores combining the measures are logistic regressions fitted on the two other conversations
(leave one conversation out), thresholds too.

    PYTHONPATH=. python benchmarks/quality/trajectory_decision.py --memory conv-26=E26 --memory conv-30=E30 \
        --memory conv-47=E47 [--judge] [--pairs OUT.jsonl] [--from-pairs OUT.jsonl] [--out RESULT.md]
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memsif.config import MemSIFConfig
from memsif.eval.data import load_locomo
from memsif.interaction import link
from memsif.interaction.trajectories import JUDGE_SENTENCES
from memsif.matching import SemanticMapping, cosine, jaccard, phi
from memsif.prompts import trajectory_judge
from memsif.records import Message
from memsif.transfer import read_export

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
THREADS = ROOT / "benchmarks" / "quality" / "data"
FEATURES = ("phi", "cosine", "rare", "jaccard", "log_gap_days")


@dataclass
class Seg:
    id: str
    index: int
    messages: list[Message]
    vector: np.ndarray
    entities: list[str]
    thread: str | None = None
    sessions: set[str] = field(default_factory=set)
    built: str | None = None  # the trajectory the memory stored it in


def load_segments(path: str, threads: dict[str, str]) -> list[Seg]:
    data = read_export(path)
    by_id = {m.message.id: m for m in data.messages}
    segs = []
    for s in sorted(data.segments, key=lambda s: s.index):
        msgs = [by_id[i] for i in s.message_ids]
        vec = np.mean([np.asarray(m.vector, dtype=np.float64) for m in msgs], axis=0)
        labels = Counter(threads[i] for i in s.message_ids if i in threads)
        thread = None
        if labels:
            top, n = labels.most_common(1)[0]
            thread = top if n >= max(1, 0.3 * len(s.message_ids)) else None
        segs.append(Seg(s.id, s.index, [m.message for m in msgs], vec, s.entities, thread,
                        {m.message.session_id or "" for m in msgs}, s.trajectory_id))
    return segs


def story_prompt(earlier: Seg, later: Seg, idf: Callable[[str], float]):
    """The stored judge prompt (``trajectory_judge``): each side's three most specific sentences."""
    return trajectory_judge.build(link.specific_sentences(earlier.messages, idf, JUDGE_SENTENCES),
                                  link.specific_sentences(later.messages, idf, JUDGE_SENTENCES))


def gold_pairs(sample_id: str, segs: Sequence[Seg], data: Path) -> set[tuple[str, str]]:
    """(earlier, later) segment pairs in different sessions holding gold evidence of one question."""
    (sample,) = load_locomo(data, [sample_id])
    seg_of = {m.id: s for s in segs for m in s.messages}
    pairs = set()
    for q in sample.questions:
        hit = sorted({seg_of[e].index for e in q.evidence_ids if e in seg_of})
        by_index = {s.index: s for s in segs}
        for a in hit:
            for b in hit:
                if a < b and not (by_index[a].sessions & by_index[b].sessions):
                    pairs.add((by_index[a].id, by_index[b].id))
    return pairs


def pair_rows(sample: str, segs: Sequence[Seg], top_k: int, cfg: MemSIFConfig, mapping: SemanticMapping,
              judge: Callable | None) -> list[dict]:
    rows = []
    vocabulary = link.Vocabulary()
    stems: dict[str, Counter] = {}
    for i, later in enumerate(segs):
        stems[later.id] = vocabulary.read(later.id, len(later.messages), lambda s=later: (m.text for m in s.messages))
        idf = vocabulary.idf  # online: what the builder knows when S_i closes
        cands = []
        for earlier in segs[:i]:
            p = phi(later.vector, later.entities, earlier.vector, earlier.entities, cfg.alpha_trajectory, mapping)
            cands.append((p.phi, earlier))
        cands.sort(key=lambda c: -c[0])
        for rank, (ph, earlier) in enumerate(cands[:top_k]):
            t0, t1 = earlier.messages[-1].time, later.messages[0].time
            gap = abs((t1 - t0).total_seconds()) / 86400 if t0 and t1 else 0.0
            row = {"sample": sample, "later": later.id, "earlier": earlier.id, "rank": rank, "phi": ph,
                   "cosine": cosine(later.vector, earlier.vector),
                   "rare": link.rare_overlap(stems[later.id], stems[earlier.id], idf),
                   "jaccard": jaccard(later.entities, earlier.entities), "log_gap_days": math.log1p(gap),
                   "same_session": bool(later.sessions & earlier.sessions),
                   "thread_later": later.thread, "thread_earlier": earlier.thread,
                   "same_thread": later.thread is not None and later.thread == earlier.thread}
            if judge is not None:
                row |= judge(earlier, later, idf)
            rows.append(row)
    return rows


def fit_logistic(x: np.ndarray, y: np.ndarray) -> Callable[[Sequence[float]], float]:
    """P(same thread) from the measures: scikit-learn's L2-regularised logistic regression."""
    from sklearn.linear_model import LogisticRegression
    model = LogisticRegression(max_iter=1000).fit(x, y)
    return lambda values: float(model.predict_proba(np.asarray([values]))[0, 1])


def score_with(predict: Callable[[Sequence[float]], float], names: Sequence[str]) -> Callable[[dict], float]:
    return lambda r: predict([r[n] for n in names])


def construct(segs: Sequence[Seg], rows: Sequence[dict], score: Callable[[dict], float], threshold: float,
              max_share: float = 1.0) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Sequential replay: segment → trajectory label, and the joins (later, earlier it joined by)."""
    by_later = defaultdict(list)
    for r in rows:
        by_later[r["later"]].append(r)
    label: dict[str, str] = {}
    sizes: Counter = Counter()
    joins = []
    for seg in segs:
        best = max(by_later.get(seg.id, []), key=score, default=None)
        if best is not None and score(best) >= threshold and sizes[label[best["earlier"]]] < max_share * len(segs):
            label[seg.id] = label[best["earlier"]]
            joins.append((seg.id, best["earlier"]))
        else:
            label[seg.id] = f"E{len(sizes)}"
        sizes[label[seg.id]] += 1
    return label, joins


def measures(segs: Sequence[Seg], label: dict[str, str], joins: Sequence[tuple[str, str]],
             gold: set[tuple[str, str]]) -> dict:
    thread = {s.id: s.thread for s in segs}
    same = sum(1 for a, b in gold if label[a] == label[b])
    labelled = [(a, b) for a, b in joins if thread[a] is not None or thread[b] is not None]
    correct = sum(1 for a, b in labelled if thread[a] is not None and thread[a] == thread[b])
    sizes = Counter(label.values())
    return {"gold_pairs": len(gold), "gold_shared": same, "gold_share": same / len(gold) if gold else 0.0,
            "joins": len(joins), "joins_labelled": len(labelled), "joins_same_thread": correct,
            "precision": correct / len(labelled) if labelled else float("nan"),
            "largest": max(sizes.values()) / len(segs), "multi": sum(1 for v in sizes.values() if v > 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", action="append", default=[], help="SAMPLE=EXPORT_FILE")
    parser.add_argument("--data", default=str(DEV))
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--judge", action="store_true", help="score the Top-K pairs with the configured model")
    parser.add_argument("--pairs", help="write the pair rows here (JSONL)")
    parser.add_argument("--from-pairs", help="read pair rows written before instead of judging again")
    parser.add_argument("--threads", default=str(THREADS), help="folder of threads-<sample>.jsonl labels")
    parser.add_argument("--out")
    args = parser.parse_args()
    cfg = MemSIFConfig.from_env(data_dir=tempfile.mkdtemp())
    mapping = SemanticMapping.for_embedder("all-MiniLM-L6-v2", cfg.sem_mapping)
    judge = make_judge(cfg) if args.judge and not args.from_pairs else None
    samples, rows = {}, []
    for spec in args.memory:
        sample, path = spec.split("=", 1)
        threads = {}
        for line in (Path(args.threads) / f"threads-{sample.replace('-', '')}.jsonl").read_text().splitlines():
            t = json.loads(line)
            threads |= {m: t["thread"] for m in t["messages"]}
        segs = load_segments(path, threads)
        samples[sample] = (segs, gold_pairs(sample, segs, Path(args.data)))
        if not args.from_pairs:
            rows += pair_rows(sample, segs, args.top_k, cfg, mapping, judge)
            if args.pairs:  # kept as each conversation finishes (judging all three takes long)
                Path(args.pairs).write_text("".join(json.dumps(r) + "\n" for r in rows))
    if args.from_pairs:  # judged before; the thread labels are read again
        rows = [json.loads(line) for line in Path(args.from_pairs).read_text().splitlines()]
        thread = {(name, s.id): s.thread for name, (segs, _) in samples.items() for s in segs}
        rows = [r for r in rows if r["sample"] in samples]
        for r in rows:
            a, b = thread[r["sample"], r["later"]], thread[r["sample"], r["earlier"]]
            r |= {"thread_later": a, "thread_earlier": b, "same_thread": a is not None and a == b}
    if args.pairs:
        Path(args.pairs).write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = evaluate(samples, rows)
    print(report)
    if args.out:
        Path(args.out).write_text(report)


def make_judge(cfg: MemSIFConfig) -> Callable:
    from memsif.engine import MemSIF
    eng = MemSIF(cfg)
    eng.load_models()
    llm = eng.llm

    def judge(earlier: Seg, later: Seg, idf: Callable[[str], float]) -> dict:
        t0 = time.perf_counter()
        [p_story] = llm.yes_probability([story_prompt(earlier, later, idf)])
        return {"p_story": p_story, "judge_s": time.perf_counter() - t0}
    return judge


def evaluate(samples: dict, rows: list[dict]) -> str:
    have_judge = rows and "p_story" in rows[0]
    variants: dict[str, Sequence[str]] = {"phi": ["phi"], "phi+rare+gap": ["phi", "rare", "jaccard", "log_gap_days"]}
    if have_judge:
        if "p_stored" in rows[0]:
            variants["P(yes) stored"] = ["p_stored"]
        variants |= {"P(yes) story": ["p_story"],
                     "story+phi+rare+gap": ["p_story", "phi", "rare", "jaccard", "log_gap_days"]}
    lines = ["| construction | conversation | gold pairs shared | joins | link precision | largest | multi |",
             "|---|---|---|---|---|---|---|"]
    for held, (segs, gold) in samples.items():
        label = {s.id: s.built or s.id for s in segs}
        ids = [s.id for s in segs]
        joins = [(s.id, next(t.id for t in segs[:k] if label[t.id] == label[s.id]))
                 for k, s in enumerate(segs) if any(label[t] == label[s.id] for t in ids[:k])]
        m = measures(segs, label, joins, gold)
        lines.append(f"| as built | {held} | {m['gold_shared']}/{m['gold_pairs']} ({m['gold_share']:.0%}) | "
                     f"{m['joins']} | {m['joins_same_thread']}/{m['joins_labelled']} ({m['precision']:.0%}) | "
                     f"{m['largest']:.0%} | {m['multi']} |")
    for name, feats in variants.items():
        for held in samples:
            train = [r for r in rows if r["sample"] != held and not r["same_session"]]
            x = np.array([[r[f] for f in feats] for r in train])
            y = np.array([1.0 if r["same_thread"] else 0.0 for r in train])
            w = fit_logistic(x, y)
            score = score_with(w, feats)
            threshold = pick_threshold(samples, rows, held, score)
            segs, gold = samples[held]
            label, joins = construct(segs, [r for r in rows if r["sample"] == held], score, threshold, 0.15)
            m = measures(segs, label, joins, gold)
            lines.append(f"| {name} (t={threshold:.2f}) | {held} | {m['gold_shared']}/{m['gold_pairs']} "
                         f"({m['gold_share']:.0%}) | {m['joins']} | {m['joins_same_thread']}/{m['joins_labelled']}"
                         f" ({m['precision']:.0%}) | {m['largest']:.0%} | {m['multi']} |")
    return "\n".join(lines)


def pick_threshold(samples: dict, rows: list[dict], held: str, score: Callable[[dict], float]) -> float:
    """The threshold that shares the most gold pairs on the two other conversations while their link
    precision stays ≥ 0.75 (the lowest-precision one counts)."""
    best, best_t = -1.0, 0.99
    for t in np.arange(0.05, 0.96, 0.025):
        shares, precs = [], []
        for name, (segs, gold) in samples.items():
            if name == held:
                continue
            label, joins = construct(segs, [r for r in rows if r["sample"] == name], score, float(t), 0.15)
            m = measures(segs, label, joins, gold)
            shares.append(m["gold_share"])
            precs.append(m["precision"] if m["joins_labelled"] else 1.0)
        if min(precs) >= 0.75 and float(np.mean(shares)) > best:
            best, best_t = float(np.mean(shares)), float(t)
    return best_t


if __name__ == "__main__":
    main()
