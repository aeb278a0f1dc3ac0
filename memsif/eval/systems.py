"""The systems compared on the same backbone (App. C.2): MemSIF, Full-Context, Naive RAG and Hybrid RAG.

All three answer with the same prompt (``memsif.prompts.answer``, temperature 0.1, 512-token cap) and
render a turn the same way (``Speaker (date): text``), so what differs is only how the context is
built. ``CountingLLM`` counts LLM calls and tokens for the cost figures (App. H).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memsif.backends import Backends
from memsif.config import MemSIFConfig
from memsif.embed import Embedder
from memsif.eval.data import EvalQuestion, EvalSample
from memsif.llm import LLM, Generation, context_window
from memsif.prompts import Prompt, turn_line
from memsif.prompts import answer as answer_prompt
from memsif.records import Message

#: The paper's context budget for the baselines (≈ 32K tokens, App. C.2); smaller models get less.
MAX_CONTEXT_TOKENS = 32_000
#: Tokens kept free for the prompt's instructions and question besides the answer itself.
PROMPT_RESERVE = 256
#: Naive RAG: top chunks by cosine before the budget cut (App. C.2).
RAG_TOP_K = 100

ABLATIONS = {
    "none": {},
    "no-ts": {"use_segments": False},
    "no-et": {"use_trajectories": False},
    "no-cf": {"use_core_facts": False},
    "no-af": {"use_active_facts": False},
}


class CountingLLM:
    """Wraps an LLM and counts calls and tokens (prompt + generated) going through it."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.name = inner.name
        self.context_window = context_window(inner)
        self.calls = 0
        self.tokens = 0

    def snapshot(self) -> tuple[int, int]:
        return self.calls, self.tokens

    def yes_probability(self, prompts: Sequence[Prompt]) -> list[float]:
        self.calls += len(prompts)
        self.tokens += sum(self.inner.count_tokens(p.system + p.text) + 1 for p in prompts)
        return self.inner.yes_probability(prompts)

    def choice_probabilities(self, prompt: Prompt, labels: Sequence[str]) -> list[float]:
        self.calls += 1
        self.tokens += self.inner.count_tokens(prompt.system + prompt.text) + 1
        return self.inner.choice_probabilities(prompt, labels)

    def generate(self, prompt: Prompt, max_new_tokens: int = 512, temperature: float = 0.1,
                 json_schema: dict | None = None, stop: Sequence[str] = ()) -> Generation:
        gen = self.inner.generate(prompt, max_new_tokens=max_new_tokens, temperature=temperature,
                                  json_schema=json_schema, stop=stop)
        self.calls += 1
        self.tokens += gen.tokens_in + gen.tokens_out
        return gen

    def generate_batch(self, prompts: Sequence[Prompt], max_new_tokens: int = 512, temperature: float = 0.1,
                       json_schema: dict | None = None) -> list[Generation | Exception]:
        """The inner back-end's padded batch where it has one (else one by one), counted per prompt;
        a prompt that failed is its exception in the list, as ``memsif.llm.generate_many`` gives."""
        from memsif.llm import generate_many

        results = generate_many(self.inner, prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                                json_schema=json_schema)
        for r in results:
            if not isinstance(r, Exception):
                self.calls += 1
                self.tokens += r.tokens_in + r.tokens_out
        return results

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


@dataclass
class SystemAnswer:
    """One answer with what the evaluation needs: the context text and the message ids behind it."""

    answer: str
    context: str
    context_ids: list[str]
    tokens: int            # LLM tokens of this question (prompt + generated, every call)
    llm_calls: int
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class BuildCost:
    """Construction cost of one sample's memory (App. H). Seconds are wall time."""

    seconds: float = 0.0
    llm_calls: int = 0
    tokens: int = 0
    messages: int = 0
    reused: bool = False


def render_turn(m: Message) -> str:
    """One turn as every system puts it in the answer context (``memsif.prompts.turn_line``)."""
    return turn_line(m)


def context_budget(llm: CountingLLM, config: MemSIFConfig) -> int:
    """Context tokens a baseline may fill: the model's window less the answer cap and the prompt
    reserve, at most the paper's 32K."""
    return max(0, min(MAX_CONTEXT_TOKENS, llm.context_window - config.answer.answer_max_tokens - PROMPT_RESERVE))


