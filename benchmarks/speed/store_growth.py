"""How the store's query-time calls grow with the number of sentences (the 10,000-message
row of ``python -m memsif bench --scale``): embedded Qdrant (``:memory:``, the same local mode as the
default folder) filled with random sentences, then timed per call:

- the hybrid search over the whole namespace (dense + lexical, fused by RRF, speaker boost);
- the restricted search of the Event Trajectory path as it was (``segment_id`` in a list of segments)
  and as it is (``trajectory_id`` in two trajectories, less three anchor segments);
- the speaker facet every question starts with.

No model is loaded: vectors are random (384-d, L2-normalised), texts are 12 random words.

    python benchmarks/speed/store_growth.py [--sizes 5000,10000,20000] [--segments 50,200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from memsif import lexical
from memsif.records import Sentence
from memsif.store import MemoryStore, SentenceQuery


def seconds(call, repeats: int = 3) -> float:
    """Mean wall seconds of ``call`` over ``repeats`` runs after one warm-up."""
    call()
    start = time.perf_counter()
    for _ in range(repeats):
        call()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="5000,10000,20000", help="sentences in the namespace")
    ap.add_argument("--segments", default="50,200", help="segments listed in the restricted search")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    listed = [int(x) for x in args.segments.split(",")]
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(3000)]
    print("| sentences | hybrid search s | " + " | ".join(f"restricted to {k} segments s" for k in listed)
          + " | restricted to 2 trajectories s | speaker facet s |")
    print("|---|---|" + "---|" * len(listed) + "---|---|")
    for n in sizes:
        hybrid, restricted, by_trajectory, facet = measure(n, listed, rng, words)
        print(f"| {n} | {hybrid:.3f} | " + " | ".join(f"{r:.3f}" for r in restricted)
              + f" | {by_trajectory:.3f} | {facet:.3f} |", flush=True)


def measure(n: int, listed: list[int], rng: np.random.Generator,
            words: list[str]) -> tuple[float, list[float], float, float]:
    """Seconds of the hybrid search, of the restricted search per number of listed segments, of the
    search restricted to two trajectories, and of the speaker facet, in a namespace of ``n`` random
    sentences (four per segment, segments spread over 300 trajectories)."""
    store = MemoryStore(in_memory=True)
    store.ensure_collections("random", 384)
    texts = [" ".join(rng.choice(words, 12)) for _ in range(n)]
    vectors = rng.normal(size=(n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sparse = lexical.encode_documents(texts, ["A"] * n)
    store.put_sentences("t", [
        (Sentence(id=f"D{i}#0", namespace="t", message_id=f"D{i}", position=0, text=text,
                  speaker="A" if i % 2 else "B", message_index=i, segment_id=f"S{i // 4 + 1}",
                  trajectory_id=f"E{(i // 4) % 300 + 1}"), v, sp)
        for i, (text, v, sp) in enumerate(zip(texts, vectors, sparse, strict=True))])
    query, terms = vectors[0], lexical.encode_query(texts[0])
    hybrid = seconds(lambda: store.hybrid_search(
        "t", SentenceQuery(query, terms, speakers=["A"], speaker_boost=0.5), 200))
    restricted = []
    for k in listed:
        segments = sorted({f"S{i}" for i in rng.choice(np.arange(1, n // 4), k, replace=False)})
        restricted.append(seconds(lambda s=segments: store.hybrid_search(
            "t", SentenceQuery(query, terms, 200, within={"segment_id": s}), 8, path_scores=False)))
    by_trajectory = seconds(lambda: store.hybrid_search(
        "t", SentenceQuery(query, terms, 200, within={"trajectory_id": ["E1", "E2"]},
                           excluded={"segment_id": ["S1", "S2", "S3"]}), 8, path_scores=False))
    facet = seconds(lambda: store.speakers("t"))
    store.close()
    return hybrid, restricted, by_trajectory, facet

if __name__ == "__main__":
    main()
