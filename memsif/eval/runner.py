"""Run an evaluation the way the paper does (§4.1, App. D) and write its results.

For each sample: build each system's memory, then ask the sample's questions in a fixed seeded
order (online query-state protocol: query-local evidence is dropped after each answer; candidate
clusters and ActiveFacts persist within a conversation and start empty for the next; gold answers
never reach memory). Each answer is scored by token F1 and, separately, by the LLM judge; its
context is checked against the gold evidence turns (evidence recall).

Output in ``out``: ``questions.jsonl`` (one row per system × question), ``summary.json``,
``report.md`` (the paper-style table and the figures it lacks) and plotly HTML figures.
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memsif.errors import MemSIFError
from memsif.eval.data import CATEGORIES, EvalQuestion, EvalSample, seeded_order
from memsif.eval.metrics import (
    asv,
    evidence_recall,
    fixed_segments,
    locomo_f1,
    mean_interval,
    random_sntd,
    sntd,
    strict_recall,
    ted,
)
from memsif.eval.results import Cost, EvalSummary, QuestionResult, Scores, SystemSummary
from memsif.eval.systems import (
    ABLATIONS,
    BuildCost,
    CountingLLM,
    FullContextSystem,
    HybridRAGSystem,
    MemSIFSystem,
    NaiveRAGSystem,
    SystemAnswer,
)
from memsif.files import write_file
from memsif.llm import LLM, runtime_of
from memsif.prompts import eval_judge
from memsif.timeparse import annotate_relative_dates

SYSTEMS = ("memsif", "full-context", "naive-rag", "hybrid-rag")
JUDGES = ("f1", "llm", "both")
NCE_TED = 0.3
SEGMENT_LENGTHS = (1, 2, 4, 8)
NEIGHBOUR_RANKS = (1, 2, 4, 8)


@dataclass
class EvalOptions:
    """What to run. ``systems`` and ``ablations`` are run as a grid (ablations apply to MemSIF only)."""

    dataset: str                         # "locomo" or "longmemeval"
    systems: Sequence[str] = ("memsif",)
    ablations: Sequence[str] = ("none",)
    judge: str = "both"
    seed: int = 0
    limit: int | None = None             # at most this many questions per sample (after the seeded order)
    only: frozenset[str] | None = None   # only the questions with these ids ("conv-26/q132"), before the limit
    generate: bool = True                # False: retrieval only (evidence recall, no answers, no judges)
    tag: str = "eval"                    # namespace prefix of the MemSIF memories (reused across runs)
    context_budget: int | None = None    # every system fills at most this many context tokens (label "system@N")
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for what, chosen, known in (("system", self.systems, SYSTEMS), ("ablation", self.ablations, sorted(ABLATIONS))):
            if bad := [x for x in chosen if x not in known]:
                raise ValueError(f"unknown {what}(s) {bad}; choose from {known}")
        if self.judge not in JUDGES:
            raise ValueError(f"judge must be one of {JUDGES}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be at least 1 question per sample, not {self.limit}")
        if self.context_budget is not None and self.context_budget < 1:
            raise ValueError(f"context_budget must be a positive number of tokens, not {self.context_budget}")

    def questions_of(self, sample: EvalSample) -> list[EvalQuestion]:
        """The questions of ``sample`` this run asks: in the seeded order, only those ``only`` lists,
        at most ``limit``."""
        return [q for q in seeded_order(sample.questions, self.seed, sample.sample_id)
                if self.only is None or q.qid in self.only][:self.limit]


def judge_answer(llm: LLM, question: str, gold: str, answer: str) -> tuple[bool, float]:
    """The LLM judge (App. I criterion): (CORRECT?, P(CORRECT)) from one scored forward pass."""
    p_correct, _ = llm.choice_probabilities(eval_judge.build(question, gold, answer), eval_judge.LABELS)
    return p_correct >= 0.5, p_correct


def judge_rows(rows: Sequence[QuestionResult], llm: LLM, *, again: bool = False,
               done: Callable[[int, int], None] | None = None) -> int:
    """Score the answers of a finished run with the LLM judge, in place: every row not judged yet (all
    rows with ``again``); ``done(k, n)`` after each. Returns how many rows were judged. A failed judge
    call is recorded in the row (``judge_error``), as in a run."""
    todo = [r for r in rows if again or (r.llm_correct is None and r.judge_error is None)]
    for k, row in enumerate(todo, 1):
        row.judge_error = None
        _judge(row, "llm", llm)
        if done:
            done(k, len(todo))
    return len(todo)


def rescored(summary: EvalSummary, rows: Sequence[QuestionResult]) -> EvalSummary:
    """``summary`` with every system's score blocks computed again from ``rows`` (costs kept)."""
    systems = {label: figures.model_copy(update=score_blocks([r for r in rows if r.label == label]))
               for label, figures in summary.systems.items()}
    judged = any(r.llm_correct is not None for r in rows)
    scored = any(r.f1 is not None for r in rows)
    judge = "both" if judged and scored else "llm" if judged else summary.judge
    return summary.model_copy(update={"systems": systems, "judge": judge})


