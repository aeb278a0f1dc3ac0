"""Memory retrieval and answer generation (§3.5), feeding the ActiveFact pipeline (§3.4).

For a question q_t: retrieve CoreFacts and promoted ActiveFacts by similarity; the sufficiency gate
decides whether they alone form the answer context (an LLM check, one scored forward pass, when the
model is trusted with it); otherwise trace back to Structured Interaction Memory for query-local
evidence; answer from facts + evidence; then accumulate the evidence into candidate clusters and
promote those that pass Eq. 4. Query-local evidence is dropped after the answer.

Query-local evidence (whole sentences of the source turns, with their ids) and the facts come from
``memsif.answer.retrieval.EvidenceRetriever``; this module reads gate → fill → answer → accumulate.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from memsif.answer.accumulation import EvidenceAccumulator
from memsif.answer.check import (
    answer_check_threshold,
    check_context,
    closest_lines,
    from_question,
    refusal,
    unsupported_mentions,
)
from memsif.answer.context import FACTS, fit_lines, render_context
from memsif.answer.gate import GateVerdict, SufficiencyGate
from memsif.answer.relevance import Said, judge
from memsif.answer.retrieval import EvidenceRetriever, asks_about_the_past, named_speakers
from memsif.answer.when import resolved_period
from memsif.backends import Backends
from memsif.config import MemSIFConfig
from memsif.errors import CollectionMissing, NotFoundError, StoreError
from memsif.facts.dates import names_a_day
from memsif.llm import LLM, generate_streamed, runtime_of
from memsif.llm.profiles import ModelProfile
from memsif.prompts import answer as answer_prompt
from memsif.records import Evidence, RetrievedFact
from memsif.timeparse import dated, day_text

#: The answer when nothing retrieved passes the relevance floor (``Answer.nothing_relevant``).
NOTHING_RELEVANT = "I don't know: nothing in this memory is about that."
#: The best this many evidence items of an answer (by priority) enter the candidate clusters (§3.4);
#: the rest of the context is there to fill the budget, not as the answer's support.
ACCUMULATED_EVIDENCE = 5



@contextmanager
def _stage(result: Answer, name: str) -> Iterator[None]:
    """Adds the wall seconds of the block to ``result.seconds_by_stage[name]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        result.seconds_by_stage[name] = result.seconds_by_stage.get(name, 0.0) + time.perf_counter() - start


def _fact_text(fact: RetrievedFact) -> str:
    """A fact's statement as an answer context shows it: with the session day of its newest source
    ("… (8 May 2023)"), with no second date when the statement names its own day ("yesterday (7 May
    2023)"), "(undated)" when neither gives one."""
    text = fact.statement if names_a_day(fact.statement) else (
        dated(fact.statement, fact.event_time) if fact.event_time else f"{fact.statement} (undated)")
    if fact.superseded_by:  # found for a question about the past: says it no longer holds
        until = f" after {day_text(fact.valid_until)}" if fact.valid_until else ""
        text += f" [an earlier state: no longer true{until}]"
    return text


