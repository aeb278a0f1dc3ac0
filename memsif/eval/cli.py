"""``python -m memsif eval locomo|longmemeval|compare`` and ``python -m memsif bench``."""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from memsif.config import MemSIFConfig
from memsif.errors import ConfigError
from memsif.eval.results import EvalSummary, QuestionResult
from memsif.files import write_file

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BENCH = ROOT / "assets" / "locomo-conv-26.json"


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def cmd_eval(args: argparse.Namespace) -> int:
    from memsif.engine import MemSIF
    from memsif.eval.data import load_locomo, load_longmemeval
    from memsif.eval.runner import EvalOptions, run_eval
    from memsif.eval.systems import CountingLLM
    from memsif.llm import load_llm

    try:
        options = EvalOptions(dataset=args.dataset, systems=_csv(args.system) or ["memsif"],
                              ablations=_csv(args.ablation) or ["none"], judge=args.judge, seed=args.seed,
                              limit=args.limit, only=frozenset(_csv(args.questions)) if args.questions else None,
                              generate=not args.retrieval_only, tag=args.tag,
                              context_budget=args.context_budget)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    loader = load_locomo if args.dataset == "locomo" else load_longmemeval
    samples = loader(args.data, _csv(args.samples))
    config = MemSIFConfig.from_env(data_dir=args.data_dir, llm_model=args.model)
    counting = CountingLLM(load_llm(config))
    engine = MemSIF(config, llm=counting)
    summary = run_eval(samples, options, engine=engine, counting=counting, out=Path(args.out),
                       log=partial(print, file=sys.stderr, flush=True))
    print((Path(args.out) / "report.md").read_text())
    if args.json:
        print(summary.model_dump_json())
    return 0


def _rows_path(path: Path) -> Path:
    """``path`` (a ``questions.jsonl``), or its gzipped copy when only that exists."""
    if not path.exists() and Path(f"{path}.gz").exists():
        return Path(f"{path}.gz")
    if not path.exists():
        raise SystemExit(f"{path} does not exist")
    return path


def _read_rows(path: Path) -> list[dict]:
    """Rows of a ``questions.jsonl``, or of its gzipped copy (``questions.jsonl.gz``)."""
    path = _rows_path(path)
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def cmd_compare(args: argparse.Namespace) -> int:
    """Paired bootstrap of two systems over the same questions (App. D.2)."""
    from memsif.eval.metrics import paired_bootstrap

    def load(spec: str) -> dict[str, dict]:
        path, _, label = spec.partition(":")
        rows = _read_rows(Path(path))
        labels = sorted({r["label"] for r in rows})
        if not label:
            if len(labels) != 1:
                raise SystemExit(f"{path} holds {labels}; name one as {path}:LABEL")
            label = labels[0]
        elif label not in labels:
            raise SystemExit(f"{path} holds no rows labelled {label!r}; it holds {labels}")
        return {r["qid"]: r for r in rows if r["label"] == label}

    if args.resamples < 1:
        raise SystemExit(f"--resamples must be at least 1, not {args.resamples}")
    a, b = load(args.a), load(args.b)
    shared = sorted(set(a) & set(b))
    if args.subset == "nce":
        shared = [q for q in shared if a[q].get("nce")]
    if not shared:
        raise SystemExit("the two result files share no question ids"
                         + (" on the NCE subset" if args.subset == "nce" else ""))
    metric = args.metric
    if any(metric not in a[q] or metric not in b[q] for q in shared):
        raise SystemExit(f"metric {metric!r} is missing in some rows (was the judge run?)")
    # undefined values (no gold evidence for recall, a failed judge call) are left out, as in summary.json
    common = [q for q in shared if a[q][metric] is not None and b[q][metric] is not None]
    if not common:
        raise SystemExit(f"no shared question has a value for {metric!r}")
    dataset = a[common[0]]["dataset"]
    groups = [a[q]["sample_id"] if dataset == "locomo" else a[q]["category"] for q in common]
    # LoCoMo's default resamples whole conversations (App. D.2); "questions" resamples the questions
    # within each conversation, which gives one conversation, or a few, an interval of real width
    whole = dataset == "locomo" and args.resample != "questions"
    a_values, b_values = [float(a[q][metric]) for q in common], [float(b[q][metric]) for q in common]
    result = paired_bootstrap(a_values, b_values, groups, stratified=not whole, resamples=args.resamples,
                              seed=args.seed)
    result.update(metric=metric, subset=args.subset, questions=len(common), questions_in_a=len(a),
                  questions_in_b=len(b), mean_a=sum(a_values) / len(common), mean_b=sum(b_values) / len(common),
                  undefined_left_out=len(shared) - len(common),
                  resampled="conversations" if whole else
                  "questions within conversations" if dataset == "locomo" else "questions within categories")
    if whole and len(set(groups)) < 2:
        result["note"] = ("one conversation only: resampling conversations cannot vary it, so the interval has "
                          "zero width; compare over several conversations")
    print(json.dumps(result, indent=2))
    return 0


