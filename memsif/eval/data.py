"""Benchmark questions with the paper's category mapping and exclusions (§4.1, App. B).

LoCoMo: category 4 → S-hop, 1 → M-hop, 2 → Temp, 3 → Kno; category 5 (adversarial) is excluded.
LongMemEval-S: single-session-user / -assistant / -preference → S-hop, multi-session → M-hop,
temporal-reasoning → Temp, knowledge-update → Kno; abstention questions (``_abs``) are excluded.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from memsif.errors import TranscriptError
from memsif.io import load_transcripts
from memsif.records import Message

CATEGORIES = ("S-hop", "M-hop", "Temp", "Kno")
LOCOMO_CATEGORIES = {4: "S-hop", 1: "M-hop", 2: "Temp", 3: "Kno"}
LOCOMO_EXCLUDED = {5}
LONGMEMEVAL_TYPES = {
    "single-session-user": "S-hop", "single-session-assistant": "S-hop", "single-session-preference": "S-hop",
    "multi-session": "M-hop", "temporal-reasoning": "Temp", "knowledge-update": "Kno",
}


@dataclass
class EvalQuestion:
    """One scored question. ``evidence_ids`` are gold message ids (LoCoMo ``evidence``,
    LongMemEval ``has_answer`` turns) that exist in the sample's transcript."""

    qid: str
    sample_id: str
    question: str
    gold: str
    category: str
    evidence_ids: list[str]
    question_date: str | None = None
    source_category: str = ""


@dataclass
class EvalSample:
    """One conversation (LoCoMo) or one isolated history (LongMemEval) with its scored questions."""

    sample_id: str
    messages: list[Message]
    questions: list[EvalQuestion]
    excluded: int = 0                      # questions left out by the protocol
    missing_evidence: list[str] = field(default_factory=list)   # gold ids not in the transcript


_ID_SPLIT = re.compile(r"[;,\s]+")


def _evidence_ids(raw, known: set[str]) -> tuple[list[str], list[str]]:
    ids = [i for item in (raw or []) for i in _ID_SPLIT.split(str(item)) if i]
    return [i for i in ids if i in known], [i for i in ids if i not in known]


def load_locomo(path: str | Path, samples: list[str] | None = None) -> list[EvalSample]:
    """LoCoMo conversations with their scored questions (category 5 excluded).

    Raises:
        TranscriptError: the file is not LoCoMo, or a wanted sample is missing.
    """
    out = []
    for tr in _transcripts(path, samples, "locomo"):
        known = {m.id for m in tr.messages}
        questions, excluded, missing = [], 0, []
        for k, qa in enumerate(tr.extra.get("qa", [])):
            category = int(qa.get("category", 0))
            if category in LOCOMO_EXCLUDED or category not in LOCOMO_CATEGORIES:
                excluded += 1
                continue
            ids, absent = _evidence_ids(qa.get("evidence"), known)
            missing += absent
            questions.append(EvalQuestion(qid=f"{tr.sample_id}/q{k}", sample_id=tr.sample_id,
                                          question=str(qa["question"]), gold=str(qa.get("answer", "")),
                                          category=LOCOMO_CATEGORIES[category], evidence_ids=ids,
                                          source_category=str(category)))
        out.append(EvalSample(tr.sample_id, tr.messages, questions, excluded, missing))
    return out


def load_longmemeval(path: str | Path, samples: list[str] | None = None) -> list[EvalSample]:
    """LongMemEval samples (one question each, isolated history); ``_abs`` questions excluded.

    Raises:
        TranscriptError: the file is not LongMemEval, a wanted sample is missing, or a question
            type is unknown.
    """
    out = []
    for tr in _transcripts(path, samples, "longmemeval"):
        extra = tr.extra
        qtype = str(extra.get("question_type") or "")
        if tr.sample_id.endswith("_abs"):
            out.append(EvalSample(tr.sample_id, tr.messages, [], excluded=1))
            continue
        if qtype not in LONGMEMEVAL_TYPES:
            raise TranscriptError(f"unknown question_type {qtype!r} (known: {sorted(LONGMEMEVAL_TYPES)})",
                                  path=str(path), sample=tr.sample_id)
        q = EvalQuestion(qid=tr.sample_id, sample_id=tr.sample_id, question=str(extra["question"]),
                         gold=str(extra.get("answer", "")), category=LONGMEMEVAL_TYPES[qtype],
                         evidence_ids=list(extra.get("has_answer_ids", [])),
                         question_date=extra.get("question_date"), source_category=qtype)
        out.append(EvalSample(tr.sample_id, tr.messages, [q]))
    return out


def _transcripts(path, samples, fmt):
    found = load_transcripts(path)
    if any(t.format != fmt for t in found):
        raise TranscriptError(f"expected a {fmt} file", path=str(path))
    if samples:
        by_id = {t.sample_id: t for t in found}
        absent = [s for s in samples if s not in by_id]
        if absent:
            raise TranscriptError(f"samples not in the file: {absent} (it has {sorted(by_id)[:10]}…)", path=str(path))
        found = [by_id[s] for s in samples]
    return found


def seeded_order(questions: list[EvalQuestion], seed: int, sample_id: str) -> list[EvalQuestion]:
    """The fixed randomised order of a conversation's questions (online query-state protocol, App. D):
    the same for a given (seed, sample) on every run and every system."""
    order = list(questions)
    random.Random(f"{seed}:{sample_id}").shuffle(order)
    return order
