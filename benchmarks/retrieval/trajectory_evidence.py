"""Benchmark: do Event Trajectories group the evidence that NCE questions need?

The trajectory path of the query pipeline (§3.2, §3.4) can only add evidence that sits in the same
Event Trajectory as what flat search already found. This measures that precondition directly on
built memories: for every LoCoMo NCE question (TED ≥ 0.3), the pairs of its gold evidence turns that
lie in different Topical Segments, and the share of those pairs whose segments share a trajectory —
beside the share expected by chance for trajectories of the same sizes (Σ n_k² / N² per
conversation) and the lift over it. Rows: the stored trajectories (the judge's), and judge-free
constructions over the same segments (φ of Eq. 1 against mean-pooled trajectory profiles at several
thresholds; single link over member messages; a shared rare key entity). Figures, not pass/fail.

    python -m memsif eval locomo --data ../shared/data/locomo/locomo_dev.json --retrieval-only --data-dir D
    python benchmarks/retrieval/trajectory_evidence.py --data-dir D [--tag T] [--data ...] [--samples conv-26,...]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo
from memsif.eval.metrics import ted
from memsif.eval.runner import NCE_TED
from memsif.matching import SemanticMapping, phi
from memsif.records import TopicalSegment

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"

Assignment = dict[str, str]  # segment id -> trajectory label
Construction = Callable[[list[TopicalSegment], dict[str, np.ndarray]], Assignment]


def by_phi(tau: float, alpha: float, mapping: SemanticMapping) -> Construction:
    """Each segment joins the trajectory of highest φ(S_i, E_j) (Eq. 1, mean-pooled profiles) when
    φ ≥ ``tau``; else it opens one. The judge is left out (every candidate counts as compatible)."""
    def build(segments: list[TopicalSegment], vectors: dict[str, np.ndarray]) -> Assignment:
        profiles: list[tuple[np.ndarray, int, set[str]]] = []
        out: Assignment = {}
        for seg in segments:
            v = np.mean([vectors[m] for m in seg.message_ids], axis=0)
            scores = [phi(v, seg.entities, total / n, ents, alpha, mapping).phi for total, n, ents in profiles]
            k = int(np.argmax(scores)) if scores else -1
            if k >= 0 and scores[k] >= tau:
                total, n, ents = profiles[k]
                profiles[k] = (total + v, n + 1, ents | set(seg.entities))
            else:
                profiles.append((v.copy(), 1, set(seg.entities)))
                k = len(profiles) - 1
            out[seg.id] = f"E{k}"
        return out
    return build


def by_message_link(tau: float) -> Construction:
    """Each segment joins the trajectory of the earlier segment holding its most similar message
    (cosine ≥ ``tau``): single link over members instead of mean-pooled centroids."""
    def build(segments: list[TopicalSegment], vectors: dict[str, np.ndarray]) -> Assignment:
        unit = {s.id: np.stack([vectors[m] / np.linalg.norm(vectors[m]) for m in s.message_ids]) for s in segments}
        out: Assignment = {}
        for i, seg in enumerate(segments):
            best = max(((float((unit[seg.id] @ unit[o.id].T).max()), o.id) for o in segments[:i]), default=None)
            out[seg.id] = out[best[1]] if best and best[0] >= tau else seg.id
        return out
    return build


def by_rare_entity(share: float) -> Construction:
    """Segments sharing a key entity that occurs in 2 to ``share`` × N segments are linked (union-find)."""
    def build(segments: list[TopicalSegment], vectors: dict[str, np.ndarray]) -> Assignment:
        df: dict[str, int] = defaultdict(int)
        for seg in segments:
            for e in set(seg.entities):
                df[e] += 1
        parent = {s.id: s.id for s in segments}

        def root(x: str) -> str:
            while parent[x] != x:
                x = parent[x]
            return x
        owner: dict[str, str] = {}
        for seg in segments:
            for e in set(seg.entities):
                if 2 <= df[e] <= max(2, share * len(segments)):
                    if e in owner:
                        parent[root(seg.id)] = root(owner[e])
                    else:
                        owner[e] = seg.id
        return {s.id: root(s.id) for s in segments}
    return build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--data-dir", required=True, help="folder of memories built by `memsif eval locomo`")
    parser.add_argument("--samples", default="conv-26,conv-30,conv-47")
    parser.add_argument("--tag", default="eval", help="the eval's namespace tag (default: eval)")
    args = parser.parse_args()
    engine = MemSIF(MemSIFConfig.from_env(data_dir=args.data_dir))
    cfg = engine.config
    mapping = SemanticMapping.for_embedder(engine.embedder.name)
    constructions: dict[str, Construction | None] = {"stored (φ top-K + LLM judge)": None}
    for tau in (0.55, 0.6, 0.65):
        constructions[f"φ ≥ {tau}, no judge (α = {cfg.alpha_trajectory})"] = by_phi(tau, cfg.alpha_trajectory, mapping)
    for tau in (0.6, 0.7):
        constructions[f"closest member message, cos ≥ {tau}"] = by_message_link(tau)
    for share in (0.03, 0.06):
        constructions[f"shared key entity in ≤ {share:.0%} of segments"] = by_rare_entity(share)
    shared: dict[str, int] = defaultdict(int)
    chance: dict[str, float] = defaultdict(float)
    sizes: dict[str, list[str]] = defaultdict(list)
    pairs_total = questions = 0
    for sample in load_locomo(args.data, args.samples.split(",")):
        ns = f"{args.tag}-locomo-{sample.sample_id}"
        segments = sorted(engine.store.segments(ns), key=lambda s: s.index)
        if not segments:
            raise SystemExit(f"no memory for {sample.sample_id} in {args.data_dir} (namespace {ns}): build it "
                             "with `python -m memsif eval locomo --retrieval-only --data-dir …` first")
        vectors = {m.message.id: np.asarray(m.vector) for m in engine.store.messages(ns)}
        segment_of = {m: s.id for s in segments for m in s.message_ids}
        position = {m.id: k for k, m in enumerate(sample.messages)}
        pairs = []
        for q in sample.questions:
            t = ted([position[e] for e in q.evidence_ids if e in position], len(sample.messages))
            if t is None or t < NCE_TED:
                continue
            questions += 1
            segs = sorted({segment_of[e] for e in q.evidence_ids if e in segment_of})
            pairs += [(a, b) for i, a in enumerate(segs) for b in segs[i + 1:]]
        pairs_total += len(pairs)
        for name, build in constructions.items():
            assign = {s.id: s.trajectory_id or s.id for s in segments} if build is None else build(segments, vectors)
            shared[name] += sum(assign[a] == assign[b] for a, b in pairs)
            n = np.bincount(np.unique(list(assign.values()), return_inverse=True)[1])
            chance[name] += len(pairs) * float((n ** 2).sum()) / len(segments) ** 2
            sizes[name].append(f"{len(n)} / {len(segments)}")
    engine.close()
    print(f"NCE questions: {questions}; gold evidence pairs in different Topical Segments: {pairs_total}\n")
    print("| trajectories | pairs sharing a trajectory | expected by chance | lift | trajectories / segments |")
    print("|---|---|---|---|---|")
    for name in constructions:
        got, exp = shared[name], chance[name]
        print(f"| {name} | {got} ({got / max(pairs_total, 1):.0%}) | {exp:.1f} ({exp / max(pairs_total, 1):.0%}) | "
              f"{got / exp if exp else float('nan'):.1f} | {', '.join(sizes[name])} |")


if __name__ == "__main__":
    main()