def cmd_judge_check(args: argparse.Namespace) -> int:
    """The LLM judge on two controls per question: the gold answer and another question's gold."""
    from memsif.eval.runner import judge_check
    from memsif.llm import described, load_llm

    if args.n < 1:
        raise SystemExit(f"--n must be at least 1, not {args.n}")
    rows = [QuestionResult.model_validate(r) for r in _read_rows(Path(args.results))]
    llm = load_llm(MemSIFConfig.from_env(llm_model=args.model))
    try:
        result = judge_check(llm, rows, n=args.n, seed=args.seed)
    except ValueError as exc:
        raise SystemExit(str(exc)) from exc
    result["llm"] = described(llm)
    print(json.dumps(result, indent=2))
    return 0


def cmd_judge(args: argparse.Namespace) -> int:
    """Score a finished run's answers with the LLM judge (those not judged yet, or all with ``--again``)
    and write its questions, summary and report again; progress is saved every ``SAVE_EVERY`` answers."""
    from memsif.eval.runner import judge_rows, report, rescored, write_figures
    from memsif.llm import described, load_llm

    folder = Path(args.run)
    if not (folder / "summary.json").exists():
        raise SystemExit(f"{folder / 'summary.json'} does not exist (is {folder} a finished run's folder?)")
    summary = EvalSummary.model_validate_json((folder / "summary.json").read_text())
    if not summary.generate:
        raise SystemExit(f"{folder} is a retrieval-only run: it holds no answers to judge")
    path = _rows_path(folder / "questions.jsonl")
    rows = [QuestionResult.model_validate(r) for r in _read_rows(path)]
    llm = load_llm(MemSIFConfig.from_env(llm_model=args.model))

    def done(k: int, n: int) -> None:  # saves the rows every SAVE_EVERY answers
        if k % SAVE_EVERY == 0 or k == n:
            text = "".join(r.json_line() + "\n" for r in rows)
            write_file(path, gzip.compress(text.encode()) if path.suffix == ".gz" else text, "the question rows")
            print(f"judged {k}/{n}", file=sys.stderr, flush=True)

    judged = judge_rows(rows, llm, again=args.again, done=done)
    summary = rescored(summary, rows)
    if judged:
        summary = summary.model_copy(update={"judge_model": described(llm)})
    text = report(summary)
    write_file(folder / "summary.json", summary.model_dump_json(indent=2), "the run's summary")
    write_file(folder / "report.md", text, "the report")
    if (folder / "scores.html").exists():
        write_figures(summary, rows, folder)
    print(text)
    return 0


#: ``eval judge`` saves the question rows after this many judged answers (an interrupted run resumes).
SAVE_EVERY = 25