class Answer(BaseModel):
    """An answer with its trace (§3.5). Times are wall seconds; tokens are the model's tokens."""

    question: str
    answer: str
    sufficient: bool
    sufficiency_prob: float | None
    traced_back: bool
    facts_used: list[RetrievedFact] = Field(default_factory=list)
    evidence_used: list[Evidence] = Field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    first_token_seconds: float | None = Field(None, description="From the question to the answer's first "
                                              "streamed piece (seconds); None when no answer was generated.")
    seconds_by_stage: dict[str, float] = Field(default_factory=dict)
    active_facts_changed: list[str] = Field(default_factory=list)
    clusters_touched: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    context: str = Field("", description="The memory text given to the answer prompt.")
    context_source_ids: list[str] = Field(default_factory=list, description="Message ids behind that text.")
    context_tokens: int = Field(0, description="Tokens of ``context`` (the model's tokenizer).")
    gate_rule: str = Field("", description="Which sufficiency-gate rule applied, and why.")
    model: str = Field("", description="The LLM that answered.")
    model_at_chance: bool = Field(False, description="Measured at chance (its model profile): a demo model.")
    backend: str = Field("", description="What ran the model (``Runtime.line``: back-end and its details).")
    backend_warning: str = Field("", description="Markdown warning when the configured back-end could not "
                                                 "run and another stood in (``Runtime.warning``); else empty.")
    unsupported_mentions: list[str] = Field(default_factory=list,
                                            description="Names, numbers and dates not in ``context`` nor in the "
                                                        "question.")
    premise_mentions: list[str] = Field(default_factory=list,
                                        description="The question's own names, numbers and dates that the answer "
                                                    "repeats and ``context`` does not hold (the premise, unconfirmed).")
    relevance: float | None = Field(None, description="Best cosine of the question with what was retrieved "
                                                      "(evidence sentences, facts); None when nothing was.")
    nothing_relevant: bool = Field(False, description="Nothing in the memory is about the question: nothing "
                                                      "retrieved, a name it asks about that nothing retrieved "
                                                      "mentions, or ``relevance`` below ``relevance_floor``.")
    relevance_rule: str = Field("", description="What the relevance rules decided, and why.")
    language: str = Field("", description="The question's language (ISO 639-1, ``memsif.answer.language.detect``).")
    aggregation: bool = Field(False, description="The question asks for several things about the speakers it "
                                                 "names: their facts were gathered (the aggregation path).")
    aggregation_rule: str = Field("", description="Why the aggregation path was or was not taken.")
    history: bool = Field(False, description="The question asks about an earlier state (``asks_about_the_past``): "
                                             "superseded CoreFacts were searched too, each marked in the context.")
    answer_check_prob: float | None = Field(None, description="The model's P(yes) that ``context`` states what is "
                                            "asked (``memsif.answer.check``); None when not asked.")
    answer_check_rule: str = Field("", description="What the answer check decided, and why.")
    not_stated: bool = Field(False, description="The answer check found the asked detail missing: the answer "
                                                "says so, with ``closest``, instead of a generated answer.")
    closest: list[str] = Field(default_factory=list, description="The context's lines closest to the question, "
                                                                 "shown when ``not_stated``.")
    model_answer: str = Field("", description="The model's own answer when ``when_rule`` replaced it; else empty.")
    when_rule: str = Field("", description="Why the answer gives the period its context resolves instead of the "
                                           "model's date (``memsif.answer.when``); empty when the model's stands.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able (dates as ISO strings)."""
        return self.model_dump(mode="json")


def check_answer(config: MemSIFConfig, llm: LLM, profile: ModelProfile, question: str, question_date: str | None,
                 result: Answer) -> None:
    """The answer check (``memsif.answer.check.check_context``) when ``config.answer.answer_check`` asks it of
    ``llm``: sets ``result.answer_check_prob``, ``answer_check_rule``, ``not_stated`` and ``closest``."""
    min_p = answer_check_threshold(config.answer.answer_check, llm, profile)
    if min_p is None:
        result.answer_check_rule = (f"not asked: {llm.name or 'the model'} is not measured for the answer check "
                                    f"(answer_check={config.answer.answer_check})")
        return
    verdict = check_context(llm, question, result.context, question_date, min_p)
    result.answer_check_prob, result.answer_check_rule = verdict.p_yes, verdict.rule
    result.not_stated = verdict.refused
    if verdict.error:
        result.errors.append(f"answer check: {verdict.error}")
    if verdict.refused:
        result.closest = closest_lines([(f"{f.subject}: {_fact_text(f)}", f.score) for f in result.facts_used],
                                       [(f"{e.subject}: {e.statement}", e.score) for e in result.evidence_used])


class QueryPipeline:
    """Questions against ``backends``' memory, one at a time per namespace; its caches (token counts, a
    namespace's message texts) outlive a question. Without ``read_entities`` the question's named entities
    are never read (the flat baselines: no aggregation path, relevance without entity names)."""

    def __init__(self, backends: Backends, *, read_entities: bool = True) -> None:
        self.backends = backends
        self.config, self.llm = backends.config, backends.llm
        self.embedder, self.store = backends.embedder, backends.store
        self.entities = backends.entity_extractor if read_entities else None
        self.retriever = EvidenceRetriever(backends, self.entities)
        self.accumulator = EvidenceAccumulator(backends, self.entities)
        self.gate = SufficiencyGate(backends.config, backends.llm, backends.profile)
        self._said: dict[str, tuple[int, Said]] = {}  # namespace → (message count, its messages' text)

    def said(self, namespace: str) -> Said:
        """Every message text of ``namespace`` (what the relevance rules search for a name or a thing),
        kept until the namespace's message count changes; only the last namespace asked is kept."""
        count = self.store.count("message", namespace)
        cached = self._said.get(namespace)
        if cached is None or cached[0] != count:
            cached = (count, Said([m.message.text for m in self.store.messages(namespace, with_vectors=False)]))
            self._said = {namespace: cached}
        return cached[1]

    def require_sentence_index(self, namespace: str) -> None:
        """Raises StoreError (with the command that fixes it) when ``namespace`` was stored before the
        hybrid sentence index existed."""
        if self.store.count("sentence", namespace) == 0:
            self._require_still_there(namespace)
            data = "" if self.config.store.qdrant_url else f" --data-dir {self.config.store.resolved_data_dir}"
            raise StoreError(f"Namespace {namespace!r} was stored before the hybrid sentence index existed, so "
                             f"it cannot be searched yet. Add the index (nothing stored changes): "
                             f"python -m memsif upgrade{data}")

    # ------------------------------------------------------------------ query-local evidence
    def model_at_chance(self) -> bool:
        """Whether the configured LLM is one measured at chance on the engine's judgements (its
        ``ModelProfile.at_chance``: the packaged SmolLM2-135M labels 100 % of mismatched answers CORRECT,
        ``eval judge-check`` separation 0.54): a demo model, said so with every answer."""
        return self.backends.profile.at_chance

    def ask(self, question: str, *, namespace: str, question_date: str | None = None, generate: bool = True,
            on_text: Callable[[str], None] | None = None, accumulate: bool = True) -> Answer:
        """Answer ``question`` from ``namespace``'s memory, with the trace (§3.5). With ``generate=False``
        everything but the answer generation runs (retrieval-only evaluation; the ActiveFact pipeline
        still accumulates the evidence that would have been used). ``on_text`` receives the answer's
        text piece by piece as the model writes it (``memsif.llm.generate_streamed``). Without
        ``accumulate`` the evidence is not added to the ActiveFact clusters (``accumulate`` does it later).

        The sufficiency gate (``Answer.gate_rule`` says which rule applied): with no facts, or a
        model not trusted with the check (``sufficiency_gate``; under "auto" any model whose
        profile does not trust it: ``SufficiencyGate.trusted``),
        evidence is always added; otherwise the model's P(sufficient) ≥ ``sufficiency_threshold``
        makes the facts the whole context, and a failed check traces back.

        Raises:
            StoreError: the namespace was stored before the sentence index (the message says how to add it).
            NotFoundError: the namespace was deleted while the question was answered.
            LLMError: answer generation failed (sufficiency failures are recorded and fall back to
                tracing back to Structured Interaction Memory).
        """
        try:
            return self._ask(namespace, question, question_date, generate, on_text, accumulate)
        except CollectionMissing as exc:
            self._require_still_there(namespace)
            raise StoreError(str(exc)) from exc

    def _require_still_there(self, namespace: str) -> None:
        """Raises NotFoundError when ``namespace`` was deleted during the question (by another
        session or process): nothing of the question may be written into a deleted memory."""
        if self.store.count("sentence", namespace) == 0 and self.store.count("message", namespace) == 0:
            raise NotFoundError(f"Namespace {namespace!r} was deleted while this question was being answered; "
                                "its memory is gone. Ingest the transcript again to ask it questions.")

    def _ask(self, namespace: str, question: str, question_date: str | None, generate: bool,
             on_text: Callable[[str], None] | None, accumulate: bool) -> Answer:
        self.require_sentence_index(namespace)
        start = time.perf_counter()
        result = Answer(question=question, answer="", sufficient=False, sufficiency_prob=None, traced_back=False)
        with _stage(result, "retrieve_facts"):
            qv = self.embedder.embed_query(question)
            named = named_speakers(question, self.store.speakers(namespace))
            self._question_form(question, named, result)
            result.history = asks_about_the_past(question)
            facts = self.retriever.retrieve_facts(namespace, qv, named if result.aggregation else (), result.history)
        budget = self.config.answer.context_tokens
        floor = round(self.config.answer.flat_share * budget)  # the facts never take its room
        room = budget - floor - (self.llm.count_tokens(FACTS) + 1 if facts else 0)
        fact_lines, used_facts, left = fit_lines(facts, lambda f: f"- {f.subject}: {_fact_text(f)}", room,
                                                 self.llm.count_tokens)
        left += floor
        with _stage(result, "sufficiency"):
            self._gated(self.gate.decide(question, used_facts), result)  # on the facts the answer would see
        with _stage(result, "trace_back"):
            evidence: list[Evidence] = []
            if not result.sufficient:
                used = budget - left

                def measure(items: list[Evidence]) -> int:  # tokens of the evidence part, as the context holds it
                    return self.llm.count_tokens(render_context(fact_lines, items)) - used
                evidence = self.retriever.trace_back(namespace, question, qv, left, measure, named=named,
                                                     facts=used_facts, aggregation=result.aggregation,
                                                     floor=floor)
                result.traced_back = True
        self._relevance(question, facts, evidence, result, namespace)
        result.facts_used, result.evidence_used = used_facts, evidence
        result.context = render_context(fact_lines, evidence)
        result.context_tokens = self.llm.count_tokens(result.context) if result.context else 0
        result.context_source_ids = list(dict.fromkeys(
            [*(m for f in used_facts for m in f.source_message_ids),
             *(m for e in evidence for m in e.source_message_ids)]))
        if generate and not result.nothing_relevant:
            with _stage(result, "answer_check"):
                check_answer(self.config, self.llm, self.backends.profile, question, question_date, result)
        with _stage(result, "answer"):
            if generate:
                def tap(piece: str) -> None:  # the answer always streams, so its first piece is timed
                    if result.first_token_seconds is None:
                        result.first_token_seconds = time.perf_counter() - start
                    if on_text is not None:
                        on_text(piece)

                if result.nothing_relevant:  # said, not generated (on every model)
                    self._say(NOTHING_RELEVANT, result, tap)
                elif result.not_stated:
                    self._say(refusal(result.closest), result, tap)
                else:
                    self._answer(question, question_date, result, tap)
        self._require_still_there(namespace)  # an answer from a memory deleted meanwhile is no answer
        if accumulate:
            self.accumulate(namespace, result, qv)
        result.seconds = time.perf_counter() - start
        return result

    def accumulate(self, namespace: str, result: Answer, qv: np.ndarray | None = None) -> None:
        """The post-answer accumulation (§3.4) of ``result``'s best evidence into ``namespace``'s candidate
        clusters, recorded on ``result`` (``active_facts_changed``, ``clusters_touched``; why not: ``errors``).
        ``qv``: the question's (d,) vector, embedded again when not given."""
        if self.config.method.use_active_facts and result.evidence_used and not result.nothing_relevant:
            with _stage(result, "active_facts"):
                best = sorted(result.evidence_used, key=lambda e: -e.score)[:ACCUMULATED_EVIDENCE]
                vector = self.embedder.embed_query(result.question) if qv is None else qv
                done = self.accumulator.run(namespace, result.question, vector, best)
                result.active_facts_changed, result.clusters_touched = done.active_facts_changed, done.clusters_touched
                result.errors += [done.error] if done.error else []

    @staticmethod
    def _gated(verdict: GateVerdict, result: Answer) -> None:
        """The sufficiency gate's verdict, on the trace."""
        result.gate_rule, result.sufficient, result.sufficiency_prob = verdict.rule, verdict.sufficient, verdict.prob
        result.tokens_in += verdict.tokens_in
        result.errors += [verdict.error] if verdict.error else []

    def _question_form(self, question: str, named: list[str], result: Answer) -> None:
        """``result.aggregation``: the question names speakers and asks for a set of things about them
        (``entities.asks_for_several``): the aggregation path (their facts across Event Trajectories,
        up to ``aggregation_fact_top_k``; segments weighted ``aggregation_segment_weight``)."""
        cfg = self.config.answer
        several = self.entities is not None and self.entities.asks_for_several(question)
        result.aggregation = bool(named) and several
        if result.aggregation:
            facts = (f"up to {cfg.aggregation_fact_top_k} of their facts join the nearest ones"
                     if cfg.aggregation_fact_top_k else "the nearest facts (aggregation_fact_top_k = 0)")
            result.aggregation_rule = (f"asks for several things about {', '.join(named)}: {facts}; segment "
                                       f"relevance weighted {cfg.aggregation_segment_weight:g}")
        elif several:
            result.aggregation_rule = "asks for several things but names no speaker: the nearest facts"
        else:
            result.aggregation_rule = "asks for one thing: the nearest facts"

    def _relevance(self, question: str, facts: list[RetrievedFact], evidence: list[Evidence], result: Answer,
                   namespace: str) -> None:
        """``result.relevance``, ``nothing_relevant``, ``relevance_rule`` and ``language`` by
        ``memsif.answer.relevance.judge`` (the rules are documented there)."""
        cosines = [f.score for f in facts] + [e.scores["dense"] for e in evidence if "dense" in e.scores]
        result.relevance = round(max(cosines), 4) if cosines else None
        verdict = judge(question, result.relevance, self.config.answer.relevance_floor, self.store.speakers(namespace),
                        lambda: self.said(namespace), getattr(self.embedder, "name", "") or "", self.entities)
        result.nothing_relevant, result.relevance_rule, result.language = verdict

    def _say(self, text: str, result: Answer, on_text: Callable[[str], None]) -> None:
        """An answer the engine says instead of the model: ``text``."""
        result.answer = text
        self._record_model(result)
        on_text(text)

    def _record_model(self, result: Answer) -> None:
        """The model that answered, what ran it and whether it is a demo model, on ``result``."""
        runtime = runtime_of(self.llm)
        result.model = self.llm.name or ""
        result.backend, result.backend_warning = runtime.line(), runtime.warning()
        result.model_at_chance = self.model_at_chance()

    def _answer(self, question: str, question_date: str | None, result: Answer,
                on_text: Callable[[str], None] | None = None) -> None:
        """Generate the answer from ``result.context`` (streamed to ``on_text``); record tokens, the
        model and unsupported mentions."""
        prompt = answer_prompt.build(question, result.context, question_date)
        gen = generate_streamed(self.llm, prompt, on_text, max_new_tokens=self.config.answer.answer_max_tokens,
                                temperature=self.config.answer.answer_temperature, stop=answer_prompt.STOP)
        result.answer = gen.text.strip().split("\n")[0].strip()
        period = resolved_period(question, result.answer, result.context)
        if period is not None:
            result.model_answer, result.when_rule = result.answer, period.explain(result.answer)
            result.answer = period.answer
        result.tokens_in += gen.tokens_in
        result.tokens_out += gen.tokens_out
        self._record_model(result)
        # the question is not support: an answer that repeats its premise ("flew to Tokyo") must find it in the
        # context, else it is flagged as the premise, unconfirmed, apart from what the answer brought itself
        result.unsupported_mentions, result.premise_mentions = from_question(
            unsupported_mentions(result.answer, result.context), result.question)
