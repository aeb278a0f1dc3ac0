"""Evaluate tab — a lens on Structured Interaction Memory and Dual-Track Fact Memory.

When the built file carries questions with gold evidence turns (LoCoMo), every question is asked
retrieval-only (no answer is generated) of MemSIF and of two flat baselines at the same token budget
(Hybrid RAG: MemSIF's own sentence search with no structure; Naive RAG: whole turns by cosine).
Per question it shows where the gold evidence lies on the timeline, which of it each system's
context holds, and how MemSIF found each piece (search, a Topical Segment's score, an Event
Trajectory, a fact); questions whose evidence is spread out (TED ≥ 0.3, the NCE subset) are marked.
The questions run on a copy of the session's memory, so its ActiveFacts are the questions' own: per
promoted ActiveFact it says whether its sources had become CoreFacts, or whether only query demand
recovered them (§3.4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import gradio as gr

from memsif import JobCancelled, MemSIF, MemSIFError, NotFoundError, check_cancelled, job
from memsif.eval import (
    NCE_TED,
    CountingLLM,
    HybridRAGSystem,
    NaiveRAGSystem,
    context_paths,
    evidence_recall,
    load_locomo,
    load_longmemeval,
    mean_interval,
    paired_bootstrap,
    strict_recall,
    ted,
)
from memsif.inspector.common import (
    EMPTIED,
    BuiltSource,
    Inspector,
    JobProgress,
    Page,
    SessionSettings,
    Views,
    eval_namespace,
    guard,
    in_background,
    model_share,
    until_done,
)
from memsif.markdown import code_span, escape_markdown
from memsif.viz import LensRow, evidence_lens

EVAL_COLUMNS = ["question", "category", "TED", "gold evidence", "MemSIF", "Hybrid RAG", "Naive RAG",
                "how MemSIF found the gold turns"]
SYSTEMS = ("MemSIF", "Hybrid RAG", "Naive RAG")


#: Bootstrap resamples of each interval (a few milliseconds for a few hundred questions).
INTERVAL_RESAMPLES = 2000
#: ActiveFacts listed under the summary (the rest: the ActiveFacts tab).
ACTIVE_FACTS_LISTED = 10


def _samples(source: BuiltSource) -> list:
    """The built file's samples with their scored questions (LoCoMo, or LongMemEval), or []."""
    for loader in (load_locomo, load_longmemeval):
        try:
            return [s for s in loader(source.path, source.samples) if s.questions]
        except MemSIFError:
            continue
    return []


def _mean(values: list[float]) -> str:
    """The mean recall with its 95 % interval (bootstrap over the questions)."""
    if not values:
        return "–"
    mean, low, high = mean_interval(values, ["all"] * len(values), resamples=INTERVAL_RESAMPLES)
    return f"{100 * mean:.1f} % [{100 * low:.1f}, {100 * high:.1f}]"


def _values(rows: list[LensRow], name: str, measure: str = "recall") -> list[float]:
    """One system's recall values by ``measure`` ("recall": provenance, or "strict"), None left out."""
    return [v for r in rows if (v := getattr(r, measure).get(name)) is not None]


def _difference(rows: list[LensRow], a: str, b: str, measure: str = "recall") -> str:
    """a − b over the questions both answered, by ``measure``, with its paired 95 % interval."""
    pairs = [(x, y) for r in rows if (x := getattr(r, measure).get(a)) is not None
             and (y := getattr(r, measure).get(b)) is not None]
    if not pairs:
        return "–"
    ci = paired_bootstrap([x for x, _ in pairs], [y for _, y in pairs], ["all"] * len(pairs), stratified=True,
                          resamples=INTERVAL_RESAMPLES)
    return f"{100 * ci['diff']:+.1f} points [{100 * ci['ci_low']:+.1f}, {100 * ci['ci_high']:+.1f}]"