def cmd_report(args: argparse.Namespace) -> int:
    """One Markdown report from several runs' summary.json (e.g. the systems run and the ablations run)."""
    from memsif.eval.runner import report, score_blocks

    merged: EvalSummary | None = None
    rows: dict[str, list[QuestionResult]] = {}
    summaries: list[EvalSummary] = []
    for folder in args.runs:
        path = Path(folder) / "summary.json"
        if not path.exists():
            raise SystemExit(f"{path} does not exist (is the run finished?)")
        summary = EvalSummary.model_validate_json(path.read_text())
        summaries.append(summary)
        if merged is None:
            merged = summary.model_copy(update={"systems": {}})
        elif summary.dataset != merged.dataset:
            raise SystemExit(f"{folder} is a {summary.dataset} run, not {merged.dataset}")
        answered = ([QuestionResult.model_validate(r) for r in _read_rows(Path(folder) / "questions.jsonl")]
                    if args.common_questions else [])
        for label, figures in summary.systems.items():
            key = label if label not in merged.systems else f"{label} ({Path(folder).name})"
            merged.systems[key] = figures
            rows[key] = [r for r in answered if r.label == label]
    assert merged is not None  # argparse asks for at least one run
    merged.wall_seconds = round(sum(x.wall_seconds for x in summaries), 1)
    limits = [x.limit for x in summaries]
    if len(set(limits)) > 1:
        merged.limit = " / ".join(str(x or "none") for x in limits) + " (per run)"
    if args.common_questions:
        common = set.intersection(*({(r.sample_id, r.qid) for r in mine} for mine in rows.values()))
        if not common:
            raise SystemExit("the runs share no questions")
        for key, mine in rows.items():
            merged.systems[key] = merged.systems[key].model_copy(
                update=score_blocks([r for r in mine if (r.sample_id, r.qid) in common]))
        merged.common_questions = len(common)
    text = report(merged)
    if args.out:
        write_file(args.out, text, "the report")
    print(text)
    return 0


