"""Where should MemSIF say "nothing in this memory is about that"? (no LLM)

Each dev conversation's sentences are indexed as MemSIF indexes them (``build_sentences``, the
default embedder) and each question is searched as ``EvidenceRetriever.trace_back`` searches (hybrid,
speaker names out of the dense query). The quantity is the best dense cosine among the hits.

- *relevant*: the conversation's own scored questions (LoCoMo categories 1–4).
- *nothing relevant*: (a) the other dev conversations' scored questions with their two speakers'
  names replaced by this conversation's (a question about this pair on a topic it may never have
  discussed; a few will be on a shared topic, so the label is noisy in that direction), and
  (b) ``benchmarks/quality/data/nothing-relevant.jsonl``, questions written by hand about things the
  conversation never mentions.

Prints the AUC of the best cosine and, per candidate floor, the share of each set below it (a
relevant question below the floor would be answered "I do not know").

    PYTHONPATH=. python benchmarks/quality/relevance_floor.py [--out benchmarks/results/dev/relevance-floor.json]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from memsif import lexical
from memsif.answer.retrieval import named_speakers, without_names
from memsif.config import MemSIFConfig
from memsif.embed import SentenceTransformerEmbedder
from memsif.eval.data import load_locomo
from memsif.interaction.sentences import build_sentences
from memsif.store import MemoryStore, SentenceQuery, StoredMessage

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
HAND = ROOT / "benchmarks" / "quality" / "data" / "nothing-relevant.jsonl"
FLOORS = [round(x, 2) for x in np.arange(0.15, 0.56, 0.05)]


def auc(pos: list[float], neg: list[float]) -> float:
    """P(a relevant question's score > a nothing-relevant one's), ties half."""
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def speakers_of(sample) -> list[str]:
    return list(dict.fromkeys(m.speaker for m in sample.messages))[:2]


def swap_names(question: str, old: list[str], new: list[str]) -> str:
    for a, b in zip(old, new, strict=False):
        question = re.sub(rf"\b{re.escape(a)}\b", b, question)
    return question


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    cfg = MemSIFConfig()
    embedder = SentenceTransformerEmbedder(cfg.embedder_model)
    samples = load_locomo(DATA)
    hand = [json.loads(line) for line in HAND.read_text().splitlines() if line.strip()]
    scores: dict[str, list[float]] = {"relevant": [], "other conversation": [], "written by hand": []}
    examples = []
    for sample in samples:
        ns = sample.sample_id
        store = MemoryStore(in_memory=True)
        store.ensure_collections(embedder.name, embedder.dim)
        vectors = embedder.embed_documents([m.text for m in sample.messages])
        by_id = dict(zip([m.id for m in sample.messages], vectors, strict=True))
        store.put_messages(ns, [StoredMessage(m.model_copy(update={"namespace": ns}), by_id[m.id], frozenset(), "S1")
                                for m in sample.messages])
        store.put_sentences(ns, build_sentences([m.model_copy(update={"namespace": ns}) for m in sample.messages],
                                                by_id, {m.id: "S1" for m in sample.messages}, embedder))
        speakers = store.speakers(ns)

        def best(question: str, store=store, ns=ns, speakers=speakers) -> float:
            named = named_speakers(question, speakers)
            content = without_names(question, named) if cfg.dense_without_names else question
            hits = store.hybrid_search(ns, SentenceQuery(embedder.embed_query(content), lexical.encode_query(question),
                                                         speakers=named, speaker_boost=cfg.speaker_boost),
                                       cfg.evidence_candidates)
            return max((h.dense for h in hits if h.dense is not None), default=0.0)

        mine = speakers_of(sample)
        for q in sample.questions:
            scores["relevant"].append(best(q.question))
        for other in samples:
            if other.sample_id == ns:
                continue
            for q in other.questions:
                swapped = swap_names(q.question, speakers_of(other), mine)
                value = best(swapped)
                scores["other conversation"].append(value)
                examples.append((value, ns, swapped))
        for row in hand:
            if row["sample_id"] == ns:
                scores["written by hand"].append(best(row["question"]))
        store.close()
    negatives = scores["other conversation"] + scores["written by hand"]
    report = {
        "n": {k: len(v) for k, v in scores.items()},
        "auc_best_cosine": {"other conversation": round(auc(scores["relevant"], scores["other conversation"]), 3),
                            "written by hand": round(auc(scores["relevant"], scores["written by hand"]), 3),
                            "both": round(auc(scores["relevant"], negatives), 3)},
        "below_floor": {str(f): {k: round(float(np.mean(np.asarray(v) < f)), 3) for k, v in scores.items()}
                        for f in FLOORS},
        "quantiles": {k: [round(float(x), 3) for x in np.quantile(v, [0.01, 0.02, 0.05, 0.25, 0.5, 0.75])]
                      for k, v in scores.items()},
        "embedder": embedder.name,
    }
    print(f"AUC of the best dense cosine: {report['auc_best_cosine']}  (n: {report['n']})")
    print("floor  " + "  ".join(f"{k:>20}" for k in scores))
    for f in FLOORS:
        row = report["below_floor"][str(f)]
        print(f"{f:5.2f}  " + "  ".join(f"{row[k]:>19.1%} " for k in scores))
    print("quantiles 1/2/5/25/50/75 %:", json.dumps(report["quantiles"]))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