def _ask_all(eng: MemSIF, namespace: str, target: str, samples: list, budget: int,
             report: Callable[[int, int, str], None]) -> list[LensRow]:
    """Copy ``namespace``'s memory without its ActiveFact state into ``target`` and ask it every
    question of ``samples`` retrieval-only, beside Hybrid RAG and Naive RAG indexed per sample."""
    eng.import_namespace(eng.export_namespace(namespace).without_query_state(), target)
    llm = CountingLLM(eng.llm)
    total = sum(len(s.questions) for s in samples)
    rows: list[LensRow] = []
    for sample in samples:
        flat = {"Hybrid RAG": HybridRAGSystem(llm, eng.config, eng.embedder, budget),
                "Naive RAG": NaiveRAGSystem(llm, eng.config, eng.embedder, budget)}
        report(len(rows), total, "indexing the flat baselines")
        for system in flat.values():
            system.build(sample)
        position = {m.id: k for k, m in enumerate(sample.messages)}
        texts = {m.id: m.text for m in sample.messages}
        for q in sample.questions:
            check_cancelled()
            answer = eng.ask(q.question, namespace=target, question_date=q.question_date, generate=False)
            theirs = {name: system.answer(q, generate=False) for name, system in flat.items()}
            got = {"MemSIF": answer.context_source_ids, **{name: a.context_ids for name, a in theirs.items()}}
            contexts = {"MemSIF": answer.context, **{name: a.context for name, a in theirs.items()}}
            rows.append(LensRow(
                question=q.question, category=q.category, sample=sample.sample_id,
                ted=ted([position[e] for e in q.evidence_ids], len(sample.messages)),
                gold=q.evidence_ids, gold_index=[position[e] for e in q.evidence_ids],
                found={name: [e for e in q.evidence_ids if e in set(ids)] for name, ids in got.items()},
                recall={name: evidence_recall(q.evidence_ids, texts, "", ids)[1] for name, ids in got.items()},
                strict={name: strict_recall(q.evidence_ids, texts, q.gold, c) for name, c in contexts.items()},
                # per gold turn in MemSIF's context, the path that brought it ("trajectory E3", "search (S12)")
                how={mid: how for mid, how in context_paths(answer).items() if mid in q.evidence_ids}))
            report(len(rows), total, "questions")
    return rows


def summary_markdown(rows: list[LensRow], budget: int, eng: MemSIF, namespace: str) -> str:
    """Mean evidence recall (provenance) per system, overall and on the NCE subset, and what the
    questions did to ActiveFacts."""
    nce = [r for r in rows if r.ted is not None and r.ted >= NCE_TED]
    lines = [f"**{len(rows)} questions** ({len(nce)} NCE: gold evidence spread over ≥ 30 % of the conversation), "
             f"asked retrieval-only at {budget} tokens. Evidence recall = share of gold evidence turns in the "
             "context (by provenance), with its 95 % interval (bootstrap over questions; differences paired "
             "on the same questions)."]
    strict = ("**Strict evidence recall**: a gold turn counts only when its sentences that best match the gold "
              "answer are in the context (a fact built from it does not count).")
    for measure, heading in (("recall", None), ("strict", strict)):
        lines += ["", heading, ""] if heading else [""]
        lines += [f"| system | all {len(rows)} questions | {len(nce)} NCE |", "|---|---|---|"]
        lines += [f"| {name} | {_mean(_values(rows, name, measure))} | {_mean(_values(nce, name, measure))} |"
                  for name in SYSTEMS]
        lines.append(f"| MemSIF − Hybrid RAG | {_difference(rows, 'MemSIF', 'Hybrid RAG', measure)} | "
                     f"{_difference(nce, 'MemSIF', 'Hybrid RAG', measure)} |")
    by_trajectory = sum(1 for r in rows for how in r.how.values() if how.startswith("trajectory"))
    lines.append(f"\nGold turns MemSIF's Event Trajectory path brought in: {by_trajectory}.")
    core_sources = {m for f in eng.facts(namespace, history=True) for m in f.source_message_ids}
    promoted = eng.active_facts(namespace)
    if promoted:
        recovered = {a.id for a in promoted if not set(a.source_message_ids) & core_sources}
        lines.append(f"\n**ActiveFacts** the questions promoted: {len(promoted)}; "
                     f"{len(recovered)} of them rest on messages no CoreFact was written from (recovered through "
                     "query demand):")
        for a in promoted[:ACTIVE_FACTS_LISTED]:
            tag = "recovered by query demand" if a.id in recovered else "its sources are CoreFact sources too"
            lines.append(f"- {code_span(a.id)} {escape_markdown(a.statement)} — sources "
                         f"{escape_markdown(', '.join(a.source_message_ids))} ({tag})")
        if len(promoted) > ACTIVE_FACTS_LISTED:
            lines.append(f"- …and {len(promoted) - ACTIVE_FACTS_LISTED} more (ActiveFacts tab)")
    else:
        lines.append("\nNo ActiveFact was promoted by these questions (θ_s and θ_q not both reached).")
    return "\n".join(lines)


def table_rows(rows: list[LensRow]) -> list[list]:
    """One row per question (``EVAL_COLUMNS``), NCE questions first."""
    return [[r.question, r.category, "" if r.ted is None else round(r.ted, 2), ", ".join(r.gold),
             *("–" if r.recall[name] is None else f"{100 * r.recall[name]:.0f} %" for name in SYSTEMS),
             "; ".join(f"{g}: {r.how.get(g, 'missed')}" for g in r.gold)]
            for r in sorted(rows, key=lambda r: -(r.ted or 0.0))]


