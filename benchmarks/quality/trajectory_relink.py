"""Benchmark and fit: Event Trajectories decided over the whole memory (§3.2; ``interaction.clustering``).

For each built memory (an export of a dev conversation), every pair of Topical Segments gets the
model-free measures of ``interaction.pairs``; a pair is labelled "same thread" when the two segments
hold one labelled thread (``benchmarks/quality/data/threads-*.jsonl``: a segment holds a thread when at
least two of its messages, or its only message, carry it). Each construction — a score per pair,
then average linkage cut at a threshold with the size guard — is scored leave one conversation out:
the logistic regression is fitted on the cross-session pairs of the two other conversations, the
threshold chosen there (the one that shares the most thread pairs while link precision stays ≥ the
target on each of them that some threshold brings to the target), then applied to the held-out one. Per held-out conversation:

- AUC of the score over all its cross-session pairs;
- thread pairs shared: the share of cross-session same-thread pairs that end up in one trajectory;
- link precision: a segment joined to a trajectory is right when it shares a thread with an earlier member;
- pair purity: the share of cross-session pairs inside trajectories that share a thread;
- the largest trajectory's share of segments, trajectories of two or more segments, seconds.

    PYTHONPATH=. python benchmarks/quality/trajectory_relink.py --memory conv-26=E26 --memory conv-30=E30 \
        --memory conv-47=E47 [--mpnet FOLDER] [--out RESULT.md] [--write-scorer] [--scale]

``--write-scorer`` refits the shipped scorers on all three conversations (``memsif/interaction/trajectory_scorer.json``).
``--mpnet FOLDER`` adds the constructions with all-mpnet-base-v2's pooled cosine (the model's folder).
``--scale`` times the measures and the clustering on synthetic memories of 250 to 4,000 segments.
``--stored`` scores the trajectories the memories hold (after ``python -m memsif relink``: the shipped scorer).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trajectory_construction import held_threads  # a segment holds the threads of ≥ 2 of its messages
from trajectory_decision import THREADS

from memsif.eval.judges import roc_auc
from memsif.interaction.clustering import SCORER_FILE, PairScorer, average_linkage, max_size
from memsif.interaction.pairs import FEATURES, PairMeasures, SegmentView, measure_pairs, segment_view
from memsif.transfer import NamespaceExport, read_export

ROOT = Path(__file__).resolve().parents[2]
TARGETS = (0.75, 0.60)
GRID = np.round(np.arange(0.05, 0.96, 0.01), 2)
MAX_SHARE = 0.25
MINILM = "all-MiniLM-L6-v2"
#: Segments saying fewer distinct content words stay alone in the default construction.
SHORT = 5

BASE = ("cosine", "idf_overlap", "rare_shared", "entity_jaccard", "log_words_min", "log_words_max",
        "log_gap_days", "speaker_cosine")
#: name → (measures, how same-session pairs are scored, segments saying fewer content words stay alone)
CONSTRUCTIONS: dict[str, tuple[tuple[str, ...], str, int]] = {
    "pooled cosine alone": (("cosine",), "score", 0),
    "fitted (the default): the measures; segments of under 5 content words alone; pairs within a session at 0":
        (BASE, "zero", SHORT),
    "fitted, pairs within a session scored too": (BASE, "score", SHORT),
    "fitted, short segments linked too": (BASE, "zero", 0),
    "fitted, + title cosine": ((*BASE, "title_cosine"), "zero", SHORT),
    "fitted, + CoreFact cosine": ((*BASE, "fact_cosine"), "zero", SHORT),
    "fitted, − sizes": (tuple(f for f in BASE if not f.startswith("log_words")), "zero", SHORT),
    "fitted, centred cosine": (tuple("centered_cosine" if f == "cosine" else f for f in BASE), "zero", SHORT),
    "fitted, + same-person words and content size": ((*BASE, "speaker_idf_overlap", "log_content_min"), "zero",
                                                     SHORT),
    "fitted without the embedding (the fallback)": (tuple(f for f in BASE if f != "cosine"), "zero", SHORT),
}
DEFAULT = "fitted (the default): the measures; segments of under 5 content words alone; pairs within a session at 0"
FALLBACK = "fitted without the embedding (the fallback)"


@dataclass
class Memory:
    name: str
    export: NamespaceExport
    measures: PairMeasures
    threads: list[frozenset[str]]
    built: list[str | None]
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.threads)

    def cross_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        i, j = np.triu_indices(self.n, 1)
        keep = self.measures.cross[i, j]
        return i[keep], j[keep]

    def labels(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return np.array([bool(self.threads[a] & self.threads[b]) for a, b in zip(i, j, strict=True)])


def thread_labels(sample: str) -> dict[str, str]:
    path = THREADS / f"threads-{sample.replace('-', '')}.jsonl"
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        for m in row["messages"]:
            out[m] = row["thread"]
    return out


def load_memory(name: str, path: str, embed_titles) -> Memory:
    data = read_export(path)
    by_id = {m.message.id: m for m in data.messages}
    facts: dict[str, list[np.ndarray]] = {}
    for f in data.facts:
        if f.fact.valid_until is None:
            for sid in f.fact.segment_ids[:1]:
                facts.setdefault(sid, []).append(np.asarray(f.vector))
    segments = sorted(data.segments, key=lambda s: s.index)
    titles = embed_titles([s.title.text if s.title and s.title.lines else "" for s in segments])
    views = []
    for s, tv in zip(segments, titles, strict=True):
        msgs = [by_id[i] for i in s.message_ids]
        fv = np.stack(facts[s.id]) if s.id in facts else None
        views.append(segment_view(s.id, [m.message for m in msgs], [np.asarray(m.vector) for m in msgs],
                                  s.entities, tv if s.title and s.title.lines else None, fv))
    labels = thread_labels(name)
    threads = [held_threads([labels.get(i) for i in s.message_ids], 2) for s in segments]
    return Memory(name, data, measure_pairs(views), threads, [s.trajectory_id for s in segments])


# ---------------------------------------------------------------------------------------------- scoring
def score_matrix(mem: Memory, features: Sequence[str], predict, same_session: str) -> np.ndarray:
    i, j = np.triu_indices(mem.n, 1)
    x = np.stack([mem.extra.get(f, mem.measures.matrices.get(f))[i, j].astype(np.float64) for f in features], axis=1)
    p = predict(x)
    if same_session == "zero":
        p = np.where(mem.measures.cross[i, j], p, 0.0)
    out = np.zeros((mem.n, mem.n))
    out[i, j] = p
    out[j, i] = p
    return out


def evaluate(mem: Memory, groups: list[list[int]]) -> dict[str, float]:
    cluster = np.empty(mem.n, dtype=int)
    for k, g in enumerate(groups):
        cluster[g] = k
    i, j = mem.cross_pairs()
    same = mem.labels(i, j)
    together = cluster[i] == cluster[j]
    joins = right = 0
    for g in groups:
        seen: set[str] = set()
        for k, s in enumerate(g):
            if k:
                joins += 1
                right += bool(mem.threads[s] & seen)
            seen |= mem.threads[s]
    inside = int(together.sum())
    return {"coverage": float((same & together).sum() / max(same.sum(), 1)), "pairs": int(same.sum()),
            "precision": right / joins if joins else float("nan"), "joins": joins,
            "purity": float((same & together).sum() / inside) if inside else float("nan"),
            "largest": max(len(g) for g in groups) / mem.n, "multi": sum(1 for g in groups if len(g) > 1)}


def groups_at(mem: Memory, scores: np.ndarray, threshold: float, min_content: int) -> list[list[int]]:
    alone = np.array([len(v.stems) < min_content for v in mem.measures.views]) if min_content else None
    return average_linkage(scores, threshold, max_size(mem.n, MAX_SHARE), alone)


def choose_threshold(mems: Sequence[Memory], scores: Sequence[np.ndarray], target: float,
                     min_content: int) -> float | None:
    """The threshold that shares the most thread pairs over ``mems`` (pooled) while the link precision
    stays ≥ ``target`` on each conversation that some threshold brings to ``target`` (one whose labelled
    threads no threshold separates that well cannot pick one); None when none can."""
    results = {t: [evaluate(m, groups_at(m, s, float(t), min_content)) for m, s in zip(mems, scores, strict=True)]
               for t in GRID}
    reachable = [k for k in range(len(mems))
                 if any(rs[k]["joins"] and rs[k]["precision"] >= target for rs in results.values())]
    best, best_cov = None, -1.0
    for t, rs in results.items():
        if reachable and all(rs[k]["joins"] and rs[k]["precision"] >= target for k in reachable):
            cov = sum(rs[k]["coverage"] * rs[k]["pairs"] for k in reachable) / max(
                sum(rs[k]["pairs"] for k in reachable), 1)
            if cov > best_cov:
                best, best_cov = float(t), cov
    return best


def fit(mems: Sequence[Memory], features: Sequence[str]):
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler
    xs, ys = [], []
    for m in mems:
        i, j = m.cross_pairs()
        xs.append(np.stack([m.extra.get(f, m.measures.matrices.get(f))[i, j].astype(np.float64) for f in features], 1))
        ys.append(m.labels(i, j))
    x, y = np.concatenate(xs), np.concatenate(ys)
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    model = LogisticRegression(max_iter=2000, C=1.0).fit((x - scaler.mean_) / scale, y)
    return scaler.mean_, scale, model.coef_[0], float(model.intercept_[0]), int(y.sum()), len(y)


def predictor(features: Sequence[str], mems: Sequence[Memory]):
    if tuple(features) in (("cosine",), ("cosine_mpnet",)):
        return lambda x: (x[:, 0] + 1) / 2, None
    mean, scale, w, b, _, _ = fit(mems, features)
    return lambda x: 1 / (1 + np.exp(-(b + ((x - mean) / scale) @ w))), (mean, scale, w, b)


def run_construction(mems: list[Memory], name: str, features, same_session: str, min_content: int) -> list[dict]:
    rows = []
    for held in mems:
        train = [m for m in mems if m is not held]
        start = time.perf_counter()
        predict, _ = predictor(features, train)
        train_scores = [score_matrix(m, features, predict, same_session) for m in train]
        held_scores = score_matrix(held, features, predict, same_session)
        i, j = held.cross_pairs()
        row = {"construction": name, "held": held.name,
               "auc": roc_auc(held_scores[i, j].tolist(), held.labels(i, j).tolist())}
        for target in TARGETS:
            t = choose_threshold(train, train_scores, target, min_content)
            res = evaluate(held, groups_at(held, held_scores, t, min_content)) if t is not None else None
            row[target] = (t, res)
        row["seconds"] = time.perf_counter() - start
        rows.append(row)
    return rows


def as_built(mems: list[Memory]) -> list[dict]:
    rows = []
    for m in mems:
        order = {}
        for k, t in enumerate(m.built):
            order.setdefault(t, []).append(k)
        res = evaluate(m, list(order.values()))
        rows.append({"construction": "as built (the online rule, Top-K by φ)", "held": m.name, "auc": float("nan"),
                     0.75: (None, res), 0.60: (None, res), "seconds": 0.0})
    return rows


def pct(v: float) -> str:
    return "–" if v != v else f"{100 * v:.0f}"


def table(rows: list[dict], names: Sequence[str]) -> str:
    out = ["| construction | AUC, all cross-session pairs | threshold | thread pairs shared at ≥ 75 % (link precision, "
           "pair purity) | largest trajectory | trajectories of ≥ 2 | shared at ≥ 60 % (precision) | s per fold |",
           "|---|---|---|---|---|---|---|---|"]
    for c in dict.fromkeys(r["construction"] for r in rows):
        rs = [next(r for r in rows if r["construction"] == c and r["held"] == n) for n in names]
        auc = " / ".join("–" if r["auc"] != r["auc"] else f"{r['auc']:.2f}" for r in rs)
        thr = " / ".join("–" if r[0.75][0] is None else f"{r[0.75][0]:.2f}" for r in rs)
        c75 = " / ".join("no threshold" if r[0.75][1] is None else
                         f"{pct(r[0.75][1]['coverage'])} % ({pct(r[0.75][1]['precision'])}, "
                         f"{pct(r[0.75][1]['purity'])})" for r in rs)
        big = " / ".join("–" if r[0.75][1] is None else f"{pct(r[0.75][1]['largest'])} %" for r in rs)
        multi = " / ".join("–" if r[0.75][1] is None else str(r[0.75][1]["multi"]) for r in rs)
        c60 = " / ".join("no threshold" if r[0.60][1] is None else
                         f"{pct(r[0.60][1]['coverage'])} % ({pct(r[0.60][1]['precision'])})" for r in rs)
        secs = " / ".join(f"{r['seconds']:.1f}" for r in rs)
        out.append(f"| {c} | {auc} | {thr} | {c75} | {big} | {multi} | {c60} | {secs} |")
    return "\n".join(out)


def add_mpnet(mems: list[Memory], embedder, constructions: dict) -> None:
    """Each memory's pooled cosine under ``embedder`` (the messages embedded again) as ``cosine_mpnet``."""
    for m in mems:
        by_id = {x.message.id: x.message.text for x in m.export.messages}
        segments = sorted(m.export.segments, key=lambda s: s.index)
        ids = [i for s in segments for i in s.message_ids]
        vectors = dict(zip(ids, embedder.embed_documents([by_id[i] for i in ids]), strict=True))
        pooled = np.stack([np.mean([vectors[i] for i in s.message_ids], axis=0) for s in segments])
        unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        m.extra["cosine_mpnet"] = unit @ unit.T
    constructions["pooled mpnet cosine alone"] = (("cosine_mpnet",), "score", 0)
    constructions["fitted, mpnet instead of MiniLM"] = (
        tuple("cosine_mpnet" if f == "cosine" else f for f in BASE), *CONSTRUCTIONS[DEFAULT][1:])


