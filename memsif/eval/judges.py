"""Can a model do the method's judgements? Labelled pairs from real conversations, scored by the
engine's own judge prompts, measured by ROC AUC (no LLM in the measure).

Segment judge (§3.2, "does u_t continue the topic of S_i?"):
- positive: a message after the three messages before it in its own session;
- negative ("other conversation"): the same three messages followed by a message of another conversation;
- hand-labelled ("within session"): topic shifts and continuations inside one session, labelled by
  reading the conversation before any model saw them (``benchmarks/quality/data/segment-shifts.jsonl``).

Trajectory judge (§3.2, "is S_i part of the same evolving event or task as E_j?"):
- positive: two excerpts (a gold evidence turn and the two turns after it) of one multi-hop question
  whose evidence lies in different sessions;
- negatives: the same later excerpt against an excerpt of another conversation, or against an excerpt
  of the same conversation that is no evidence of that question (a harder, noisier negative).
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

from memsif.eval.data import EvalSample
from memsif.interaction.judge import YesNoJudge
from memsif.llm import LLM
from memsif.prompts import Prompt, segment_judge, trajectory_judge
from memsif.records import Message

#: Messages of the current segment the segment judge sees (the engine's ``judge_context_messages``).
CONTEXT = 3


@dataclass(frozen=True)
class LabelledPrompt:
    """One judge prompt with its label (1 = continue / same event) and where it came from."""

    prompt: Prompt
    label: int
    kind: str          # "own session", "other conversation", "within session", "same event", ...
    ids: tuple[str, ...]


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties counted half
    (Mann-Whitney U / (n_pos · n_neg)).

    Raises:
        ValueError: no positive or no negative label.
    """
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=int)
    n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
    if not n_pos or not n_neg:
        raise ValueError("AUC needs both positive and negative labels")
    ranks = rankdata(s)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _sessions(sample: EvalSample) -> dict[str, list[Message]]:
    out: dict[str, list[Message]] = {}
    for m in sample.messages:
        out.setdefault(m.session_id, []).append(m)
    return out


def segment_pairs(samples: Sequence[EvalSample], per_sample: int, seed: int = 0) -> list[LabelledPrompt]:
    """``per_sample`` positives and as many "other conversation" negatives from each sample (needs at
    least two samples), in a seeded order."""
    rng = random.Random(seed)
    out: list[LabelledPrompt] = []
    for sample in samples:
        others = [m for s in samples if s.sample_id != sample.sample_id for m in s.messages]
        slots = [(msgs, i) for msgs in _sessions(sample).values() for i in range(CONTEXT, len(msgs))]
        for msgs, i in rng.sample(slots, min(per_sample, len(slots))):
            context, new = msgs[i - CONTEXT:i], msgs[i]
            stranger = rng.choice(others)
            for shown, label, kind in ((new, 1, "own session"), (stranger, 0, "other conversation")):
                out.append(LabelledPrompt(segment_judge.build(context, shown), label, kind,
                                          (*[m.id for m in context], shown.id)))
    return out


def labelled_shift_pairs(samples: Sequence[EvalSample], path: Path) -> list[LabelledPrompt]:
    """The hand-labelled within-session pairs of ``path`` (JSON lines: sample, new message id, label
    1 = continues the topic of the three messages before it, 0 = opens another topic, note)."""
    by_sample = {s.sample_id: s for s in samples}
    out = []
    for row in (json.loads(line) for line in path.read_text().splitlines() if line.strip()):
        sample = by_sample.get(row["sample"])
        if sample is None:
            continue
        msgs = next(v for v in _sessions(sample).values() if any(m.id == row["id"] for m in v))
        i = next(k for k, m in enumerate(msgs) if m.id == row["id"])
        context = msgs[max(0, i - CONTEXT):i]
        out.append(LabelledPrompt(segment_judge.build(context, msgs[i]), int(row["label"]), "within session",
                                  (*[m.id for m in context], msgs[i].id)))
    return out


def _excerpt(messages: Sequence[Message], start: int, length: int = 3) -> list[Message]:
    return list(messages[start:start + length])


def trajectory_pairs(samples: Sequence[EvalSample], per_sample: int, seed: int = 0) -> list[LabelledPrompt]:
    """Per sample up to ``per_sample`` positives (multi-hop evidence in two sessions), each with one
    "other conversation" and one "same conversation, not evidence" negative."""
    rng = random.Random(seed)
    out: list[LabelledPrompt] = []
    for sample in samples:
        index = {m.id: k for k, m in enumerate(sample.messages)}
        session = {m.id: m.session_id for m in sample.messages}
        others = [s for s in samples if s.sample_id != sample.sample_id]
        pairs = []
        for q in sample.questions:
            ids = sorted((i for i in q.evidence_ids if i in index), key=index.get)
            for a, b in itertools.pairwise(ids):
                if session[a] != session[b]:
                    pairs.append((a, b, set(q.evidence_ids)))
        for a, b, evidence in rng.sample(pairs, min(per_sample, len(pairs))):
            earlier, later = _excerpt(sample.messages, index[a]), _excerpt(sample.messages, index[b])
            other = rng.choice(others).messages
            stranger = _excerpt(other, rng.randrange(len(other) - 3))
            far = [k for k, m in enumerate(sample.messages[:-3]) if m.id not in evidence
                   and m.session_id not in (session[a], session[b])]
            unrelated = _excerpt(sample.messages, rng.choice(far))
            for excerpt, label, kind in ((earlier, 1, "same event"), (stranger, 0, "other conversation"),
                                         (unrelated, 0, "same conversation, not evidence")):
                out.append(LabelledPrompt(trajectory_judge.build(excerpt, later), label, kind,
                                          tuple(m.id for m in [*excerpt, *later])))
    return out


@dataclass
class JudgeReport:
    """Scores of one model on one set of labelled prompts."""

    task: str
    model: str
    scores: list[float]
    prompts: list[LabelledPrompt]
    seconds: float
    prompt_tokens: int

    def auc(self, negative_kind: str | None = None, positive_kind: str | None = None) -> float:
        """AUC over all prompts, or positives against the negatives of one kind only."""
        rows = [(s, p.label) for s, p in zip(self.scores, self.prompts, strict=True)
                if (p.label == 1 and positive_kind in (None, p.kind))
                or (p.label == 0 and negative_kind in (None, p.kind))]
        return roc_auc([s for s, _ in rows], [y for _, y in rows])

    def accuracy(self, threshold: float, kind: str | None = None) -> float:
        """Share of prompts (of one kind) whose verdict at ``threshold`` equals the label."""
        rows = [(s, p.label) for s, p in zip(self.scores, self.prompts, strict=True) if kind in (None, p.kind)]
        return sum((s >= threshold) == bool(y) for s, y in rows) / len(rows)


def score(llm: LLM, task: str, prompts: Sequence[LabelledPrompt], calibration: str = "off",
          content_free=None) -> JudgeReport:
    """Score every prompt with the engine's judge, one call per prompt (``calibration`` as
    ``MemSIFConfig.judge_calibration``; "off" gives the raw P(yes) the AUC is measured on)."""
    judge = YesNoJudge(llm, content_free or (lambda: prompts[0].prompt), calibration)
    start = time.perf_counter()
    verdicts = [judge.score([p.prompt])[0] for p in prompts]
    seconds = time.perf_counter() - start
    tokens = sum(llm.count_tokens(p.prompt.text) for p in prompts)
    return JudgeReport(task, llm.name, [v.prob for v in verdicts], list(prompts), seconds, tokens)
