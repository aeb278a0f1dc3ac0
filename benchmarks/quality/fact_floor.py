"""The sufficiency gate's relevance floor: how often the facts a question retrieves were
written from its gold evidence turns, as a function of the best fact's cosine to the question.

For every LoCoMo question with gold evidence, the ``fact_top_k`` CoreFacts nearest the question (the
facts the gate would judge); a fact "holds gold" when one of its source turns is a gold evidence
turn — a label from the data, no LLM. Printed: the AUC of a fact's cosine for holding gold, and per
floor the questions whose best fact reaches it and the share of them with a gold-holding fact (the
most a facts-only answer could be right on). Figures, not pass/fail.

    python -m memsif eval locomo --data ../shared/data/locomo/locomo_dev.json --retrieval-only --data-dir D
    PYTHONPATH=. python benchmarks/quality/fact_floor.py --data-dir D [--tag eval] [--samples conv-26,...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.eval.data import load_locomo

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
FLOORS = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85)


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties counted half."""
    pos, neg = scores[labels], scores[~labels]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--data-dir", required=True, help="folder of memories built by `memsif eval locomo`")
    parser.add_argument("--tag", default="eval", help="the eval's namespace tag (default: eval)")
    parser.add_argument("--samples", default="conv-26,conv-30,conv-47")
    args = parser.parse_args()
    engine = MemSIF(MemSIFConfig.from_env(data_dir=args.data_dir))
    engine.load_models()
    k = engine.config.fact_top_k
    fact_scores, fact_gold, best, has_gold = [], [], [], []
    for sample in load_locomo(args.data, args.samples.split(",")):
        ns = f"{args.tag}-locomo-{sample.sample_id}"
        if not engine.store.count("fact", ns):
            raise SystemExit(f"no CoreFacts for {sample.sample_id} in {args.data_dir} (namespace {ns})")
        for q in sample.questions:
            if not q.evidence_ids:
                continue
            found = engine.store.search_facts(ns, engine.embedder.embed_query(q.question), k)
            if not found:
                continue
            gold = set(q.evidence_ids)
            holds = [bool(set(f.source_message_ids) & gold) for f, _ in found]
            fact_scores += [s for _, s in found]
            fact_gold += holds
            best.append(found[0][1])
            has_gold.append(any(holds))
    s, g = np.asarray(fact_scores), np.asarray(fact_gold)
    b, h = np.asarray(best), np.asarray(has_gold)
    print(f"{len(b)} questions, {len(s)} retrieved facts ({k} a question); {int(g.sum())} facts hold gold; "
          f"AUC of a fact's cosine for holding gold {auc(s, g):.3f}; of the best fact's for the question having "
          f"a gold-holding fact {auc(b, h):.3f}; {h.mean():.0%} of questions have one")
    print("\n| floor (best fact's cosine) | questions reaching it | of them with a gold-holding fact |")
    print("|---|---|---|")
    for floor in FLOORS:
        m = b >= floor
        share = f"{h[m].mean():.0%}" if m.any() else "–"
        print(f"| {floor:.2f} | {int(m.sum())} of {len(b)} | {share} |")
    engine.close()


if __name__ == "__main__":
    main()