# ---------------------------------------------------------------------------------------------- refit
def write_scorer(mems: list[Memory], path: Path, command: str) -> dict:
    scorers = []
    for name, embedder in ((DEFAULT, MINILM), (FALLBACK, None)):
        features, same_session, min_content = CONSTRUCTIONS[name]
        mean, scale, w, b, pos, total = fit(mems, features)

        def predict(x, mean=mean, scale=scale, w=w, b=b):
            return 1 / (1 + np.exp(-(b + ((x - mean) / scale) @ w)))
        scores = [score_matrix(m, features, predict, same_session) for m in mems]
        t = choose_threshold(mems, scores, TARGETS[0], min_content)
        if t is None:
            raise SystemExit(f"no threshold keeps link precision ≥ {TARGETS[0]} on every conversation "
                             f"for {features}; the scorer file was not written")
        names = ", ".join(m.name for m in mems)
        scorers.append(PairScorer(
            version=f"trajectory_pairs/{'minilm' if embedder else 'lexical'}-{date.today().isoformat()}",
            embedder=embedder, features=tuple(features), mean=tuple(round(float(v), 6) for v in mean),
            scale=tuple(round(float(v), 6) for v in scale), weights=tuple(round(float(v), 6) for v in w),
            intercept=round(b, 6), threshold=t, max_share=MAX_SHARE, min_content=min_content,
            within_session=same_session == "score",
            fitted=f"logistic regression on the {total:,} cross-session segment pairs of {names} ({pos} in one "
                   f"labelled thread); threshold: the most thread pairs shared at link precision ≥ "
                   f"{TARGETS[0]:.0%} on each conversation that some threshold brings there").to_json())
    doc = {"about": "Event Trajectory pair scorers (memsif/interaction/clustering.py), refit by: PYTHONPATH=. "
                    "python benchmarks/quality/trajectory_relink.py --memory conv-26=E26 --memory conv-30=E30 "
                    "--memory conv-47=E47 --write-scorer (the memories: docs/results.md, 'Event Trajectories'); "
                    "this file: " + command, "scorers": scorers}
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return doc