def redraw(rows: list[LensRow] | None, which: str):
    """The evidence figure again for "NCE questions" or "all questions"."""
    return evidence_lens(rows, nce_only=which.startswith("NCE")) if rows else None


@dataclass(init=False)
class EvaluateViews(Views):
    """The Evaluate tab's components; a delete empties the summary, figure, table and rows kept for redrawing."""

    summary: gr.Markdown = field(metadata={EMPTIED: ""})
    plot: gr.Plot = field(metadata={EMPTIED: None})
    table: gr.Dataframe = field(metadata={EMPTIED: []})
    rows: gr.State = field(metadata={EMPTIED: None})
    run_btn: gr.Button
    which: gr.Radio


@dataclass(frozen=True)
class EvaluateTab:
    """The Evaluate tab's handlers, bound to the page's ``Inspector`` (``app``)."""

    app: Inspector
    title = "Evaluate"

    def layout(self) -> EvaluateViews:
        ui = EvaluateViews()
        gr.Markdown("For files that carry questions with gold evidence (LoCoMo, LongMemEval): ask them all "
                    "retrieval-only of MemSIF and of two flat baselines at the same budget, and see where the evidence "
                    "lies, which system's context holds it, and how MemSIF found it. Runs on a copy of this memory.")
        ui.run_btn = gr.Button("Evaluate retrieval on this file's questions", elem_id="eval-btn")
        ui.summary = gr.Markdown(elem_id="eval-summary")
        ui.which = gr.Radio(["NCE questions", "all questions"], value="NCE questions", label="Show")
        ui.plot = gr.Plot(label="Gold evidence per question on the timeline: found by MemSIF (by path), by Hybrid RAG, "
                          "missed", elem_id="eval-plot")
        ui.table = gr.Dataframe(headers=EVAL_COLUMNS, label="Per question (most spread-out evidence first)", wrap=True,
                                max_height=500, column_widths=["26%", "9%", "6%", "12%", "8%", "8%", "8%", "23%"])
        ui.rows = gr.State()
        return ui

    @guard
    def evaluate(self, namespace: str | None, source: BuiltSource | None, settings: SessionSettings | None,
                 progress=gr.Progress()):  # noqa: B008 (Gradio idiom)
        """Ask every scored question of the built file retrieval-only of MemSIF, Hybrid RAG and Naive
        RAG at MemSIF's token budget (a few minutes for a LoCoMo conversation). Yields (summary markdown,
        evidence figure, rows of ``EVAL_COLUMNS``, the ``LensRow`` list kept for redrawing)."""
        eng = self.app.session_engine(namespace, settings)
        if eng is None or not source:
            yield "No memory yet: build it first (Build tab).", None, [], []
            return
        samples = _samples(source)
        if not samples:
            yield (f"{code_span(source.name)} carries no questions with gold evidence turns (LoCoMo and "
                   "LongMemEval files do): nothing to evaluate."), None, [], []
            return
        target = eval_namespace(namespace)
        budget = eng.config.answer.context_tokens

        def work(report):
            eng.delete_namespace(target)
            try:
                with job(target, "structure"):  # a rebuild or delete of the session's memory cancels it (locks.cancel)
                    rows = _ask_all(eng, namespace, target, samples, budget, report)
                return rows, summary_markdown(rows, budget, eng, target)
            finally:  # the copy never outlives its evaluation (a crash leaves it to the next start: common.engine)
                eng.delete_namespace(target)

        def describe(state: JobProgress, seconds: float) -> str:
            if state.stage == "starting":
                return f"Copying this memory for the evaluation… {seconds:.0f} s{model_share(namespace)}"
            return (f"Evaluating: {state.stage} — {state.done} of {state.total} questions · {seconds:.0f} s"
                    f"{model_share(namespace)}")

        try:
            rows, summary = yield from until_done(in_background(work, progress, describe),
                                                  lambda text: (text, gr.skip(), gr.skip(), gr.skip()))
        except (JobCancelled, NotFoundError) as exc:  # the memory it copied was replaced or deleted meanwhile
            reason = str(exc) if isinstance(exc, JobCancelled) else "this session's memory was deleted or replaced"
            yield f"⏹️ The evaluation stopped: {reason}. Run it again on the memory that exists now.", None, [], []
            return
        yield summary, evidence_lens(rows, nce_only=True), table_rows(rows), rows

    def wire(self, page: Page) -> None:
        """The tab's own events."""
        e = page[EvaluateViews]
        e.run_btn.click(self.evaluate, inputs=[page.namespace, page.source, page.settings],
                        outputs=[e.summary, e.plot, e.table, e.rows],
                        show_progress_on=e.summary, api_name="evaluate")
        e.which.change(redraw, inputs=[e.rows, e.which], outputs=e.plot, api_name=False)