class _TurnBaseline:
    """Shared parts of the two baselines: rendered turns with token counts, the answer call."""

    name = ""

    def __init__(self, llm: CountingLLM, config: MemSIFConfig, budget: int | None = None) -> None:
        self.llm, self.config = llm, config
        window = context_budget(llm, config)
        self.budget = min(window, budget) if budget else window
        self.messages: list[Message] = []
        self.lines: list[str] = []
        self.costs: list[int] = []

    def build(self, sample: EvalSample) -> BuildCost:
        start = time.perf_counter()
        self.messages = list(sample.messages)
        self.lines = [render_turn(m) for m in self.messages]
        self.costs = [self.llm.count_tokens(line) + 1 for line in self.lines]
        return BuildCost(seconds=time.perf_counter() - start, messages=len(self.messages))

    def chosen(self, question: EvalQuestion) -> list[int]:
        raise NotImplementedError

    def answer(self, question: EvalQuestion, generate: bool = True) -> SystemAnswer:
        start = time.perf_counter()
        calls, tokens = self.llm.snapshot()
        keep = sorted(self.chosen(question))
        context = "\n".join(self.lines[i] for i in keep)
        text = ""
        if generate:
            prompt = answer_prompt.build(question.question, context, question.question_date)
            gen = self.llm.generate(prompt, max_new_tokens=self.config.answer.answer_max_tokens,
                                    temperature=self.config.answer.answer_temperature, stop=answer_prompt.STOP)
            text = gen.text.strip().split("\n")[0].strip()
        calls2, tokens2 = self.llm.snapshot()
        return SystemAnswer(text, context, [self.messages[i].id for i in keep], tokens2 - tokens, calls2 - calls,
                            time.perf_counter() - start, {"turns_in_context": len(keep)})


class FullContextSystem(_TurnBaseline):
    """The whole history, tail-truncated to the context budget (the most recent turns are kept)."""

    name = "full-context"

    def chosen(self, question: EvalQuestion) -> list[int]:
        budget, keep = self.budget, []
        for i in range(len(self.lines) - 1, -1, -1):
            if self.costs[i] > budget:
                break
            budget -= self.costs[i]
            keep.append(i)
        return keep


class NaiveRAGSystem(_TurnBaseline):
    """Each turn a chunk; the top 100 by cosine to the question, in chronological order, within the
    same budget (lower-ranked chunks are dropped first)."""

    name = "naive-rag"

    def __init__(self, llm: CountingLLM, config: MemSIFConfig, embedder: Embedder, budget: int | None = None) -> None:
        super().__init__(llm, config, budget)
        self.embedder = embedder
        self.vectors = np.zeros((0, 1), dtype=np.float32)

    def build(self, sample: EvalSample) -> BuildCost:
        cost = super().build(sample)
        start = time.perf_counter()
        self.vectors = self.embedder.embed_documents([m.text for m in self.messages])
        cost.seconds += time.perf_counter() - start
        return cost

    def chosen(self, question: EvalQuestion) -> list[int]:
        if not self.lines:
            return []
        scores = self.vectors @ self.embedder.embed_query(question.question)
        budget, keep = self.budget, []
        for i in np.argsort(-scores, kind="stable")[:RAG_TOP_K]:
            if self.costs[i] <= budget:
                budget -= self.costs[i]
                keep.append(int(i))
        return keep


def context_paths(answer: Any) -> dict[str, str]:
    """How each source turn entered a ``memsif.answer.query.Answer``'s context: "trajectory E3", "fact
    source (S4)" (a fact's source sentence), "search (S12)" (the hybrid search, in Topical Segment
    S12), or "fact F4" (only as a fact's provenance). The first path that brought it wins."""
    out: dict[str, str] = {}
    for e in answer.evidence_used:
        for mid in e.source_message_ids:
            out.setdefault(mid, f"trajectory {e.trajectory_id}" if "trajectory" in e.found_by
                           else f"fact source ({e.segment_id or 'no segment'})" if "fact" in e.found_by
                           else f"search ({e.segment_id or 'no segment'})")
    for f in answer.facts_used:
        for mid in f.source_message_ids:
            out.setdefault(mid, f"fact {f.id}")
    return out


def _counted(llm: CountingLLM, ask: Callable[[], Any], extra: Callable[[Any], dict[str, Any]]) -> SystemAnswer:
    """Run ``ask`` (returning a ``memsif.answer.query.Answer``) and count its LLM calls, tokens and seconds."""
    start = time.perf_counter()
    calls, tokens = llm.snapshot()
    result = ask()
    calls2, tokens2 = llm.snapshot()
    return SystemAnswer(result.answer, result.context, result.context_source_ids, tokens2 - tokens, calls2 - calls,
                        time.perf_counter() - start, extra(result))