def pooled(runs: Sequence[tuple[EvalSummary, Sequence[QuestionResult]]]) -> EvalSummary:
    """One summary of several runs over different samples (a long evaluation split by ``--samples``):
    every system's scores and intervals computed again from all the rows (questions resampled within
    each sample, as in one run), the construction costs added up and the per-question costs averaged
    over all questions (``summarise``), wall seconds added, the peak memory the largest, the TSM
    diagnostics averaged over all samples; the judge model kept when one judged them all.

    ``runs`` are (summary, rows) pairs, e.g. read from ``summary.json`` and ``questions.jsonl``.

    Raises:
        ValueError: no runs; runs of different datasets, seeds, question limits or answer modes; or a
            question answered by the same system in two runs.
    """
    if not runs:
        raise ValueError("pooling needs at least one run")
    first = runs[0][0]
    for summary, _ in runs[1:]:
        for name in ("dataset", "seed", "limit", "generate"):
            if getattr(summary, name) != getattr(first, name):
                raise ValueError(f"the runs differ in {name} ({getattr(first, name)!r} and "
                                 f"{getattr(summary, name)!r}): only runs made alike can be pooled")
    seen: set[tuple[str, str, str]] = set()
    rows: list[QuestionResult] = []
    builds: dict[str, list[dict[str, Any]]] = {}
    for summary, mine in runs:
        for r in mine:
            key = (r.label, r.sample_id, r.qid)
            if key in seen:
                raise ValueError(f"{r.label} answered {r.qid} in two of the runs: pool runs "
                                 "over different samples (or questions), not a run and its repeat")
            seen.add(key)
        rows += mine
        for label, figures in summary.systems.items():
            builds.setdefault(label, []).append(_build_of(figures.cost))
    judged = any(r.llm_correct is not None for r in rows)
    scored = any(r.f1 is not None for r in rows)
    only = {q for summary, _ in runs for q in summary.only or []}
    options = EvalOptions(first.dataset, judge="both" if judged and scored else "llm" if judged else "f1",
                          seed=first.seed, limit=first.limit if isinstance(first.limit, int) else None,
                          only=frozenset(only) or None, generate=first.generate)
    out = summarise(rows, builds, options)
    out.limit = first.limit
    out.wall_seconds = round(sum(summary.wall_seconds for summary, _ in runs), 1)
    out.peak_rss_mb = max(summary.peak_rss_mb for summary, _ in runs)
    out.model = " / ".join(dict.fromkeys(summary.model for summary, _ in runs if summary.model))
    out.diagnostics = _pooled_diagnostics([summary.diagnostics for summary, _ in runs])
    judges = {json.dumps(j, sort_keys=True): j for summary, _ in runs
              if (j := (summary.model_extra or {}).get("judge_model"))}
    return out.model_copy(update={"judge_model": next(iter(judges.values()))}) if len(judges) == 1 else out


def _build_of(cost: Cost) -> dict[str, Any]:
    """A run's construction cost as ``summarise`` adds builds up; runs written before ``build_messages``
    was recorded give their message count back through their LLM calls per message."""
    messages = cost.build_messages
    if messages is None:
        rate = cost.llm_calls_per_message
        messages = round(cost.build_llm_calls / rate) if rate else 0
    return {"seconds": cost.build_seconds, "tokens": cost.build_tokens, "llm_calls": cost.build_llm_calls,
            "messages": messages}