def cmd_pool(args: argparse.Namespace) -> int:
    """One run folder from runs over different samples (``runner.pooled``): the rows together, every
    score and interval computed again, costs added up; the runs themselves are left as they are."""
    from memsif.eval.runner import pooled, report, write_figures

    out = Path(args.out)
    if (out / "summary.json").exists():
        raise SystemExit(f"{out} already holds a run; pool into a new folder")
    runs = []
    for folder in args.runs:
        path = Path(folder) / "summary.json"
        if not path.exists():
            raise SystemExit(f"{path} does not exist (is {folder} a finished run's folder?)")
        summary = EvalSummary.model_validate_json(path.read_text())
        runs.append((summary, [QuestionResult.model_validate(r) for r in _read_rows(Path(folder) / "questions.jsonl")]))
    try:
        summary = pooled(runs)
    except ValueError as exc:
        raise SystemExit(str(exc)) from exc
    rows = [r for _, mine in runs for r in mine]
    out.mkdir(parents=True, exist_ok=True)
    write_file(out / "questions.jsonl", "".join(r.json_line() + "\n" for r in rows), "the question rows")
    write_file(out / "summary.json", summary.model_dump_json(indent=2), "the run's summary")
    text = report(summary)
    write_file(out / "report.md", text, "the report")
    write_figures(summary, rows, out)
    print(text)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Figures for the default models: ingest speed, judge-call share, query latency, tokens, memory;
    with ``--scale``, how they grow with the history (``memsif.eval.scale``)."""
    if args.scale or args.scale_one:
        from memsif.eval import scale

        paths = args.scale_data or [str(DEFAULT_BENCH)]
        if args.scale_one:
            print(json.dumps(scale.measure_one(args.scale_one, paths, args.fact_batches, args.questions,
                                               MemSIFConfig.from_env(llm_model=args.model))))
        else:
            print(scale.run([int(x) for x in args.sizes.split(",")], paths, args.fact_batches, args.questions,
                            args.model))
        return 0
    from memsif.engine import MemSIF
    from memsif.eval.systems import CountingLLM
    from memsif.io import load_transcripts
    from memsif.llm import described, load_llm

    tr = load_transcripts(args.data, sample=args.sample)[0]
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="memsif-bench-")
    try:
        config = MemSIFConfig.from_env(data_dir=data_dir, llm_model=args.model)
        start = time.perf_counter()
        counting = CountingLLM(load_llm(config))
        engine = MemSIF(config, llm=counting)
        engine.load_models()
        load_s = time.perf_counter() - start
        namespace = f"bench-{tr.sample_id}"
        engine.delete_namespace(namespace)
        report = engine.ingest(tr.messages, namespace=namespace, core_facts=args.facts)
        questions = [str(q["question"]) for q in tr.extra.get("qa", []) if q.get("category") != 5]
        questions = questions[:args.questions] or [m.text for m in tr.messages[:args.questions]]
        timings = _time_questions(engine, counting, namespace, questions)
        engine.close()
    finally:
        if not args.data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)
    sentences_s = report.seconds_by_stage.get("sentences", 0.0)
    # Structured Interaction Memory without the sentence index: the ingest less that and CoreFacts
    sim_s = report.seconds - sentences_s - report.seconds_by_stage.get("core_facts", 0.0)
    figures = {
        "sample": tr.sample_id, "llm": described(counting),
        "messages": report.messages, "core_facts": args.facts,
        "model_load_s": round(load_s, 1), "ingest_s": round(report.seconds, 1),
        "ingest_messages_per_s": round(report.messages / report.seconds, 2) if report.seconds else None,
        "segment_judge_share": round(report.judge_calls_segment / max(report.messages, 1), 3),
        "trajectory_judge_calls": report.judge_calls_trajectory,
        "segments": report.segments, "trajectories": report.trajectories,
        "questions": len(questions),
        "sentence_index_s": round(sentences_s, 1),
        "sentence_index_share_of_sim_build": round(sentences_s / max(sim_s, 1e-9), 3),
        **timings,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(figures, indent=None if args.json else 2))
    return 0


def _time_questions(engine, counting, namespace: str, questions: list[str]) -> dict[str, float | None]:
    """Each question asked twice: answered (seconds, tokens) and retrieval only (seconds). Returns
    ``retrieval_s_p50/p95``, ``query_s_p50/p95`` and ``tokens_per_query`` (None without questions)."""
    seconds, tokens, retrieval = [], [], []
    for q in questions:
        _, used = counting.snapshot()
        t = time.perf_counter()
        engine.ask(q, namespace=namespace)
        seconds.append(time.perf_counter() - t)
        tokens.append(counting.snapshot()[1] - used)
        t = time.perf_counter()
        engine.ask(q, namespace=namespace, generate=False)
        retrieval.append(time.perf_counter() - t)
    return {**{f"{name}_s_p{q}": round(float(np.percentile(values, q)), 2) if values else None
               for name, values in (("retrieval", retrieval), ("query", seconds)) for q in (50, 95)},
            "tokens_per_query": round(float(np.mean(tokens)), 1) if tokens else None}


def add_parsers(sub) -> None:
    """``eval`` (locomo, longmemeval, compare, judge-check, judge, report, pool) and ``bench`` under ``sub``."""
    p = sub.add_parser("eval", help="evaluate on LoCoMo or LongMemEval(-S) with the paper's protocol")
    esub = p.add_subparsers(dest="eval_command", required=True)
    _run_parsers(esub)
    _reading_parsers(esub)
    _bench_parser(sub)


def _run_parsers(esub) -> None:
    """``eval locomo`` and ``eval longmemeval``: the runs."""
    for dataset in ("locomo", "longmemeval"):
        e = esub.add_parser(dataset, help=f"evaluate on a {dataset} file")
        e.add_argument("--data", required=True, help="benchmark JSON file")
        e.add_argument("--samples", help="comma-separated sample ids (default: all)")
        e.add_argument("--system", default="memsif",
                       help="comma-separated: memsif, full-context, naive-rag, hybrid-rag")
        e.add_argument("--ablation", default="none", help="comma-separated: none, no-ts, no-et, no-cf, no-af")
        e.add_argument("--limit", type=int, help="at most N questions per sample (after the seeded order)")
        e.add_argument("--questions", help="comma-separated question ids (e.g. conv-26/q132, as questions.jsonl "
                       "names them): only these, in the seeded order, before --limit")
        e.add_argument("--judge", default="both", choices=["f1", "llm", "both"])
        e.add_argument("--seed", type=int, default=0)
        e.add_argument("--retrieval-only", action="store_true",
                       help="no answers and no judges: evidence recall and retrieval cost only")
        e.add_argument("--context-budget", type=int,
                       help="every system fills at most N context tokens (default: the baselines the model's window "
                            "less the answer cap, MemSIF its MEMSIF_CONTEXT_TOKENS, 1500); labelled e.g. "
                            "naive-rag@1500, memsif@1500")
        e.add_argument("--tag", default="eval", help="namespace prefix of the built memories (reused by later runs)")
        e.add_argument("--data-dir", help="memory folder (default: $MEMSIF_DATA_DIR or ~/.local/share/memsif)")
        e.add_argument("--out", required=True, help="folder for questions.jsonl, summary.json, report.md, figures")
        e.add_argument("--json", action="store_true", help="also print the summary as one JSON line")
        e.set_defaults(func=cmd_eval, dataset=dataset)


def _reading_parsers(esub) -> None:
    """``eval compare``, ``eval judge-check``, ``eval judge``, ``eval report`` and ``eval pool``: what reads
    runs' results."""
    c = esub.add_parser("compare", help="paired bootstrap between two result files (App. D.2)")
    c.add_argument("a", help="questions.jsonl[:LABEL] of system A")
    c.add_argument("b", help="questions.jsonl[:LABEL] of system B")
    c.add_argument("--metric", default="llm_correct",
                   choices=["llm_correct", "f1", "recall_text", "recall_ids", "recall_strict"])
    c.add_argument("--subset", default="all", choices=["all", "nce"],
                   help="the questions compared: all, or the NCE subset (TED ≥ 0.3)")
    c.add_argument("--resamples", type=int, default=10_000)
    c.add_argument("--resample", default="conversations", choices=["conversations", "questions"],
                   help="LoCoMo: resample whole conversations (the paper's way; needs several) or the questions "
                        "within each conversation (LongMemEval always resamples questions within categories)")
    c.add_argument("--seed", type=int, default=0)
    c.set_defaults(func=cmd_compare)

    j = esub.add_parser("judge-check", help="can the configured LLM judge be trusted? (gold vs mismatched answers)")
    j.add_argument("results", help="a questions.jsonl of any run (only questions and gold answers are read)")
    j.add_argument("--n", type=int, default=100, help="questions to draw")
    j.add_argument("--seed", type=int, default=0)
    j.set_defaults(func=cmd_judge_check)

    g = esub.add_parser("judge", help="score a finished run's answers with the LLM judge (e.g. a --judge f1 run)")
    g.add_argument("run", help="the run's folder (summary.json and questions.jsonl[.gz]); rewritten in place")
    g.add_argument("--again", action="store_true", help="judge every answer again, not only those not judged yet")
    g.set_defaults(func=cmd_judge)

    r = esub.add_parser("report", help="one Markdown report from several runs' summary.json")
    r.add_argument("runs", nargs="+", help="run folders (each with summary.json)")
    r.add_argument("--out", help="also write the report to this file")
    r.add_argument("--common-questions", action="store_true",
                   help="score every system on only the questions all of them answered (e.g. when the "
                        "baselines ran with --limit)")
    r.set_defaults(func=cmd_report)

    o = esub.add_parser("pool", help="one run from runs over different samples (a long run split by --samples)")
    o.add_argument("runs", nargs="+", help="run folders (each with summary.json and questions.jsonl[.gz])")
    o.add_argument("--out", required=True, help="a new folder for the pooled questions, summary, report and figures")
    o.set_defaults(func=cmd_pool)