class HybridRAGSystem:
    """The strongest flat design: every turn split into sentences (the turn as provenance), a dense
    and a lexical (BM25) search fused by reciprocal rank in Qdrant, the budget filled by fused score
    and shown like MemSIF's evidence (chronological, under dates). It is MemSIF's own query-local
    evidence search with no Topical Segment, Event Trajectory or fact in it, over an in-memory
    store of its own, so a report shows what the structure adds."""

    name = "hybrid-rag"

    def __init__(self, llm: CountingLLM, config: MemSIFConfig, embedder: Embedder, budget: int | None = None) -> None:
        from memsif.answer.query import QueryPipeline
        from memsif.store import MemoryStore

        self.llm, self.embedder = llm, embedder
        window = context_budget(llm, config)
        self.budget = min(window, budget or config.answer.context_tokens)
        self.config = config.replace(use_segments=False, use_trajectories=False, use_core_facts=False,
                                     use_active_facts=False, context_tokens=self.budget)
        self.store = MemoryStore(in_memory=True)
        self.store.ensure_collections(embedder.name, embedder.dim)
        self.pipeline = QueryPipeline(Backends(self.config, llm=llm, embedder=embedder, store=self.store),
                                      read_entities=False)
        self.namespace = ""

    def build(self, sample: EvalSample) -> BuildCost:
        from memsif.interaction.sentences import build_sentences

        start = time.perf_counter()
        self.store.delete_namespace(self.namespace)
        self.namespace = f"hybrid-{sample.sample_id}"
        messages = [m.model_copy(update={"namespace": self.namespace, "index": k})
                    for k, m in enumerate(sample.messages)]
        vectors = self.embedder.embed_documents([m.text for m in messages])
        sentences = build_sentences(messages, {m.id: v for m, v in zip(messages, vectors, strict=True)}, {},
                                    self.embedder)
        self.store.put_sentences(self.namespace, sentences)
        return BuildCost(seconds=time.perf_counter() - start, messages=len(messages))

    def answer(self, question: EvalQuestion, generate: bool = True) -> SystemAnswer:
        return _counted(self.llm, lambda: self.pipeline.ask(question.question, namespace=self.namespace,
                                                            question_date=question.question_date, generate=generate),
                        lambda r: {"evidence_items": len(r.evidence_used)})


class MemSIFSystem:
    """MemSIF itself: construction by ``MemSIF.ingest`` (Structured Interaction Memory + CoreFacts),
    questions by ``MemSIF.ask``, whose trace gives the context and its source ids. One namespace per
    sample and ablation, so candidate clusters and ActiveFacts persist within a conversation and
    start empty for the next (online query-state protocol)."""

    name = "memsif"

    def __init__(self, engine, llm: CountingLLM, tag: str, ablation: str = "none", budget: int | None = None) -> None:
        if ablation not in ABLATIONS:
            raise ValueError(f"unknown ablation {ablation!r}; choose from {sorted(ABLATIONS)}")
        self.base_engine, self.llm, self.tag, self.ablation = engine, llm, tag, ablation
        changes = {**ABLATIONS[ablation], **({"context_tokens": budget} if budget else {})}
        self.engine = engine.with_config(engine.config.replace(**changes)) if changes else engine
        self.namespace = ""

    def base_namespace(self, sample: EvalSample) -> str:
        return f"{self.tag}-{sample.sample_id}"

    def build(self, sample: EvalSample) -> BuildCost:
        """Build (or resume: ingest is idempotent) the sample's memory, then give this ablation a
        fresh copy of it without any ActiveFact state. "w/o CF" builds no CoreFacts (a later run of
        another ablation extracts them into the same memory)."""
        base = self.base_namespace(sample)
        start = time.perf_counter()
        calls, tokens = self.llm.snapshot()
        report = self.base_engine.ingest(sample.messages, namespace=base, core_facts=self.ablation != "no-cf")
        calls2, tokens2 = self.llm.snapshot()
        cost = BuildCost(time.perf_counter() - start, calls2 - calls, tokens2 - tokens, len(sample.messages),
                         reused=report.messages == 0 and report.fact_llm_calls == 0)
        self.namespace = f"{base}-{self.ablation}"
        self.base_engine.delete_namespace(self.namespace)
        self.base_engine.import_namespace(self.base_engine.export_namespace(base).without_query_state(),
                                          self.namespace)
        return cost

    def answer(self, question: EvalQuestion, generate: bool = True) -> SystemAnswer:
        return _counted(self.llm, lambda: self.engine.ask(question.question, namespace=self.namespace,
                                                          question_date=question.question_date, generate=generate),
                        lambda r: {"sufficient": r.sufficient, "sufficiency_prob": r.sufficiency_prob,
                                   "traced_back": r.traced_back, "gate_rule": r.gate_rule, "errors": r.errors,
                                   "aggregation": r.aggregation, "paths": context_paths(r),
                                   "fact_ids": [f.id for f in r.facts_used], "context": r.context,
                                   "first_token_s": r.first_token_seconds, "model_answer": r.model_answer,
                                   "when_rule": r.when_rule, "active_facts_changed": r.active_facts_changed})