# ---------------------------------------------------------------------------------------------- scale
def scale_table(sizes: Sequence[int]) -> str:
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(5000)]
    out = ["| segments | pairs | measures s | clustering s | peak matrix MB |", "|---|---|---|---|---|"]
    from memsif.interaction.clustering import shipped_scorers
    scorer = shipped_scorers()[0]
    for n in sizes:
        views = []
        for k in range(n):
            stems = Counter(rng.choice(words, size=20).tolist())
            views.append(SegmentView(id=f"S{k + 1}", vector=rng.normal(size=384), stems=stems,
                                     entities=frozenset(rng.choice(words[:800], size=3).tolist()), words=60,
                                     sessions=frozenset({f"s{k // 8}"}), start=None, end=None,
                                     speakers={"A": 30, "B": 30}))
        t0 = time.perf_counter()
        m = measure_pairs(views)
        i, j = np.triu_indices(n, 1)
        p = scorer.probabilities(m.features(scorer.features, i, j))
        s = np.zeros((n, n))
        s[i, j] = p
        s[j, i] = p
        t1 = time.perf_counter()
        average_linkage(s, scorer.threshold, max_size(n, scorer.max_share))
        t2 = time.perf_counter()
        mb = n * n * 8 * (len(FEATURES) + 3) / 1e6
        out.append(f"| {n:,} | {n * (n - 1) // 2:,} | {t1 - t0:.2f} | {t2 - t1:.2f} | {mb:,.0f} |")
        print(out[-1], flush=True)
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memory", action="append", default=[], help="SAMPLE=EXPORT (a built memory of a dev conversation)")
    ap.add_argument("--out", help="write the tables here (markdown)")
    ap.add_argument("--write-scorer", action="store_true", help=f"refit {SCORER_FILE.name} on all the memories")
    ap.add_argument("--mpnet", metavar="FOLDER", help="add constructions with all-mpnet-base-v2's pooled cosine "
                                                     "(the model's folder)")
    ap.add_argument("--scale", action="store_true", help="time the measures and clustering on synthetic memories")
    ap.add_argument("--only", help="run only these constructions (names separated by ';')")
    ap.add_argument("--stored", action="store_true",
                    help="score only the trajectories the memories hold (e.g. after `python -m memsif relink`)")
    args = ap.parse_args(argv)
    parts = [f"Command: `{' '.join(['PYTHONPATH=. python benchmarks/quality/trajectory_relink.py', *sys.argv[1:]])}`",
             f"Date: {date.today().isoformat()}"]
    if args.memory:
        from memsif.embed import SentenceTransformerEmbedder, packaged_minilm_path
        minilm = SentenceTransformerEmbedder(str(packaged_minilm_path()))
        mems = [load_memory(*spec.split("=", 1), minilm.embed_documents) for spec in args.memory]
        names = [m.name for m in mems]
        for m in mems:
            i, j = m.cross_pairs()
            y = m.labels(i, j)
            parts.append(f"- {m.name}: {m.n} segments, {len(i):,} cross-session pairs, {int(y.sum())} in one thread; "
                         f"{sum(1 for t in m.threads if t)} segments hold a labelled thread")
        constructions = dict(CONSTRUCTIONS)
        if args.mpnet:
            add_mpnet(mems, SentenceTransformerEmbedder(args.mpnet), constructions)
        if args.only:
            constructions = {k: v for k, v in constructions.items() if k in args.only.split(";")}
        rows = as_built(mems)
        if args.stored:
            constructions = {}
            for r in rows:
                r["construction"] = "as stored"
        for name, (features, same_session, min_content) in constructions.items():
            print(f"… {name}", flush=True)
            rows += run_construction(mems, name, features, same_session, min_content)
        parts += ["", "Per held-out conversation (" + " / ".join(names) + "); the threshold fitted on the two others.",
                  "", table(rows, names)]
        if args.write_scorer and not args.stored:
            doc = write_scorer(mems, SCORER_FILE, parts[0].removeprefix("Command: ").strip("`"))
            parts += ["", f"Wrote {SCORER_FILE.relative_to(ROOT)}: " + "; ".join(
                f"{s['version']} threshold {s['threshold']}" for s in doc["scorers"])]
    if args.scale:
        parts += ["", "Scale (synthetic memories, the shipped scorer):", "", scale_table((250, 500, 1000, 2000, 4000))]
    text = "\n".join(parts) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
