"""A model-free pre-filter of CoreFact extraction batches: could a batch that will yield no durable,
supported fact be skipped before the model reads it, and what would skipping cost?

Labels: every CoreFact candidate of the three dev conversations, labelled supported and durable by hand
(``data/corefact-candidates-conv{26,30,47}.jsonl``). A batch (at most 8 messages of one session, in order,
as ``facts.core.unread_batches`` cuts them) is **fact-bearing** when a supported, durable candidate cites one
of its messages. Each batch is described by surface features of its messages (length, first-person words,
digits, questions, greetings and praise, photo notes, past-tense words, capitalised names; their maximum and
mean), and a logistic regression (scikit-learn) is fitted on two conversations and tested on the third.

Prints per held-out conversation: the share of batches with no fact-bearing message (what a perfect filter
could skip), the filter's ROC AUC, and for skipping the lowest-scored 10 / 20 / 30 % of batches the
supported, durable candidates lost (every message they cite skipped); then with a fixed threshold, the one
the two fitting conversations set (a twentieth of their batches below it), the held-out batches skipped, how
many messages they hold and the good candidates lost. No model runs.

    PYTHONPATH=. python benchmarks/quality/fact_prefilter.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from memsif.eval.data import load_locomo
from memsif.records import Message

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
LABELS = Path(__file__).parent / "data"
CONVERSATIONS = ("conv-26", "conv-30", "conv-47")
BATCH_MESSAGES = 8
SKIPS = (0.1, 0.2, 0.3)
#: The share of the fitting conversations' batches below the fixed threshold.
THRESHOLD_SKIP = 0.05
FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|my|me|mine|we|our|us)\b", re.I)
SMALL_TALK = re.compile(r"\b(hey|hi|hello|thanks|thank|congrats|congratulations|wow|awesome|cool|great|amazing|"
                        r"bye|glad|proud)\b", re.I)
PHOTO = re.compile(r"\[shares a photo[^\]]*\]?")


def message_features(text: str) -> list[float]:
    """Surface features of one message: log words, first-person and small-talk words per 10, a digit, a
    question, question marks, a photo note, past-tense words, capitalised names inside a sentence."""
    said = PHOTO.sub("", text)
    words = max(1, len(said.split()))
    return [math.log1p(len(said.split())), 10 * len(FIRST_PERSON.findall(said)) / words,
            float(bool(re.search(r"\d", said))), float(said.strip().endswith("?")), float(said.count("?")),
            float(bool(PHOTO.search(text))), 10 * len(SMALL_TALK.findall(said)) / words,
            float(len(re.findall(r"\b\w+ed\b", said))), float(len(re.findall(r"(?<![.!?] )(?<!^)\b[A-Z][a-z]+", said)))]


def batches(messages: Sequence[Message], size: int = BATCH_MESSAGES) -> list[list[Message]]:
    """Consecutive messages, at most ``size``, never across a session (``facts.core.unread_batches`` over
    segments that follow the messages' order)."""
    out: list[list[Message]] = [[]]
    for m in messages:
        if len(out[-1]) >= size or (out[-1] and out[-1][-1].session_id != m.session_id):
            out.append([])
        out[-1].append(m)
    return [b for b in out if b]


def batch_features(batch: Sequence[Message]) -> np.ndarray:
    """(2 f + 1,): the maximum and mean of the messages' features, and the batch's size."""
    rows = np.array([message_features(m.text) for m in batch])
    return np.concatenate([rows.max(0), rows.mean(0), [len(batch)]])


def conversation(sample: Any) -> dict[str, Any]:
    """A conversation's batches, their features and labels, and its supported, durable candidates."""
    path = LABELS / f"corefact-candidates-{sample.sample_id.replace('-', '')}.jsonl"
    rows = [json.loads(line) for line in path.open()]
    good = [r for r in rows if r["supported"] and r["durable"]]
    cited = {s for r in good for s in r["sources"]}
    cut = batches(sample.messages)
    return {"batches": cut, "X": np.stack([batch_features(b) for b in cut]),
            "y": np.array([any(m.id in cited for m in b) for b in cut]), "good": good}


def held_out(convs: dict[str, dict[str, Any]], held: str) -> dict[str, Any]:
    """Fit on every conversation but ``held``; its AUC, per skip share the good candidates lost, and with the
    threshold the fitting conversations set (``THRESHOLD_SKIP`` of their batches below it) the batches of
    ``held`` skipped, their sizes and the good candidates lost."""
    train = [c for c in convs if c != held]
    x = np.vstack([convs[c]["X"] for c in train])
    mean, scale = x.mean(0), x.std(0) + 1e-6
    model = LogisticRegression(C=0.3, max_iter=2000).fit((x - mean) / scale,
                                                         np.concatenate([convs[c]["y"] for c in train]))
    min_p = float(np.quantile(model.predict_proba((x - mean) / scale)[:, 1], THRESHOLD_SKIP))
    conv = convs[held]
    score = model.predict_proba((conv["X"] - mean) / scale)[:, 1]
    row: dict[str, Any] = {"conversation": held, "batches": len(score),
                           "no_fact_bearing": round(float(1 - conv["y"].mean()), 3),
                           "auc": round(float(roc_auc_score(conv["y"], score)), 3), "good": len(conv["good"])}
    order = np.argsort(score, kind="stable")
    for share in SKIPS:
        row[f"lost_at_{int(share * 100)}"] = lost(conv, set(order[: round(share * len(score))].tolist()))
    below = np.flatnonzero(score < min_p).tolist()
    row.update({"min_p": round(min_p, 4), "skipped_at_min_p": len(below), "lost_at_min_p": lost(conv, set(below)),
                "skipped_sizes": sorted(len(conv["batches"][k]) for k in below),
                "skipped_texts": [" | ".join(m.text[:40] for m in conv["batches"][k]) for k in below]})
    return row


def lost(conv: dict[str, Any], skipped: set[int]) -> int:
    """The good candidates of ``conv`` whose every cited message lies in a skipped batch."""
    read = {m.id for k, b in enumerate(conv["batches"]) if k not in skipped for m in b}
    return sum(1 for r in conv["good"] if not any(s in read for s in r["sources"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write the rows as JSON here")
    args = parser.parse_args()
    samples = {s.sample_id: s for s in load_locomo(DATA, list(CONVERSATIONS))}
    convs = {c: conversation(samples[c]) for c in CONVERSATIONS}
    rows = [held_out(convs, c) for c in CONVERSATIONS]
    print("| held out | batches | with no fact-bearing message | AUC | good candidates | "
          + " | ".join(f"lost, lowest {int(100 * s)} % skipped" for s in SKIPS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(SKIPS))
    for r in rows:
        print(f"| {r['conversation']} | {r['batches']} | {100 * r['no_fact_bearing']:.0f} % | {r['auc']:.3f} | "
              f"{r['good']} | " + " | ".join(str(r[f"lost_at_{int(100 * s)}"]) for s in SKIPS) + " |")
    print("\n| held out | threshold set by the other two | batches skipped | their sizes (messages) | good lost |\n"
          "|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['conversation']} | {r['min_p']:.3f} | {r['skipped_at_min_p']} of {r['batches']} | "
              f"{', '.join(map(str, r['skipped_sizes']))} | {r['lost_at_min_p']} of {r['good']} |")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