def _bench_parser(sub) -> None:
    b = sub.add_parser("bench", help="speed and memory figures for the configured models")
    b.add_argument("--data", default=str(DEFAULT_BENCH), help="transcript (default: the bundled conv-26)")
    b.add_argument("--sample", help="sample id in the file (default: the first)")
    b.add_argument("--questions", type=int, default=20, help="questions to time (the sample's own, else its turns)")
    b.add_argument("--facts", action="store_true", help="include CoreFact extraction in the ingest (minutes)")
    b.add_argument("--data-dir", help="memory folder (default: a temporary one, removed after)")
    b.add_argument("--json", action="store_true")
    b.add_argument("--scale", action="store_true", help="how build, query and store costs grow: synthetic "
                   "histories of --sizes messages (LoCoMo conversations end to end)")
    b.add_argument("--sizes", default="1000,2000,5000,10000", help="history lengths for --scale")
    b.add_argument("--scale-data", action="append", help="LoCoMo file(s) to concatenate (default: the bundled "
                   "conv-26); repeat for several")
    b.add_argument("--fact-batches", type=int, default=8, help="CoreFact batches timed per size (one group of "
                   "MEMSIF_FACT_PARALLEL by default), extrapolated to the whole history")
    b.add_argument("--scale-one", type=int, help=argparse.SUPPRESS)  # one size, in its own process
    b.set_defaults(func=cmd_bench)