def _pooled_diagnostics(parts: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The TSM diagnostics of several runs, each figure averaged over all their samples."""
    parts = [d for d in parts if d and d.get("samples")]
    if not parts:
        return None
    weights = [d["samples"] for d in parts]

    def mean(values: Sequence[float | None]) -> float | None:
        kept = [(v, w) for v, w in zip(values, weights, strict=True) if v is not None]
        return round(sum(v * w for v, w in kept) / sum(w for _, w in kept), 4) if kept else None
    return {"asv": {n: mean([d["asv"].get(n) for d in parts]) for n in parts[0]["asv"]},
            "sntd": {k: mean([d["sntd"].get(k) for d in parts]) for k in parts[0]["sntd"]},
            "sntd_random": mean([d.get("sntd_random") for d in parts]), "samples": sum(weights)}


def judge_check(llm: LLM, rows: Sequence[QuestionResult], n: int = 100, seed: int = 0) -> dict[str, Any]:
    """How far the LLM judge can be trusted on this model: it grades two controls per question, the
    gold answer itself (must be CORRECT) and another question's gold answer (must be WRONG).

    ``rows`` are result rows (``questions.jsonl``); up to ``n`` distinct questions are drawn with
    ``seed``. Returns the share labelled CORRECT for each control, the mean P(CORRECT) of each, and
    ``separation`` = P(gold judged more likely CORRECT than a mismatched answer), 0.5 = chance.
    A judge that labels most mismatched answers CORRECT makes LLM-judge ACC meaningless.

    Raises:
        ValueError: fewer than two distinct questions with distinct gold answers.
    """
    if n < 1:
        raise ValueError(f"judge_check needs n >= 1 questions, not {n}")
    questions = list({(r.sample_id, r.qid): r for r in rows if r.gold.strip()}.values())
    if len({r.gold.strip().lower() for r in questions}) < 2:
        raise ValueError("judge_check needs at least two questions with different gold answers")
    rng = np.random.default_rng(seed)
    picked = [questions[i] for i in rng.permutation(len(questions))[:n]]
    same, other = [], []
    for r in picked:
        gold = r.gold
        wrong = gold
        while wrong.strip().lower() == gold.strip().lower():
            wrong = questions[int(rng.integers(len(questions)))].gold
        same.append(judge_answer(llm, r.question, gold, gold)[1])
        other.append(judge_answer(llm, r.question, gold, wrong)[1])
    pairs = [(a > b) + 0.5 * (a == b) for a in same for b in other]
    return {"questions": len(picked), "model": llm.name,
            "gold_labelled_correct": round(float(np.mean([p >= 0.5 for p in same])), 4),
            "mismatched_labelled_correct": round(float(np.mean([p >= 0.5 for p in other])), 4),
            "gold_p_correct_mean": round(float(np.mean(same)), 4),
            "mismatched_p_correct_mean": round(float(np.mean(other)), 4),
            "separation": round(float(np.mean(pairs)), 4)}


def diagnostics(samples: Sequence[EvalSample], embed: Callable[[list[str]], np.ndarray]) -> dict[str, Any]:
    """ASV for fixed segment lengths 1, 2, 4, 8 and SNTD@k for k = 1, 2, 4, 8 at length 2, with the
    random baseline (App. A.4), averaged over samples; embeddings of the configured embedder."""
    per_len: dict[int, list[float | None]] = {n: [] for n in SEGMENT_LENGTHS}
    per_k: dict[int, list[float | None]] = {k: [] for k in NEIGHBOUR_RANKS}
    rand: list[float | None] = []
    for s in samples:
        vectors = np.asarray(embed([m.text for m in s.messages]), dtype=np.float64)
        if len(vectors) == 0:
            continue
        segs = fixed_segments(vectors, 2)
        for n in SEGMENT_LENGTHS:
            per_len[n].append(asv(fixed_segments(vectors, n)))
        for k in NEIGHBOUR_RANKS:
            per_k[k].append(sntd(segs, k))
        rand.append(random_sntd(len(segs)))
    # a sample too short for a figure gives None, left out of its mean
    return {"asv": {str(n): _mean(v) for n, v in per_len.items()},
            "sntd": {str(k): _mean(v) for k, v in per_k.items()}, "sntd_random": _mean(rand),
            "samples": len(samples)}


def run_eval(samples: Sequence[EvalSample], options: EvalOptions, *, engine, counting: CountingLLM, out: Path,
             log: Callable[[str], None] = print) -> EvalSummary:
    """Run ``options`` over ``samples`` and write the results into ``out``; returns the summary.

    ``engine`` is the MemSIF engine whose LLM is ``counting`` (so construction and questions are
    counted); the baselines use the same ``counting`` LLM and the engine's embedder; the LLM judge
    uses ``counting.inner``, outside the cost figures.
    """
    out.mkdir(parents=True, exist_ok=True)
    llm = counting.inner
    embedder = engine.embedder
    variants = [(system, ablation) for system in options.systems
                for ablation in (options.ablations if system == "memsif" else ("none",))]
    rows: list[QuestionResult] = []
    builds: dict[str, list[dict[str, Any]]] = {}
    started = time.perf_counter()
    with (out / "questions.jsonl").open("w") as sink:
        for sample in samples:
            # as every answer context shows a turn: relative dates followed by their period (prompts.turn_line)
            texts = {m.id: annotate_relative_dates(m.text, m.time)[0] for m in sample.messages}
            position = {m.id: k for k, m in enumerate(sample.messages)}
            questions = options.questions_of(sample)
            if not questions:
                continue
            for system_name, ablation in variants:
                label = _label(system_name, ablation, options.context_budget)
                system = _system(system_name, ablation, options, engine, counting)
                log(f"[{label}] {sample.sample_id}: building memory of {len(sample.messages)} messages")
                cost = _cached_build(system, sample)
                builds.setdefault(label, []).append({"sample_id": sample.sample_id, **asdict(cost)})
                for k, q in enumerate(questions):
                    try:
                        ans = system.answer(q, generate=options.generate)
                    except MemSIFError as exc:  # recorded, scored as a wrong answer; the run goes on
                        ans = SystemAnswer("", "", [], 0, 0, 0.0, {"errors": [f"{type(exc).__name__}: {exc}"]})
                    row = QuestionResult(
                        dataset=options.dataset, system=system_name, ablation=ablation, label=label, order=k,
                        sample_id=sample.sample_id, qid=q.qid, category=q.category, source_category=q.source_category,
                        question=q.question, gold=q.gold, question_date=q.question_date, answer=ans.answer,
                        evidence_ids=q.evidence_ids, context_ids=ans.context_ids,
                        context_tokens=counting.count_tokens(ans.context) if ans.context else 0, tokens=ans.tokens,
                        llm_calls=ans.llm_calls, seconds=round(ans.seconds, 3),
                        **_recalls(q, ans, sample, texts, position), **{f"sys_{k2}": v for k2, v in ans.extra.items()})
                    if options.generate:
                        _judge(row, options.judge, llm)
                    rows.append(row)
                    sink.write(row.json_line() + "\n")
                    sink.flush()
                    if (k + 1) % 10 == 0 or k + 1 == len(questions):
                        log(f"[{label}] {sample.sample_id}: {k + 1}/{len(questions)} questions")
    summary = summarise(rows, builds, options)
    summary.wall_seconds = round(time.perf_counter() - started, 1)
    summary.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    summary.model = f"{llm.name} on {runtime_of(llm).line()}"
    summary.diagnostics = diagnostics(samples, embedder.embed_documents)
    write_file(out / "summary.json", summary.model_dump_json(indent=2), "the run's summary")
    write_file(out / "report.md", report(summary), "the report")
    write_figures(summary, rows, out)
    return summary


def _system(name: str, ablation: str, options: EvalOptions, engine: Any, counting: CountingLLM) -> Any:
    """The system ``name`` (with ``ablation`` for MemSIF) at the run's context budget."""
    budget, config = options.context_budget, engine.config
    if name == "memsif":
        return MemSIFSystem(engine, counting, f"{options.tag}-{options.dataset}", ablation, budget)
    if name == "full-context":
        return FullContextSystem(counting, config, budget)
    if name == "hybrid-rag":
        return HybridRAGSystem(counting, config, engine.embedder, budget)
    return NaiveRAGSystem(counting, config, engine.embedder, budget)


def _recalls(q: EvalQuestion, ans: SystemAnswer, sample: EvalSample, texts: dict[str, str],
             position: dict[str, int]) -> dict[str, Any]:
    """The spread of ``q``'s gold turns (TED, NCE) and how much of them ``ans``'s context holds."""
    spread = ted([position[e] for e in q.evidence_ids], len(sample.messages))
    text_recall, id_recall = evidence_recall(q.evidence_ids, texts, ans.context, ans.context_ids)
    return {"ted": spread, "nce": spread is not None and spread >= NCE_TED, "recall_text": text_recall,
            "recall_ids": id_recall, "recall_strict": strict_recall(q.evidence_ids, texts, q.gold, ans.context)}


def _judge(row: QuestionResult, judge: str, llm: LLM) -> None:
    """Score ``row``'s answer: token F1 and/or the LLM judge (a judge failure is recorded, the run goes on)."""
    if judge in ("f1", "both"):
        row.f1 = round(locomo_f1(row.answer, row.gold, row.category), 4)
    if judge in ("llm", "both"):
        try:
            row.llm_correct, p = judge_answer(llm, row.question, row.gold, row.answer)
            row.llm_p_correct = round(p, 4)
        except MemSIFError as exc:
            row.llm_correct, row.judge_error = None, f"{type(exc).__name__}: {exc}"


def _label(system: str, ablation: str, budget: int | None = None) -> str:
    name = system if ablation == "none" else f"{system}/{ablation}"
    return f"{name}@{budget}" if budget else name


def _cached_build(system, sample: EvalSample) -> BuildCost:
    """Build; for MemSIF a memory left by an earlier run is resumed (ingest is idempotent), and its
    construction cost is taken from that run's record so amortised figures stay honest."""
    cost = system.build(sample)
    if not isinstance(system, MemSIFSystem):
        return cost
    record = system.base_engine.config.store.resolved_data_dir / "eval-builds" / f"{system.base_namespace(sample)}.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    if cost.reused and record.exists():
        return BuildCost(**{**json.loads(record.read_text()), "reused": True})
    if not cost.reused:
        record.write_text(json.dumps(asdict(cost)))
    return cost


def _mean(values) -> float | None:
    values = [float(v) for v in values if v is not None]
    return round(float(np.mean(values)), 4) if values else None


#: Bootstrap resamples behind each score's interval.
INTERVAL_RESAMPLES = 10_000


def _interval(rows: Sequence[QuestionResult], value: Callable[[QuestionResult], Any]) -> tuple[float, float] | None:
    """The 95 % interval of the mean of ``value`` over ``rows`` (None values left out; questions
    resampled within each sample), rounded as the means are; None without values."""
    kept = [(float(v), r.sample_id) for r in rows if (v := value(r)) is not None]
    if not kept:
        return None
    _, low, high = mean_interval([v for v, _ in kept], [g for _, g in kept], resamples=INTERVAL_RESAMPLES)
    return round(low, 4), round(high, 4)


def _scores(rows: Sequence[QuestionResult]) -> Scores:
    return Scores(n=len(rows), f1=_mean(r.f1 for r in rows), acc=_mean(r.llm_correct for r in rows),
                  f1_ci=_interval(rows, lambda r: r.f1), acc_ci=_interval(rows, lambda r: r.llm_correct),
                  recall_text=_mean(r.recall_text for r in rows), recall_ids=_mean(r.recall_ids for r in rows),
                  recall_strict=_mean(r.recall_strict for r in rows))


def score_blocks(rows: Sequence[QuestionResult]) -> dict[str, Any]:
    """Scores of one system's question rows: by category, Total, and on the NCE subset (TED ≥ 0.3)
    (``SystemSummary``'s fields of those names)."""
    return {"categories": {c: _scores([r for r in rows if r.category == c]) for c in CATEGORIES},
            "total": _scores(rows), "nce": _scores([r for r in rows if r.nce])}


#: The kinds of path a gold turn can enter MemSIF's context by (``systems.context_paths``), in report order.
GOLD_PATHS = ("search", "fact source", "trajectory", "fact", "missed")


def gold_paths(rows: Sequence[QuestionResult]) -> dict[str, int] | None:
    """How MemSIF's context found the gold turns of ``rows``: counts per ``GOLD_PATHS`` kind; None for
    rows without paths (baselines, older result files)."""
    if not rows or any(r.sys_paths is None for r in rows):
        return None
    counts = dict.fromkeys(GOLD_PATHS, 0)
    for r in rows:
        for gid in r.evidence_ids:
            how = (r.sys_paths or {}).get(gid)
            counts["missed" if how is None else "fact source" if how.startswith("fact source")
                   else how.split()[0]] += 1
    return counts


def summarise(rows: Sequence[QuestionResult], builds: dict[str, list[dict[str, Any]]],
              options: EvalOptions) -> EvalSummary:
    """Per system/ablation: scores by category and Total, on the NCE subset, and the cost figures."""
    out = EvalSummary(dataset=options.dataset, seed=options.seed,
                      judge=options.judge if options.generate else "none (retrieval only)",
                      generate=options.generate, limit=options.limit,
                      only=sorted(options.only) if options.only else None)
    for label in dict.fromkeys(r.label for r in rows):
        mine = [r for r in rows if r.label == label]
        built = {k: sum(b[k] for b in builds.get(label, [])) for k in ("seconds", "tokens", "llm_calls", "messages")}
        n_q = max(len(mine), 1)
        query_seconds, query_tokens = sum(r.seconds for r in mine), sum(r.tokens for r in mine)
        out.systems[label] = SystemSummary(
            **score_blocks(mine),
            gold_paths={"total": gold_paths(mine), "nce": gold_paths([r for r in mine if r.nce])},
            cost=Cost(
                questions=len(mine), build_seconds=round(built["seconds"], 1), build_tokens=built["tokens"],
                build_llm_calls=built["llm_calls"], build_messages=built["messages"],
                llm_calls_per_message=round(built["llm_calls"] / (built["messages"] or 1), 3),
                query_seconds_mean=round(query_seconds / n_q, 3), query_tokens_mean=round(query_tokens / n_q, 1),
                amortised_seconds_per_query=round((built["seconds"] + query_seconds) / n_q, 3),
                amortised_tokens_per_query=round((built["tokens"] + query_tokens) / n_q, 1),
                context_tokens_mean=round(float(np.mean([r.context_tokens for r in mine])), 1) if mine else None))
    return out


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def markdown_table(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> list[str]:
    """The lines of a Markdown table: ``header``, its rule, then one line per row (cells as ``str`` gives them)."""
    def line(cells: Sequence[Any]) -> str:
        return "| " + " | ".join(map(str, cells)) + " |"

    return [line(header), "|" + "---|" * len(header), *map(line, rows)]


def _intervals(systems: dict[str, SystemSummary]) -> list[str]:
    """The answer scores' Totals with their 95 % intervals, one row per system ([] without answers)."""
    def cell(mean: float | None, ci: tuple[float, float] | None) -> str:
        return "–" if mean is None else _pct(mean) + ("" if ci is None else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]")

    if all(s.total.f1 is None and s.total.acc is None for s in systems.values()):
        return []
    lines = ["## Answer scores with their 95 % intervals (Total, %)", "", *markdown_table(
        ["system", "token F1", "LLM-judge ACC"],
        ([label, cell(s.total.f1, s.total.f1_ci), cell(s.total.acc, s.total.acc_ci)] for label, s in systems.items()))]
    return [*lines, "", f"Percentile bootstrap: {INTERVAL_RESAMPLES:,} resamples of the questions within each "
            "conversation (LoCoMo) or sample.", ""]


def report(summary: EvalSummary) -> str:
    """The Markdown report: the paper-style table (F1 and LLM-judge ACC kept apart), evidence recall
    overall and on NCE, cost, and the TSM diagnostics."""
    lines = [f"# MemSIF evaluation: {summary.dataset}", "",
             f"Model: `{summary.model}` · seed {summary.seed} · judge {summary.judge} · "
             f"limit {summary.limit or 'none'} · wall {summary.wall_seconds} s · "
             f"peak RSS {summary.peak_rss_mb} MB", ""]
    if summary.only:
        lines += [f"Only the questions {', '.join(summary.only)}.", ""]
    if summary.common_questions is not None:
        lines += [f"Scores on the {summary.common_questions} questions every system answered; cost figures "
                  "are each run's own (over all the questions it asked).", ""]
    systems = summary.systems
    for metric, title in (("f1", "Token F1 (%)"), ("acc", "LLM-judge ACC (%)"),
                          ("recall_text", "Evidence recall, turn text in context (%)"),
                          ("recall_ids", "Evidence recall, turn id among context sources (%)"),
                          ("recall_strict", "Strict evidence recall, the turn's answer-bearing sentences in "
                                            "context (%)")):
        if all(getattr(s.total, metric) is None for s in systems.values()):
            continue
        lines += [f"## {title}", "", *markdown_table(["system", *CATEGORIES, "Total", "NCE"], (
            [label, *(_pct(getattr(x, metric)) for x in [*(s.categories[c] for c in CATEGORIES), s.total, s.nce])]
            for label, s in systems.items())), ""]
    lines += _intervals(systems)
    lines += ["Questions per category: " + ", ".join(
        f"{c} {next(iter(systems.values())).categories[c].n}" for c in CATEGORIES) +
        f"; NCE (TED ≥ {NCE_TED}) {next(iter(systems.values())).nce.n}." if systems else "", ""]
    traced = {label: s.gold_paths for label, s in systems.items() if s.gold_paths and s.gold_paths.get("total")}
    if traced:
        found = {label: (paths["total"] or {}, paths.get("nce") or dict.fromkeys(GOLD_PATHS, 0))
                 for label, paths in traced.items()}
        lines += ["## How MemSIF's context found the gold turns (Total / NCE)", "", *markdown_table(
            ["system", *GOLD_PATHS], ([label, *(f"{total[k]} / {nce[k]}" for k in GOLD_PATHS)]
                                      for label, (total, nce) in found.items())),
                  "", "search: the hybrid sentence search; fact source: a fact's source sentence; trajectory: "
                  "another segment of an Event Trajectory; fact: only as a CoreFact's or ActiveFact's provenance.",
                  ""]
    costs = {label: s.cost for label, s in systems.items()}
    lines += ["## Cost (App. H: construction + retrieval + answering, amortised over questions)", "", *markdown_table(
        ["system", "questions", "build s", "LLM calls / message", "tokens / query", "s / query", "context tokens"],
        ([label, c.questions, c.build_seconds, c.llm_calls_per_message, c.amortised_tokens_per_query,
          c.amortised_seconds_per_query, c.context_tokens_mean] for label, c in costs.items()))]
    d = summary.diagnostics
    if d:
        lines += ["", "## Temporal–Structural Misalignment diagnostics (App. A.4)", "",
                  *markdown_table(["ℓ", *d["asv"]], [["ASV", *("–" if v is None else v for v in d["asv"].values())]]),
                  "", *markdown_table(["k", *d["sntd"], "random"],
                                      [["SNTD@k (ℓ = 2)", *map(_pct, [*d["sntd"].values(), d["sntd_random"]])]])]
    return "\n".join(lines) + "\n"


def write_figures(summary: EvalSummary, rows: Sequence[QuestionResult], out: Path) -> list[Path]:
    """Plotly HTML: scores by category per system, evidence recall against TED, and the diagnostics."""
    import plotly.graph_objects as go

    paths: list[Path] = []

    def save(fig: go.Figure, name: str) -> None:
        paths.append(out / name)
        fig.write_html(paths[-1], include_plotlyjs="directory")

    systems = summary.systems
    fig = go.Figure()
    for label, s in systems.items():
        for metric in ("acc", "f1", "recall_text"):
            values = [getattr(s.categories[c], metric) for c in CATEGORIES] + [getattr(s.total, metric)]
            if all(v is None for v in values):
                continue
            fig.add_trace(go.Bar(name=f"{label} {metric}", x=[*CATEGORIES, "Total"],
                                 y=[None if v is None else 100 * v for v in values]))
    fig.update_layout(barmode="group", yaxis_title="%", title="Scores by category")
    save(fig, "scores.html")

    fig = go.Figure()
    for label in systems:
        mine = [r for r in rows if r.label == label and r.ted is not None]
        fig.add_trace(go.Scatter(x=[r.ted for r in mine], y=[r.recall_text for r in mine], mode="markers",
                                 name=label, hovertext=[r.question for r in mine], opacity=0.6))
    fig.add_vline(x=NCE_TED, line_dash="dash", annotation_text="NCE: TED ≥ 0.3")
    fig.update_layout(xaxis_title="TED (Eq. 5)", yaxis_title="evidence recall (turn text in context)",
                      title="Evidence recall against evidence dispersion")
    save(fig, "recall_vs_ted.html")

    d = summary.diagnostics
    if d:
        fig = go.Figure()
        fig.add_trace(go.Scatter(x=list(d["sntd"]), y=list(d["sntd"].values()), name="SNTD@k", mode="lines+markers"))
        fig.add_trace(go.Scatter(x=list(d["sntd"]), y=[d["sntd_random"]] * len(d["sntd"]), name="random",
                                 mode="lines", line={"dash": "dash"}))
        fig.add_trace(go.Scatter(x=list(d["asv"]), y=list(d["asv"].values()), name="ASV (x = ℓ)",
                                 mode="lines+markers", yaxis="y2"))
        fig.update_layout(title="TSM diagnostics", xaxis_title="k (SNTD) / ℓ (ASV)", yaxis_title="SNTD",
                          yaxis2={"overlaying": "y", "side": "right", "title": "ASV"})
        save(fig, "diagnostics.html")
    return paths
