"""Memory retrieval and answer generation (§3.5), feeding the ActiveFact pipeline (§3.4).

For a question q_t: retrieve CoreFacts and promoted ActiveFacts by similarity; an LLM sufficiency
check (one scored forward pass) decides whether they cover q_t; if not, trace back to the most
similar Topical Segments and Event Trajectories and extract query-local evidence from them; answer
from facts + evidence (never raw units); then accumulate the evidence into candidate clusters and
promote those that pass Eq. 4. Query-local evidence is dropped after the answer.

Query-local evidence is extractive here: from each traced-back unit, the messages closest to the
question are kept as (statement, subject = speaker, provenance = that message). It costs no LLM
call, which keeps a question within seconds on the 135M default model, and its provenance is exact.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memsif.config import MemSIFConfig
from memsif.embed import Embedder
from memsif.errors import LLMError
from memsif.facts.active import (
    COMPATIBLE_COSINE,
    CandidateCluster,
    central_statement,
    cluster_from_payload,
    cluster_to_payload,
    normalise_subject,
)
from memsif.llm import LLM
from memsif.prompts import answer as answer_prompt
from memsif.prompts import sufficiency, turn_line
from memsif.records import ActiveFact, Evidence
from memsif.store import MemoryStore
from memsif.store.qdrant import ACTIVE_FACTS, CLUSTERS, FACTS, SEGMENTS, TRAJECTORIES
from memsif.timeparse import day_text

#: Context budget for the answer prompt, in tokens of the model's tokenizer.
CONTEXT_TOKENS = 1500
#: A message enters the answer context as evidence with at most this many characters (a pasted log
#: of 30,000 tokens is stored whole but shown clipped).
EVIDENCE_CHARS = 600


def _day(value: str | None) -> str:
    return day_text(datetime.fromisoformat(value) if value else None)


@dataclass
class Answer:
    """An answer with its trace. Times are wall seconds; tokens are the model's tokens."""

    question: str
    answer: str
    sufficient: bool
    sufficiency_prob: float | None
    traced_back: bool
    facts_used: list[dict[str, Any]] = field(default_factory=list)
    evidence_used: list[dict[str, Any]] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    seconds_by_stage: dict[str, float] = field(default_factory=dict)
    active_facts_changed: list[str] = field(default_factory=list)
    clusters_touched: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    context: str = ""                                           # the memory text given to the answer prompt
    context_source_ids: list[str] = field(default_factory=list)  # message ids behind that text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class QueryPipeline:
    """One question at a time against one namespace."""

    def __init__(self, config: MemSIFConfig, llm: LLM, embedder: Embedder, store: MemoryStore) -> None:
        self.config, self.llm, self.embedder, self.store = config, llm, embedder, store

    def retrieve_facts(self, namespace: str, qv: np.ndarray) -> list[dict[str, Any]]:
        """CoreFacts (current only) and ActiveFacts by cosine, best first, at most ``fact_top_k``."""
        cfg = self.config
        found: list[dict[str, Any]] = []
        if cfg.use_core_facts:
            for payload, score in self.store.search(FACTS, namespace, qv, cfg.fact_top_k, status="current"):
                found.append({"kind": "core", "id": payload["id"], "subject": payload["subject"],
                              "type": payload["type"], "statement": payload["statement"],
                              "event_time": payload.get("event_time"),
                              "source_message_ids": payload["source_message_ids"], "score": round(score, 4)})
        if cfg.use_active_facts:
            for payload, score in self.store.search(ACTIVE_FACTS, namespace, qv, cfg.fact_top_k):
                found.append({"kind": "active", "id": payload["id"], "subject": payload["subject"], "type": "Active",
                              "statement": payload["statement"], "event_time": payload.get("event_time"),
                              "source_message_ids": payload["source_message_ids"], "score": round(score, 4)})
        found.sort(key=lambda f: -f["score"])
        return found[:cfg.fact_top_k]

    def trace_back(self, namespace: str, qv: np.ndarray) -> list[Evidence]:
        """Query-local evidence from the closest Topical Segments and Event Trajectories."""
        cfg = self.config
        units: list[tuple[list[str], str | None, str | None]] = []
        if cfg.use_segments:
            for payload, _ in self.store.search(SEGMENTS, namespace, qv, cfg.segment_top_k):
                units.append((payload["message_ids"], payload["id"], payload.get("trajectory_id")))
        if cfg.use_trajectories:
            found = self.store.search(TRAJECTORIES, namespace, qv, cfg.trajectory_top_k)
            segs = {s.id: s for s in self.store.segments(namespace)} if found else {}
            for payload, _ in found:
                ids = [m for sid in payload["segment_ids"] if sid in segs for m in segs[sid].message_ids]
                units.append((ids, None, payload["id"]))
        wanted = {mid for ids, _, _ in units for mid in ids}
        rows = {r.message.id: r for r in self.store.get_messages(namespace, wanted)}
        evidence: dict[str, Evidence] = {}
        for ids, seg_id, traj_id in units:
            scored = sorted(((float(np.dot(rows[m].vector, qv)), m) for m in ids if m in rows), reverse=True)
            for score, mid in scored[:cfg.evidence_per_unit]:
                if mid in evidence:
                    continue
                msg = rows[mid].message
                evidence[mid] = Evidence(statement=turn_line(msg, EVIDENCE_CHARS), subject=msg.speaker,
                                         source_message_ids=[mid], segment_id=seg_id or rows[mid].segment_id,
                                         trajectory_id=traj_id, score=round(score, 4))
        order = {mid: rows[mid].message.index for mid in evidence}
        return sorted(evidence.values(), key=lambda e: order[e.source_message_ids[0]])

    def ask(self, namespace: str, question: str, question_date: str | None = None, generate: bool = True) -> Answer:
        """Answer ``question`` from ``namespace``'s memory, with the trace (§3.5). With ``generate=False``
        everything but the answer generation runs (retrieval-only evaluation; the ActiveFact pipeline
        still accumulates the evidence that would have been used).

        Raises:
            LLMError: answer generation failed (sufficiency failures are recorded and fall back to
                tracing back to Structured Interaction Memory).
        """
        start = time.perf_counter()
        stages: dict[str, float] = {}
        t = time.perf_counter()
        qv = self.embedder.embed_query(question)
        facts = self.retrieve_facts(namespace, qv)
        stages["retrieve_facts"] = time.perf_counter() - t
        result = Answer(question=question, answer="", sufficient=False, sufficiency_prob=None, traced_back=False)

        t = time.perf_counter()
        if facts:
            prompt = sufficiency.build(question, [f"{f['subject']}: {f['statement']}" for f in facts])
            result.tokens_in += self.llm.count_tokens(prompt.text)
            try:
                [p] = self.llm.yes_probability([prompt])
                result.sufficiency_prob = p
                result.sufficient = p >= self.config.sufficiency_threshold
            except LLMError as exc:
                result.errors.append(f"sufficiency: {type(exc).__name__}: {exc}")
        stages["sufficiency"] = time.perf_counter() - t

        evidence: list[Evidence] = []
        if not result.sufficient:
            t = time.perf_counter()
            evidence = self.trace_back(namespace, qv)
            result.traced_back = True
            stages["trace_back"] = time.perf_counter() - t

        t = time.perf_counter()
        context, used_facts, used_evidence = self._context(facts, evidence)
        if generate:
            prompt = answer_prompt.build(question, context, question_date)
            gen = self.llm.generate(prompt, max_new_tokens=self.config.answer_max_tokens,
                                    temperature=self.config.answer_temperature, stop=answer_prompt.STOP)
            result.answer = gen.text.strip().split("\n")[0].strip()
            result.tokens_in += gen.tokens_in
            result.tokens_out += gen.tokens_out
        result.facts_used = used_facts
        result.evidence_used = [e.model_dump() for e in used_evidence]
        result.context = context
        result.context_source_ids = list(dict.fromkeys(
            [*(m for f in used_facts for m in f["source_message_ids"]),
             *(m for e in used_evidence for m in e.source_message_ids)]))
        stages["answer"] = time.perf_counter() - t

        if self.config.use_active_facts and used_evidence:
            t = time.perf_counter()
            self._accumulate(namespace, question, qv, used_evidence, result)
            stages["active_facts"] = time.perf_counter() - t
        result.seconds_by_stage = stages
        result.seconds = time.perf_counter() - start
        return result

    def _context(self, facts: list[dict[str, Any]], evidence: list[Evidence]):
        """Facts, then evidence, within ``CONTEXT_TOKENS``; returns the text and what made it in."""
        budget = CONTEXT_TOKENS
        fact_lines, used_facts, budget = self._fit(
            facts, lambda f: f"- {f['subject']}: {f['statement']} ({_day(f.get('event_time'))})", budget)
        evidence_lines, used_evidence, _ = self._fit(evidence, lambda e: f"- {e.statement}", budget)
        lines = (["Facts:", *fact_lines] if fact_lines else []) + (
            ["Conversation excerpts:", *evidence_lines] if evidence_lines else [])
        return "\n".join(lines), used_facts, used_evidence

    def _fit(self, items, render, budget: int):
        """Rendered lines of ``items`` in order while they fit ``budget`` tokens."""
        lines, used = [], []
        for item in items:
            line = render(item)
            cost = self.llm.count_tokens(line)
            if cost > budget:
                continue  # a shorter item further down may still fit
            budget -= cost
            lines.append(line)
            used.append(item)
        return lines, used, budget

    def _accumulate(self, namespace: str, question: str, qv: np.ndarray, evidence: list[Evidence],
                    result: Answer) -> None:
        """Post-answer candidate accumulation and promotion (§3.4, Eqs. 2–4)."""
        cfg = self.config
        payloads = {p["id"]: p for p in self.store.records(CLUSTERS, namespace)}
        clusters = {cid: cluster_from_payload(p) for cid, p in payloads.items()}
        promoted_ids = {cid: p.get("active_fact_id") for cid, p in payloads.items()}
        vectors = self.embedder.embed_documents([e.statement for e in evidence])
        touched: set[str] = set()
        for ev, vec in zip(evidence, vectors, strict=True):
            subject = normalise_subject(ev.subject)
            target = None
            for cid, cluster in clusters.items():
                if cluster.subject == subject and any(
                        float(np.dot(vec, v)) >= COMPATIBLE_COSINE for v in cluster.statement_vectors):
                    target = cid
                    break
            if target is None:
                target = f"C{len(clusters) + 1}"
                clusters[target] = CandidateCluster(subject)
                promoted_ids[target] = None
            clusters[target].add(ev.statement, vec, ev.source_message_ids, question, qv)
            touched.add(target)
        now = datetime.now(UTC).replace(tzinfo=None)
        active_rows = []
        existing_active = {p["id"]: p for p in self.store.records(ACTIVE_FACTS, namespace)}
        for cid in sorted(touched):
            cluster = clusters[cid]
            if not cluster.promoted(cfg.theta_src, cfg.theta_qry):
                continue
            aid = promoted_ids[cid] or f"A{len(existing_active) + len(active_rows) + 1}"
            promoted_at = existing_active.get(aid, {}).get("promoted_at") or now.isoformat()
            statement = central_statement(cluster)
            fact = ActiveFact(id=aid, namespace=namespace, subject=cluster.subject, statement=statement,
                              source_message_ids=cluster.sources, queries=cluster.queries, cluster_id=cid,
                              score_src=cluster.score_src, score_qry=cluster.score_qry,
                              promoted_at=datetime.fromisoformat(promoted_at), updated_at=now)
            promoted_ids[cid] = aid
            vec = cluster.statement_vectors[cluster.statements.index(statement)]
            active_rows.append((aid, fact.model_dump(mode="json"), vec))
            result.active_facts_changed.append(aid)
        self.store.put_records(CLUSTERS, namespace, "cluster",
                               [(cid, cluster_to_payload(cid, clusters[cid], promoted_ids[cid]), None)
                                for cid in sorted(touched)])
        if active_rows:
            self.store.put_records(ACTIVE_FACTS, namespace, "active_fact", active_rows)
        result.clusters_touched = sorted(touched)
